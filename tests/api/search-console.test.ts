import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { DEFAULT_USER_AGENT } from '../../lib/crawl/config'
import { runCrawls } from '../../lib/crawl/crawl'
import { importHits } from '../../lib/ingest/import'
import { type SearchConsoleConnection, listSearchConsoleSites as listSites } from '../../lib/integrations/search-console/client'
import {
  bindSearchConsole,
  searchConsoleProperties,
  searchConsoleState,
  unbindSearchConsole,
  validateSiteUrl,
} from '../../lib/integrations/search-console/connection'
import { importSearchConsole, runSearchConsoleImports } from '../../lib/integrations/search-console/import'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { REDIS_URL, UNPACED_IMPORTS, client, getOk, testServices } from '../helpers'
import { type FixtureRow, aggregate, fakeSearchConsole } from '../fakes/search-console'
import { UAS } from './report-reference'

/**
 * Search Console end to end against the fake: binding checks the property, the import pages
 * through 16 months with one 429 on the way, and the reads explain planted cases. /rank loses
 * rank for its main query the day its title changes (and half its Google visits, first party);
 * /ctr keeps its rank and impressions but its ctr halves; /demand keeps rank and ctr but loses
 * impressions (and first-party Google visits, without any page change); /lost stops showing for
 * the query that brought most clicks; /control holds, with anonymized queries beside it. Expected
 * numbers come from the fixture rows by the small references below; diagnoses are the planted ones.
 */

const DAY = 86_400_000
const NOW = Date.parse('2026-11-22T15:00:00Z')
const START = Date.parse('2026-09-01T00:00:00Z')
const CHANGE_DAY = '2026-11-08'
const FIRST_CRAWL = Date.parse('2026-08-20T09:00:00Z')
const SECOND_CRAWL = Date.parse(`${CHANGE_DAY}T09:00:00Z`)
const FRESH = ['2026-11-19', '2026-11-20', '2026-11-21']
const ORIGIN = 'https://www.example.com'
const PROPERTY = 'sc-domain:example.com'
const GOOGLE = 'https://www.google.com/'
const utcDay = (ts: number) => new Date(ts).toISOString().slice(0, 10)

/** The fixture's search rows per day: before and after CHANGE_DAY. */
function searchRows(): FixtureRow[] {
  const rows: FixtureRow[] = []
  const row = (
    date: string,
    path: string,
    query: string,
    country: string,
    device: FixtureRow['device'],
    c: number,
    i: number,
    p: number,
    anonymized = false,
  ) =>
    rows.push({
      date,
      query,
      page: `${ORIGIN}${path}`,
      country,
      device,
      clicks: c,
      impressions: i,
      position: p,
      ...(anonymized ? { anonymized } : {}),
    })
  for (let d = START; d + DAY <= NOW; d += DAY) {
    const day = utcDay(d)
    const after = day >= CHANGE_DAY
    row(day, '/rank', 'blue widgets', 'usa', 'DESKTOP', after ? 4 : 20, 200, after ? 8 : 3)
    row(day, '/rank', 'widgets', 'gbr', 'MOBILE', 2, 50, 5)
    row(day, '/ctr', 'green gadgets', 'deu', 'MOBILE', after ? 10 : 20, 100, 2)
    row(day, '/demand', 'winter coats', 'usa', 'MOBILE', after ? 5 : 15, after ? 100 : 300, 4)
    if (!after) row(day, '/lost', 'old thing', 'usa', 'DESKTOP', 10, 40, 2)
    row(day, '/lost', 'other thing', 'deu', 'DESKTOP', 1, 10, 9)
    row(day, '/control', 'red tools', 'usa', 'DESKTOP', 12, 120, 3)
    row(day, '/control', 'red tool set', 'gbr', 'TABLET', 3, 30, 6)
    row(day, '/control', '(anonymized)', 'fra', 'DESKTOP', 5, 50, 7, true)
  }
  return rows
}

