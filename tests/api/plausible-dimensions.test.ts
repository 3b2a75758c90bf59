import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { createGoal } from '../../lib/sites/goals'
import { createSegment } from '../../lib/operations/segments'
import { rollupBuildsSettled } from '../../lib/reports/query/run'
import { newSite } from '../../lib/sites/sites'
import { client, testServices } from '../helpers'
import { combinedProperty } from '../../lib/reports/dimensions'
import { NOW, type Ref, type RefEvent, type RefVisit, UAS, expectedBreakdown, expectedTotals, fixture, round } from './report-reference'

/**
 * POST /api/v2/query with several dimensions together, the version and visit-hostname dimensions,
 * and filter trees (or across dimensions, not around several filters), against the reference
 * computation of report-reference.ts over the fixture hits, and hand-counted hits on a second site;
 * goals beside other dimensions, and goal and segment filters inside or and not.
 */

const TZ = 'America/New_York'
const DOMAIN = 'multi.plausible.test'
const HOSTS = 'hosts.plausible.test'
const FROM = '2026-08-01T00:00:00-04:00'
const TO = '2026-11-23T00:00:00-05:00'
const CUSTOM = ['2026-08-01', '2026-11-22']

type Row = { metrics: unknown[]; dimensions: string[] }
type Keep = (e: RefEvent, v: RefVisit) => boolean

/** Plausible's default order of rows: visitors (the first metric) descending, then each dimension ascending. */
const byVisitorsThenDimensions = (a: Row, b: Row) => {
  const d = (b.metrics[0] as number) - (a.metrics[0] as number)
  if (d) return d
  for (const [i, v] of a.dimensions.entries()) if (v !== b.dimensions[i]) return v < b.dimensions[i] ? -1 : 1
  return 0
}

