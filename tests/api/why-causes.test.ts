import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { DEFAULT_USER_AGENT } from '../../lib/crawl/config'
import { runCrawls } from '../../lib/crawl/crawl'
import { importHits } from '../../lib/ingest/import'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { client, getOk, REDIS_URL, testServices } from '../helpers'
import { UAS } from './report-reference'
import { type FixtureHit, referenceMovers } from './why-fixture'

/**
 * Why a page's traffic changed, with planted causes: a website served on 127.0.0.1 is crawled
 * twice; between the crawls one page's title and text change, and from that day its traffic
 * (loaded through the raw-hit import) halves. Another page gains a script that makes its INP
 * regress (vital samples whose attribution names the script). A control site with flat traffic
 * and no changes finds nothing. Expected values come from the small references below, over the
 * fixture hits, and from the documented rules written out by hand.
 */

const DAY = 86_400_000
const NOW = Date.parse('2026-11-22T15:00:00Z')
const START = Date.parse('2026-09-01T00:00:00Z')
const CHANGE_DAY = '2026-11-15'
const FIRST_CRAWL = Date.parse('2026-08-20T09:00:00Z')
const SECOND_CRAWL = Date.parse(`${CHANGE_DAY}T09:00:00Z`)
const REGRESSION_DAY = '2026-11-16'
const SCRIPT = 'https://cdn.example/widget.js'
const GOOGLE = 'https://www.google.com/'
/** From this day /referred loses its Google visits and starts throwing errors. */
const SOURCE_DAY = '2026-11-08'

