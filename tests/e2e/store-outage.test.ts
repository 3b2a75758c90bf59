import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type OwnRedis, REDIS_SERVER, startOwnRedis } from '../own-redis'
import { type RunningServer, demoKeys, startServer } from './server-process'

describe.skipIf(!REDIS_SERVER)('a Redis that stalls or goes away (a server of its own, paused with SIGSTOP, then killed)', () => {
  let redis: OwnRedis
  let server: RunningServer
  let key = ''
  let writeKey = ''
  let demoSite = ''
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const started = Date.now()
    const res = await fetch(`${server.url}${path}`, { headers })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), json: await res.json(), ms: Date.now() - started }
  }
  /** An answer of any kind (an HTML page, JSON) with its status and Retry-After. */
  const send = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${server.url}${path}`, { redirect: 'manual', ...init })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), text: await res.text(), headers: res.headers }
  }
  /** A site made now and read once, so this process holds it (the site directory's cache) but no daily salt of it. */
  const freshSiteInCache = async () => {
    const made = await send('/api/v1/sites', {
      method: 'POST',
      headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ domain: `outage-${crypto.randomUUID().slice(0, 8)}.example.com` }),
    })
    expect(made.status).toBe(201)
    const site = JSON.parse(made.text) as { id: string; snippetId: string; domain: string }
    expect((await get(`/api/v1/sites/${site.id}`, { authorization: `Bearer ${key}` })).status).toBe(200)
    return site
  }
  /** The status of a keyed read once it is 200, or after ten seconds of trying. */
  const statusOnceHealed = async () => {
    let status = 0
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await get('/api/v1/me', { authorization: `Bearer ${key}` })).status
      if (status !== 200) await new Promise((r) => setTimeout(r, 200))
    }
    return status
  }
  const hit = (site: { snippetId: string; domain: string }) =>
    send('/api/event', {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' },
      body: JSON.stringify({ site: site.snippetId, name: 'pageview', url: `https://${site.domain}/` }),
    })

  beforeAll(async () => {
    redis = await startOwnRedis()
    server = await startServer({
      DATA_DIR: tempDir('outage'),
      REDIS_URL: redis.url,
      KV_TIMEOUT_MS: '1000',
      DEMO: '1',
      SKIP_DEMO_TRAFFIC: '1',
      LOG_LEVEL: 'error',
    })
    ;({ readKey: key, writeKey, site: demoSite } = demoKeys(server.output()))
  })
  afterAll(async () => {
    await server?.stop()
    await redis?.kill()
  })

  it('answers 503 with Retry-After while Redis is paused, /health names it, and all heals when Redis resumes', async () => {
    const auth = { authorization: `Bearer ${key}` }
    expect((await get('/api/v1/me', auth)).status).toBe(200)
    redis.pause()
    try {
      const stalled = await get('/api/v1/me', auth)
      expect(stalled.status).toBe(503)
      expect(stalled.retryAfter).toMatch(/^\d+$/)
      expect(stalled.json.error).toMatch(/key\/value store is unavailable; retry in \d+ s/)
      const health = await get('/health')
      expect(health.status).toBe(503)
      expect(health.json).toMatchObject({ status: 'degraded', clickhouse: 'ok', keyValue: 'unavailable' })
      // and since when: the first check that saw it fail, kept by later ones
      const since = health.json.failingSince.keyValue
      expect(new Date(since).getTime()).toBeGreaterThan(Date.now() - 60_000)
      expect((await get('/health')).json.failingSince).toEqual({ keyValue: since })
    } finally {
      redis.resume()
    }
    // it heals by itself
    expect(await statusOnceHealed()).toBe(200)
    const recovered = await get('/health')
    expect(recovered.status).toBe(200)
    expect(recovered.json).toEqual({ status: 'ok', clickhouse: 'ok', keyValue: 'ok', collector: expect.objectContaining({ status: 'ok' }) })
  })

  it('answers the first hit of a site, the web application, shared dashboards and MCP with 503 and Retry-After while Redis is paused', async () => {
    // a session of the demo owner, from the one-time link of the first-start banner
    const token = /\/app\/signin\/link\?token=(\w+)/.exec(server.stdout())![1]
    const signedIn = await send('/app/signin/link', {
      method: 'POST',
      headers: { origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    })
    expect(signedIn.status).toBe(303)
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]
    expect((await send('/app', { headers: { cookie } })).status).toBe(200)
    const site = await freshSiteInCache()
    redis.pause()
    try {
      // the site is known here; its salt for today is not: the salt's pipelined write meets the stall
      const first = await hit(site)
      expect(first.status).toBe(503)
      expect(first.retryAfter).toMatch(/^\d+$/)
      expect(JSON.parse(first.text).error).toMatch(/key\/value store is unavailable/)

      const pages: [string, RequestInit][] = [
        ['/app', { headers: { cookie } }],
        [`/app/sites/${demoSite}`, { headers: { cookie } }],
        [
          '/app/signin',
          {
            method: 'POST',
            headers: { origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
            body: 'email=someone%40example.com',
          },
        ],
        [`/share/${demoSite}`, {}],
      ]
      for (const [path, init] of pages) {
        const page = await send(path, init)
        expect({ path, status: page.status, retryAfter: page.retryAfter }).toEqual({
          path,
          status: 503,
          retryAfter: expect.stringMatching(/^\d+$/),
        })
        expect(page.text).toMatch(/The service is briefly unavailable; try again in \d+ seconds/)
      }

      // an MCP call: the request's key lookup answers 503 itself, or (the key still held here) the tool call fails as 503
      const mcp = await send('/api/mcp', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
      })
      if (mcp.status === 503) expect(mcp.retryAfter).toMatch(/^\d+$/)
      else
        expect(JSON.parse(mcp.text).result).toMatchObject({
          isError: true,
          structuredContent: { status: 503, error: expect.stringMatching(/key\/value store is unavailable; retry in \d+ s/) },
        })
    } finally {
      redis.resume()
    }
    expect(await statusOnceHealed()).toBe(200)
  })

  it('answers 503, never 500, once Redis refuses connections', async () => {
    const site = await freshSiteInCache()
    await redis.kill()
    const gone = await get('/api/v1/me', { authorization: `Bearer ${key}` })
    expect(gone.status).toBe(503)
    expect(gone.json.error).toMatch(/key\/value store is unavailable/)
    expect((await get('/health')).status).toBe(503)
    // the salt's pipelined write finds no server (ioredis: "Reached the max retries per request limit")
    const first = await hit(site)
    expect(first.status).toBe(503)
    expect(first.retryAfter).toMatch(/^\d+$/)
  })
})