describe('POST /api/v2/query: dimensions together, versions and visit hostnames, filter trees', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key = ''
  let siteId = ''
  let hostsId = ''
  let ref: Ref
  /** Saved segments: the mobile visits from Google; the visits that signed up. */
  let mobileGoogle = ''
  let signedUpSegment = ''

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Plausible clients', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: DOMAIN, timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    siteId = site.id
    ref = fixture(site.snippetId, site.domain, TZ, 11)
    expect((await importHits(ref.lines, services.ingestor)).rejected).toBe(0)
    // an event goal with a currency (the fixture's pro signups carry 10.50 EUR) and a page goal
    await createGoal(services.repositories, site.id, { site_id: site.id, type: 'event', matchValue: 'Signup', currency: 'EUR' }, NOW)
    await createGoal(services.repositories, site.id, { site_id: site.id, type: 'page', matchValue: '/pricing' }, NOW)
    const segment = (name: string, filters: unknown[]) =>
      createSegment(services.repositories, site, { site_id: site.id, name, filters }, NOW)
    mobileGoogle = (
      await segment('Mobile from Google', [
        { dimension: 'device', operator: 'is', value: ['Mobile'] },
        { dimension: 'source', operator: 'is', value: ['Google'] },
      ])
    ).id
    signedUpSegment = (await segment('Signed up', [{ dimension: 'goal', operator: 'is', value: ['Signup'] }])).id

    // three visits over three hostnames: A enters on the site and leaves on its blog, B stays on the
    // blog, C enters on the docs and leaves on the site
    const hosts = newSite({ domain: HOSTS, timezone: 'UTC' }, org.id, NOW)
    await services.repositories.sites.create(hosts)
    hostsId = hosts.id
    const hit = (ts: string, ip: string, ua: string, url: string) =>
      JSON.stringify({ timestamp: ts, site: hosts.snippetId, name: 'pageview', url, ip, userAgent: ua })
    const lines = [
      hit('2026-11-20T10:00:00Z', '8.8.8.8', UAS[1], `https://${HOSTS}/`),
      hit('2026-11-20T10:05:00Z', '8.8.8.8', UAS[1], `https://blog.${HOSTS}/a`),
      hit('2026-11-20T11:00:00Z', '1.1.1.1', UAS[0], `https://blog.${HOSTS}/b`),
      hit('2026-11-20T12:00:00Z', '81.2.69.142', UAS[2], `https://docs.${HOSTS}/d`),
      hit('2026-11-20T12:10:00Z', '81.2.69.142', UAS[2], `https://${HOSTS}/`),
    ]
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
  })

  const query = async (body: Record<string, unknown>, site = DOMAIN) => {
    const res = await call('POST', '/api/v2/query', { key, body: { site_id: site, ...body } })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }

  /** The reference's rows of a combination of values (undefined: the event has none), with the metrics of the query. */
  const expectedRows = (from: string, to: string, values: (e: RefEvent, v: RefVisit) => string[] | undefined, keep?: Keep) =>
    expectedBreakdown(
      ref,
      from,
      to,
      (e, v) => {
        const combination = values(e, v)
        return combination && JSON.stringify(combination)
      },
      true,
      keep,
    ).map(
      (r): Row => ({
        metrics: [
          r.visitors,
          r.visits,
          r.pageviews,
          Math.round((r.bounceRate as number) * 100),
          r.avgDuration,
          (r.pageviews as number) + (r.events as number),
        ],
        dimensions: JSON.parse(r.value as string),
      }),
    )
  const METRICS = ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration', 'events']

  it('a visit dimension and an event dimension together: each combination of values with its numbers', async () => {
    const json = await query({ metrics: METRICS, date_range: CUSTOM, dimensions: ['visit:source', 'event:page'] })
    const expected = expectedRows(FROM, TO, (e, v) => [v.source, e.path]).sort(byVisitorsThenDimensions)
    // several sources each with several pages
    expect(new Set(expected.map((r) => r.dimensions[0])).size).toBe(4)
    expect(expected.length).toBeGreaterThan(10)
    expect(json.results).toEqual(expected)
  })

  it('two visit dimensions, in the order asked; ordering, pagination and total_rows over the combined rows', async () => {
    const order = [
      ['visits', 'asc'],
      ['visit:country', 'desc'],
      ['visit:device', 'asc'],
    ]
    const all = expectedRows(FROM, TO, (_e, v) => [v.device, v.country])
    const at = (r: Row, field: string) => (field === 'visits' ? (r.metrics[1] as number) : r.dimensions[field === 'visit:device' ? 0 : 1])
    const sorted = all.sort((a, b) => {
      for (const [field, direction] of order) {
        const [x, y] = [at(a, field), at(b, field)]
        if (x !== y) return (x < y ? -1 : 1) * (direction === 'asc' ? 1 : -1)
      }
      return 0
    })
    expect(sorted.length).toBe(8)
    const json = await query({
      metrics: METRICS,
      date_range: CUSTOM,
      dimensions: ['visit:device', 'visit:country'],
      order_by: order,
      pagination: { limit: 3, offset: 2 },
      include: { total_rows: true },
    })
    expect(json.results).toEqual(sorted.slice(2, 5))
    expect(json.meta.total_rows).toBe(8)
  })

  it('two visit dimensions under a visit filter, an event filter, and over a window of hours ending today', async () => {
    const dimensions = ['visit:country', 'visit:device']
    const values = (_e: RefEvent, v: RefVisit) => [v.country, v.device]
    // a filter on a visit attribute keeps whole visits
    const sources = ['Google', 'Direct / None']
    const byVisit = await query({ metrics: METRICS, date_range: CUSTOM, dimensions, filters: [['is', 'visit:source', sources]] })
    const expectedByVisit = expectedRows(FROM, TO, values, (_e, v) => sources.includes(v.source)).sort(byVisitorsThenDimensions)
    expect(expectedByVisit.length).toBeGreaterThan(4)
    expect(byVisit.results).toEqual(expectedByVisit)
    // a filter on events keeps the visits holding a selected event, their bounces and duration whole
    const byEvent = await query({ metrics: METRICS, date_range: CUSTOM, dimensions, filters: [['contains', 'event:page', ['blog']]] })
    const expectedByEvent = expectedRows(FROM, TO, values, (e) => e.path.includes('blog')).sort(byVisitorsThenDimensions)
    expect(expectedByEvent.length).toBeGreaterThan(4)
    expect(byEvent.results).toEqual(expectedByEvent)
    // yesterday morning to the current hour: visits begun before the window and today's partial day
    const hours = await query({ metrics: METRICS, date_range: ['2026-11-21T06:00:00-05:00', '2026-11-22T09:59:59-05:00'], dimensions })
    const expectedHours = expectedRows('2026-11-21T06:00:00-05:00', '2026-11-22T10:00:00-05:00', values).sort(byVisitorsThenDimensions)
    expect(expectedHours.length).toBeGreaterThan(2)
    expect(hours.results).toEqual(expectedHours)
  })

  it.each([
    ['two visit dimensions', { dimensions: ['visit:country', 'visit:device'] }],
    [
      'two visit dimensions under an event filter',
      { dimensions: ['visit:country', 'visit:device'], filters: [['contains', 'event:page', ['blog']]] },
    ],
    ['a visit and an event dimension', { dimensions: ['visit:source', 'event:page'] }],
    ['an entry page beside a source', { dimensions: ['visit:entry_page', 'visit:source'] }],
    ['a visit hostname', { dimensions: ['visit:entry_page_hostname'] }],
    ['a rolled dimension over whole days', { dimensions: ['visit:source'], date_range: ['2026-11-01', '2026-11-21'] }],
    ['a rolled dimension under a visit filter', { dimensions: ['visit:device'], filters: [['is', 'visit:source', ['Google']]] }],
  ])('visitors and visits alone: the numbers of the full read, %s', async (_name, asked) => {
    const body = { date_range: CUSTOM, ...asked }
    const full = await query({ ...body, metrics: METRICS })
    expect(full.results.length).toBeGreaterThan(0)
    const visits = await query({ ...body, metrics: ['visitors', 'visits', 'percentage'] })
    const totals = await query({ ...body, dimensions: [], metrics: ['visitors'] })
    const percentage = (visitors: number) => Math.round((visitors / totals.results[0].metrics[0]) * 1000) / 10
    expect(visits.results).toEqual(
      full.results.map((r: Row) => ({
        dimensions: r.dimensions,
        metrics: [r.metrics[0], r.metrics[1], percentage(r.metrics[0] as number)],
      })),
    )
  })

  it('a time dimension between two others: each day with data, the combinations of its events', async () => {
    const days = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23']
    const expected = days.slice(0, 3).flatMap((day, i) =>
      expectedRows(`${day}T00:00:00-05:00`, `${days[i + 1]}T00:00:00-05:00`, (_e, v) => [v.country, v.device])
        .sort(byVisitorsThenDimensions)
        .map((r) => ({ metrics: r.metrics.slice(0, 3), dimensions: [r.dimensions[0], day, r.dimensions[1]] })),
    )
    expect(expected.length).toBeGreaterThan(6)
    const json = await query({
      metrics: ['visitors', 'visits', 'pageviews'],
      date_range: ['2026-11-20', '2026-11-22'],
      dimensions: ['visit:country', 'time:day', 'visit:device'],
      order_by: [
        ['time:day', 'asc'],
        ['visitors', 'desc'],
      ],
    })
    expect(json.results).toEqual(expected)
  })

  it('dimensions together, and those not rolled up every day: their finished days rolled up by the first read answer the next', async () => {
    // the days before today (22 November) are rolled up after the first answer, under the property's own key
    const storedDays = async (property: string) => {
      const [row] = await services.clickhouse.query<{ n: string }>(
        'SELECT uniqExact(day) AS n FROM day_rollups FINAL WHERE property = {key:String}',
        { key: `filters:none:${property}` },
      )
      return Number(row.n)
    }
    const reference = {
      'source and page': {
        body: { metrics: METRICS, date_range: CUSTOM, dimensions: ['visit:source', 'event:page'] },
        property: combinedProperty(['source', 'path']),
        expected: expectedRows(FROM, TO, (e, v) => [v.source, e.path]).sort(byVisitorsThenDimensions),
      },
      'country and device': {
        body: { metrics: METRICS, date_range: CUSTOM, dimensions: ['visit:country', 'visit:device'] },
        property: combinedProperty(['country', 'device']),
        expected: expectedRows(FROM, TO, (_e, v) => [v.country, v.device]).sort(byVisitorsThenDimensions),
      },
      'entry page and source': {
        body: { metrics: METRICS, date_range: CUSTOM, dimensions: ['visit:entry_page', 'visit:source'] },
        property: combinedProperty(['entry_page', 'source']),
        expected: expectedRows(FROM, TO, (_e, v) => (v.entry ? [v.entry, v.source] : undefined)).sort(byVisitorsThenDimensions),
      },
    }
    for (const [name, { body, property, expected }] of Object.entries(reference)) {
      expect(expected.length, name).toBeGreaterThan(4)
      expect((await query(body)).results, name).toEqual(expected)
      await rollupBuildsSettled()
      expect(await storedDays(property), name).toBeGreaterThan(20)
      expect((await query(body)).results, name).toEqual(expected)
    }
    // by day between them: each finished day's rows from the rollup, today's from events
    const days = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23']
    const byDay = days.slice(0, 3).flatMap((day, i) =>
      expectedRows(`${day}T00:00:00-05:00`, `${days[i + 1]}T00:00:00-05:00`, (e, v) => [v.source, e.path])
        .sort(byVisitorsThenDimensions)
        .map((r) => ({ metrics: r.metrics.slice(0, 3), dimensions: [day, ...r.dimensions] })),
    )
    const bodyByDay = {
      metrics: ['visitors', 'visits', 'pageviews'],
      date_range: ['2026-11-20', '2026-11-22'],
      dimensions: ['time:day', 'visit:source', 'event:page'],
    }
    expect((await query(bodyByDay)).results).toEqual(byDay)
    // a dimension the refresh does not roll up: a visit hostname, a browser version, a city
    for (const dimension of ['visit:entry_page_hostname', 'visit:browser_version', 'visit:city_name']) {
      const body = { metrics: METRICS, date_range: CUSTOM, dimensions: [dimension] }
      const fromEvents = await query(body)
      expect(fromEvents.results.length, dimension).toBeGreaterThan(0)
      await rollupBuildsSettled()
      expect(await storedDays(dimension === 'visit:city_name' ? 'city' : dimension.slice('visit:'.length)), dimension).toBeGreaterThan(20)
      expect((await query(body)).results, dimension).toEqual(fromEvents.results)
    }
  })

  it('a page of combined rows in the default order: the rows tied in visitors at its edges ordered by their values', async () => {
    // a page that begins inside a run of rows with as many visitors as each other
    const tiedWithPrevious = (rows: Row[], i: number) =>
      i > 0 && rows[i].metrics[0] === rows[i - 1].metrics[0] && rows[i].dimensions[0] === rows[i - 1].dimensions[0]
    const all = expectedRows(FROM, TO, (e, v) => [v.source, e.path]).sort(byVisitorsThenDimensions)
    const offset = all.findIndex((_r, i) => tiedWithPrevious(all, i) && tiedWithPrevious(all, i + 4))
    expect(offset).toBeGreaterThan(0)
    const page = await query({
      metrics: METRICS,
      date_range: CUSTOM,
      dimensions: ['visit:source', 'event:page'],
      pagination: { limit: 5, offset },
    })
    expect(page.results).toEqual(all.slice(offset, offset + 5))
    const days = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23']
    const byDay = days.slice(0, 3).flatMap((day, i) =>
      expectedRows(`${day}T00:00:00-05:00`, `${days[i + 1]}T00:00:00-05:00`, (e, v) => [v.source, e.path])
        .sort(byVisitorsThenDimensions)
        .map((r) => ({ metrics: r.metrics.slice(0, 3), dimensions: [day, ...r.dimensions] })),
    )
    const dayOffset = byDay.findIndex((_r, i) => tiedWithPrevious(byDay, i) && i + 3 < byDay.length)
    expect(dayOffset).toBeGreaterThan(0)
    const onePage = await query({
      metrics: ['visitors', 'visits', 'pageviews'],
      date_range: ['2026-11-20', '2026-11-22'],
      dimensions: ['time:day', 'visit:source', 'event:page'],
      pagination: { limit: 3, offset: dayOffset },
    })
    expect(onePage.results).toEqual(byDay.slice(dayOffset, dayOffset + 3))
  })

  it('entry and exit pages with other dimensions: the first and last page of each visit beside each value', async () => {
    const entry = await query({ metrics: METRICS, date_range: CUSTOM, dimensions: ['visit:entry_page', 'visit:source'] })
    const expectedEntry = expectedRows(FROM, TO, (_e, v) => (v.entry ? [v.entry, v.source] : undefined)).sort(byVisitorsThenDimensions)
    expect(expectedEntry.length).toBeGreaterThan(10)
    expect(entry.results).toEqual(expectedEntry)
    const exit = await query({ metrics: METRICS.slice(0, 3), date_range: CUSTOM, dimensions: ['event:page', 'visit:exit_page'] })
    const expectedExit = expectedRows(FROM, TO, (e, v) => (v.exit ? [e.path, v.exit] : undefined))
      .map((r) => ({ ...r, metrics: r.metrics.slice(0, 3) }))
      .sort(byVisitorsThenDimensions)
    expect(exit.results).toEqual(expectedExit)
  })

  it('comparisons of combined rows: each matched by its values in the earlier window', async () => {
    const json = await query({
      metrics: ['visitors', 'pageviews'],
      date_range: ['2026-11-01', '2026-11-22'],
      dimensions: ['visit:country', 'visit:device'],
      include: { comparisons: { mode: 'custom', date_range: ['2026-10-01', '2026-10-22'] } },
    })
    const rowsOf = (from: string, to: string) =>
      expectedRows(from, to, (_e, v) => [v.country, v.device]).map((r) => ({ ...r, metrics: [r.metrics[0], r.metrics[2]] }))
    const now = rowsOf('2026-11-01T00:00:00-04:00', '2026-11-23T00:00:00-05:00').sort(byVisitorsThenDimensions)
    const before = new Map(rowsOf('2026-10-01T00:00:00-04:00', '2026-10-23T00:00:00-04:00').map((r) => [JSON.stringify(r.dimensions), r]))
    const pct = (a: number, b: number) => (b === 0 ? (a === 0 ? 0 : 100) : Math.round(((a - b) / b) * 100))
    expect(now.length).toBeGreaterThan(4)
    expect(json.results).toEqual(
      now.map((r) => {
        const earlier = (before.get(JSON.stringify(r.dimensions))?.metrics ?? [0, 0]) as number[]
        return {
          ...r,
          comparison: {
            dimensions: r.dimensions,
            metrics: earlier,
            change: [pct(r.metrics[0] as number, earlier[0]), pct(r.metrics[1] as number, earlier[1])],
          },
        }
      }),
    )
  })

  it('agrees with a GET /api/v1/breakdown of pages filtered by the source', async () => {
    const json = await query({ metrics: METRICS.slice(0, 5), date_range: CUSTOM, dimensions: ['visit:source', 'event:page'] })
    const v1 = await call(
      'GET',
      `/api/v1/breakdown?site_id=${siteId}&range=custom&from=2026-08-01&to=2026-11-22&property=path&filters=${encodeURIComponent(
        JSON.stringify([{ dimension: 'source', operator: 'is', value: ['Google'] }]),
      )}`,
      { key },
    )
    expect(v1.status).toBe(200)
    expect(v1.json.results.length).toBeGreaterThan(2)
    expect(json.results.filter((r: Row) => r.dimensions[0] === 'Google')).toEqual(
      v1.json.results.map((r: Record<string, number | string>) => ({
        metrics: [r.visitors, r.visits, r.pageviews, Math.round((r.bounceRate as number) * 100), r.avgDuration],
        dimensions: ['Google', r.value],
      })),
    )
  })

  it('visit:browser_version and visit:os_version, as dimensions and in filters', async () => {
    // the major version of each agent's browser, read off the agent strings
    const major = (ua: string) => /(?:Firefox|Chrome|Version)\/(\d+)/.exec(ua)?.[1] ?? ''
    const [chrome, firefox, safari] = [major(UAS[0]), major(UAS[1]), major(UAS[2])]
    expect([chrome, firefox, safari]).toEqual(['131', '133', '17'])
    const json = await query(
      { metrics: ['visitors', 'pageviews'], date_range: ['2026-11-20', '2026-11-20'], dimensions: ['visit:browser_version'] },
      HOSTS,
    )
    expect(json.results).toEqual([
      { metrics: [1, 1], dimensions: [chrome] },
      { metrics: [1, 2], dimensions: [firefox] },
      { metrics: [1, 2], dimensions: [safari] },
    ])
    const filtered = await query(
      {
        metrics: ['visitors', 'pageviews'],
        date_range: ['2026-11-20', '2026-11-20'],
        filters: [['is_not', 'visit:browser_version', [firefox]]],
      },
      HOSTS,
    )
    expect(filtered.results[0].metrics).toEqual([2, 3])
    // every visit has one operating system version: the rows add up to the visitors, and each row is its filter's count
    const os = await query(
      { metrics: ['visitors', 'pageviews'], date_range: ['2026-11-20', '2026-11-20'], dimensions: ['visit:os_version'] },
      HOSTS,
    )
    expect(os.results.reduce((n: number, r: Row) => n + (r.metrics[0] as number), 0)).toBe(3)
    expect(os.results.map((r: Row) => r.dimensions[0])).toContain('17.5')
    const ios = await query(
      { metrics: ['visitors', 'pageviews'], date_range: ['2026-11-20', '2026-11-20'], filters: [['is', 'visit:os_version', ['17.5']]] },
      HOSTS,
    )
    expect(ios.results[0].metrics).toEqual([1, 2])
    // the /api/v1 reads keep their own dimensions
    const v1 = await call(
      'GET',
      `/api/v1/breakdown?site_id=${hostsId}&range=custom&from=2026-11-20&to=2026-11-20&property=browser_version`,
      {
        key,
      },
    )
    expect(v1.status).toBe(400)
    expect(v1.json.error).toMatch(/unknown dimension "browser_version"/)
  })

  it('visit:entry_page_hostname and visit:exit_page_hostname: the first and last pageview of each visit', async () => {
    const range = ['2026-11-20', '2026-11-20']
    const entry = await query(
      { metrics: ['visitors', 'visits', 'pageviews'], date_range: range, dimensions: ['visit:entry_page_hostname'] },
      HOSTS,
    )
    expect(entry.results).toEqual([
      { metrics: [1, 1, 1], dimensions: [`blog.${HOSTS}`] },
      { metrics: [1, 1, 2], dimensions: [`docs.${HOSTS}`] },
      { metrics: [1, 1, 2], dimensions: [HOSTS] },
    ])
    const exit = await query({ metrics: ['visitors', 'pageviews'], date_range: range, dimensions: ['visit:exit_page_hostname'] }, HOSTS)
    expect(exit.results).toEqual([
      { metrics: [2, 3], dimensions: [`blog.${HOSTS}`] },
      { metrics: [1, 2], dimensions: [HOSTS] },
    ])
    // with each visit's bounce and duration: B bounced, A lasted 5 minutes, C 10
    const engaged = ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration']
    const entryEngaged = await query({ metrics: engaged, date_range: range, dimensions: ['visit:entry_page_hostname'] }, HOSTS)
    expect(entryEngaged.results).toEqual([
      { metrics: [1, 1, 1, 100, 0], dimensions: [`blog.${HOSTS}`] },
      { metrics: [1, 1, 2, 0, 600], dimensions: [`docs.${HOSTS}`] },
      { metrics: [1, 1, 2, 0, 300], dimensions: [HOSTS] },
    ])
    // under an event filter: the visits holding a selected event, their pageviews the selected ones
    const exitOfDocs = await query(
      { metrics: engaged, date_range: range, dimensions: ['visit:exit_page_hostname'], filters: [['is', 'event:page', ['/d']]] },
      HOSTS,
    )
    expect(exitOfDocs.results).toEqual([{ metrics: [1, 1, 1, 0, 600], dimensions: [HOSTS] }])
    // a visit filter keeps whole visits: C's two pageviews
    const leftOnSite = await query(
      { metrics: ['visitors', 'pageviews'], date_range: range, filters: [['is', 'visit:exit_page_hostname', [HOSTS]]] },
      HOSTS,
    )
    expect(leftOnSite.results[0].metrics).toEqual([1, 2])
    const enteredOnBlog = await query(
      {
        metrics: ['visitors', 'pageviews'],
        date_range: range,
        dimensions: ['event:page'],
        filters: [['contains', 'visit:entry_page_hostname', ['BLOG'], { case_sensitive: false }]],
      },
      HOSTS,
    )
    expect(enteredOnBlog.results).toEqual([{ metrics: [1, 1], dimensions: ['/b'] }])
    // with the hostname of each pageview: A's two, B's one, C's two
    const both = await query(
      { metrics: ['visitors', 'pageviews'], date_range: range, dimensions: ['visit:entry_page_hostname', 'event:hostname'] },
      HOSTS,
    )
    expect(both.results).toEqual([
      { metrics: [1, 1], dimensions: [`blog.${HOSTS}`, `blog.${HOSTS}`] },
      { metrics: [1, 1], dimensions: [`docs.${HOSTS}`, `docs.${HOSTS}`] },
      { metrics: [1, 1], dimensions: [`docs.${HOSTS}`, HOSTS] },
      { metrics: [1, 1], dimensions: [HOSTS, `blog.${HOSTS}`] },
      { metrics: [1, 1], dimensions: [HOSTS, HOSTS] },
    ])
  })
  /** Plausible's aggregate metrics (METRICS' order) from the reference totals: events the pageviews and custom events. */
  const totalsOf = (keep: Keep) => {
    const t = expectedTotals(ref, FROM, TO, keep)
    return [t.visitors, t.visits, t.pageviews, Math.round(t.bounceRate * 100), t.avgDuration, t.pageviews + t.events]
  }

  it('or across dimensions: the events on a page or of the visits from a source', async () => {
    const json = await query({
      metrics: METRICS,
      date_range: CUSTOM,
      filters: [
        [
          'or',
          [
            ['is', 'event:page', ['/pricing']],
            ['is', 'visit:source', ['Google']],
          ],
        ],
      ],
    })
    const expected = totalsOf((e, v) => e.path === '/pricing' || v.source === 'Google')
    // more than either part alone
    expect(expected[0]).toBeGreaterThan(totalsOf((e) => e.path === '/pricing')[0] as number)
    expect(expected[0]).toBeGreaterThan(totalsOf((_e, v) => v.source === 'Google')[0] as number)
    expect(json.results).toEqual([{ metrics: expected, dimensions: [] }])
  })

  it('not around several filters: everything but the events matching all of them', async () => {
    const json = await query({
      metrics: METRICS,
      date_range: CUSTOM,
      filters: [
        [
          'not',
          [
            'and',
            [
              ['is', 'visit:device', ['Mobile']],
              ['is', 'event:page', ['/']],
            ],
          ],
        ],
      ],
    })
    const expected = totalsOf((e, v) => !(v.device === 'Mobile' && e.path === '/'))
    expect(expected[2]).toBeLessThan(totalsOf(() => true)[2] as number)
    expect(json.results).toEqual([{ metrics: expected, dimensions: [] }])
  })

  it('nested and, or and not, under a breakdown', async () => {
    const filters = [
      [
        'and',
        [
          [
            'or',
            [
              ['is', 'visit:country', ['US']],
              [
                'not',
                [
                  'or',
                  [
                    ['is', 'visit:source', ['Direct / None']],
                    ['contains', 'event:page', ['BLOG'], { case_sensitive: false }],
                  ],
                ],
              ],
            ],
          ],
          ['is_not', 'visit:device', ['Mobile']],
        ],
      ],
    ]
    const keep: Keep = (e, v) => (v.country === 'US' || !(v.source === 'Direct / None' || e.path.includes('blog'))) && v.device !== 'Mobile'
    const json = await query({ metrics: METRICS, date_range: CUSTOM, dimensions: ['visit:source'], filters })
    const expected = expectedRows(FROM, TO, (_e, v) => [v.source], keep).sort(byVisitorsThenDimensions)
    expect(expected.length).toBe(4)
    expect(json.results).toEqual(expected)
    // the same filters with the negation written out (De Morgan): the same rows
    const rewritten = [
      [
        'or',
        [
          ['is', 'visit:country', ['US']],
          [
            'and',
            [
              ['is_not', 'visit:source', ['Direct / None']],
              ['contains_not', 'event:page', ['BLOG'], { case_sensitive: false }],
            ],
          ],
        ],
      ],
      ['not', ['is', 'visit:device', ['Mobile']]],
    ]
    const again = await query({ metrics: METRICS, date_range: CUSTOM, dimensions: ['visit:source'], filters: rewritten })
    expect(again.results).toEqual(expected)
  })
  /** The goals an event converts: Signup (the custom event), Visit /pricing (a pageview of /pricing). */
  const goalsOf = (e: RefEvent) => [
    ...(e.kind === 'custom' && e.name === 'Signup' ? ['Signup'] : []),
    ...(e.kind === 'pageview' && e.path === '/pricing' ? ['Visit /pricing'] : []),
  ]
  /** The conversions in [from, to): each event converting a goal, with its visit and the goal. */
  const conversions = (from: string, to: string) =>
    ref.events
      .filter((e) => e.ts >= Date.parse(from) && e.ts < Date.parse(to))
      .flatMap((e) => goalsOf(e).map((goal) => ({ e, v: ref.visits.get(e.visit) as RefVisit, goal })))
  /** The visits that converted a goal. */
  const converted = (goal: string) => new Set(conversions(FROM, TO).flatMap((c) => (c.goal === goal ? [c.e.visit] : [])))
  /** The conversions grouped by a key of each (a JSON array of the row's dimensions). */
  const byKey = (list: ReturnType<typeof conversions>, key: (c: ReturnType<typeof conversions>[number]) => string[]) => {
    const groups = new Map<string, ReturnType<typeof conversions>>()
    for (const c of list) groups.set(JSON.stringify(key(c)), [...(groups.get(JSON.stringify(key(c))) ?? []), c])
    return [...groups].map(([k, cs]) => ({ dimensions: JSON.parse(k) as string[], cs, visitors: new Set(cs.map((c) => c.e.visitor)).size }))
  }
  const euros = (amount: number) => ({
    value: round(amount, 2),
    currency: 'EUR',
    short: new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR', notation: 'compact', maximumFractionDigits: 1 }).format(
      amount,
    ),
    long: new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR', maximumFractionDigits: 2 }).format(amount),
  })
  const rate = (part: number, whole: number) => round((part / whole) * 100, 2)

  it('event:goal beside a visit dimension: each goal and source with its conversions, conversion rates and revenue', async () => {
    const metrics = ['visitors', 'events', 'conversion_rate', 'group_conversion_rate', 'total_revenue', 'average_revenue']
    const json = await query({ metrics, date_range: CUSTOM, dimensions: ['event:goal', 'visit:source'] })
    const all = expectedTotals(ref, FROM, TO).visitors
    const expected = byKey(conversions(FROM, TO), (c) => [c.goal, c.v.source])
      .map(({ dimensions: [goal, source], cs, visitors }): Row => {
        const ofSource = expectedTotals(ref, FROM, TO, (_e, v) => v.source === source).visitors
        // the pro signups carry 10.50 EUR; the page goal has no currency
        const amount = cs.filter((c) => c.e.plan === 'pro').length * 10.5
        return {
          metrics: [
            visitors,
            cs.length,
            rate(visitors, all),
            rate(visitors, ofSource),
            goal === 'Signup' ? euros(amount) : null,
            goal === 'Signup' ? euros(amount / cs.length) : null,
          ],
          dimensions: [goal, source],
        }
      })
      .sort(byVisitorsThenDimensions)
    expect(new Set(expected.map((r) => r.dimensions[0])).size).toBe(2)
    expect(new Set(expected.map((r) => r.dimensions[1])).size).toBe(4)
    expect(json.results).toEqual(expected)
    // the page goal's rows have no revenue; by goal, as in Plausible, that is no warning (each goal in its own currency)
    expect(json.meta.metric_warnings).toBeUndefined()
    // under a filter on one goal, that goal's rows alone, with the same numbers (rates over the visitors without the goal filter)
    const signups = await query({
      metrics,
      date_range: CUSTOM,
      dimensions: ['event:goal', 'visit:source'],
      filters: [['is', 'event:goal', ['Signup']]],
    })
    expect(signups.results).toEqual(expected.filter((r) => r.dimensions[0] === 'Signup'))
  })

  it('event:page beside event:goal: each page with the conversions that happened on it', async () => {
    const json = await query({
      metrics: ['visitors', 'events', 'conversion_rate', 'group_conversion_rate'],
      date_range: CUSTOM,
      dimensions: ['event:page', 'event:goal'],
    })
    const all = expectedTotals(ref, FROM, TO).visitors
    const expected = byKey(conversions(FROM, TO), (c) => [c.e.path, c.goal])
      .map(({ dimensions, cs, visitors }): Row => {
        const ofPage = expectedTotals(ref, FROM, TO, (e) => e.path === dimensions[0]).visitors
        return { metrics: [visitors, cs.length, rate(visitors, all), rate(visitors, ofPage)], dimensions }
      })
      .sort(byVisitorsThenDimensions)
    // Signup on every page, the page goal on /pricing only
    expect(expected.length).toBe(6)
    expect(json.results).toEqual(expected)
    // a visit's entry page beside its conversions: the visit's, wherever the conversion happened
    const byEntry = await query({ metrics: ['visitors', 'events'], date_range: CUSTOM, dimensions: ['event:goal', 'visit:entry_page'] })
    const expectedByEntry = byKey(conversions(FROM, TO), (c) => [c.goal, c.v.entry])
      .map(({ dimensions, cs, visitors }): Row => ({ metrics: [visitors, cs.length], dimensions }))
      .sort(byVisitorsThenDimensions)
    expect(expectedByEntry.length).toBeGreaterThan(5)
    expect(byEntry.results).toEqual(expectedByEntry)
  })

  it('event:goal by day: each day with its conversions, conversion_rate over the window, group_conversion_rate over the day', async () => {
    const days = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23'].map((d) => `${d}T00:00:00-05:00`)
    const all = expectedTotals(ref, days[0], days[3]).visitors
    const expected = days.slice(0, 3).flatMap((from, i) => {
      const ofDay = expectedTotals(ref, from, days[i + 1]).visitors
      return byKey(conversions(from, days[i + 1]), (c) => [c.goal])
        .map(
          ({ dimensions: [goal], cs, visitors }): Row => ({
            metrics: [visitors, cs.length, rate(visitors, all), rate(visitors, ofDay)],
            dimensions: [goal, from.slice(0, 10)],
          }),
        )
        .sort(byVisitorsThenDimensions)
    })
    expect(expected.length).toBeGreaterThan(3)
    const json = await query({
      metrics: ['visitors', 'events', 'conversion_rate', 'group_conversion_rate'],
      date_range: ['2026-11-20', '2026-11-22'],
      dimensions: ['event:goal', 'time:day'],
    })
    expect(json.results).toEqual(expected)
  })

  it('event:goal between two other dimensions: group_conversion_rate over the visitors of both other values', async () => {
    const json = await query({
      metrics: ['visitors', 'events', 'group_conversion_rate'],
      date_range: CUSTOM,
      dimensions: ['visit:device', 'event:goal', 'event:page'],
    })
    const expected = byKey(conversions(FROM, TO), (c) => [c.v.device, c.goal, c.e.path])
      .map(({ dimensions: [device, goal, path], cs, visitors }): Row => {
        const ofGroup = expectedTotals(ref, FROM, TO, (e, v) => v.device === device && e.path === path).visitors
        return { metrics: [visitors, cs.length, rate(visitors, ofGroup)], dimensions: [device, goal, path] }
      })
      .sort(byVisitorsThenDimensions)
    expect(expected.length).toBeGreaterThan(8)
    expect(json.results).toEqual(expected)
  })

  it('a visit dimension by day under a goal filter: conversion_rate over the whole window, group_conversion_rate over the day and source', async () => {
    const days = ['2026-11-20', '2026-11-21', '2026-11-22', '2026-11-23'].map((d) => `${d}T00:00:00-05:00`)
    const all = expectedTotals(ref, days[0], days[3]).visitors
    const signedUp = converted('Signup')
    const expected = days.slice(0, 3).flatMap((from, i) =>
      expectedBreakdown(
        ref,
        from,
        days[i + 1],
        (_e, v) => v.source,
        false,
        (_e, v) => signedUp.has(v.id),
      )
        .map((r): Row => {
          const ofSource = expectedTotals(ref, from, days[i + 1], (_e, v) => v.source === r.value).visitors
          const visitors = r.visitors as number
          return { metrics: [visitors, rate(visitors, all), rate(visitors, ofSource)], dimensions: [r.value as string, from.slice(0, 10)] }
        })
        .sort(byVisitorsThenDimensions),
    )
    expect(expected.length).toBeGreaterThan(2)
    const json = await query({
      metrics: ['visitors', 'conversion_rate', 'group_conversion_rate'],
      date_range: ['2026-11-20', '2026-11-22'],
      dimensions: ['visit:source', 'time:day'],
      filters: [['is', 'event:goal', ['Signup']]],
    })
    expect(json.results).toEqual(expected)
  })

  const goalAndSegmentFilters: [string, () => unknown[], () => Keep][] = [
    [
      'an or of a goal and a page: the events of the visits that converted, and the events on the page',
      () => [
        [
          'or',
          [
            ['is', 'event:goal', ['Signup']],
            ['is', 'event:page', ['/docs']],
          ],
        ],
      ],
      () => {
        const signedUp = converted('Signup')
        return (e, v) => signedUp.has(v.id) || e.path === '/docs'
      },
    ],
    [
      'not around a goal: the visits that did not convert',
      () => [['not', ['is', 'event:goal', ['Signup']]]],
      () => {
        const signedUp = converted('Signup')
        return (_e, v) => !signedUp.has(v.id)
      },
    ],
    [
      'not around an or of a goal and a source',
      () => [
        [
          'not',
          [
            'or',
            [
              ['is', 'event:goal', ['Visit /pricing']],
              ['is', 'visit:source', ['Google']],
            ],
          ],
        ],
      ],
      () => {
        const sawPricing = converted('Visit /pricing')
        return (_e, v) => !(sawPricing.has(v.id) || v.source === 'Google')
      },
    ],
    [
      'a segment in an or',
      () => [
        [
          'or',
          [
            ['is', 'segment', [mobileGoogle]],
            ['is', 'event:page', ['/docs']],
          ],
        ],
      ],
      () => (e, v) => (v.device === 'Mobile' && v.source === 'Google') || e.path === '/docs',
    ],
    [
      'not around a segment',
      () => [['not', ['is', 'segment', [mobileGoogle]]]],
      () => (_e, v) => !(v.device === 'Mobile' && v.source === 'Google'),
    ],
    [
      'an or of two segments, one of them a goal',
      () => [
        [
          'or',
          [
            ['is', 'segment', [mobileGoogle]],
            ['is', 'segment', [signedUpSegment]],
          ],
        ],
      ],
      () => {
        const signedUp = converted('Signup')
        return (_e, v) => (v.device === 'Mobile' && v.source === 'Google') || signedUp.has(v.id)
      },
    ],
    [
      'not around a segment of a goal, in an or with a country',
      () => [
        [
          'or',
          [
            ['not', ['is', 'segment', [signedUpSegment]]],
            ['is', 'visit:country', ['US']],
          ],
        ],
      ],
      () => {
        const signedUp = converted('Signup')
        return (_e, v) => !signedUp.has(v.id) || v.country === 'US'
      },
    ],
  ]

  it.each(goalAndSegmentFilters)('filters: %s', async (_name, filters, keep) => {
    const expected = totalsOf(keep())
    expect(expected[0]).toBeGreaterThan(0)
    expect(expected[0]).toBeLessThan(totalsOf(() => true)[0] as number)
    const json = await query({ metrics: METRICS, date_range: CUSTOM, filters: filters() })
    expect(json.results).toEqual([{ metrics: expected, dimensions: [] }])
  })

  it('goals by device under an or of a goal and a page', async () => {
    const signedUp = converted('Signup')
    const keep: Keep = (e, v) => signedUp.has(v.id) || e.path === '/docs'
    const json = await query({
      metrics: ['visitors', 'events'],
      date_range: CUSTOM,
      dimensions: ['visit:device', 'event:goal'],
      filters: [
        [
          'or',
          [
            ['is', 'event:goal', ['Signup']],
            ['is', 'event:page', ['/docs']],
          ],
        ],
      ],
    })
    const expected = byKey(
      conversions(FROM, TO).filter((c) => keep(c.e, c.v)),
      (c) => [c.v.device, c.goal],
    )
      .map(({ dimensions, cs, visitors }): Row => ({ metrics: [visitors, cs.length], dimensions }))
      .sort(byVisitorsThenDimensions)
    expect(expected.length).toBe(4)
    expect(json.results).toEqual(expected)
  })
})
