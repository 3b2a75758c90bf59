import { describe, expect, it } from 'vitest'
import { createApiKey } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { client, getOk, orgWithSites, testServices } from '../helpers'

/**
 * The stated margin is a 95% one (1.96 standard errors), and which visitors fall in the sample
 * depends on the day's random salt: each estimate is checked against twice the margin (3.9
 * standard errors, missed about once in 10,000), so the test does not fail one run in twenty.
 */
const TOLERANCE = 2

/**
 * Sampling by visitor (a site's samplingThreshold): the reads of raw events answer from a sample
 * of visitors once the window holds more events than the threshold, with counts scaled and the
 * sample's fraction and error in the answer; off by default, and exact then.
 */
const NOW = new Date('2026-11-22T20:00:00Z')
const UA = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const VISITORS = 3000
const PATHS = ['/', '/pricing', '/blog/one', '/blog/two', '/docs']

/** Visitor i: its own address, 1 to 4 pageviews a minute apart on one day (one visit), from 00:05 UTC on. */
function fixture(snippet: string, domain: string) {
  const hits: { ts: number; path: string; visitor: number }[] = []
  for (let i = 0; i < VISITORS; i++) {
    const start = Date.parse('2026-11-22T00:05:00Z') + ((i * 23_000) % (19 * 3_600_000))
    const views = 1 + ((i * 7) % 4)
    for (let k = 0; k < views; k++) hits.push({ ts: start + k * 60_000, path: PATHS[(i + k) % PATHS.length], visitor: i })
  }
  const lines = hits.map((h) =>
    JSON.stringify({
      timestamp: new Date(h.ts).toISOString(),
      site: snippet,
      name: 'pageview',
      url: `https://${domain}${h.path}`,
      ip: `10.1.${h.visitor >> 8}.${h.visitor & 255}`,
      userAgent: UA,
    }),
  )
  return { hits, lines }
}

