import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { client, testServices } from '../helpers'
import { type ImportUnit, importedRowsOf } from '../imported-rows'

/**
 * Stats API v2 `include.imports` on a site with both the tracker and imported GA4 data: the
 * imported numbers are added for the days before the first tracked day, and only there. Expected
 * answers are computed here from the fixture: the tracked visits written out by hand, the imported
 * sessions turned into the rows an import stores.
 */

const NOW = new Date('2026-11-22T15:00:00Z')
const DOMAIN = 'mixed.plausible.test'
const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/** Tracked visits (UTC site): pageviews with their times, one visitor each. */
const TRACKED = [
  {
    ip: '8.8.8.8',
    referrer: '',
    views: [
      ['2026-11-20T10:00:00Z', '/a'],
      ['2026-11-20T10:02:00Z', '/b'],
    ],
  },
  { ip: '1.1.1.1', referrer: '', views: [['2026-11-21T09:00:00Z', '/']] },
  { ip: '81.2.69.142', referrer: 'https://www.google.com/', views: [['2026-11-21T11:00:00Z', '/a']] },
] as const
// by hand: 3 visitors, 3 visits, 4 pageviews, 2 bounces, 120 s of visit time
const TRACKED_SECONDS = 120
const TRACKED_SOURCES: Record<string, number> = { 'Direct / None': 2, Google: 1 }
const TRACKED_PAGES: Record<string, number> = { '/a': 2, '/b': 1, '/': 1 }

/** Imported GA4 sessions; 2026-11-20 is also tracked, so its imported sessions must never count. */
interface Session {
  user: string
  date: string
  source: string
  pages: string[]
  engaged: boolean
  seconds: number
}
const IMPORTED: Session[] = [
  { user: 'u1', date: '2026-11-17', source: 'Google', pages: ['/a', '/b'], engaged: true, seconds: 50 },
  { user: 'u2', date: '2026-11-17', source: '', pages: ['/'], engaged: false, seconds: 3 },
  { user: 'u1', date: '2026-11-18', source: 'Google', pages: ['/a'], engaged: false, seconds: 0 },
  { user: 'u1', date: '2026-11-18', source: 'Newsletter', pages: ['/c', '/a', '/a'], engaged: true, seconds: 200 },
  { user: 'u3', date: '2026-11-19', source: '', pages: ['/'], engaged: true, seconds: 40 },
  { user: 'u4', date: '2026-11-19', source: 'Newsletter', pages: ['/c'], engaged: false, seconds: 7 },
  { user: 'u5', date: '2026-11-20', source: 'Google', pages: ['/a', '/b'], engaged: true, seconds: 900 },
  { user: 'u6', date: '2026-11-20', source: '', pages: ['/'], engaged: false, seconds: 1 },
]

/** The rows an import stores for the sessions (the datasets these reads use). */
function importedRows(siteId: string) {
  const whole = (s: Session, dims: Record<string, string>): ImportUnit => ({
    user: s.user,
    date: s.date,
    engaged: s.engaged,
    dims,
    pageviews: s.pages.length,
    seconds: s.seconds,
    events: 0,
  })
  return importedRowsOf(siteId, {
    visitors: IMPORTED.map((s) => whole(s, {})),
    visitors_hourly: IMPORTED.map((s) => whole(s, {})),
    sources: IMPORTED.map((s) => whole(s, { source_name: s.source, channel: s.source ? 'Referral' : 'Direct' })),
    entry_pages: IMPORTED.map((s) => whole(s, { entry_page: s.pages[0] })),
    pages: IMPORTED.flatMap((s) =>
      [...new Set(s.pages)].map((path) => ({
        ...whole(s, { hostname: DOMAIN, path }),
        pageviews: s.pages.filter((p) => p === path).length,
        seconds: 0,
      })),
    ),
  })
}

/** The imported sessions that count: days before the first tracked day (2026-11-20), within [from, to]. */
const counted = (from: string, to: string) => IMPORTED.filter((s) => s.date < '2026-11-20' && s.date >= from && s.date <= to)
/** Distinct users of each day, summed over the days (as GA4's daily totalUsers add up). */
const dailyUsers = (sessions: Session[]) =>
  [...new Set(sessions.map((s) => s.date))].reduce((n, d) => n + new Set(sessions.filter((s) => s.date === d).map((s) => s.user)).size, 0)

