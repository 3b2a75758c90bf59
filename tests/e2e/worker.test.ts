import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { get } from 'node:http'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { endpoints } from '../../functions/registry'
import worker from '../../functions/worker'
import { tempDir } from '../helpers'
import { mcpClient, mcpClientV2 } from './mcp-client'
import { type RunningServer, cli, startServer, demoKeys } from './server-process'

const run = promisify(execFile)
/** The embedded stores of the server under test, whatever the test run's own environment names. */
const EMBEDDED = { REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' }
const OFFLINE = { WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true', CLOUDFLARE_CF_FETCH_ENABLED: 'false' }

/** Parameters a read needs beside the site, to answer the demo site. */
const REQUIRED: Record<string, Record<string, string>> = {
  '/api/v1/breakdown': { property: 'source' },
  '/api/v1/geo': { granularity: 'city' },
  '/api/v1/pages/detail': { path: '/' },
  '/api/v1/heatmap': { path: '/' },
}

/** Reads of one record by its id, of which the demo site has none: both homes must still answer alike (a 404). */
const BY_ID: Record<string, Record<string, string>> = {
  '/api/v1/changes/diff': { change_id: '00000000-0000-4000-8000-000000000000' },
}

/** A GET with the headers given, Host included (fetch sets its own). */
function askNode(url: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      let text = ''
      res
        .setEncoding('utf8')
        .on('data', (chunk) => (text += chunk))
        .on('end', () => resolve({ status: res.statusCode ?? 0, text }))
    }).on('error', reject)
  })
}

