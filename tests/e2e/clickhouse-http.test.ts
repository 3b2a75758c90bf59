import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

/**
 * The Node home against a ClickHouse server over HTTP, as a production deployment runs: server A
 * holds the embedded stores (with the demo) and serves them over the ClickHouse HTTP and Upstash
 * REST protocols on loopback; server B is a production start pointed at those endpoints. The core
 * reads answer the same on both, and hits B collects are stored through the HTTP client.
 */
describe('the Node server over a ClickHouse HTTP endpoint', () => {
  let embedded: RunningServer
  let overHttp: RunningServer
  let keys: ReturnType<typeof demoKeys>
  const none = { REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', CRAWLER: '0' }

  beforeAll(async () => {
    const dataDir = tempDir('clickhouse-http-embedded')
    embedded = await startServer({ DATA_DIR: dataDir, ...none })
    keys = demoKeys(embedded.output())
    const local = JSON.parse(readFileSync(join(dataDir, 'local-endpoints.json'), 'utf8'))
    const token = readFileSync(join(dataDir, 'local-token'), 'utf8')
    overHttp = await startServer({
      ...none,
      DATA_DIR: tempDir('clickhouse-http-server'),
      CLICKHOUSE_URL: local.url,
      CLICKHOUSE_PASSWORD: token,
      UPSTASH_REDIS_REST_URL: `${local.url}/redis`,
      UPSTASH_REDIS_REST_TOKEN: token,
      // the embedded store A serves holds its keys unprefixed
      REDIS_PREFIX: '',
    })
  }, 180_000)
  afterAll(async () => {
    await overHttp?.stop()
    await embedded?.stop()
  })

  const read = async (server: RunningServer, path: string) => {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${keys.readKey}` } })
    const body = (await res.json()) as Record<string, unknown>
    return { status: res.status, body }
  }

  it('is a production start: it makes no demo of its own and reaches the same sites', async () => {
    expect(overHttp.output()).not.toContain('First start')
    // the snippet names the server it is read from; everything else is the same record
    const sites = async (server: RunningServer) =>
      ((await read(server, '/api/v1/sites')).body.sites as Record<string, unknown>[]).map(({ snippet, ...site }) => site)
    const expected = await sites(embedded)
    expect(expected.length).toBeGreaterThan(0)
    expect(await sites(overHttp)).toEqual(expected)
  })

  it('answers every core read exactly as the in-process engine does', { timeout: 120_000 }, async () => {
    const filter = (dimension: string, value: string) => encodeURIComponent(JSON.stringify([{ dimension, operator: 'is', value: [value] }]))
    const paths = [
      `/api/v1/stats?site_id=${keys.site}&range=30d`,
      `/api/v1/stats?site_id=${keys.site}&range=7d`,
      `/api/v1/timeseries?site_id=${keys.site}&range=30d`,
      `/api/v1/timeseries?site_id=${keys.site}&range=today`,
      `/api/v1/breakdown?site_id=${keys.site}&range=30d&property=path&limit=50`,
      `/api/v1/breakdown?site_id=${keys.site}&range=30d&property=source&limit=50`,
      `/api/v1/breakdown?site_id=${keys.site}&range=30d&property=country`,
      `/api/v1/stats?site_id=${keys.site}&range=30d&filters=${filter('device', 'Mobile')}`,
      `/api/v1/breakdown?site_id=${keys.site}&range=30d&property=path&filters=${filter('source', 'Google')}`,
    ]
    for (const path of paths) {
      const a = await read(embedded, path)
      const b = await read(overHttp, path)
      expect(a.status, path).toBe(200)
      expect(b, path).toEqual(a)
    }
    // the demo has traffic: equal answers are not two empty ones
    const stats = (await read(overHttp, paths[0])).body as { totals: { visitors: number } }
    expect(stats.totals.visitors).toBeGreaterThan(100)
  })

  it('stores the hits it collects through the HTTP client, each once', { timeout: 120_000 }, async () => {
    const { sites } = (await read(overHttp, '/api/v1/sites')).body as { sites: { snippetId: string; domain: string }[] }
    const demo = sites[0]
    const run = crypto.randomUUID().slice(0, 8)
    // 12 visitors (distinct browsers), the first 5 of them viewing a second page
    const hits: [number, string][] = [
      ...Array.from({ length: 12 }, (_, i): [number, string] => [i, `/over-http-${run}/a`]),
      ...Array.from({ length: 5 }, (_, i): [number, string] => [i, `/over-http-${run}/b`]),
    ]
    for (const [visitor, path] of hits) {
      const res = await fetch(`${overHttp.url}/api/event`, {
        method: 'POST',
        headers: {
          'content-type': 'text/plain',
          'user-agent': `Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0 v${visitor}`,
        },
        body: JSON.stringify({ site: demo.snippetId, name: 'pageview', url: `https://${demo.domain}${path}` }),
      })
      expect(res.status).toBe(202)
    }
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'contains', value: [`/over-http-${run}/`] }]))
    const path = `/api/v1/breakdown?site_id=${keys.site}&range=today&property=path&filters=${filters}`
    const expected = [
      { value: `/over-http-${run}/a`, visitors: 12, pageviews: 12 },
      { value: `/over-http-${run}/b`, visitors: 5, pageviews: 5 },
    ]
    const deadline = Date.now() + 60_000
    let rows: unknown[] = []
    while (Date.now() < deadline) {
      const res = await read(overHttp, path)
      rows = ((res.body.results as { value: string; visitors: number; pageviews: number }[]) ?? []).map((r) => ({
        value: r.value,
        visitors: r.visitors,
        pageviews: r.pageviews,
      }))
      if (rows.length === 2 && (rows as typeof expected)[1].pageviews === 5) break
      await new Promise((r) => setTimeout(r, 500))
    }
    expect(rows).toEqual(expected)
    // and the embedded engine's own server reads the same rows
    expect((await read(embedded, path)).body).toEqual((await read(overHttp, path)).body)
  })
})
