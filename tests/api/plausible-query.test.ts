import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { createGoal } from '../../lib/sites/goals'
import { newSite } from '../../lib/sites/sites'
import { client, testServices } from '../helpers'
import {
  NOW,
  type Ref,
  type RefEvent,
  type RefVisit,
  expectedBreakdown,
  expectedTotals,
  fixture,
  localDate,
  round,
} from './report-reference'

/**
 * POST /api/v2/query, Plausible's Stats API v2, against the reference computation of
 * report-reference.ts over the same fixture hits: each example kind of Plausible's reference
 * (aggregate, timeseries, filters, behavioural filters, custom properties, pagination, time labels,
 * revenue, UTM, case-insensitive filters, imports) with its expected numbers, and a table of
 * refused queries.
 */

const TZ = 'America/New_York'
const DOMAIN = 'ny.plausible.test'
// the whole fixture window, 2026-08-01 to 2026-11-22 in New York
const FROM = '2026-08-01T00:00:00-04:00'
const TO = '2026-11-23T00:00:00-05:00'
const CUSTOM = ['2026-08-01', '2026-11-22']

type Keep = (e: RefEvent, v: RefVisit) => boolean

/**
 * The campaign site's pageviews: four visitors, one visit each (their hits minutes apart), tagged by
 * their first page's query: two from the newsletter (one of them twice), one from twitter, one untagged.
 */
const UTM_HITS: [string, string, string][] = [
  ['2026-11-20T10:00:00Z', '8.8.8.8', '?utm_source=newsletter&utm_medium=email&utm_campaign=launch'],
  ['2026-11-20T10:05:00Z', '8.8.8.8', ''],
  ['2026-11-20T11:00:00Z', '1.1.1.1', '?utm_source=newsletter&utm_medium=email&utm_campaign=launch'],
  ['2026-11-21T09:00:00Z', '81.2.69.142', '?utm_source=twitter&utm_medium=social&utm_campaign=launch'],
  ['2026-11-21T12:00:00Z', '46.114.0.1', ''],
  ['2026-11-21T12:03:00Z', '46.114.0.1', '?utm_source=late'],
]

/** The shop site's hits: a Signup paid in EUR, two Purchases paid in USD, a visit of /pricing. */
const SHOP_HITS: { ip: string; name: string; path: string; revenue?: { amount: number; currency: string } }[] = [
  { ip: '8.8.8.8', name: 'pageview', path: '/' },
  { ip: '8.8.8.8', name: 'Signup', path: '/', revenue: { amount: 10, currency: 'EUR' } },
  { ip: '1.1.1.1', name: 'Purchase', path: '/', revenue: { amount: 20, currency: 'USD' } },
  { ip: '1.1.1.1', name: 'Purchase', path: '/', revenue: { amount: 5, currency: 'USD' } },
  { ip: '81.2.69.142', name: 'pageview', path: '/pricing' },
]
const SHOP_GOALS = [
  { type: 'event' as const, matchValue: 'Signup', currency: 'EUR' },
  { type: 'event' as const, matchValue: 'Purchase', currency: 'USD' },
  { type: 'page' as const, matchValue: '/pricing' },
]

/** Rows of a campaign field over UTM_HITS, as Plausible labels a visit without it: [visitors, pageviews] by value, most visitors first. */
function utmRows(field: string) {
  const firstQuery = new Map<string, string>()
  for (const [, ip, query] of UTM_HITS) if (!firstQuery.has(ip)) firstQuery.set(ip, query)
  const tagOf = (ip: string) => new URLSearchParams(firstQuery.get(ip)).get(field) || '(not set)'
  const values = [...new Set(UTM_HITS.map(([, ip]) => tagOf(ip)))]
  return values
    .map((value) => {
      const hits = UTM_HITS.filter(([, ip]) => tagOf(ip) === value)
      return { metrics: [new Set(hits.map(([, ip]) => ip)).size, hits.length], dimensions: [value] }
    })
    .sort((a, b) => b.metrics[0] - a.metrics[0] || (a.dimensions[0] < b.dimensions[0] ? -1 : 1))
}