describe('POST /api/v2/query include.imports', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key = ''

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Imports', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: DOMAIN, timezone: 'UTC' }, org.id, NOW)
    await services.repositories.sites.create({ ...site, sources: ['standalone', 'ga4'], primarySource: 'standalone' })
    const lines = TRACKED.flatMap((v) =>
      v.views.map(([timestamp, path], i) =>
        JSON.stringify({
          timestamp,
          site: site.snippetId,
          name: 'pageview',
          url: `https://${DOMAIN}${path}`,
          referrer: i === 0 && v.referrer ? v.referrer : undefined,
          ip: v.ip,
          userAgent: UA,
        }),
      ),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
    await services.clickhouse.insert('imported_aggregates', importedRows(site.id))
  })

  const query = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/api/v2/query', { key, body: { site_id: DOMAIN, ...body } })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }

  const METRICS = ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration', 'views_per_visit']

  /** Plausible's aggregate metrics of the tracked visits plus the imported sessions. */
  function expected(sessions: Session[]) {
    const visits = 3 + sessions.length
    const pageviews = 4 + sessions.reduce((n, s) => n + s.pages.length, 0)
    const bounces = 2 + sessions.filter((s) => !s.engaged).length
    const seconds = TRACKED_SECONDS + sessions.reduce((n, s) => n + s.seconds, 0)
    return [
      3 + dailyUsers(sessions),
      visits,
      pageviews,
      Math.round((bounces / visits) * 100),
      Math.round(seconds / visits),
      Math.round((pageviews / visits) * 100) / 100,
    ]
  }

  it('aggregate: the imported days before the first tracked day are added; without include.imports they are not', async () => {
    const withImports = await query({ metrics: METRICS, date_range: '7d', include: { imports: true } })
    expect(withImports.results).toEqual([{ metrics: expected(counted('2026-11-16', '2026-11-22')), dimensions: [] }])
    expect(withImports.meta.imports_included).toBe(true)
    expect(withImports.meta.imports_warning).toBeUndefined()

    const without = await query({ metrics: METRICS, date_range: '7d' })
    expect(without.results).toEqual([{ metrics: expected([]), dimensions: [] }])
    expect(without.meta.imports_included).toBe(false)

    // a window that starts on an imported day: only its days count
    const part = await query({ metrics: METRICS, date_range: ['2026-11-18', '2026-11-22'], include: { imports: true } })
    expect(part.results).toEqual([{ metrics: expected(counted('2026-11-18', '2026-11-22')), dimensions: [] }])
  })

  it('timeseries: each day adds its imported visitors, and the tracked days keep their own', async () => {
    const json = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-16', '2026-11-22'],
      dimensions: ['time:day'],
      include: { imports: true },
    })
    const days = ['2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21']
    const tracked: Record<string, [number, number]> = { '2026-11-20': [1, 2], '2026-11-21': [2, 2] }
    expect(json.results).toEqual(
      days.map((day) => {
        const imported = counted(day, day)
        const [v, p] = tracked[day] ?? [0, 0]
        return {
          dimensions: [day],
          metrics: [v + dailyUsers(imported), p + imported.reduce((n, s) => n + s.pages.length, 0)],
        }
      }),
    )
  })

  it('a date-time date_range that is not whole days: the tracked rows of each day it touches, the imports left out and why', async () => {
    // 2026-11-15 22:00 to 2026-11-22 22:00 UTC: the imports hold whole days only
    const [from, to] = ['2026-11-16T00:00:00+02:00', '2026-11-22T23:59:59+02:00']
    const json = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: [from, to],
      dimensions: ['time:day'],
      include: { imports: true },
    })
    const views = TRACKED.flatMap((v) => v.views.map(([at]) => ({ ip: v.ip, at }))).filter(
      ({ at }) => Date.parse(at) >= Date.parse(from) && Date.parse(at) <= Date.parse(to),
    )
    const days = [...new Set(views.map(({ at }) => at.slice(0, 10)))].sort()
    expect(days.length).toBe(2)
    expect(json.results).toEqual(
      days.map((day) => {
        const mine = views.filter(({ at }) => at.startsWith(day))
        return { metrics: [new Set(mine.map(({ ip }) => ip)).size, mine.length], dimensions: [day] }
      }),
    )
    expect(json.meta.imports_included).toBe(false)
    expect(json.meta.imports_skip_reason).toBe('unsupported_query')
    expect(json.meta.imports_warning).toMatch(/whole days/)
  })

  it('breakdowns by source and by page: rows matched by value, ordered by the summed visitors', async () => {
    const sessions = counted('2026-11-16', '2026-11-22')
    const bySource = await query({
      metrics: ['visitors', 'visits', 'bounce_rate'],
      date_range: '7d',
      dimensions: ['visit:source'],
      include: { imports: true },
    })
    const sources = new Map<string, { visitors: number; visits: number; bounces: number }>()
    for (const [name, n] of Object.entries(TRACKED_SOURCES)) sources.set(name, { visitors: n, visits: n, bounces: 1 })
    for (const date of new Set(sessions.map((s) => s.date)))
      for (const name of new Set(sessions.filter((s) => s.date === date).map((s) => s.source || 'Direct / None'))) {
        const group = sessions.filter((s) => s.date === date && (s.source || 'Direct / None') === name)
        const row = sources.get(name) ?? { visitors: 0, visits: 0, bounces: 0 }
        row.visitors += new Set(group.map((s) => s.user)).size
        row.visits += group.length
        row.bounces += group.filter((s) => !s.engaged).length
        sources.set(name, row)
      }
    const expectedSources = [...sources]
      .sort(([a, x], [b, y]) => y.visitors - x.visitors || (a < b ? -1 : 1))
      .map(([name, r]) => ({ dimensions: [name], metrics: [r.visitors, r.visits, Math.round((r.bounces / r.visits) * 100)] }))
    expect(bySource.results).toEqual(expectedSources)

    const byPage = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: '7d',
      dimensions: ['event:page'],
      include: { imports: true },
    })
    const pages = new Map<string, { visitors: number; pageviews: number }>()
    for (const [path, n] of Object.entries(TRACKED_PAGES)) pages.set(path, { visitors: path === '/a' ? 2 : 1, pageviews: n })
    for (const date of new Set(sessions.map((s) => s.date)))
      for (const path of new Set(sessions.filter((s) => s.date === date).flatMap((s) => s.pages))) {
        const group = sessions.filter((s) => s.date === date && s.pages.includes(path))
        const row = pages.get(path) ?? { visitors: 0, pageviews: 0 }
        row.visitors += new Set(group.map((s) => s.user)).size
        row.pageviews += group.reduce((n, s) => n + s.pages.filter((p) => p === path).length, 0)
        pages.set(path, row)
      }
    expect(byPage.results).toEqual(
      [...pages]
        .sort(([a, x], [b, y]) => y.visitors - x.visitors || (a < b ? -1 : 1))
        .map(([path, r]) => ({ dimensions: [path], metrics: [r.visitors, r.pageviews] })),
    )
  })

  it('date_range all starts at the first imported day', async () => {
    const json = await query({ metrics: ['visitors'], date_range: 'all', include: { imports: true } })
    expect(json.query.date_range[0]).toMatch(/^2026-11-17T00:00:00/)
    expect(json.results).toEqual([{ metrics: [expected(counted('2026-11-01', '2026-11-22'))[0]], dimensions: [] }])
    const tracked = await query({ metrics: ['visitors'], date_range: 'all' })
    expect(tracked.query.date_range[0]).toMatch(/^2026-11-20T00:00:00/)
    expect(tracked.results).toEqual([{ metrics: [3], dimensions: [] }])
  })

  it('a query the imports cannot answer keeps the tracked numbers and says why', async () => {
    const json = await query({
      metrics: ['visitors'],
      date_range: '7d',
      filters: [['is', 'event:props:plan', ['pro']]],
      include: { imports: true },
    })
    expect(json.results).toEqual([{ metrics: [0], dimensions: [] }])
    // Plausible's reason and sentence, then what the imports lack
    const plausibleSentence = 'Imported stats are not included in the results because query parameters are not supported.'
    expect(json.meta.imports_included).toBe(false)
    expect(json.meta.imports_skip_reason).toBe('unsupported_query')
    expect(json.meta.imports_warning.startsWith(plausibleSentence)).toBe(true)
    expect(json.meta.imports_warning).toMatch(/event:props:plan/)
    const exits = await query({ metrics: ['visitors'], date_range: '7d', dimensions: ['visit:exit_page'], include: { imports: true } })
    expect(exits.meta.imports_included).toBe(false)
    expect(exits.meta.imports_skip_reason).toBe('unsupported_query')
    expect(exits.meta.imports_warning.startsWith(plausibleSentence)).toBe(true)
    expect(exits.meta.imports_warning).toMatch(/visit:exit_page/)
    expect(exits.results.reduce((n: number, r: { metrics: number[] }) => n + r.metrics[0], 0)).toBe(3)
  })
})