/** clicks, impressions, ctr and weighted position of rows, as the API rounds them. */
function reference(rows: FixtureRow[]) {
  const clicks = rows.reduce((a, r) => a + r.clicks, 0)
  const impressions = rows.reduce((a, r) => a + r.impressions, 0)
  const weighted = rows.reduce((a, r) => a + r.position * r.impressions, 0)
  const r4 = (x: number) => Math.round(x * 10_000) / 10_000
  return {
    clicks,
    impressions,
    ctr: impressions ? r4(clicks / impressions) : null,
    position: impressions ? r4(weighted / impressions) : null,
  }
}

const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>Heading</h1><article><p>The same text on every crawl.</p></article></body></html>`

describe('Search Console: bind, import, and explain search traffic', () => {
  let now = FIRST_CRAWL
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let fake: Awaited<ReturnType<typeof fakeSearchConsole>>
  let server: Server
  let read = ''
  let siteId = ''
  let otherSiteId = ''
  let token = 'expired-token'
  let refreshes = 0
  let connection: SearchConsoleConnection
  const rows = searchRows()
  let pages: Record<string, string> = {}

  beforeAll(async () => {
    fake = await fakeSearchConsole({
      sites: [
        { siteUrl: PROPERTY, permissionLevel: 'siteOwner' },
        { siteUrl: `${ORIGIN}/`, permissionLevel: 'siteFullUser' },
        { siteUrl: 'https://unverified.example/', permissionLevel: 'siteUnverifiedUser' },
      ],
      rows: { [PROPERTY]: rows },
      freshDays: FRESH,
    })
    connection = {
      baseUrl: fake.url,
      fetch: guardedFetch({ allowPrivate: true }),
      accessToken: async () => token,
      onUnauthorized: async () => {
        refreshes++
        token = 'token-1'
      },
    }
    pages = {
      '/robots.txt': 'User-agent: *\nAllow: /\n\nSitemap: ORIGIN/sitemap.xml\n',
      '/sitemap.xml': `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${['/rank', '/demand', '/control'].map((p) => `<url><loc>ORIGIN${p}</loc></url>`).join('')}</urlset>`,
      '/rank': page('Blue widgets | Shop'),
      '/demand': page('Winter coats | Shop'),
      '/control': page('Red tools | Shop'),
    }
    server = createServer((req, res) => {
      const body = pages[new URL(req.url ?? '/', 'http://x').pathname]
      if (body === undefined) return void res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>no</body></html>')
      const type = body.startsWith('<?xml') ? 'application/xml' : body.startsWith('User-agent') ? 'text/plain' : 'text/html; charset=utf-8'
      res.writeHead(200, { 'content-type': type }).end(body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    for (const name of ['/robots.txt', '/sitemap.xml']) pages[name] = pages[name].replaceAll('ORIGIN', origin)
    services = await testServices({
      kv: REDIS_URL ? 'redis' : 'embedded',
      ownKeys: true,
      now: () => new Date(now),
      limits: UNPACED_IMPORTS,
    })
    services.crawler = {
      fetch: guardedFetch({ allowPrivate: true, maxBytes: 64 * 1024, timeoutMs: 5000 }),
      userAgent: DEFAULT_USER_AGENT,
      hostIntervalMs: 0,
      maxQueuedPings: 3,
      siteRunMs: 60_000,
      siteOrigin: () => origin,
    }
    call = client(services)
    const org = await createOrg(services.repositories, 'Search', new Date(now))
    const write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, new Date(now))).key
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, new Date(now))).key
    const domain = `shop-${crypto.randomUUID().slice(0, 8)}.test`
    const created = await call('POST', '/api/v1/sites', { key: write, body: { domain, timezone: 'UTC' } })
    siteId = created.json.id
    otherSiteId = (await call('POST', '/api/v1/sites', { key: write, body: { domain: `other-${domain}`, timezone: 'UTC' } })).json.id
    const crawl = async () => {
      const failures: string[] = []
      await runCrawls(services, services.crawler!, { log: (line) => failures.push(line) })
      expect(failures).toEqual([])
    }
    await crawl()
    // first-party visits: /rank and /demand come from Google and fall to a quarter on CHANGE_DAY; /control holds
    const hits: { ts: number; path: string; referrer: string | null }[] = []
    for (let d = START; d < NOW - 3_600_000; d += DAY) {
      const day = utcDay(d)
      const perDay = { '/rank': day < CHANGE_DAY ? 40 : 10, '/demand': day < CHANGE_DAY ? 40 : 10, '/control': 100 }
      for (const [path, n] of Object.entries(perDay))
        for (let i = 0; i < n; i++) {
          const ts = d + Math.floor(((i + 0.5) * DAY) / n)
          if (ts < NOW - 3_600_000) hits.push({ ts, path, referrer: path === '/control' ? null : GOOGLE })
        }
    }
    hits.sort((a, b) => a.ts - b.ts)
    const lines = hits.map((h, n) =>
      JSON.stringify({
        timestamp: new Date(h.ts).toISOString(),
        site: created.json.snippetId,
        name: 'pageview',
        url: `https://${domain}${h.path}`,
        referrer: h.referrer,
        ip: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
        userAgent: UAS[n % UAS.length],
      }),
    )
    now = NOW
    const result = await importHits(lines, services.ingestor)
    expect(result.rejected).toBe(0)
    // the title of /rank changes on CHANGE_DAY
    now = SECOND_CRAWL
    pages['/rank'] = page('Widgets, all colours | Shop')
    await crawl()
    now = NOW
  }, 600_000)

  afterAll(async () => {
    await fake?.close()
    await new Promise((resolve) => server?.close(resolve))
  })

  const get = (path: string) => getOk(call, path, read)
  const inWindow = (from: string, to: string, filter: (r: FixtureRow) => boolean = () => true) =>
    rows.filter((r) => r.date >= from && r.date <= to && filter(r))

  it('lists the properties (an expired token refreshed once) and refuses an unknown or unverified one, naming it', async () => {
    const properties = await searchConsoleProperties(connection)
    expect(refreshes).toBe(1)
    expect(properties).toEqual([
      { siteUrl: `${ORIGIN}/`, kind: 'url_prefix', permissionLevel: 'siteFullUser', verified: true },
      { siteUrl: PROPERTY, kind: 'domain', permissionLevel: 'siteOwner', verified: true },
      { siteUrl: 'https://unverified.example/', kind: 'url_prefix', permissionLevel: 'siteUnverifiedUser', verified: false },
    ])
    await expect(validateSiteUrl(connection, 'https://unverified.example/')).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('"https://unverified.example/" is not verified'),
    })
    await expect(validateSiteUrl(connection, 'sc-domain:nope.example')).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('"sc-domain:nope.example" is not a Search Console property'),
    })
    await expect(validateSiteUrl(connection, 'ftp://x.example/')).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('ftp://x.example/'),
    })
    // a token never shows in an error
    token = 'bad'
    const failing = { ...connection, onUnauthorized: async () => {} }
    await expect(listSites(failing)).rejects.toThrow(/refused the connection’s token/)
    await expect(listSites(failing)).rejects.not.toThrow(/bad/)
    token = 'token-1'
  })

  it('reads answer connected: false before a property is bound', async () => {
    expect(await get(`/api/v1/search?site_id=${siteId}`)).toEqual({ connected: false, siteUrl: null })
    // seo takes the common source parameter: it reads Search Console whichever it names, and echoes it
    expect(await get(`/api/v1/seo?site_id=${siteId}`)).toEqual({ source: 'standalone', connected: false, siteUrl: null })
    const detail = await get(`/api/v1/pages/detail?site_id=${siteId}&path=/rank`)
    expect(detail.search).toEqual({ connected: false })
  })

  it('binds the property and imports 16 months, paging by startRow, through a 429, final for settled days and all for the last three', async () => {
    const site = (await services.repositories.sites.get(siteId))!
    const bound = await bindSearchConsole({ ...services, sites: services.sites }, connection, site, PROPERTY)
    expect(bound.site.integrations.searchConsole).toMatchObject({ connected: true, siteUrl: PROPERTY })
    // yesterday back to the same day 16 months before, both included
    const expectedDays = (Date.parse('2026-11-21') - Date.parse('2025-07-21')) / DAY + 1
    expect(bound.import).toMatchObject({ state: 'queued', daysTotal: expectedDays, from: '2025-07-21', to: '2026-11-21' })
    const fresh = (await services.repositories.sites.get(siteId))!
    fake.failNext(429, 20)
    const first = await importSearchConsole({ ...services, connection }, fresh, new Date(NOW), { rowLimit: 4 })
    // the wait the 429 asked for (Retry-After: 30), from the moment it came
    expect(first).toMatchObject({ state: 'waiting', failures: 1 })
    expect(Date.parse(first!.retryAt!) - NOW).toBeGreaterThanOrEqual(30_000)
    expect(Date.parse(first!.retryAt!) - NOW).toBeLessThan(60_000)
    expect(first!.error).toMatch(/quota/)
    // the job of due imports is to go on then, not at its ten-minute run
    expect(await services.repositories.importWakeups.list()).toContainEqual({
      kind: 'search_console',
      siteId,
      atMs: Date.parse(first!.retryAt!),
    })
    const asked = fake.queries.length
    // before retryAt nothing is asked
    expect(await importSearchConsole({ ...services, connection }, fresh, new Date(NOW + 29_000), { rowLimit: 4 })).toMatchObject({
      state: 'waiting',
    })
    expect(fake.queries.length).toBe(asked)
    const done = await importSearchConsole({ ...services, connection }, fresh, new Date(NOW + 61_000), { rowLimit: 4 })
    expect(done).toMatchObject({ state: 'done', daysDone: expectedDays, failures: 0, error: null })
    // every day asked with its data state; a full page of 4 asks for the next
    const ok = fake.queries.filter((q) => q.status === 200)
    for (const q of ok) expect(q.body.dataState, q.body.startDate).toBe(FRESH.includes(q.body.startDate) ? 'all' : 'final')
    const day = ok.filter((q) => q.body.startDate === '2026-11-10' && q.body.dimensions!.includes('query'))
    expect(day.map((q) => q.body.startRow)).toEqual([0, 4])
    expect(day.every((q) => q.body.rowLimit === 4)).toBe(true)
    // stored: the totals hold the anonymized queries, the rows do not
    const stored = await services.clickhouse.query<{ t: string; r: string }>(
      `SELECT (SELECT sum(clicks) FROM search_console_totals FINAL WHERE site_id = {s:UUID}) AS t,
              (SELECT sum(clicks) FROM search_console_rows FINAL WHERE site_id = {s:UUID}) AS r`,
      { s: siteId },
    )
    const perDayStored = await services.clickhouse.query<{ d: string; c: string }>(
      'SELECT toString(date) AS d, sum(clicks) AS c FROM search_console_totals FINAL WHERE site_id = {s:UUID} GROUP BY d ORDER BY d',
      { s: siteId },
    )
    const got = new Map(perDayStored.map((r) => [r.d, Number(r.c)]))
    const missing = [...new Set(rows.map((r) => r.date))].filter((d) => got.get(d) !== reference(rows.filter((r) => r.date === d)).clicks)
    expect(missing).toEqual([])
    expect(Number(stored[0].t)).toBe(reference(rows).clicks)
    expect(Number(stored[0].r)).toBe(reference(rows.filter((r) => !r.anonymized)).clicks)
    const days = [...new Set(rows.map((r) => r.date))]
    const perDay = (d: string, dimensions: string[]) =>
      aggregate(
        rows.filter((r) => r.date === d),
        dimensions,
      ).length
    expect(done!.rows).toBe(
      days.reduce((n, d) => n + perDay(d, ['date', 'query', 'page', 'country', 'device']) + perDay(d, ['date', 'country', 'device']), 0),
    )
  }, 300_000)

  const range = 'range=custom&from=2026-11-08&to=2026-11-21'

  it('search: totals with anonymized queries, the previous window, a daily series, top queries and pages with their change', async () => {
    const json = await get(`/api/v1/search?site_id=${siteId}&${range}&limit=3`)
    const cur = inWindow('2026-11-08', '2026-11-21')
    const prev = inWindow('2026-10-25', '2026-11-07')
    expect(json).toMatchObject({ connected: true, siteUrl: PROPERTY, totals: reference(cur), previous: reference(prev) })
    expect(json.series).toHaveLength(14)
    expect(json.series[0]).toEqual({ date: '2026-11-08', ...reference(inWindow('2026-11-08', '2026-11-08')) })
    const byQuery = (list: FixtureRow[]) => {
      const m = new Map<string, FixtureRow[]>()
      for (const r of list.filter((r) => !r.anonymized)) m.set(r.query, [...(m.get(r.query) ?? []), r])
      return m
    }
    const top = [...byQuery(cur)]
      .map(([query, of]) => ({ query, ...reference(of) }))
      .sort((a, b) => b.clicks - a.clicks || b.impressions - a.impressions || (a.query < b.query ? -1 : 1))
      .slice(0, 3)
    expect(json.queries.map(({ change: _c, ...q }: { change: unknown }) => q)).toEqual(top)
    const before = reference(byQuery(prev).get(top[0].query)!)
    expect(json.queries[0].change).toEqual({
      clicks: top[0].clicks - before.clicks,
      impressions: top[0].impressions - before.impressions,
      ctr: Math.round((top[0].ctr! - before.ctr!) * 10_000) / 10_000,
      position: Math.round((top[0].position! - before.position!) * 10_000) / 10_000,
    })
    // the rows add up to less than the totals: Search Console hides anonymized queries from them
    const rowClicks = reference(cur.filter((r) => !r.anonymized)).clicks
    expect(rowClicks).toBeLessThan(json.totals.clicks)
    expect(json.pages[0]).toMatchObject({ path: '/control', ...reference(cur.filter((r) => r.page.endsWith('/control') && !r.anonymized)) })
  })

  it('search with compare: the totals of the compared window and their change, previous unchanged', async () => {
    const json = await get(`/api/v1/search?site_id=${siteId}&${range}&compare=custom&compare_from=2026-10-18&compare_to=2026-10-31`)
    const cur = reference(inWindow('2026-11-08', '2026-11-21'))
    const was = reference(inWindow('2026-10-18', '2026-10-31'))
    expect(was.clicks).toBeGreaterThan(0)
    expect(json.previous).toEqual(reference(inWindow('2026-10-25', '2026-11-07')))
    expect(json.comparison).toMatchObject({ mode: 'custom', range: { from: expect.stringMatching(/^2026-10-18T00:00:00/) }, totals: was })
    const relative = (a: number, b: number) => (b === 0 ? null : Math.round(((a - b) / b) * 10_000) / 10_000)
    expect(json.comparison.change.clicks).toEqual({ absolute: cur.clicks - was.clicks, relative: relative(cur.clicks, was.clicks) })
    expect(json.comparison.change.impressions).toEqual({
      absolute: cur.impressions - was.impressions,
      relative: relative(cur.impressions, was.impressions),
    })
  })

  it('search: one page’s trend and queries, one query’s pages, filters, and a 400 naming a dimension it does not have', async () => {
    const pageJson = await get(`/api/v1/search?site_id=${siteId}&${range}&dimension=page&value=/rank`)
    expect(pageJson.totals).toEqual(reference(inWindow('2026-11-08', '2026-11-21', (r) => r.page.endsWith('/rank'))))
    expect(pageJson.queries.map((q: { query: string }) => q.query)).toEqual(['blue widgets', 'widgets'])
    expect(pageJson.pages.map((p: { path: string }) => p.path)).toEqual(['/rank'])
    const queryJson = await get(`/api/v1/search?site_id=${siteId}&${range}&dimension=query&value=${encodeURIComponent('blue widgets')}`)
    expect(queryJson.pages).toEqual([
      expect.objectContaining({ path: '/rank', ...reference(inWindow('2026-11-08', '2026-11-21', (r) => r.query === 'blue widgets')) }),
    ])
    const filters = encodeURIComponent(
      JSON.stringify([
        { dimension: 'country', operator: 'is', value: ['DE'] },
        { dimension: 'device', operator: 'is', value: ['mobile'] },
      ]),
    )
    const filtered = await get(`/api/v1/search?site_id=${siteId}&${range}&filters=${filters}`)
    expect(filtered.totals).toEqual(reference(inWindow('2026-11-08', '2026-11-21', (r) => r.country === 'deu' && r.device === 'MOBILE')))
    const bad = await call(
      'GET',
      `/api/v1/search?site_id=${siteId}&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'browser', operator: 'is', value: ['x'] }]))}`,
      { key: read },
    )
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/"browser" is not a Search Console dimension/)
    expect((await call('GET', `/api/v1/search?site_id=${siteId}&value=x`, { key: read })).status).toBe(400)
    expect(await get(`/api/v1/search?site_id=${otherSiteId}`)).toEqual({ connected: false, siteUrl: null })
  })

  it('seo: every landing page diagnosed by the rules, most clicks lost first, the title change a candidate', async () => {
    const json = await get(`/api/v1/seo?site_id=${siteId}&${range}`)
    const paths = ['/rank', '/ctr', '/demand', '/lost', '/control']
    const expected = paths
      .map((path) => {
        const of = (from: string, to: string) => inWindow(from, to, (r) => r.page === `${ORIGIN}${path}` && !r.anonymized)
        const c = reference(of('2026-11-08', '2026-11-21'))
        const p = reference(of('2026-10-25', '2026-11-07'))
        return { path, clicks: c.clicks, previousClicks: p.clicks, lost: p.clicks - c.clicks, position: c.position }
      })
      .sort((a, b) => b.lost - a.lost || b.previousClicks - a.previousClicks)
    expect(json.pages.map((p: { path: string; clicks: number; lostClicks: number }) => [p.path, p.clicks, p.lostClicks])).toEqual(
      expected.map((e) => [e.path, e.clicks, Math.max(0, e.lost)]),
    )
    const diagnosis = Object.fromEntries(json.pages.map((p: { path: string; diagnosis: string }) => [p.path, p.diagnosis]))
    expect(diagnosis).toEqual({
      '/rank': 'rank_drop',
      '/ctr': 'ctr_drop',
      '/demand': 'demand_drop',
      '/lost': 'lost_queries',
      '/control': 'stable',
    })
    const lost = json.pages.find((p: { path: string }) => p.path === '/lost')
    expect(lost.lostQueries).toEqual([{ query: 'old thing', previousClicks: 140 }])
    const rank = json.pages.find((p: { path: string }) => p.path === '/rank')
    expect(rank.candidates.map((c: { type: string; before: string; after: string }) => [c.type, c.before, c.after])).toEqual([
      ['title', 'Blue widgets | Shop', 'Widgets, all colours | Shop'],
    ])
    expect(json.pages.find((p: { path: string }) => p.path === '/control').candidates).toEqual([])
  })

  it('page detail: the title change first, then search_rank_drop with the queries; search lists the ranking queries', async () => {
    const json = await get(`/api/v1/pages/detail?site_id=${siteId}&path=/rank&range=30d`)
    expect(json.shift).toMatchObject({ day: CHANGE_DAY, direction: 'down' })
    expect(json.causes.map((c: { kind: string; confidence: number }) => [c.kind, c.confidence])).toEqual([
      ['page_change', 0.8],
      ['search_rank_drop', 0.7],
    ])
    expect(json.causes[0].evidence.changes.map((c: { type: string }) => c.type)).toEqual(['title'])
    const search = json.causes[1].evidence
    // across the shift: the 7 days before against the 7 from it
    expect(search.before).toEqual(reference(inWindow('2026-11-01', '2026-11-07', (r) => r.page.endsWith('/rank'))))
    expect(search.after).toEqual(reference(inWindow('2026-11-08', '2026-11-14', (r) => r.page.endsWith('/rank'))))
    expect(search.queries.map((q: { query: string; change: { clicks: number } }) => [q.query, q.change.clicks])).toEqual([
      ['blue widgets', -112],
    ])
    // the same windows as seo's, and the same diagnosis
    const seo = await get(`/api/v1/seo?site_id=${siteId}&range=30d`)
    const seoRank = seo.pages.find((p: { path: string }) => p.path === '/rank')
    expect(json.search).toMatchObject({
      connected: true,
      siteUrl: PROPERTY,
      diagnosis: seoRank.diagnosis,
      totals: { clicks: seoRank.clicks },
    })
    expect(json.search.queries.map((q: { query: string }) => q.query)).toEqual(['blue widgets', 'widgets'])
  })

  it('anomalies and decay agree with seo: /rank lost rank, /demand lost demand (lost_search)', async () => {
    const anomalies = await get(`/api/v1/anomalies?site_id=${siteId}&${range}`)
    const by = Object.fromEntries(
      anomalies.pages.map((p: { path: string; search: { diagnosis: string } | null }) => [p.path, p.search?.diagnosis ?? null]),
    )
    expect(by).toEqual({ '/rank': 'rank_drop', '/demand': 'demand_drop' })
    const decay = await get(`/api/v1/decay?site_id=${siteId}`)
    const fading = Object.fromEntries(
      decay.pages.map((p: { path: string; diagnosis: { kind: string }; search: { diagnosis: string } | null }) => [
        p.path,
        [p.diagnosis.kind, p.search?.diagnosis ?? null],
      ]),
    )
    expect(fading).toEqual({ '/rank': ['content_changed', 'rank_drop'], '/demand': ['lost_search', 'demand_drop'] })
  })

  it('a re-import of a day replaces it: the last three days once a day, the newest import only', async () => {
    const day = '2026-11-21'
    const before = rows.length
    // Search Console revised the day: /control's second query is gone and its first doubled
    for (let i = rows.length - 1; i >= 0; i--) if (rows[i].date === day && rows[i].query === 'red tool set') rows.splice(i, 1)
    for (const r of rows) if (r.date === day && r.query === 'red tools') r.clicks *= 2
    expect(rows.length).toBe(before - 1)
    const site = (await services.repositories.sites.get(siteId))!
    const askedBefore = fake.queries.length
    const next = await importSearchConsole({ ...services, connection }, site, new Date(NOW + DAY), { rowLimit: 4 })
    expect(next).toMatchObject({ state: 'done' })
    const asked = fake.queries
      .slice(askedBefore)
      .filter((q) => q.status === 200)
      .map((q) => q.body.startDate)
    expect([...new Set(asked)].sort()).toEqual(['2026-11-20', '2026-11-21', '2026-11-22'])
    const stored = await services.clickhouse.query<{ query: string; clicks: string }>(
      'SELECT query, sum(clicks) AS clicks FROM search_console_rows FINAL WHERE site_id = {s:UUID} AND date = {d:Date} GROUP BY query ORDER BY query',
      { s: siteId, d: day },
    )
    const expected = [...new Set(rows.filter((r) => r.date === day && !r.anonymized).map((r) => r.query))].sort().map((query) => ({
      query,
      clicks: String(reference(rows.filter((r) => r.date === day && r.query === query)).clicks),
    }))
    expect(stored).toEqual(expected)
    const totals = await services.clickhouse.query<{ clicks: string }>(
      'SELECT sum(clicks) AS clicks FROM search_console_totals FINAL WHERE site_id = {s:UUID} AND date = {d:Date}',
      { s: siteId, d: day },
    )
    expect(Number(totals[0].clicks)).toBe(reference(rows.filter((r) => r.date === day)).clicks)
  }, 120_000)

  it('the job imports the bound sites through the connector, and nothing without one', async () => {
    const sites = async () => [(await services.repositories.sites.get(siteId))!, (await services.repositories.sites.get(otherSiteId))!]
    const asked: string[] = []
    const lines: string[] = []
    const context = { log: (line: string) => lines.push(line), shouldStop: () => false }
    const connector = {
      connectionFor: async (site: { id: string }) => {
        asked.push(site.id)
        return connection
      },
    }
    const before = fake.queries.length
    await runSearchConsoleImports({ ...services, searchConsole: undefined }, sites, new Date(NOW + 2 * DAY), context)
    expect(fake.queries.length).toBe(before)
    await runSearchConsoleImports({ ...services, searchConsole: connector }, sites, new Date(NOW + 2 * DAY), context)
    // only the bound site; its new day's recent days are imported again
    expect(asked).toEqual([siteId])
    expect(new Set(fake.queries.slice(before).map((q) => q.body.startDate))).toEqual(new Set(['2026-11-21', '2026-11-22', '2026-11-23']))
    expect(lines).toEqual([])
    expect(await services.repositories.searchConsoleImports.get(otherSiteId)).toBeNull()
  })

  it('two imports of one site at once (the bind and the job): one imports, the other leaves it to it, no page asked twice', async () => {
    const site = (await services.repositories.sites.get(siteId))!
    const askedBefore = fake.queries.length
    const at = new Date(NOW + 3 * DAY)
    const both = await Promise.all([
      importSearchConsole({ ...services, connection }, site, at, { rowLimit: 4 }),
      importSearchConsole({ ...services, connection }, site, at, { rowLimit: 4 }),
    ])
    const asked = fake.queries
      .slice(askedBefore)
      .filter((q) => q.status === 200)
      .map((q) => JSON.stringify([q.body.startDate, q.body.dimensions, q.body.startRow]))
    expect(asked.length).toBeGreaterThan(0)
    expect(new Set(asked).size).toBe(asked.length)
    expect(both.map((s) => s?.state)).toContain('done')
  }, 120_000)

  it('the connection state names the bound property and the import; unbinding keeps the rows and stops the import', async () => {
    const site = (await services.repositories.sites.get(siteId))!
    const state = await searchConsoleState(services, connection, site)
    expect(state).toMatchObject({ connected: true, siteUrl: PROPERTY, import: { state: 'done', progress: 1, error: null } })
    expect(state.sites.map((p) => [p.siteUrl, p.verified])).toEqual([
      [`${ORIGIN}/`, true],
      [PROPERTY, true],
      ['https://unverified.example/', false],
    ])
    const unbound = await unbindSearchConsole(services, site)
    expect(unbound.integrations.searchConsole).toEqual({ connected: false, siteUrl: null })
    expect(await searchConsoleState(services, null, unbound)).toEqual({ connected: false, siteUrl: null, sites: [], import: null })
    expect(await get(`/api/v1/search?site_id=${siteId}`)).toEqual({ connected: false, siteUrl: null })
    const [kept] = await services.clickhouse.query<{ n: string }>('SELECT count() AS n FROM search_console_rows WHERE site_id = {s:UUID}', {
      s: siteId,
    })
    expect(Number(kept.n)).toBeGreaterThan(0)
  })
})