describe('the worker bundle under workerd', () => {
  const outdir = tempDir('worker-build')
  const dataDir = tempDir('worker-backend')
  let server: RunningServer
  let mf: Miniflare
  let readKey = ''
  let writeKey = ''
  let demoSite = ''

  beforeAll(async () => {
    await run(process.execPath, ['node_modules/wrangler/bin/wrangler.js', 'deploy', '--dry-run', '--outdir', outdir], {
      env: { ...process.env, ...OFFLINE },
    })
    // neither home has a CrUX key: crux=1 must answer alike on both
    server = await startServer({ DATA_DIR: dataDir, REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', CRUX_API_KEY: '' })
    ;({ readKey, writeKey, site: demoSite } = demoKeys(server.output()))
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
        // the origin the Node server builds its links on (the address it listens on, without PUBLIC_URL): answers such as the snippet name it
        PUBLIC_URL: server.url,
      },
    })
  })

  afterAll(async () => {
    await mf?.dispose()
    await server?.stop()
  })

  it('bundles without chdb or any Node-only module', () => {
    const bundle = readFileSync(join(outdir, 'worker.js'), 'utf8')
    expect(bundle).not.toMatch(/chdb|ioredis|fengari/)
    expect(bundle).not.toMatch(/from ["']node:|require\(["']node:/)
  })

  it('serves the web application: the sign-in page, and a session from a one-time link', async () => {
    const page = await mf.dispatchFetch('http://worker.test/app/signin')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    const html = await page.text()
    expect(html).toContain('<form method="post" action="/app/signin"')
    // under its policy, whose nonce the page's stylesheet carries
    const nonce = /script-src 'nonce-([^']+)'/.exec(page.headers.get('content-security-policy') ?? '')?.[1]
    expect(nonce).toBeTruthy()
    expect(html).toContain(`<style nonce="${nonce}">`)
    // Workers send no e-mail: asking for a link says so
    const asked = await mf.dispatchFetch('http://worker.test/app/signin', {
      method: 'POST',
      headers: { origin: 'http://worker.test', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=someone%40example.com',
    })
    expect(asked.status).toBe(503)
    expect(await asked.text()).toContain('cannot send e-mail')
    // a link printed by the admin CLI (the same stores) signs in on the Worker
    const { link } = await cli('admin', ['login', '--email', 'owner@demo.example.com', '--url', 'http://worker.test'], {
      DATA_DIR: dataDir,
      ...EMBEDDED,
    })
    const token = new URL(link).searchParams.get('token')!
    const used = await mf.dispatchFetch('http://worker.test/app/signin/link', {
      method: 'POST',
      headers: { origin: 'http://worker.test', 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${token}`,
      redirect: 'manual',
    })
    expect(used.status).toBe(303)
    const cookie = used.headers.get('set-cookie')!.split(';')[0]
    const home = await mf.dispatchFetch('http://worker.test/app', { headers: { cookie }, redirect: 'manual' })
    expect(home.status).toBe(200)
    expect(await home.text()).toContain('owner@demo.example.com')
  })

  it('answers keyed requests against the local ClickHouse-HTTP and Upstash-REST endpoints', async () => {
    const health = await mf.dispatchFetch('http://worker.test/health')
    expect(await health.json()).toEqual({ status: 'ok', clickhouse: 'ok', keyValue: 'ok' })
    const me = await mf.dispatchFetch('http://worker.test/api/v1/me', { headers: { authorization: `Bearer ${readKey}` } })
    expect(me.status).toBe(200)
    expect(me.headers.get('ratelimit-limit')).toBe('600')
    expect(Number(me.headers.get('ratelimit-remaining'))).toBeLessThan(600)
    const body = (await me.json()) as { key: { scope: string }; organization: { name: string } }
    expect(body).toMatchObject({ key: { scope: 'read' }, organization: { name: 'Demo organization' } })
    expect((await mf.dispatchFetch('http://worker.test/api/v1/me')).status).toBe(401)
  })

  it('answers every keyed read of the registry exactly as the Node server does', { timeout: 120_000 }, async () => {
    const auth = { authorization: `Bearer ${readKey}` }
    const { sites } = (await (await fetch(`${server.url}/api/v1/sites?stats=0`, { headers: auth })).json()) as {
      sites: { id: string; domain: string }[]
    }
    const demo = sites.find((s) => s.domain === 'demo.example.com')!
    const reads = endpoints.filter((e) => e.method === 'GET' && e.path.startsWith('/api/v1') && e.scope === 'read')
    expect(reads.length).toBeGreaterThan(20)
    const statuses: Record<string, number> = {}
    for (const read of reads) {
      const siteParam = Object.keys(read.params?.shape ?? {}).find((name) => /^site_?id$/i.test(name))
      const query = new URLSearchParams({ ...(siteParam ? { [siteParam]: demo.id } : {}), ...REQUIRED[read.path], ...BY_ID[read.path] })
      const path = `${read.path.replace(/\{\w+\}/g, demo.id)}${query.size ? `?${query}` : ''}`
      // asked of both under one host, back to back; a live window that moved in between is asked again
      let same = false
      for (let attempt = 0; attempt < 3 && !same; attempt++) {
        const [viaNode, viaWorker] = await Promise.all([
          askNode(`${server.url}${path}`, { ...auth, host: 'worker.test' }),
          mf.dispatchFetch(`http://worker.test${path}`, { headers: auth }),
        ])
        const [a, b] = [viaNode.text, await viaWorker.text()]
        statuses[read.path] = viaNode.status
        same = viaNode.status === viaWorker.status && a === b
        if (!same && attempt === 2) expect({ path, status: viaWorker.status, body: b }).toEqual({ path, status: viaNode.status, body: a })
      }
    }
    // the site-scoped reads answer the demo site, not only agree on an error
    expect(Object.entries(statuses).filter(([path, status]) => status !== (path in BY_ID ? 404 : 200))).toEqual([])
  })

  it('answers crux=1 on the vitals read as the Node server does: no key on either, the rest of the answer intact', async () => {
    const auth = { authorization: `Bearer ${readKey}` }
    const { sites } = (await (await fetch(`${server.url}/api/v1/sites?stats=0`, { headers: auth })).json()) as {
      sites: { id: string; domain: string }[]
    }
    const demo = sites.find((s) => s.domain === 'demo.example.com')!
    const path = `/api/v1/vitals?site_id=${demo.id}&range=30d&crux=1&form_factor=phone`
    const [viaNode, viaWorker] = await Promise.all([
      askNode(`${server.url}${path}`, { ...auth, host: 'worker.test' }),
      mf.dispatchFetch(`http://worker.test${path}`, { headers: auth }),
    ])
    expect(viaWorker.status).toBe(200)
    expect(await viaWorker.text()).toBe(viaNode.text)
    const body = JSON.parse(viaNode.text)
    expect(body.crux).toEqual({
      available: false,
      origin: 'https://demo.example.com',
      formFactor: 'phone',
      reason: 'no CrUX API key is configured on this server (CRUX_API_KEY)',
    })
    expect(body.summary.samples).toBeGreaterThan(0)
  })

  it('serves a public shared dashboard with its server-drawn map, with the figures the Node server shows', async () => {
    const shared = await fetch(`${server.url}/api/v1/sites/${demoSite}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ shareLevel: 'link', isPublic: true }),
    })
    expect(shared.status).toBe(200)
    const visitors = (html: string) => /data-metric="visitors"><dt>[^<]*<\/dt><dd><span class="value">([^<]+)</.exec(html)?.[1]
    // each body is read as soon as it comes: an unread worker body may be cancelled while the other request runs
    const onWorker = await mf.dispatchFetch(`http://worker.test/share/${demoSite}?range=30d`)
    const workerHtml = await onWorker.text()
    expect(onWorker.status).toBe(200)
    const nodeHtml = await (await fetch(`${server.url}/share/${demoSite}?range=30d`)).text()
    expect(visitors(workerHtml)).toBeDefined()
    expect(visitors(workerHtml)).toBe(visitors(nodeHtml))
    const map = await mf.dispatchFetch(`http://worker.test/share/${demoSite}/panels/locations?range=30d`)
    expect(map.status).toBe(200)
    const mapHtml = await map.text()
    expect(mapHtml).toContain('<svg class="map"')
    expect((mapHtml.match(/<path d="/g) ?? []).length).toBeGreaterThan(100)
    await fetch(`${server.url}/api/v1/sites/${demoSite}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ shareLevel: 'none', isPublic: false }),
    })
  })

  it('writes through the worker are seen by the Node server, and the other way round', async () => {
    const created = await mf.dispatchFetch('http://worker.test/api/v1/sites', {
      method: 'POST',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'edge.example.com', timezone: 'Europe/Paris' }),
    })
    expect(created.status).toBe(201)
    const site = (await created.json()) as { id: string; snippetId: string }
    const viaNode = await fetch(`${server.url}/api/v1/sites/${site.snippetId}`, { headers: { authorization: `Bearer ${readKey}` } })
    expect(((await viaNode.json()) as { timezone: string }).timezone).toBe('Europe/Paris')
    const deleted = await mf.dispatchFetch(`http://worker.test/api/v1/sites/${site.id}?confirm=edge.example.com`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${writeKey}` },
    })
    expect(await deleted.json()).toEqual({ deleted: true, id: site.id })
    expect((await fetch(`${server.url}/api/v1/sites/${site.id}`, { headers: { authorization: `Bearer ${readKey}` } })).status).toBe(404)
  })

  it('collects an event and answers the public count through the Cache API', async () => {
    const sites = (await (
      await mf.dispatchFetch('http://worker.test/api/v1/sites?stats=0', { headers: { authorization: `Bearer ${readKey}` } })
    ).json()) as { sites: { id: string; snippetId: string; domain: string }[] }
    const demo = sites.sites.find((s) => s.domain === 'demo.example.com')!
    const event = await mf.dispatchFetch('http://worker.test/api/event', {
      method: 'POST',
      headers: {
        'content-type': 'text/plain',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
        'cf-connecting-ip': '8.8.8.8',
      },
      body: JSON.stringify({ site: demo.snippetId, name: 'pageview', url: 'https://demo.example.com/from-the-edge' }),
    })
    expect(event.status).toBe(202)
    expect((await mf.dispatchFetch(`http://worker.test/api/public/live?site=${demo.snippetId}`)).status).toBe(404)
    await mf.dispatchFetch(`http://worker.test/api/v1/sites/${demo.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ publicCounts: true }),
    })
    // the worker caches site settings for a few seconds, as ingestion does
    await new Promise((r) => setTimeout(r, 10_500))
    const live = await mf.dispatchFetch(`http://worker.test/api/public/live?site=${demo.snippetId}`)
    expect(live.status).toBe(200)
    expect(live.headers.get('cache-control')).toBe('public, max-age=10')
    const body = (await live.json()) as { visitors: number; range: string }
    expect(body).toMatchObject({ range: '5m' })
    expect(body.visitors).toBeGreaterThanOrEqual(1)
    const again = await mf.dispatchFetch(`http://worker.test/api/public/live?site=${demo.snippetId}`)
    expect(await again.json()).toEqual(body)
  })

  it('rebuilds the daily rollup on the cron trigger of every finished day', async () => {
    const local = JSON.parse(readFileSync(join(dataDir, 'local-endpoints.json'), 'utf8'))
    const token = readFileSync(join(dataDir, 'local-token'), 'utf8')
    const sql = async (query: string) => {
      const res = await fetch(local.url, { method: 'POST', body: query, headers: { authorization: `Basic ${btoa(`default:${token}`)}` } })
      expect(res.status, await res.clone().text()).toBe(200)
      return (await res.text()).trim()
    }
    // the rows the refresh builds: not those a read builds on demand (a filter's days, the spike
    // rule's visitors per hour and day, a funnel's levels), which earlier reads may have added
    const refreshed = "SELECT count() FROM day_rollups WHERE property NOT LIKE 'filters:%' AND property NOT LIKE 'visitors:%'"
    // the Node server rolls up the demo days at start; wait until that is done, then drop them all
    let built = ''
    for (let stable = 0; stable < 3; await new Promise((r) => setTimeout(r, 500))) {
      const now = await sql(refreshed)
      stable = now === built && now !== '0' ? stable + 1 : 0
      built = now
    }
    await sql('ALTER TABLE day_rollups DELETE WHERE 1 SETTINGS mutations_sync = 2')
    expect(await sql('SELECT count() FROM day_rollups')).toBe('0')
    const handler = (await mf.getWorker()) as unknown as { scheduled(event: { cron: string }): Promise<unknown> }
    await handler.scheduled({ cron: '17 */6 * * *' })
    expect(await sql(refreshed)).toBe(built)
  })

  it('serves the MCP tools: list and call', async () => {
    const url = (await mf.ready).toString()
    const reader = await mcpClient(url, readKey)
    const names = (await reader.listTools()).tools.map((t) => t.name)
    expect(names).toContain('get_site')
    expect(names).not.toContain('update_site_settings')
    const sites = await reader.callTool({ name: 'list_sites', arguments: {} })
    expect((sites.structuredContent as { sites: { domain: string }[] }).sites.map((s) => s.domain)).toContain('demo.example.com')
    const missing = await reader.callTool({ name: 'get_site', arguments: { site_id: 'zzzzzzzzzz' } })
    expect(missing.structuredContent).toEqual({ status: 404, error: 'site not found' })
    await reader.close()
    const writer = await mcpClient(url, writeKey)
    expect((await writer.listTools()).tools.map((t) => t.name)).toContain('update_site_settings')
    await writer.close()
    // 2026-07-28 from the same declarations: the same tools and answers
    const modern = await mcpClientV2(url, readKey)
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28')
    const v1 = await mcpClient(url, readKey)
    expect((await modern.listTools()).tools).toEqual((await v1.listTools()).tools)
    expect((await modern.callTool({ name: 'list_sites', arguments: {} })).structuredContent).toEqual(sites.structuredContent)
    expect((await modern.callTool({ name: 'get_site', arguments: { site_id: 'zzzzzzzzzz' } })).structuredContent).toEqual({
      status: 404,
      error: 'site not found',
    })
    await modern.close()
    await v1.close()
  })
})

describe('the worker entry', () => {
  it('answers 503 with one sentence naming the binding and what to run, when its environment is incomplete', async () => {
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} }
    const answer = async (env: object) => {
      const res = await worker.fetch(new Request('http://x/health'), env as never, ctx)
      expect(res.status).toBe(503)
      return ((await res.json()) as { error: string }).error
    }
    expect(await answer({})).toMatch(/CLICKHOUSE_URL.*npm run dev:worker/)
    expect(await answer({ CLICKHOUSE_URL: 'http://127.0.0.1:1', UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:2' })).toMatch(
      /UPSTASH_REDIS_REST_TOKEN/,
    )
  })
})
