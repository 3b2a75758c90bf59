import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { mcpClient } from './mcp-client'
import { type RunningServer, demoKeys, startServer } from './server-process'

/**
 * Adding a site leads on its own to an inventory and then to detected changes, read through REST
 * and MCP: on the Node server (its scheduler, woken by the new site and by a ping) and under
 * workerd against the Node server's local endpoints (its cron trigger). The crawled website is
 * served by this test on 127.0.0.1; the servers reach it through CRAWL_ORIGIN and
 * OUTBOUND_ALLOW_PRIVATE=1, by configuration.
 */

const run = promisify(execFile)
const OFFLINE = { WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true', CLOUDFLARE_CF_FETCH_ENABLED: 'false' }
// paragraphs long enough for Readability to find the article (it does not score very short ones)
const page = (title: string, text: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><article><p>${text}</p></article><a href="/docs">Docs</a></body></html>`

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 250))
  }
}

describe('the crawler in its homes', () => {
  let fixture: Server
  let origin = ''
  const pages: Record<string, string> = {}

  beforeAll(async () => {
    fixture = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname
      if (path === '/robots.txt')
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end(`User-agent: *\nSitemap: ${origin}/sitemap.xml\n`)
      if (path === '/sitemap.xml')
        return void res
          .writeHead(200, { 'content-type': 'application/xml' })
          .end(
            `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${origin}/</loc></url><url><loc>${origin}/pricing</loc></url></urlset>`,
          )
      const body = pages[path]
      res.writeHead(body ? 200 : 404, { 'content-type': 'text/html' }).end(body ?? 'not found')
    })
    await new Promise<void>((resolve) => fixture.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}`
    Object.assign(pages, {
      '/': page('Home', 'Welcome home, reader.'),
      '/pricing': page('Pricing', 'Ten euros a month.'),
      '/docs': page('Docs', 'Read the manual first, it answers what most people ask'),
    })
  })

  afterAll(() => new Promise((resolve) => fixture.close(resolve)))

  const crawlEnv = () => ({
    OUTBOUND_ALLOW_PRIVATE: '1',
    CRAWL_ORIGIN: origin,
    CRAWL_HOST_INTERVAL_MS: '0',
    REDIS_URL: '',
    UPSTASH_REDIS_REST_URL: '',
    CLICKHOUSE_URL: '',
  })

  describe('on the Node server', () => {
    let server: RunningServer
    let keys: ReturnType<typeof demoKeys>

    beforeAll(async () => {
      server = await startServer({ DATA_DIR: tempDir('crawl-node'), ...crawlEnv() })
      keys = demoKeys(server.output())
    })
    afterAll(() => server?.stop())

    it('crawls a new site on its own, and a pinged page at once', { timeout: 120_000 }, async () => {
      const call = async (method: string, path: string, key: string, body?: unknown) => {
        const res = await fetch(`${server.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: body ? JSON.stringify(body) : undefined,
        })
        return { status: res.status, json: (await res.json()) as any }
      }
      const domain = `node-${crypto.randomUUID().slice(0, 6)}.test`
      const created = await call('POST', '/api/v1/sites', keys.writeKey, { domain })
      expect(created.status).toBe(201)
      const siteId = created.json.id
      const inventory = await until('the first crawl', async () => {
        const res = await call('GET', `/api/v1/pages?site_id=${siteId}&sort=path`, keys.readKey)
        return res.json.pages?.length === 3 ? res.json : undefined
      })
      expect(inventory.pages.map((p: any) => [p.path, p.title])).toEqual([
        ['/', 'Home'],
        ['/docs', 'Docs'],
        ['/pricing', 'Pricing'],
      ])

      pages['/pricing'] = page('Pricing for teams', 'Ten euros a month.')
      expect((await call('POST', '/api/v1/ping', keys.writeKey, { url: `https://${domain}/pricing` })).json).toEqual({
        accepted: true,
        path: '/pricing',
      })
      const feed = await until('the change from the ping', async () => {
        const res = await call('GET', `/api/v1/changes?site_id=${siteId}`, keys.readKey)
        return res.json.changes?.length ? res.json : undefined
      })
      expect(feed.changes.map((c: any) => `${c.type} ${c.path} ${c.after}`).sort()).toEqual([
        'h1 /pricing Pricing for teams',
        'title /pricing Pricing for teams',
      ])
      pages['/pricing'] = page('Pricing', 'Ten euros a month.')

      // the same through MCP
      const mcp = await mcpClient(server.url, keys.readKey)
      const tools = (await mcp.listTools()).tools.map((t) => t.name)
      expect(tools).toEqual(expect.arrayContaining(['list_pages', 'list_changes', 'get_change_diff']))
      expect(tools).not.toContain('ping_page')
      const listed = (await mcp.callTool({ name: 'list_pages', arguments: { site_id: siteId, sort: 'path' } })) as {
        structuredContent: any
      }
      expect(listed.structuredContent.pages.map((p: any) => p.path)).toEqual(['/', '/docs', '/pricing'])
      const changes = (await mcp.callTool({ name: 'list_changes', arguments: { site_id: siteId, type: 'title' } })) as {
        structuredContent: any
      }
      expect(changes.structuredContent.changes.map((c: any) => c.before)).toEqual(['Pricing'])
      await mcp.close()
    })
  })

  describe('under workerd', () => {
    const outdir = tempDir('crawl-worker-build')
    let backend: RunningServer
    let keys: ReturnType<typeof demoKeys>
    let mf: Miniflare

    beforeAll(async () => {
      await run(process.execPath, ['node_modules/wrangler/bin/wrangler.js', 'deploy', '--dry-run', '--outdir', outdir], {
        env: { ...process.env, ...OFFLINE },
      })
      const dataDir = tempDir('crawl-worker-backend')
      // the Node server only serves the stores here: its own crawler is off, so every crawl is the worker's
      backend = await startServer({ DATA_DIR: dataDir, ...crawlEnv(), CRAWLER: '0' })
      keys = demoKeys(backend.output())
      const local = JSON.parse(readFileSync(join(dataDir, 'local-endpoints.json'), 'utf8'))
      const token = readFileSync(join(dataDir, 'local-token'), 'utf8')
      mf = new Miniflare({
        modules: true,
        scriptPath: join(outdir, 'worker.js'),
        modulesRoot: outdir,
        compatibilityDate: '2026-04-01',
        compatibilityFlags: ['nodejs_compat'],
        bindings: {
          CLICKHOUSE_URL: local.url,
          CLICKHOUSE_PASSWORD: token,
          UPSTASH_REDIS_REST_URL: `${local.url}/redis`,
          UPSTASH_REDIS_REST_TOKEN: token,
          LOG_LEVEL: 'error',
          OUTBOUND_ALLOW_PRIVATE: '1',
          CRAWL_ORIGIN: origin,
          CRAWL_HOST_INTERVAL_MS: '0',
        },
      })
    }, 180_000)
    afterAll(async () => {
      await mf?.dispose()
      await backend?.stop()
    })

    it('crawls a new site on its cron trigger, then detects a change', { timeout: 180_000 }, async () => {
      const call = async (method: string, path: string, key: string, body?: unknown) => {
        const res = await mf.dispatchFetch(`http://worker.test${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: body ? JSON.stringify(body) : undefined,
        })
        return { status: res.status, json: (await res.json()) as any }
      }
      const cron = async () => {
        const worker = (await mf.getWorker()) as unknown as { scheduled(event: { cron: string }): Promise<unknown> }
        await worker.scheduled({ cron: '* * * * *' })
      }
      const created = await call('POST', '/api/v1/sites', keys.writeKey, { domain: `worker-${crypto.randomUUID().slice(0, 6)}.test` })
      expect(created.status).toBe(201)
      const siteId = created.json.id
      expect((await call('GET', `/api/v1/pages?site_id=${siteId}`, keys.readKey)).json.pages).toEqual([])
      await cron()
      const inventory = await until('the worker crawl', async () => {
        const res = await call('GET', `/api/v1/pages?site_id=${siteId}&sort=path`, keys.readKey)
        return res.json.pages?.length === 3 ? res.json : undefined
      })
      expect(inventory.pages.map((p: any) => p.path)).toEqual(['/', '/docs', '/pricing'])
      expect((await call('GET', `/api/v1/sites/${siteId}`, keys.readKey)).json.changeDetection).toMatchObject({
        crawlStatus: 'ok',
        pagesKnown: 3,
      })

      pages['/docs'] = page('Docs', 'Read the whole manual first, it answers what most people ask and then the changelog')
      expect((await call('POST', '/api/v1/ping', keys.writeKey, { url: `https://${created.json.domain}/docs` })).json).toEqual({
        accepted: true,
        path: '/docs',
      })
      await cron()
      const feed = await until('the change', async () => {
        const res = await call('GET', `/api/v1/changes?site_id=${siteId}`, keys.readKey)
        return res.json.changes?.length ? res.json : undefined
      })
      expect(feed.changes).toEqual([
        expect.objectContaining({
          type: 'text',
          path: '/docs',
          wordsAdded: 5,
          wordsRemoved: 0,
          diffable: true,
          before: '10 words',
          after: '15 words',
        }),
      ])
      const diff = await call('GET', `/api/v1/changes/diff?change_id=${feed.changes[0].id}`, keys.readKey)
      expect(diff.json.runs.filter((r: any) => r.op === 'added').map((r: any) => r.text.trim())).toEqual([
        'whole',
        'and then the changelog',
      ])
    })
  })
})