const page = (title: string, text: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>Heading</h1><article><p>${text}</p></article></body></html>`
const sitemap = (origin: string, paths: string[]) =>
  `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths.map((p) => `<url><loc>${origin}${p}</loc></url>`).join('')}</urlset>`

function website(origin: string, paths: string[], pages: Record<string, string>) {
  return {
    '/robots.txt': `User-agent: *\nAllow: /\n\nSitemap: ${origin}/sitemap.xml\n`,
    '/sitemap.xml': sitemap(origin, paths),
    ...pages,
  } as Record<string, string>
}

async function serve(pages: () => Record<string, string>) {
  const server = createServer((req, res) => {
    const body = pages()[new URL(req.url ?? '/', 'http://x').pathname]
    if (body === undefined) return void res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>Not found</body></html>')
    res
      .writeHead(200, {
        'content-type': body.startsWith('<?xml')
          ? 'application/xml'
          : body.startsWith('User-agent')
            ? 'text/plain'
            : 'text/html; charset=utf-8',
      })
      .end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

const utcDay = (ts: number) => new Date(ts).toISOString().slice(0, 10)

/** n hits a day on a path from START to NOW, evenly spread; referrers alternate when given. */
function daily(path: string, perDay: (day: string) => number, referrers: (string | null)[] = [null]): FixtureHit[] {
  const hits: FixtureHit[] = []
  for (let d = START; d < NOW; d += DAY) {
    const n = perDay(utcDay(d))
    for (let i = 0; i < n; i++) {
      const ts = d + Math.floor(((i + 0.5) * DAY) / n)
      if (ts < NOW - 3_600_000) hits.push({ ts, path, referrer: referrers[i % referrers.length] })
    }
  }
  return hits
}

interface VitalSample {
  ts: number
  value: number
  attribution: Record<string, string>
}
/** INP on /vitals-page, four samples a day from 25 October: good with a button before the script, slow with the script after. */
function vitalSamples(): VitalSample[] {
  const samples: VitalSample[] = []
  for (let d = Date.parse('2026-10-25T00:00:00Z'); d < NOW; d += DAY) {
    for (let i = 0; i < 4; i++) {
      const ts = d + (i * 3 + 1) * 3_600_000
      if (ts >= NOW - 3_600_000) continue
      const after = utcDay(d) >= REGRESSION_DAY
      const k = (d / DAY + i) % 5
      samples.push(
        after
          ? { ts, value: 350 + 20 * k, attribution: { scriptUrl: SCRIPT } }
          : { ts, value: 120 + 10 * k, attribution: { interactionTarget: 'button#buy' } },
      )
    }
  }
  return samples
}

/** The percentile as quantileExactInclusive computes it: linear between the two nearest ranks. */
function percentile(values: number[], p: number) {
  const s = [...values].sort((a, b) => a - b)
  const pos = (s.length - 1) * p
  const lo = Math.floor(pos)
  return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (pos - lo)
}

/** The last significant shift by the documented rule, from visits per UTC day. */
function referenceShift(hits: FixtureHit[], path: string, windowFrom: string, lastComplete: string) {
  const perDay = new Map<string, number>()
  for (const h of hits) if (h.path === path) perDay.set(utcDay(h.ts), (perDay.get(utcDay(h.ts)) ?? 0) + 1)
  const days: string[] = []
  for (let d = Date.parse(windowFrom) - 7 * DAY; d <= Date.parse(lastComplete); d += DAY) days.push(utcDay(d))
  const v = (d: string) => perDay.get(d) ?? 0
  const avg = (xs: string[]) => xs.reduce((a, d) => a + v(d), 0) / xs.length
  let last: { i: number; day: string; diff: number; before: number; after: number }[] = []
  for (let i = 7; i < days.length; i++) {
    const n = Math.min(7, days.length - i)
    if (n < 3) continue
    const before = avg(days.slice(i - 7, i))
    const after = avg(days.slice(i, i + n))
    const diff = after - before
    if (diff !== 0 && Math.abs(diff) >= 0.3 * before && Math.abs(diff) * n >= 10) {
      const prev = last[last.length - 1]
      if (!prev || prev.i !== i - 1 || Math.sign(prev.diff) !== Math.sign(diff)) last = []
      last.push({ i, day: days[i], diff, before, after })
    }
  }
  return last.length ? last.reduce((b, f) => (Math.abs(f.diff) > Math.abs(b.diff) ? f : b)) : null
}

describe('why a page changed: planted causes', () => {
  let now = FIRST_CRAWL
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let read = ''
  const servers: Server[] = []
  const ids = { news: '', flat: '' }
  let newsPages: Record<string, string> = {}
  let flatPages: Record<string, string> = {}
  const planted = [
    ...daily('/changing', (day) => (day < CHANGE_DAY ? 40 : 20), [GOOGLE, null]),
    ...daily('/steady', () => 30, [GOOGLE, null]),
    ...daily('/vitals-page', () => 30),
    ...daily('/gone', (day) => (day < '2026-10-20' ? 20 : 0)),
    ...daily('/referred', () => 20, [null]),
    ...daily('/referred', (day) => (day < SOURCE_DAY ? 20 : 0), [GOOGLE]),
  ].sort((a, b) => a.ts - b.ts)
  const flat = [...daily('/', () => 30), ...daily('/a', () => 30)].sort((a, b) => a.ts - b.ts)
  const vitals = vitalSamples()
  /** Errors on /referred: three a day from SOURCE_DAY, each in the visit of one of its pageviews (by its index in planted). */
  const errorHits = planted
    .map((h, i) => ({ ...h, i }))
    .filter((h) => h.path === '/referred' && utcDay(h.ts) >= SOURCE_DAY)
    .filter((h, _, all) => all.filter((o) => utcDay(o.ts) === utcDay(h.ts) && o.ts < h.ts).length < 3)

  beforeAll(async () => {
    const news = await serve(() => newsPages)
    const control = await serve(() => flatPages)
    servers.push(news.server, control.server)
    const paths = ['/', '/changing', '/steady', '/vitals-page', '/gone']
    newsPages = website(news.origin, paths, {
      '/': page('Home | News', 'The home of the planted site.'),
      '/changing': page('Guide | News', 'A guide to planting causes in fixture websites for tests.'),
      '/steady': page('Steady | News', 'This page never changes at all.'),
      '/vitals-page': page('Shop | News', 'A shop page that will get a slow script.'),
      '/gone': page('Gone | News', 'A page that will be taken down.'),
    })
    flatPages = website(control.origin, ['/', '/a'], {
      '/': page('Flat', 'Nothing ever happens here.'),
      '/a': page('A | Flat', 'Nor here.'),
    })

    services = await testServices({ kv: REDIS_URL ? 'redis' : 'embedded', ownKeys: true, now: () => new Date(now) })
    const domains = { news: `news-${crypto.randomUUID().slice(0, 8)}.test`, flat: `flat-${crypto.randomUUID().slice(0, 8)}.test` }
    services.crawler = {
      fetch: guardedFetch({ allowPrivate: true, maxBytes: 64 * 1024, timeoutMs: 5000 }),
      userAgent: DEFAULT_USER_AGENT,
      hostIntervalMs: 0,
      maxQueuedPings: 3,
      siteRunMs: 60_000,
      siteOrigin: (site) => (site.domain === domains.news ? news.origin : control.origin),
    }
    call = client(services)
    const org = await createOrg(services.repositories, 'Causes', new Date(now))
    const write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, new Date(now))).key
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, new Date(now))).key
    const snippets: Record<string, string> = {}
    for (const name of ['news', 'flat'] as const) {
      const created = await call('POST', '/api/v1/sites', { key: write, body: { domain: domains[name], timezone: 'UTC' } })
      expect(created.status, JSON.stringify(created.json)).toBe(201)
      ids[name] = created.json.id
      snippets[name] = created.json.snippetId
    }
    // the first crawl, before any traffic: both sites' pages are new then
    const crawl = async () => {
      const failures: string[] = []
      await runCrawls(services, services.crawler!, { log: (line) => failures.push(line) })
      expect(failures).toEqual([])
    }
    await crawl()
    const lines = (hits: FixtureHit[], snippet: string, domain: string, base: number) =>
      hits.map((h, i) => {
        const n = base + i
        return JSON.stringify({
          timestamp: new Date(h.ts).toISOString(),
          site: snippet,
          name: 'pageview',
          url: `https://${domain}${h.path}`,
          referrer: h.referrer,
          ip: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
          userAgent: UAS[n % UAS.length],
        })
      })
    const vitalLines = vitals.map((s, i) =>
      JSON.stringify({
        timestamp: new Date(s.ts).toISOString(),
        site: snippets.news,
        name: 'vital',
        url: `https://${domains.news}/vitals-page`,
        ip: `10.200.${(i >> 8) & 255}.${i & 255}`,
        userAgent: UAS[i % UAS.length],
        vital: { name: 'INP', value: s.value, attribution: s.attribution },
      }),
    )
    const errorLines = errorHits.map((h) => {
      const pageview = JSON.parse(lines([h], snippets.news, domains.news, h.i)[0])
      return JSON.stringify({
        ...pageview,
        timestamp: new Date(h.ts + 1000).toISOString(),
        name: 'error',
        error: { name: 'TypeError', message: 'x is undefined' },
      })
    })
    const all = [
      ...lines(planted, snippets.news, domains.news, 0),
      ...lines(flat, snippets.flat, domains.flat, 1_000_000),
      ...vitalLines,
      ...errorLines,
    ]
    now = NOW
    const result = await importHits(all, services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors.slice(0, 3))).toBe(0)
    // the second crawl, on the change day: /changing has a new title and text; the control is unchanged
    now = SECOND_CRAWL
    newsPages['/changing'] = page('Guide, rewritten | News', 'The guide now talks about something else entirely, with fewer words.')
    delete newsPages['/gone']
    await crawl()
    now = NOW
  }, 600_000)

  afterAll(async () => {
    for (const s of servers) await new Promise((resolve) => s.close(resolve))
  })

  const get = (path: string) => getOk(call, path, read)

  it('anomalies: the page that halved is ranked first, with its title and text change as the candidate', async () => {
    const json = await get(`/api/v1/anomalies?site_id=${ids.news}`)
    const reference = referenceMovers(planted, Date.parse(json.range.from), Date.parse(json.range.to))
    expect(reference[0].path).toBe('/changing')
    expect(json.pages.map((p: { path: string; change: number }) => [p.path, p.change])).toEqual(reference.map((m) => [m.path, m.change]))
    const [first] = json.pages
    expect(first.candidates.map((c: { kind: string; type: string; detectedAt: string }) => [c.kind, c.type, c.detectedAt])).toEqual([
      ['page_change', 'text', new Date(SECOND_CRAWL).toISOString()],
      ['page_change', 'title', new Date(SECOND_CRAWL).toISOString()],
    ])
    expect(first.candidates[1]).toMatchObject({ path: '/changing', before: 'Guide | News', after: 'Guide, rewritten | News' })
  })

  it('pages/detail: the shift on the change day, the change ranked first with its confidence and evidence', async () => {
    const json = await get(`/api/v1/pages/detail?site_id=${ids.news}&path=/changing&range=30d`)
    const shift = referenceShift(planted, '/changing', json.range.from.slice(0, 10), '2026-11-21')
    expect(shift).toMatchObject({ day: CHANGE_DAY, before: 40, after: 20 })
    expect(json.shift).toMatchObject({ day: shift!.day, direction: 'down', before: shift!.before, after: shift!.after, change: -0.5 })
    // the title weighs 0.8 and the change was detected on the shift's day: full proximity
    expect(json.causes[0]).toMatchObject({ kind: 'page_change', confidence: 0.8 })
    expect(json.causes[0].evidence.changes.map((c: { type: string }) => c.type)).toEqual(['text', 'title'])
    // both sources halved alike: neither explains more than its share
    expect(json.causes.map((c: { kind: string }) => c.kind)).toEqual(['page_change'])
    // the series and drivers against the hits
    const inWindow = planted.filter(
      (h) => h.path === '/changing' && h.ts >= Date.parse(json.range.from) && h.ts < Date.parse(json.range.to),
    )
    expect(json.totals).toEqual({ visits: inWindow.length, visitors: inWindow.length, pageviews: inWindow.length })
    expect(json.series.find((s: { date: string }) => s.date === CHANGE_DAY).visits).toBe(20)
    expect(json.drivers.sources.map((s: { value: string; visits: number }) => [s.value, s.visits]).sort()).toEqual(
      [
        ['', inWindow.filter((h) => h.referrer === null).length],
        ['Google', inWindow.filter((h) => h.referrer === GOOGLE).length],
      ].sort(),
    )
    // the first crawl builds the inventory and records no change
    expect(json.changes.map((c: { type: string }) => c.type)).toEqual(['text', 'title'])
    expect(json.snapshots.map((s: { title: string }) => s.title)).toEqual(['Guide, rewritten | News', 'Guide | News'])
    expect(json.page.launchedAt).toBe('2026-08-20T09:00:00+00:00')
    expect(json.first30).toMatchObject({
      from: '2026-08-20',
      days: 30,
      complete: true,
      visits: planted.filter((h) => h.path === '/changing' && h.ts < Date.parse('2026-09-19T00:00:00Z')).length,
    })
    expect(json.search).toEqual({ connected: false })
    // the same page by its id
    const byId = await get(`/api/v1/pages/detail?site_id=${ids.news}&page_id=${json.page.pageId}&range=30d`)
    expect(byId).toEqual(json)
  })

  it('pages/detail: a page that lost one source, and started throwing errors, has both as causes', async () => {
    const json = await get(`/api/v1/pages/detail?site_id=${ids.news}&path=/referred&range=30d`)
    const shift = referenceShift(planted, '/referred', json.range.from.slice(0, 10), '2026-11-21')
    expect(shift).toMatchObject({ day: SOURCE_DAY, before: 40, after: 20 })
    expect(json.shift).toMatchObject({ day: SOURCE_DAY, direction: 'down', before: 40, after: 20 })
    // Google held half the traffic before and all of the loss: (1 - 0.5) / (1 - 0.5) = 1
    expect(json.causes.map((c: { kind: string; confidence: number }) => [c.kind, c.confidence])).toEqual([
      ['source_shift', 1],
      ['error_spike', 0.4],
    ])
    expect(json.causes[0].evidence).toEqual({ source: 'Google', before: 20, after: 0, shareOfChange: 1, shareOfTraffic: 0.5 })
    // errors: none a day in the 7 days before, three a day in the 7 after
    expect(json.causes[1].evidence).toEqual({ before: 0, after: 3, errors: 21 })
    const inWindow = errorHits.filter((h) => h.ts + 1000 >= Date.parse(json.range.from) && h.ts + 1000 < Date.parse(json.range.to))
    expect(json.errors.summary.errors).toBe(inWindow.length)
    expect(json.errors.groups.map((g: { errorName: string; count: number }) => [g.errorName, g.count])).toEqual([
      ['TypeError', inWindow.length],
    ])
    // the page's errors are read from the projection of events by path (migration 0024), which holds
    // every column of the errors read, and it answers what the table does
    const pageErrors = (settings: string) =>
      services.clickhouse.query<{ errors: string; groups: string; names: string[]; browsers: string }>(
        `SELECT count() AS errors, uniqExact(error_fingerprint) AS groups, uniqExact(visitor_id) AS visitors, groupUniqArray(error_name) AS names,
                uniqExact(browser) AS browsers, argMax(error_message, timestamp) AS message
         FROM events WHERE site_id = {site:UUID} AND pathname = {path:String} AND kind = 'error' SETTINGS ${settings}`,
        { site: ids.news, path: '/referred' },
      )
    const [projected] = await pageErrors("force_optimize_projection = 1, force_optimize_projection_name = 'events_by_path'")
    expect(projected).toMatchObject({ errors: String(errorHits.length), groups: '1', names: ['TypeError'] })
    expect(await pageErrors('optimize_use_projections = 0')).toEqual([projected])
  })

  it('vitals: the INP regression after the script, with the script behind it, in anomalies vitals=1 and the page detail', async () => {
    const json = await get(`/api/v1/anomalies?site_id=${ids.news}&vitals=1`)
    expect(json.pages).toEqual([])
    const from = Date.parse(json.range.from)
    const previousFrom = Date.parse(json.previousRange.from)
    const current = vitals.filter((s) => s.ts >= from && s.ts < Date.parse(json.range.to)).map((s) => s.value)
    const baseline = vitals.filter((s) => s.ts >= previousFrom && s.ts < from).map((s) => s.value)
    expect(json.regressions).toHaveLength(1)
    const [regression] = json.regressions
    expect(regression).toMatchObject({
      path: '/vitals-page',
      metric: 'INP',
      // milliseconds are answered to 1 decimal, as every read answers them
      baseline: { samples: baseline.length, value: Math.round(percentile(baseline, 0.75) * 10) / 10 },
      current: { samples: current.length, value: Math.round(percentile(current, 0.75) * 10) / 10 },
      band: 'needs_improvement',
    })
    expect(regression.contributors[0]).toMatchObject({
      kind: 'blockingScripts',
      target: SCRIPT,
      samples: current.length,
      share: 1,
      baselineShare: 0,
    })
    const detail = await get(`/api/v1/pages/detail?site_id=${ids.news}&path=/vitals-page&range=7d`)
    expect(detail.vitals.regressions).toEqual(json.regressions)
    expect(detail.vitals.bottlenecks.blockingScripts[0]).toMatchObject({ target: SCRIPT, samples: current.length })
    expect(detail.shift).toBeNull()
    const markers = await get(`/api/v1/markers?site_id=${ids.news}&range=7d`)
    expect(markers.markers.vitalsRegressions).toEqual([
      {
        path: '/vitals-page',
        metric: 'INP',
        baseline: regression.baseline.value,
        current: regression.current.value,
        change: regression.change,
        band: 'needs_improvement',
        contributor: { kind: 'blockingScripts', target: SCRIPT },
      },
    ])
    expect(markers.markers.pageChanges).toEqual([])
    const month = await get(`/api/v1/markers?site_id=${ids.news}&range=30d`)
    expect(month.markers.pageChanges.map((c: { type: string; path: string }) => `${c.type} ${c.path}`).sort()).toEqual([
      'removed /gone',
      'text /changing',
      'title /changing',
    ])
  })

  it('launches date a page by its first crawl when that came before its first pageview', async () => {
    const json = await get(`/api/v1/pages/launches?site_id=${ids.news}&range=custom&from=2026-08-15&to=2026-08-25`)
    expect(json.pages.map((p: { path: string; launchedAt: string }) => [p.path, p.launchedAt]).sort()).toEqual(
      ['/', '/changing', '/gone', '/steady', '/vitals-page'].map((path) => [path, '2026-08-20T09:00:00+00:00']),
    )
  })

  it('decay: the page taken down is diagnosed as removed', async () => {
    const json = await get(`/api/v1/decay?site_id=${ids.news}`)
    // its best 28 days: the 28 days up to 19 October, 20 visits each; none now
    expect(json.pages.map((p: { path: string }) => p.path)).toEqual(['/gone'])
    expect(json.pages[0]).toMatchObject({ peak: 28 * 20, peakTo: '2026-10-19', current: 0, refreshed: false, contentChanges: [] })
    expect(json.pages[0].diagnosis).toMatchObject({ kind: 'page_removed', confidence: 1 })
  })

  it('a steady page and the control site find nothing', async () => {
    const steady = await get(`/api/v1/pages/detail?site_id=${ids.news}&path=/steady&range=30d`)
    expect([steady.shift, steady.causes]).toEqual([null, []])
    expect((await get(`/api/v1/anomalies?site_id=${ids.flat}`)).pages).toEqual([])
    expect((await get(`/api/v1/anomalies?site_id=${ids.flat}&range=30d`)).pages).toEqual([])
    expect((await get(`/api/v1/anomalies?site_id=${ids.flat}&vitals=1`)).regressions).toEqual([])
    const markers = await get(`/api/v1/markers?site_id=${ids.flat}&range=30d`)
    expect(markers.counts).toMatchObject({ pageChanges: 0, siteChanges: 0, vitalsRegressions: 0 })
    for (const path of ['/', '/a']) {
      const detail = await get(`/api/v1/pages/detail?site_id=${ids.flat}&path=${path}&range=30d`)
      expect([detail.shift, detail.causes, detail.vitals.regressions]).toEqual([null, [], []])
      expect(detail.changes).toEqual([])
    }
  })

  it('pages/detail: one of path or page_id, and a page that was never seen is 404', async () => {
    for (const [query, status, word] of [
      ['', 400, 'path'],
      ['&path=/a&page_id=L2E', 400, 'path'],
      ['&page_id=!!', 400, 'page_id'],
      ['&path=nope', 400, 'path'],
      ['&path=/never-seen', 404, 'path'],
    ] as const) {
      const res = await call('GET', `/api/v1/pages/detail?site_id=${ids.flat}${query}`, { key: read })
      expect(res.status, query).toBe(status)
      expect(res.json.error).toMatch(new RegExp(`^${word}`))
    }
  })
})
