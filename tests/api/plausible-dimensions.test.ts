import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { client, testServices } from '../helpers'
import { NOW, type Ref, type RefEvent, type RefVisit, UAS, expectedBreakdown, expectedTotals, fixture } from './report-reference'

/**
 * POST /api/v2/query with several dimensions together, the version and visit-hostname dimensions,
 * and filter trees (or across dimensions, not around several filters), against the reference
 * computation of report-reference.ts over the fixture hits, and hand-counted hits on a second site.
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
        metrics: [r.visitors, r.visits, r.pageviews, Math.round((r.bounceRate as number) * 100), r.avgDuration, r.events],
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
  /** Plausible's aggregate metrics (METRICS' order) from the reference totals. */
  const totalsOf = (keep: Keep) => {
    const t = expectedTotals(ref, FROM, TO, keep)
    return [t.visitors, t.visits, t.pageviews, Math.round(t.bounceRate * 100), t.avgDuration, t.events]
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
})