describe('POST /api/v2/query', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key = ''
  let writeKey = ''
  let otherKey = ''
  let siteId = ''
  let otherSiteDomain = ''
  let ga4Domain = ''
  let utmDomain = ''
  let shopDomain = ''
  let ref: Ref

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Plausible clients', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    writeKey = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    const site = newSite({ domain: DOMAIN, timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    siteId = site.id
    ref = fixture(site.snippetId, site.domain, TZ, 11)
    expect((await importHits(ref.lines, services.ingestor)).rejected).toBe(0)

    // a site with campaign links: three visitors, two from the newsletter (one of them twice), one from twitter
    const utm = newSite({ domain: 'utm.plausible.test', timezone: 'UTC' }, org.id, NOW)
    await services.repositories.sites.create(utm)
    utmDomain = utm.domain
    const hit = (ts: string, ip: string, query: string) =>
      JSON.stringify({
        timestamp: ts,
        site: utm.snippetId,
        name: 'pageview',
        url: `https://${utm.domain}/landing${query}`,
        ip,
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      })
    const utmLines = UTM_HITS.map(([ts, ip, query]) => hit(ts, ip, query))
    expect((await importHits(utmLines, services.ingestor)).rejected).toBe(0)

    // a site whose goals have several currencies, and a goal with none: each visitor converts once
    const shop = newSite({ domain: 'shop.plausible.test', timezone: 'UTC' }, org.id, NOW)
    await services.repositories.sites.create(shop)
    shopDomain = shop.domain
    const shopLines = SHOP_HITS.map(({ ip, name, path, revenue }, i) =>
      JSON.stringify({
        timestamp: new Date(Date.parse('2026-11-21T10:00:00Z') + i * 60_000).toISOString(),
        site: shop.snippetId,
        name,
        url: `https://${shop.domain}${path}`,
        ip,
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
        ...(revenue ? { revenue: { amount: String(revenue.amount), currency: revenue.currency } } : {}),
      }),
    )
    expect((await importHits(shopLines, services.ingestor)).rejected).toBe(0)
    for (const goal of SHOP_GOALS) await createGoal(services.repositories, shop.id, { site_id: shop.id, ...goal }, NOW)

    // a site read from imported GA4 data only (no rows: its reads are zeros)
    const ga4 = newSite({ domain: 'ga4.plausible.test', timezone: 'UTC' }, org.id, NOW)
    await services.repositories.sites.create({ ...ga4, sources: ['ga4'], primarySource: 'ga4' })
    ga4Domain = ga4.domain

    const other = await createOrg(services.repositories, 'Someone else', NOW)
    otherKey = (await createApiKey(services.repositories, { orgId: other.id, name: 'r', scope: 'read' }, NOW)).key
    const foreign = newSite({ domain: 'foreign.plausible.test', timezone: 'UTC' }, other.id, NOW)
    await services.repositories.sites.create(foreign)
    otherSiteDomain = foreign.domain

    const goal = await call('POST', '/api/v1/goals', {
      key: writeKey,
      body: { site_id: siteId, type: 'event', matchValue: 'Signup', currency: 'EUR' },
    })
    expect(goal.status).toBe(201)
  })

  const query = async (body: Record<string, unknown>, as = key) => {
    const res = await call('POST', '/api/v2/query', { key: as, body: { site_id: DOMAIN, ...body } })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }
  const refused = async (body: Record<string, unknown>) => call('POST', '/api/v2/query', { key, body: { site_id: DOMAIN, ...body } })

  /** Plausible's aggregate metrics from the reference totals: rates as whole percentages, events the pageviews and custom events. */
  const plausibleTotals = (t: ReturnType<typeof expectedTotals>) => [
    t.visitors,
    t.visits,
    t.pageviews,
    t.viewsPerVisit,
    Math.round(t.bounceRate * 100),
    t.avgDuration,
    t.pageviews + t.events,
  ]
  const TOTAL_METRICS = ['visitors', 'visits', 'pageviews', 'views_per_visit', 'bounce_rate', 'visit_duration', 'events']

  it('aggregate: the documented shape, the numbers of the reference, the query echoed with the window in the site timezone', async () => {
    const json = await query({ metrics: TOTAL_METRICS, date_range: CUSTOM })
    expect(json.results).toEqual([{ metrics: plausibleTotals(expectedTotals(ref, FROM, TO)), dimensions: [] }])
    expect(json.query).toEqual({
      site_id: DOMAIN,
      metrics: TOTAL_METRICS,
      date_range: ['2026-08-01T00:00:00-04:00', '2026-11-22T23:59:59-05:00'],
      dimensions: [],
      filters: [],
      order_by: [['visitors', 'desc']],
      include: {},
      pagination: { limit: 10000, offset: 0 },
    })
    expect(json.meta).toEqual({ imports_included: false })
    // the site's id is taken as well as its domain
    const byId = await query({ site_id: siteId, metrics: ['visitors'], date_range: CUSTOM })
    expect(byId.results[0].metrics).toEqual([expectedTotals(ref, FROM, TO).visitors])
  })

  it("events counts pageviews and custom events, as Plausible's Stats API does; /api/v1 keeps custom events only", async () => {
    // counted here from the fixture's events, engagement reports apart
    const [lo, hi] = [Date.parse(FROM), Date.parse(TO)]
    const inWindow = ref.events.filter((e) => e.ts >= lo && e.ts < hi)
    const count = (kind: string, keep: (e: RefEvent) => boolean = () => true) => inWindow.filter((e) => e.kind === kind && keep(e)).length
    expect(count('custom')).toBeGreaterThan(0)
    expect(count('engagement')).toBeGreaterThan(0)
    const json = await query({ metrics: ['events', 'pageviews'], date_range: CUSTOM })
    expect(json.results[0].metrics).toEqual([count('pageview') + count('custom'), count('pageview')])
    // per page, and under a filter
    const paths = [...new Set(inWindow.map((e) => e.path))]
    const byPage = await query({ metrics: ['events'], date_range: CUSTOM, dimensions: ['event:page'], order_by: [['event:page', 'asc']] })
    expect(byPage.results).toEqual(
      paths.sort().map((path) => ({
        metrics: [count('pageview', (e) => e.path === path) + count('custom', (e) => e.path === path)],
        dimensions: [path],
      })),
    )
    const onPricing = await query({ metrics: ['events'], date_range: CUSTOM, filters: [['is', 'event:page', ['/pricing']]] })
    expect(onPricing.results[0].metrics).toEqual([
      count('pageview', (e) => e.path === '/pricing') + count('custom', (e) => e.path === '/pricing'),
    ])
    const v1 = await call('GET', `/api/v1/stats?site_id=${siteId}&range=custom&from=${CUSTOM[0]}&to=${CUSTOM[1]}`, { key })
    expect(v1.status).toBe(200)
    expect(v1.json.totals.events).toBe(count('custom'))
  })

  it.each([
    ['7d', '2026-11-16T00:00:00-05:00', '2026-11-23T00:00:00-05:00'],
    ['28d', '2026-10-26T00:00:00-04:00', '2026-11-23T00:00:00-05:00'],
    ['30d', '2026-10-24T00:00:00-04:00', '2026-11-23T00:00:00-05:00'],
    ['91d', '2026-08-24T00:00:00-04:00', '2026-11-23T00:00:00-05:00'],
    ['month', '2026-11-01T00:00:00-04:00', '2026-11-23T00:00:00-05:00'],
    ['6mo', '2026-06-01T00:00:00-04:00', '2026-11-23T00:00:00-05:00'],
    ['day', '2026-11-22T00:00:00-05:00', '2026-11-23T00:00:00-05:00'],
  ])('date_range %s resolves in the site timezone (now is 2026-11-22 10:00 in New York)', async (range, from, to) => {
    const json = await query({ metrics: ['visitors', 'pageviews'], date_range: range })
    const t = expectedTotals(ref, from, to)
    expect(json.results[0].metrics).toEqual([t.visitors, t.pageviews])
    expect(json.query.date_range[0]).toBe(from)
  })

  it('date_range of two date-times reads exactly that window, its last second included', async () => {
    const json = await query({ metrics: ['visitors', 'pageviews'], date_range: ['2026-11-20T00:00:00-05:00', '2026-11-21T11:59:59-05:00'] })
    const t = expectedTotals(ref, '2026-11-20T00:00:00-05:00', '2026-11-21T12:00:00-05:00')
    expect(json.results[0].metrics).toEqual([t.visitors, t.pageviews])
    expect(json.query.date_range).toEqual(['2026-11-20T00:00:00-05:00', '2026-11-21T11:59:59-05:00'])
  })

  it('a date-time date_range with a time dimension: each site-local day the window touches, read over its part of the window', async () => {
    // Plausible's documented timeseries example, in an offset other than the site's: the window is
    // 2026-11-15 17:00 to 2026-11-22 17:00 in New York
    const [from, to] = ['2026-11-16T00:00:00+02:00', '2026-11-22T23:59:59+02:00']
    const json = await query({ metrics: ['visitors', 'pageviews'], date_range: [from, to], dimensions: ['time:day'] })
    const [lo, hi] = [Date.parse(from), Date.parse(to) + 1000]
    const expected = []
    for (let day = 15; day <= 22; day++) {
      const start = Math.max(lo, Date.parse(`2026-11-${day}T00:00:00-05:00`))
      const end = Math.min(hi, Date.parse(`2026-11-${day + 1}T00:00:00-05:00`))
      const t = expectedTotals(ref, new Date(start).toISOString(), new Date(end).toISOString())
      if (t.visitors) expected.push({ metrics: [t.visitors, t.pageviews], dimensions: [`2026-11-${day}`] })
    }
    expect(expected.length).toBeGreaterThan(4)
    expect(json.results).toEqual(expected)
    expect(json.query.date_range).toEqual(['2026-11-15T17:00:00-05:00', '2026-11-22T16:59:59-05:00'])
    // whole site-local days given as date-times, in the site's offset: the same rows as the dates
    const days = await query({ metrics: ['visitors', 'pageviews'], date_range: ['2026-11-10', '2026-11-16'], dimensions: ['time:day'] })
    const times = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-10T00:00:00-05:00', '2026-11-16T23:59:59-05:00'],
      dimensions: ['time:day'],
    })
    expect(days.results.length).toBeGreaterThan(4)
    expect(times.results).toEqual(days.results)
  })

  it('timeseries by day with time labels: every day labelled, rows only for days with data', async () => {
    const json = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: '7d',
      dimensions: ['time:day'],
      include: { time_labels: true },
    })
    const days = ['2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22']
    expect(json.meta.time_labels).toEqual(days)
    const expected = days
      .map((day, i) => {
        const t = expectedTotals(ref, `${day}T00:00:00-05:00`, i < 6 ? `${days[i + 1]}T00:00:00-05:00` : '2026-11-23T00:00:00-05:00')
        return { metrics: [t.visitors, t.pageviews], dimensions: [day] }
      })
      .filter((r) => r.metrics[0] > 0)
    expect(expected.length).toBeGreaterThan(2)
    expect(json.results).toEqual(expected)
  })

  it('timeseries of bounce rate, visit duration and custom events: each bucket as its own totals', async () => {
    const json = await query({
      metrics: ['visitors', 'bounce_rate', 'visit_duration', 'events', 'views_per_visit'],
      date_range: ['2026-11-18', '2026-11-22'],
      dimensions: ['time:day'],
    })
    const days = ['2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23']
    const expected = days
      .slice(0, -1)
      .map((day, i) => {
        const t = expectedTotals(ref, `${day}T00:00:00-05:00`, `${days[i + 1]}T00:00:00-05:00`)
        return {
          metrics: [t.visitors, Math.round(t.bounceRate * 100), t.avgDuration, t.pageviews + t.events, t.viewsPerVisit],
          dimensions: [day],
        }
      })
      .filter((r) => r.metrics[0] > 0)
    expect(expected.some((r) => r.metrics[3] > 0)).toBe(true)
    expect(json.results).toEqual(expected)
  })

  it('a time dimension with another: the rows of each day, in the order of the dimensions asked', async () => {
    const days = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23']
    const expected = days.slice(0, -1).flatMap((day, i) =>
      expectedBreakdown(ref, `${day}T00:00:00-05:00`, `${days[i + 1]}T00:00:00-05:00`, (_e, v) => v.source, true).map((r) => ({
        metrics: [r.visitors, r.pageviews],
        dimensions: [day, r.value],
      })),
    )
    expect(new Set(expected.map((r) => r.dimensions[0])).size).toBeGreaterThan(1)
    const json = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-20', '2026-11-22'],
      dimensions: ['time:day', 'visit:source'],
    })
    expect(json.results).toEqual(expected)
    expect(json.query.order_by).toEqual([
      ['time:day', 'asc'],
      ['visitors', 'desc'],
    ])
    const reversed = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-20', '2026-11-22'],
      dimensions: ['visit:source', 'time:day'],
    })
    expect(reversed.results).toEqual(expected.map((r) => ({ ...r, dimensions: [r.dimensions[1], r.dimensions[0]] })))
  })

  it("the echoed order_by is the order applied, as Plausible's: the time dimension ascending, then the first metric descending", async () => {
    const echo = async (body: Record<string, unknown>) => (await query({ metrics: ['pageviews', 'visitors'], ...body })).query
    // a time dimension alone, or beside another
    expect((await echo({ date_range: '7d', dimensions: ['time:day'] })).order_by).toEqual([
      ['time:day', 'asc'],
      ['pageviews', 'desc'],
    ])
    expect((await echo({ date_range: '7d', dimensions: ['visit:source', 'time:week'] })).order_by).toEqual([
      ['time:week', 'asc'],
      ['pageviews', 'desc'],
    ])
    // no time dimension: the first metric, descending
    expect((await echo({ date_range: '7d', dimensions: ['visit:source'] })).order_by).toEqual([['pageviews', 'desc']])
    // an order asked for is echoed as asked
    expect((await echo({ date_range: '7d', dimensions: ['time:day'], order_by: [['visitors', 'asc']] })).order_by).toEqual([
      ['visitors', 'asc'],
    ])
    // "time" is echoed as the bucket it was read by: hours up to 48 hours, days up to 40 days, weeks up to 52 weeks, else months
    const cases: [unknown, string][] = [
      [['2026-11-21', '2026-11-22'], 'time:hour'],
      [['2026-11-20', '2026-11-22'], 'time:day'],
      [['2026-10-14', '2026-11-22'], 'time:day'],
      [['2026-10-12', '2026-11-22'], 'time:week'],
      [['2025-11-24', '2026-11-22'], 'time:week'],
      [['2025-11-16', '2026-11-22'], 'time:month'],
    ]
    for (const [date_range, resolved] of cases) {
      const json = await echo({ date_range, dimensions: ['time'], order_by: [['time', 'desc']] })
      expect([json.dimensions, json.order_by], JSON.stringify(date_range)).toEqual([[resolved], [[resolved, 'desc']]])
    }
  })

  it('timeseries by month and by hour', async () => {
    const months = await query({ metrics: ['visitors'], date_range: CUSTOM, dimensions: ['time:month'], include: { time_labels: true } })
    expect(months.meta.time_labels).toEqual(['2026-08-01', '2026-09-01', '2026-10-01', '2026-11-01'])
    const bounds = [FROM, '2026-09-01T00:00:00-04:00', '2026-10-01T00:00:00-04:00', '2026-11-01T00:00:00-04:00', TO]
    expect(months.results).toEqual(
      months.meta.time_labels.map((label: string, i: number) => ({
        metrics: [expectedTotals(ref, bounds[i], bounds[i + 1]).visitors],
        dimensions: [label],
      })),
    )
    const hours = await query({ metrics: ['visitors', 'visits'], date_range: ['2026-11-20', '2026-11-20'], dimensions: ['time:hour'] })
    const expected = []
    for (let h = 0; h < 24; h++) {
      const start = Date.parse('2026-11-20T00:00:00-05:00') + h * 3_600_000
      const t = expectedTotals(ref, new Date(start).toISOString(), new Date(start + 3_600_000).toISOString())
      if (t.visitors) expected.push({ metrics: [t.visitors, t.visits], dimensions: [`2026-11-20 ${String(h).padStart(2, '0')}:00:00`] })
    }
    expect(expected.length).toBeGreaterThan(0)
    expect(hours.results).toEqual(expected)
  })

  it('timeseries by week: Monday-started weeks, the first one holding the window start', async () => {
    const json = await query({
      metrics: ['visitors', 'visits'],
      date_range: ['2026-11-04', '2026-11-22'],
      dimensions: ['time:week'],
      include: { time_labels: true },
    })
    // 4 November 2026 is a Wednesday: its week starts on Monday 2 November, whose first two days are outside the window
    expect(json.meta.time_labels).toEqual(['2026-11-02', '2026-11-09', '2026-11-16'])
    const bounds = ['2026-11-04T00:00:00-05:00', '2026-11-09T00:00:00-05:00', '2026-11-16T00:00:00-05:00', '2026-11-23T00:00:00-05:00']
    // visitor ids rotate at the site-local midnight: a week's visitors are its days' visitors summed
    const days = (from: string, to: string) => {
      const out: number[] = []
      for (let t = Date.parse(from); t < Date.parse(to); t += 86_400_000)
        out.push(expectedTotals(ref, new Date(t).toISOString(), new Date(t + 86_400_000).toISOString()).visitors)
      return out.reduce((a, b) => a + b, 0)
    }
    expect(json.results).toEqual(
      json.meta.time_labels.map((label: string, i: number) => ({
        metrics: [days(bounds[i], bounds[i + 1]), expectedTotals(ref, bounds[i], bounds[i + 1]).visits],
        dimensions: [label],
      })),
    )
  })

  it('breakdown by page with percentage, ordered by visitors then value', async () => {
    const json = await query({
      metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'percentage'],
      date_range: CUSTOM,
      dimensions: ['event:page'],
    })
    const all = expectedTotals(ref, FROM, TO).visitors
    const expected = expectedBreakdown(ref, FROM, TO, (e) => (e.kind === 'pageview' || e.kind === 'custom' ? e.path : undefined), true)
    // the reference's rows are by any event on the page; the service's as well (engagement reports included)
    const rows = expectedBreakdown(ref, FROM, TO, (e) => e.path, true)
    expect(rows.map((r) => r.value).sort()).toEqual(expected.map((r) => r.value).sort())
    expect(json.results).toEqual(
      rows.map((r) => ({
        metrics: [
          r.visitors,
          r.visits,
          r.pageviews,
          Math.round((r.bounceRate as number) * 100),
          round(((r.visitors as number) / all) * 100, 1),
        ],
        dimensions: [r.value],
      })),
    )
  })

  it('scroll depth and time on page per page, from the leave-time reports', async () => {
    const json = await query({
      metrics: ['scroll_depth', 'time_on_page'],
      date_range: CUSTOM,
      dimensions: ['event:page'],
      order_by: [['event:page', 'asc']],
    })
    const reports = ref.events.filter((e) => e.kind === 'engagement')
    const paths = [...new Set(ref.events.map((e) => e.path))].sort()
    expect(json.results).toEqual(
      paths.map((path) => {
        const mine = reports.filter((e) => e.path === path)
        return {
          metrics: [
            Math.round(mine.reduce((n, e) => n + (e.engagement?.scroll ?? 0), 0) / mine.length),
            Math.round(mine.reduce((n, e) => n + (e.engagement?.ms ?? 0), 0) / mine.length / 1000),
          ],
          dimensions: [path],
        }
      }),
    )
  })

  const filterCases: [string, unknown[], Keep][] = [
    ['is on a visit dimension', [['is', 'visit:source', ['Google']]], (_e, v) => v.source === 'Google'],
    ['is with two clauses', [['is', 'visit:country', ['US', 'DE']]], (_e, v) => v.country === 'US' || v.country === 'DE'],
    ['is_not', [['is_not', 'visit:device', ['Mobile']]], (_e, v) => v.device !== 'Mobile'],
    ['contains (case-sensitive by default)', [['contains', 'event:page', ['blog']]], (e) => e.path.includes('blog')],
    ['contains that differs in case matches nothing', [['contains', 'event:page', ['BLOG']]], () => false],
    [
      'contains with case_sensitive: false',
      [['contains', 'event:page', ['BLOG'], { case_sensitive: false }]],
      (e) => e.path.includes('blog'),
    ],
    ['is with case_sensitive: false', [['is', 'visit:source', ['google'], { case_sensitive: false }]], (_e, v) => v.source === 'Google'],
    ['matches', [['matches', 'event:page', ['^/blog/[ab]$']]], (e) => e.path.startsWith('/blog/')],
    [
      'matches with case_sensitive: false',
      [['matches', 'event:page', ['^/PRICING$'], { case_sensitive: false }]],
      (e) => e.path === '/pricing',
    ],
    [
      'and of two filters',
      [
        [
          'and',
          [
            ['is', 'visit:source', ['Google']],
            ['is', 'event:page', ['/docs']],
          ],
        ],
      ],
      (e, v) => v.source === 'Google' && e.path === '/docs',
    ],
    [
      'or of one dimension',
      [
        [
          'or',
          [
            ['is', 'visit:country', ['US']],
            ['is', 'visit:country', ['AU']],
          ],
        ],
      ],
      (_e, v) => v.country === 'US' || v.country === 'AU',
    ],
    ['not', [['not', ['is', 'visit:source', ['Direct / None']]]], (_e, v) => v.source !== 'Direct / None'],
    ['event:name', [['is', 'event:name', ['Signup']]], (e) => e.name === 'Signup'],
    ['a custom property', [['is', 'event:props:plan', ['pro']]], (e) => e.plan === 'pro'],
    ['entry page', [['is', 'visit:entry_page', ['/pricing']]], (_e, v) => v.entry === '/pricing'],
    ['contains_not', [['contains_not', 'event:page', ['blog']]], (e) => !e.path.includes('blog')],
    [
      'contains_not with case_sensitive: false',
      [['contains_not', 'event:page', ['BLOG'], { case_sensitive: false }]],
      (e) => !e.path.includes('blog'),
    ],
    ['matches_not', [['matches_not', 'event:page', ['^/$']]], (e) => e.path !== '/'],
    [
      'is_not with case_sensitive: false',
      [['is_not', 'visit:source', ['GOOGLE'], { case_sensitive: false }]],
      (_e, v) => v.source !== 'Google',
    ],
    ['not around contains', [['not', ['contains', 'event:page', ['blog']]]], (e) => !e.path.includes('blog')],
    ['has_done an event', [['has_done', ['is', 'event:name', ['Signup']]]], (_e, v) => signedUp().has(v.id)],
    ['has_not_done an event', [['has_not_done', ['is', 'event:name', ['Signup']]]], (_e, v) => !signedUp().has(v.id)],
    ['not has_done', [['not', ['has_done', ['is', 'event:name', ['Signup']]]]], (_e, v) => !signedUp().has(v.id)],
    ['has_done a goal', [['has_done', ['is', 'event:goal', ['Signup']]]], (_e, v) => signedUp().has(v.id)],
    ['has_not_done a goal', [['has_not_done', ['is', 'event:goal', ['Signup']]]], (_e, v) => !signedUp().has(v.id)],
    [
      'has_done with a pro plan, and a page',
      [
        ['has_done', ['is', 'event:props:plan', ['pro']]],
        ['is', 'event:page', ['/docs']],
      ],
      (e, v) => e.path === '/docs' && ref.events.some((x) => x.visit === v.id && x.plan === 'pro'),
    ],
    ['a country by name', [['is', 'visit:country_name', ['Germany']]], (_e, v) => v.country === 'DE'],
    [
      'country names containing a word, ignoring case',
      [['contains', 'visit:country_name', ['UNITED'], { case_sensitive: false }]],
      (_e, v) => v.country === 'US' || v.country === 'GB',
    ],
    ['country names matching nothing', [['contains', 'visit:country_name', ['Atlantis']]], () => false],
    [
      'country names not matching',
      [['contains_not', 'visit:country_name', ['United']]],
      (_e, v) => v.country !== 'US' && v.country !== 'GB',
    ],
  ]
  /** The visits with a Signup event, in the reference. */
  const signedUp = () => new Set(ref.events.filter((e) => e.name === 'Signup').map((e) => e.visit))

  it.each(filterCases)('filter: %s', async (_name, filters, keep) => {
    const json = await query({ metrics: TOTAL_METRICS, date_range: CUSTOM, filters })
    const expected = expectedTotals(ref, FROM, TO, keep)
    expect(json.results[0].metrics).toEqual(plausibleTotals(expected))
    if (!/matches nothing|matching nothing/.test(_name)) expect(expected.visitors).toBeGreaterThan(0)
    expect(expected.visitors).toBeLessThan(expectedTotals(ref, FROM, TO).visitors)
  })

  it('a saved segment filters as its filters do', async () => {
    const segment = await call('POST', '/api/v1/segments', {
      key: writeKey,
      body: { site_id: siteId, name: 'From Google', filters: [{ dimension: 'source', operator: 'is', value: ['Google'] }] },
    })
    expect(segment.status).toBe(201)
    const json = await query({ metrics: ['visitors', 'pageviews'], date_range: CUSTOM, filters: [['is', 'segment', [segment.json.id]]] })
    const t = expectedTotals(ref, FROM, TO, (_e, v) => v.source === 'Google')
    expect(json.results[0].metrics).toEqual([t.visitors, t.pageviews])
  })

  it('countries by name: visit:country_name rows carry English names', async () => {
    const json = await query({ metrics: ['visitors', 'visits'], date_range: CUSTOM, dimensions: ['visit:country_name'] })
    const NAMES: Record<string, string> = { GB: 'United Kingdom', US: 'United States', DE: 'Germany', AU: 'Australia' }
    const rows = expectedBreakdown(ref, FROM, TO, (_e, v) => NAMES[v.country], true)
    expect(rows.length).toBe(4)
    expect(json.results).toEqual(rows.map((r) => ({ metrics: [r.visitors, r.visits], dimensions: [r.value] })))
  })

  it('custom properties: a breakdown by event:props:plan', async () => {
    const json = await query({ metrics: ['visitors', 'events'], date_range: CUSTOM, dimensions: ['event:props:plan'] })
    const rows = expectedBreakdown(ref, FROM, TO, (e) => e.plan, false)
    expect(rows.length).toBe(2)
    expect(json.results).toEqual(
      rows.map((r) => ({ metrics: [r.visitors, (r.pageviews as number) + (r.events as number)], dimensions: [r.value] })),
    )
  })

  it('pagination: limit and offset over the ordered rows, total_rows counting them all', async () => {
    const rows = expectedBreakdown(ref, FROM, TO, (e) => e.path, true)
    const json = await query({
      metrics: ['visitors'],
      date_range: CUSTOM,
      dimensions: ['event:page'],
      pagination: { limit: 2, offset: 1 },
      include: { total_rows: true },
    })
    expect(json.meta.total_rows).toBe(rows.length)
    expect(json.results).toEqual(rows.slice(1, 3).map((r) => ({ metrics: [r.visitors], dimensions: [r.value] })))
    // another order: by pageviews ascending
    const byViews = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: CUSTOM,
      dimensions: ['event:page'],
      order_by: [['pageviews', 'asc']],
    })
    const sorted = [...rows].sort(
      (a, b) => (a.pageviews as number) - (b.pageviews as number) || String(a.value).localeCompare(String(b.value)),
    )
    expect(byViews.results).toEqual(sorted.map((r) => ({ metrics: [r.visitors, r.pageviews], dimensions: [r.value] })))
  })

  it('revenue and conversion metrics by goal, and under a goal filter', async () => {
    const all = expectedTotals(ref, FROM, TO).visitors
    const signups = ref.events.filter((e) => e.name === 'Signup')
    const converters = new Set(signups.map((e) => e.visitor)).size
    const pro = signups.filter((e) => e.plan === 'pro').length
    const revenue = (amount: number) => ({
      value: round(amount, 2),
      currency: 'EUR',
      short: new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR', notation: 'compact', maximumFractionDigits: 1 }).format(
        amount,
      ),
      long: new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR', maximumFractionDigits: 2 }).format(amount),
    })
    const byGoal = await query({
      metrics: ['visitors', 'events', 'conversion_rate', 'group_conversion_rate', 'total_revenue', 'average_revenue'],
      date_range: CUSTOM,
      dimensions: ['event:goal'],
    })
    const rate = round((converters / all) * 100, 2)
    expect(byGoal.results).toEqual([
      {
        metrics: [converters, signups.length, rate, rate, revenue(pro * 10.5), revenue((pro * 10.5) / signups.length)],
        dimensions: ['Signup'],
      },
    ])
    const filtered = await query({
      metrics: ['visitors', 'conversion_rate', 'total_revenue'],
      date_range: CUSTOM,
      filters: [['is', 'event:goal', ['Signup']]],
    })
    expect(filtered.results[0].metrics).toEqual([converters, rate, revenue(pro * 10.5)])
    // conversion rates of each source: converters there over all visitors, and over the source's own visitors
    const bySource = await query({
      metrics: ['visitors', 'conversion_rate', 'group_conversion_rate'],
      date_range: CUSTOM,
      dimensions: ['visit:source'],
      filters: [['is', 'event:goal', ['signup'], { case_sensitive: false }]],
    })
    const sources = expectedBreakdown(ref, FROM, TO, (_e, v) => v.source, true)
    const expected = sources
      .map((s) => {
        const conv = new Set(signups.filter((e) => ref.visits.get(e.visit)?.source === s.value).map((e) => e.visitor)).size
        return { metrics: [conv, round((conv / all) * 100, 2), round((conv / (s.visitors as number)) * 100, 2)], dimensions: [s.value] }
      })
      .filter((r) => r.metrics[0] > 0)
      .sort((a, b) => b.metrics[0] - a.metrics[0] || String(a.dimensions[0]).localeCompare(String(b.dimensions[0])))
    expect(bySource.results).toEqual(expected)
  })

  it("revenue warnings: Plausible's codes and texts, decided by the currencies of the goals the query selects", async () => {
    const revenueQuery = (body: Record<string, unknown>) =>
      query({ site_id: shopDomain, metrics: ['total_revenue', 'average_revenue'], date_range: ['2026-11-21', '2026-11-21'], ...body })
    const both = (code: string, warning: string) => ({ total_revenue: { code, warning }, average_revenue: { code, warning } })
    // goals of two currencies together: no sum
    const mixed = await revenueQuery({ filters: [['is', 'event:goal', ['Signup', 'Purchase']]] })
    expect(mixed.results).toEqual([{ metrics: [null, null], dimensions: [] }])
    expect(mixed.meta.metric_warnings).toEqual(
      both('no_single_revenue_currency', 'Revenue metrics are null as there are multiple currencies for the selected event:goals.'),
    )
    // a goal without a currency
    const none = await revenueQuery({ filters: [['is', 'event:goal', ['Visit /pricing']]] })
    expect(none.results).toEqual([{ metrics: [null, null], dimensions: [] }])
    expect(none.meta.metric_warnings).toEqual(
      both('no_revenue_goals_matching', 'Revenue metrics are null as there are no matching revenue goals.'),
    )
    // one currency: the sum of its conversions' revenue, and no warning
    const purchases = SHOP_HITS.filter((h) => h.name === 'Purchase')
    const usd = purchases.reduce((n, h) => n + (h.revenue?.amount ?? 0), 0)
    const single = await revenueQuery({ filters: [['is', 'event:goal', ['Purchase', 'Visit /pricing']]] })
    expect(single.results[0].metrics.map((m: { value: number; currency: string }) => [m.value, m.currency])).toEqual([
      [usd, 'USD'],
      [usd / purchases.length, 'USD'],
    ])
    expect(single.meta.metric_warnings).toBeUndefined()
    // by goal, each goal in its own currency and no warning, though a goal without one has no revenue
    const byGoal = await revenueQuery({ metrics: ['visitors', 'total_revenue'], dimensions: ['event:goal'] })
    expect(
      byGoal.results.map((r: { metrics: [number, { value: number; currency: string } | null]; dimensions: string[] }) => [
        r.dimensions[0],
        r.metrics[0],
        r.metrics[1] && [r.metrics[1].value, r.metrics[1].currency],
      ]),
    ).toEqual([
      ['Purchase', 1, [usd, 'USD']],
      ['Signup', 1, [10, 'EUR']],
      ['Visit /pricing', 1, null],
    ])
    expect(byGoal.meta.metric_warnings).toBeUndefined()
  })

  it('UTM: breakdowns and filters by campaign fields', async () => {
    const bySource = await query({
      site_id: utmDomain,
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-20', '2026-11-21'],
      dimensions: ['visit:utm_source'],
    })
    expect(bySource.results).toEqual(utmRows('utm_source'))
    expect(bySource.results.map((r: { dimensions: string[] }) => r.dimensions[0])).toContain('(not set)')
    for (const field of ['utm_medium', 'utm_campaign', 'utm_content']) {
      const json = await query({
        site_id: utmDomain,
        metrics: ['visitors', 'pageviews'],
        date_range: ['2026-11-20', '2026-11-21'],
        dimensions: [`visit:${field}`],
      })
      expect(json.results, field).toEqual(utmRows(field))
    }
    // "(not set)" in a filter selects the visits without the tag, as in Plausible
    const untagged = await query({
      site_id: utmDomain,
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-20', '2026-11-21'],
      filters: [['is', 'visit:utm_source', ['(not set)']]],
    })
    const notSet = utmRows('utm_source').find((r) => r.dimensions[0] === '(not set)')
    expect(untagged.results[0].metrics).toEqual(notSet?.metrics)
    const tagged = await query({
      site_id: utmDomain,
      metrics: ['visitors'],
      date_range: ['2026-11-20', '2026-11-21'],
      filters: [['is_not', 'visit:utm_source', ['(not set)']]],
    })
    expect(tagged.results[0].metrics).toEqual([new Set(UTM_HITS.map(([, ip]) => ip)).size - (notSet?.metrics[0] ?? 0)])
    const campaign = await query({
      site_id: utmDomain,
      metrics: ['visitors', 'visits'],
      date_range: ['2026-11-20', '2026-11-21'],
      filters: [
        ['is', 'visit:utm_campaign', ['launch']],
        ['is_not', 'visit:utm_medium', ['social']],
      ],
    })
    expect(campaign.results[0].metrics).toEqual([2, 2])
  })

  it('comparisons with the previous period: the earlier numbers and the change', async () => {
    const json = await query({
      metrics: ['visitors', 'bounce_rate'],
      date_range: '7d',
      include: { comparisons: { mode: 'previous_period' } },
    })
    const now = expectedTotals(ref, '2026-11-16T00:00:00-05:00', '2026-11-23T00:00:00-05:00')
    const before = expectedTotals(ref, '2026-11-09T00:00:00-05:00', '2026-11-16T00:00:00-05:00')
    const [a, b] = [now, before].map((t) => [t.visitors, Math.round(t.bounceRate * 100)])
    expect(json.results).toEqual([
      {
        metrics: a,
        dimensions: [],
        comparison: { metrics: b, dimensions: [], change: [Math.round(((a[0] - b[0]) / b[0]) * 100), a[1] - b[1]] },
      },
    ])
    expect(json.query.comparison_date_range).toEqual(['2026-11-09T00:00:00-05:00', '2026-11-15T23:59:59-05:00'])
  })

  it('imports: a site read from its tracker says imports are not added; a GA4-only site reads its imports and refuses what they lack', async () => {
    const json = await query({ metrics: ['visitors'], date_range: '7d', include: { imports: true } })
    // Plausible's reason, and no warning: nothing was left out
    expect(json.meta).toEqual({ imports_included: false, imports_skip_reason: 'no_imported_data' })
    const ga4 = await query({ site_id: ga4Domain, metrics: ['visitors', 'pageviews'], date_range: '7d', include: { imports: true } })
    expect(ga4.results).toEqual([{ metrics: [0, 0], dimensions: [] }])
    expect(ga4.meta.imports_included).toBe(true)
    const exit = await refused({ site_id: ga4Domain, metrics: ['visitors'], date_range: '7d', dimensions: ['visit:exit_page'] })
    expect(exit.status).toBe(400)
    expect(exit.json.error).toMatch(/visit:exit_page cannot be answered from the ga4 source/)
    const screen = await refused({
      site_id: ga4Domain,
      metrics: ['visitors'],
      date_range: '7d',
      filters: [['is', 'event:props:plan', ['pro']]],
    })
    expect(screen.status).toBe(400)
    expect(screen.json.error).toMatch(/filters\[0\]: event:props:plan cannot be answered from the ga4 source/)
  })

  it('agrees with GET /api/v1/breakdown for the same question', async () => {
    const filters = [{ dimension: 'device', operator: 'is', value: ['Desktop'] }]
    const v1 = await call(
      'GET',
      `/api/v1/breakdown?site_id=${siteId}&range=custom&from=2026-08-01&to=2026-11-22&property=source&filters=${encodeURIComponent(JSON.stringify(filters))}`,
      { key },
    )
    expect(v1.status).toBe(200)
    const v2 = await query({
      metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'],
      date_range: CUSTOM,
      dimensions: ['visit:source'],
      filters: [['is', 'visit:device', ['Desktop']]],
    })
    expect(v1.json.results.length).toBeGreaterThan(1)
    expect(v2.results).toEqual(
      v1.json.results.map((r: Record<string, number | string>) => ({
        metrics: [r.visitors, r.visits, r.pageviews, Math.round((r.bounceRate as number) * 100), r.avgDuration],
        dimensions: [r.value],
      })),
    )
  })

  const invalid: [string, Record<string, unknown>, number, RegExp][] = [
    ['an unknown metric', { metrics: ['visitorz'], date_range: '7d' }, 400, /^metrics\.0: Invalid option: expected one of "visitors"/],
    ['no metrics', { metrics: [], date_range: '7d' }, 400, /metrics: at least one metric/],
    ['no date_range', { metrics: ['visitors'] }, 400, /^date_range: must be one of day, 7d/],
    ['an unknown date_range', { metrics: ['visitors'], date_range: '8d' }, 400, /date_range: must be one of/],
    [
      'a date that is not one',
      { metrics: ['visitors'], date_range: ['2026-02-30', '2026-03-01'] },
      400,
      /date_range\[0\]: 2026-02-30 is not/,
    ],
    ['dates in the wrong order', { metrics: ['visitors'], date_range: ['2026-03-02', '2026-03-01'] }, 400, /from: must not be after to/],
    ['an unknown field', { metrics: ['visitors'], date_range: '7d', interval: 'day' }, 400, /unknown field "interval"/],
    [
      'an unknown dimension',
      { metrics: ['visitors'], date_range: '7d', dimensions: ['visit:planet'] },
      400,
      /dimensions\[0\]: invalid dimension "visit:planet"/,
    ],
    [
      'a visit metric of goals with another dimension',
      { metrics: ['visitors', 'visits'], date_range: '7d', dimensions: ['visit:source', 'event:goal'] },
      400,
      /^metrics: visits is not defined for goals/,
    ],
    [
      'bounce_rate of goals by day',
      { metrics: ['bounce_rate'], date_range: '7d', dimensions: ['event:goal', 'time:day'] },
      400,
      /^metrics: bounce_rate is not defined for goals/,
    ],
    [
      'engaged time of goals by page',
      { metrics: ['time_on_page'], date_range: '7d', dimensions: ['event:page', 'event:goal'] },
      400,
      /^metrics: time_on_page needs the dimension event:page alone/,
    ],
    [
      'a dimension twice',
      { metrics: ['visitors'], date_range: '7d', dimensions: ['visit:source', 'visit:source'] },
      400,
      /dimensions: a dimension is listed twice/,
    ],
    [
      'scroll_depth of pages with another dimension',
      { metrics: ['scroll_depth'], date_range: '7d', dimensions: ['event:page', 'visit:source'] },
      400,
      /scroll_depth needs the dimension event:page/,
    ],
    [
      'a rate of an event dimension',
      { metrics: ['bounce_rate'], date_range: '7d', dimensions: ['event:name'] },
      400,
      /bounce_rate is not defined for the event dimension event:name/,
    ],
    ['percentage without a dimension', { metrics: ['percentage'], date_range: '7d' }, 400, /percentage needs a dimension/],
    [
      'conversion_rate without goals',
      { metrics: ['conversion_rate'], date_range: '7d' },
      400,
      /conversion_rate needs an event:goal filter/,
    ],
    ['scroll_depth without pages', { metrics: ['scroll_depth'], date_range: '7d' }, 400, /scroll_depth needs the dimension event:page/],
    [
      'a series of scroll depths',
      { metrics: ['scroll_depth'], date_range: '7d', dimensions: ['time'] },
      400,
      /scroll_depth is not available with a time dimension/,
    ],
    [
      'has_done of a visit dimension',
      { metrics: ['visitors'], date_range: '7d', filters: [['has_done', ['is', 'visit:source', ['Google']]]] },
      400,
      /filters\[0\]: has_done takes a filter on an event dimension/,
    ],
    [
      'has_done of has_done',
      { metrics: ['visitors'], date_range: '7d', filters: [['has_done', ['has_not_done', ['is', 'event:name', ['Signup']]]]] },
      400,
      /cannot hold another behavioural filter/,
    ],
    [
      'an unknown operator',
      { metrics: ['visitors'], date_range: '7d', filters: [['equals', 'event:page', ['/']]] },
      400,
      /filters\[0\]: invalid filter operator "equals"/,
    ],
    [
      'a filter without clauses',
      { metrics: ['visitors'], date_range: '7d', filters: [['is', 'event:page', []]] },
      400,
      /clauses must be a list/,
    ],
    [
      'an unknown modifier',
      { metrics: ['visitors'], date_range: '7d', filters: [['is', 'event:page', ['/'], { ignore: true }]] },
      400,
      /unknown modifier "ignore"/,
    ],
    [
      'conversion_rate with a goal filter only inside an or across dimensions',
      {
        metrics: ['visitors', 'conversion_rate'],
        date_range: '7d',
        filters: [
          [
            'or',
            [
              ['is', 'event:goal', ['Signup']],
              ['is', 'visit:source', ['Google']],
            ],
          ],
        ],
      },
      400,
      /^metrics: conversion_rate needs an event:goal filter \(outside an "or" or "not" across dimensions\)/,
    ],
    [
      'a goal the site does not have',
      { metrics: ['visitors'], date_range: '7d', filters: [['is', 'event:goal', ['Purchase']]] },
      400,
      /goal "Purchase" is not configured/,
    ],
    [
      'a bad regular expression',
      { metrics: ['visitors'], date_range: '7d', filters: [['matches', 'event:page', ['(']]] },
      400,
      /invalid regular expression/,
    ],
    [
      'a segment that is not one',
      { metrics: ['visitors'], date_range: '7d', filters: [['is', 'segment', ['4c1f8a9e-0000-4000-8000-000000000000']]] },
      400,
      /not a segment id/,
    ],
    [
      'order_by outside the query',
      { metrics: ['visitors'], date_range: '7d', order_by: [['pageviews', 'desc']] },
      400,
      /order_by\[0\]: pageviews is neither/,
    ],
    ['a limit over 10,000', { metrics: ['visitors'], date_range: '7d', pagination: { limit: 10_001 } }, 400, /pagination\.limit/],
    [
      'time labels without time',
      { metrics: ['visitors'], date_range: '7d', include: { time_labels: true } },
      400,
      /include\.time_labels: needs a time dimension/,
    ],
    [
      'an unknown comparison',
      { metrics: ['visitors'], date_range: '7d', include: { comparisons: { mode: 'last_week' } } },
      400,
      /comparisons\.mode/,
    ],
    [
      'a custom comparison without dates',
      { metrics: ['visitors'], date_range: '7d', include: { comparisons: { mode: 'custom' } } },
      400,
      /comparisons\.date_range: required/,
    ],
    ['a domain no site has', { site_id: 'nowhere.test', metrics: ['visitors'], date_range: '7d' }, 404, /site not found/],
  ]

  it.each(invalid)('refuses %s', async (_name, body, status, message) => {
    const res = await refused(body)
    expect(res.status, JSON.stringify(res.json)).toBe(status)
    expect(res.json.error).toMatch(message)
  })

  it('a site of another organization is 404, a missing key 401', async () => {
    const foreign = await call('POST', '/api/v2/query', {
      key,
      body: { site_id: otherSiteDomain, metrics: ['visitors'], date_range: '7d' },
    })
    expect(foreign.status).toBe(404)
    const mine = await call('POST', '/api/v2/query', { key: otherKey, body: { site_id: DOMAIN, metrics: ['visitors'], date_range: '7d' } })
    expect(mine.status).toBe(404)
    const anonymous = await call('POST', '/api/v2/query', { body: { site_id: DOMAIN, metrics: ['visitors'], date_range: '7d' } })
    expect(anonymous.status).toBe(401)
  })

  it('the reference fixture has visits on the days the timeseries reads', () => {
    expect(ref.events.some((e) => localDate(e.ts, TZ) === '2026-11-20')).toBe(true)
  })
})
