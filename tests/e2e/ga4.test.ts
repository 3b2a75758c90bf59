import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expectedRows, ga4Sessions } from '../fakes/ga4-fixture'
import { type FakeGoogle, startFakeGoogle } from '../fakes/google'
import { Browser, connectGoogle } from '../google-connect'
import { tempDir } from '../helpers'
import { mcpClient } from './mcp-client'
import { type RunningServer, cli, demoKeys, startServer } from './server-process'

/**
 * Connecting a site to GA4 as a user does it, against the stand-in for Google: on the Node server
 * (REST, and the ga4 read through an MCP client), then under workerd (the Worker bundle, on the
 * Node server's stores): the connect page of the demo owner's browser, Google's consent, the
 * callback, the account confirmed, binding a property, and the import running in the background
 * until GET /imports says done with every row.
 */

const run = promisify(execFile)
const OFFLINE = { WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true', CLOUDFLARE_CF_FETCH_ENABLED: 'false' }
const SECRET = 'e2e-server-secret-0123456789abcdefghij'
const day = (daysAgo: number) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)

describe('GA4 on both homes', () => {
  // finished days only: whatever the site's zone, they are before its today
  const sessions = ga4Sessions({ from: day(6), days: 5, perDay: 10, users: 20 })
  const expected = expectedRows(sessions)
  let fake: FakeGoogle
  let server: RunningServer
  let mf: Miniflare
  let readKey = ''
  let writeKey = ''
  let siteId = ''
  const dataDir = tempDir('ga4-e2e')

  beforeAll(async () => {
    fake = await startFakeGoogle({
      properties: [{ propertyId: '4242', displayName: 'Shop', accountId: '77', accountName: 'Shop account', sessions }],
      maxPageRows: 25,
    })
    const google = { ...fake.env(), SERVER_SECRET: SECRET, OUTBOUND_ALLOW_PRIVATE: '1' }
    server = await startServer({
      DATA_DIR: dataDir,
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      CRAWLER: '0',
      // the connection and its import are what this reads: no demo traffic
      SKIP_DEMO_TRAFFIC: '1',
      ...google,
    })
    ;({ readKey, writeKey, site: siteId } = demoKeys(server.output()))
    const outdir = tempDir('ga4-worker-build')
    await run(process.execPath, ['node_modules/wrangler/bin/wrangler.js', 'deploy', '--dry-run', '--outdir', outdir], {
      env: { ...process.env, ...OFFLINE },
    })
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
        CRAWLER: '0',
        PUBLIC_URL: 'http://worker.test',
        ...google,
      },
    })
  }, 180_000)

  afterAll(async () => {
    await mf?.dispose()
    await server?.stop()
    await fake?.stop()
  })

  /** The demo owner's browser on the home at `origin`, signed in with a link of `admin login`. */
  async function ownerBrowser(origin: string, ask: (path: string, init?: RequestInit) => Promise<Response>) {
    const browser = new Browser(origin, (url, init) => ask(url.slice(origin.length), init))
    const { link } = await cli('admin', ['login', '--email', 'owner@demo.example.com', '--url', origin], {
      DATA_DIR: dataDir,
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      SERVER_SECRET: SECRET,
    })
    expect((await browser.open('/app/signin/link', { token: new URL(link).searchParams.get('token')! })).status).toBe(303)
    return browser
  }

  /** Connects, binds and waits for the import through `ask` (one home, at `origin`), returning the finished import. */
  async function connectBindImport(ask: (path: string, init?: RequestInit) => Promise<Response>, origin: string, site: string) {
    const auth = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' })
    const before = (await (await ask(`/api/v1/sites/${site}/ga4`, { headers: auth(writeKey) })).json()) as {
      connectUrl: string
      status: string
    }
    expect(before.status).toBe('not_connected')
    expect(before.connectUrl).toBe(`${origin}/app/sites/${site}/settings/google/connect`)
    // the owner's browser: the connect page, Google's consent, the callback, the account confirmed
    const { page } = await connectGoogle(await ownerBrowser(origin, ask), site)
    expect(page).toContain(fake.account)
    const listed = (await (await ask(`/api/v1/sites/${site}/ga4`, { headers: auth(readKey) })).json()) as {
      properties: { propertyId: string }[]
    }
    expect(listed.properties.map((p) => p.propertyId)).toEqual(['4242'])
    const bound = await ask(`/api/v1/sites/${site}/ga4`, {
      method: 'PATCH',
      headers: auth(writeKey),
      body: JSON.stringify({ propertyId: '4242' }),
    })
    expect(bound.status).toBe(200)
    for (let i = 0; i < 600; i++) {
      const { imports } = (await (await ask(`/api/v1/sites/${site}/imports`, { headers: auth(readKey) })).json()) as {
        imports: { kind: string; state: string; rows: number; from: string; error: string | null }[]
      }
      const ga4 = imports.find((r) => r.kind === 'ga4')
      if (ga4 && (ga4.state === 'done' || ga4.state === 'failed')) return ga4
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    throw new Error('the import did not finish')
  }

  it('on the Node server: connect, bind, import; the MCP client reads the connection', { timeout: 120_000 }, async () => {
    const reader = await mcpClient(server.url, readKey)
    const first = await reader.callTool({ name: 'get_ga4_connection', arguments: { site_id: siteId } })
    expect(first.structuredContent).toMatchObject({
      connected: false,
      status: 'not_connected',
      connectUrl: null,
      connectNote: expect.stringContaining('only an owner or admin connects Google'),
    })
    const done = await connectBindImport((path, init) => fetch(`${server.url}${path}`, init), server.url, siteId)
    expect(done).toMatchObject({ state: 'done', error: null, from: day(6), rows: expected.length })
    const after = await reader.callTool({ name: 'get_ga4_connection', arguments: { site_id: siteId } })
    expect(after.structuredContent).toMatchObject({
      connected: true,
      status: 'connected',
      propertyId: '4242',
      import: { state: 'done', rows: expected.length },
    })
    await reader.close()
  })

  it('under workerd: connect, bind, and the import in waitUntil, on the same stores', { timeout: 120_000 }, async () => {
    const ask = async (path: string, init?: RequestInit) => {
      const res = await mf.dispatchFetch(`http://worker.test${path}`, init as never)
      return res as unknown as Response
    }
    const created = await ask('/api/v1/sites', {
      method: 'POST',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'shop-on-workers.example.com', timezone: 'UTC' }),
    })
    expect(created.status).toBe(201)
    const site = ((await created.json()) as { id: string }).id
    const done = await connectBindImport(ask, 'http://worker.test', site)
    expect(done).toMatchObject({ state: 'done', error: null, from: day(6), rows: expected.length })
    // the Node server reads what the Worker stored
    const read = await fetch(`${server.url}/api/v1/sites/${site}`, { headers: { authorization: `Bearer ${readKey}` } })
    expect(((await read.json()) as { integrations: { ga4: unknown } }).integrations.ga4).toMatchObject({
      connected: true,
      propertyId: '4242',
      lastImport: { state: 'done', rows: expected.length },
    })
  })
})