describe('sampling', () => {
  it('is off by default; over the threshold, reads of raw events estimate within the stated error and say so', async () => {
    const services = await testServices({ now: () => NOW })
    const call = client(services)
    const {
      org,
      key,
      sites: [site],
    } = await orgWithSites(services, 'Sampled', [{ domain: 'sampled.test', timezone: 'UTC' }], NOW)
    const write = await createApiKey(services.repositories, { orgId: org.id, name: 'write', scope: 'write' }, NOW)
    const ref = fixture(site.snippetId, site.domain)
    expect((await importHits(ref.lines, services.ingestor)).rejected).toBe(0)

    // the exact figures, from the fixture
    const pageviews = ref.hits.length
    const busiest = new Map<number, Set<number>>()
    for (const h of ref.hits) {
      const hour = Math.floor(h.ts / 3_600_000)
      busiest.set(hour, (busiest.get(hour) ?? new Set()).add(h.visitor))
    }
    const byPath = new Map<string, Set<number>>()
    for (const h of ref.hits) byPath.set(h.path, (byPath.get(h.path) ?? new Set()).add(h.visitor))
    const topPath = [...byPath].sort((a, b) => b[1].size - a[1].size || a[0].localeCompare(b[0]))[0]

    const get = (path: string) => getOk(call, `${path}&site_id=${site.id}`, key)
    // a filter on an event attribute: the totals are read from events, not the sessions rollup
    const filtered = `&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'contains', value: ['/'] }]))}`
    const patch = (body: unknown) => call('PATCH', `/api/v1/sites/${site.id}`, { key: write.key, body })

    // off: exact, and no sampling in the answers
    const site0 = await getOk(call, `/api/v1/sites/${site.id}`, key)
    expect(site0.tracking.samplingThreshold).toBeNull()
    const exact = await get(`/api/v1/stats?range=today${filtered}`)
    expect(exact.sampling).toBeUndefined()
    expect(exact.totals).toMatchObject({ visitors: VISITORS, visits: VISITORS, pageviews })
    const exactSeries = await get('/api/v1/timeseries?range=today')
    expect(exactSeries.sampling).toBeUndefined()
    expect(Math.max(...exactSeries.series.map((b: { visitors: number }) => b.visitors))).toBe(
      Math.max(...[...busiest.values()].map((s) => s.size)),
    )

    // a threshold over the window's events changes nothing
    expect((await patch({ samplingThreshold: pageviews })).status).toBe(200)
    const under = await get(`/api/v1/stats?range=today${filtered}`)
    expect(under.sampling).toBeUndefined()
    expect(under.totals).toEqual(exact.totals)

    // under the window's events: n = ceil(events / threshold)
    const threshold = 2000
    const n = Math.ceil(pageviews / threshold)
    expect(n).toBeGreaterThan(2)
    const set = await patch({ samplingThreshold: threshold })
    expect(set.status).toBe(200)
    expect(set.json.tracking.samplingThreshold).toBe(threshold)
    expect((await getOk(call, `/api/v1/sites/${site.id}`, key)).tracking.samplingThreshold).toBe(threshold)
    const margin = (visitors: number) => 1.96 * Math.sqrt((n - 1) / visitors)

    const stats = await get(`/api/v1/stats?range=today${filtered}`)
    expect(stats.sampling.fraction).toBeCloseTo(1 / n, 6)
    expect(stats.sampling.relativeError).toBeCloseTo(margin(stats.totals.visitors), 4)
    const within = (estimate: number, truth: number) => {
      expect(estimate % n, 'an estimate is a sampled count times n').toBe(0)
      expect(Math.abs(estimate - truth) / truth).toBeLessThanOrEqual(TOLERANCE * stats.sampling.relativeError)
    }
    within(stats.totals.visitors, VISITORS)
    within(stats.totals.visits, VISITORS)
    within(stats.totals.pageviews, pageviews)
    // fewer than all, more than none: a sample, not the whole
    expect(stats.totals.visitors).toBeGreaterThan(0)
    expect(stats.totals.visitors).not.toBe(VISITORS)

    // the hour series: the answer's margin is its busiest bucket's; the truly busiest hour (by the
    // fixture, not by the estimates, which favour a bucket whose sample ran high) is within its own
    const series = await get('/api/v1/timeseries?range=today')
    expect(series.sampling.fraction).toBeCloseTo(1 / n, 6)
    expect(series.sampling.relativeError).toBeCloseTo(margin(Math.max(...series.series.map((b: { visitors: number }) => b.visitors))), 4)
    const [hour, hourVisitors] = [...busiest].sort((a, b) => b[1].size - a[1].size)[0]
    const bucket = series.series.find((b: { timestamp: string }) => Date.parse(b.timestamp) === hour * 3_600_000)
    expect(Math.abs(bucket.visitors - hourVisitors.size) / hourVisitors.size).toBeLessThanOrEqual(TOLERANCE * margin(bucket.visitors))
    for (const b of series.series) expect(b.visitors % n).toBe(0)

    // a path breakdown: the margin is the top row's; the truly top path within its own
    const paths = await get('/api/v1/breakdown?range=today&property=path')
    expect(paths.sampling.fraction).toBeCloseTo(1 / n, 6)
    expect(paths.sampling.relativeError).toBeCloseTo(margin(paths.results[0].visitors), 4)
    const row = paths.results.find((r: { value: string }) => r.value === topPath[0])
    expect(Math.abs(row.visitors - topPath[1].size) / topPath[1].size).toBeLessThanOrEqual(TOLERANCE * margin(row.visitors))
    expect(paths.results.map((r: { value: string }) => r.value).sort()).toEqual([...PATHS].sort())

    // reads from the rollups stay exact and say nothing of sampling: unfiltered totals and a
    // visit attribute come from the sessions rollup
    const sessions = await get('/api/v1/stats?range=today')
    expect(sessions.sampling).toBeUndefined()
    expect(sessions.totals).toMatchObject({ visitors: VISITORS, visits: VISITORS, pageviews })
    const countries = await get('/api/v1/breakdown?range=today&property=device')
    expect(countries.sampling).toBeUndefined()
    expect(countries.results.map((r: { visitors: number }) => r.visitors)).toEqual([VISITORS])

    // a comparison reads both windows at the same fraction; the answer keeps the sampling
    const compared = await get(`/api/v1/stats?range=today&compare=previous_period${filtered}`)
    expect(compared.sampling.fraction).toBeCloseTo(1 / n, 6)
    expect(compared.comparison.totals.visitors).toBe(0)

    // null turns it off again
    expect((await patch({ samplingThreshold: null })).status).toBe(200)
    const off = await get(`/api/v1/stats?range=today${filtered}`)
    expect(off.sampling).toBeUndefined()
    expect(off.totals).toEqual(exact.totals)
    // thousands of hits imported, then a dozen reads: slow on a loaded machine
  }, 300_000)
})
