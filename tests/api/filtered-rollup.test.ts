import { describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { rollupBuildsSettled } from '../../lib/reports/query/run'
import { type RefEvent, type RefVisit, UAS, expectedBreakdown, expectedTotals, fixture, localDate } from './report-reference'
import { referenceSite } from './reference-site'

/**
 * Filtered totals and day series roll their finished days up under their filters on the first
 * read: every read, the first and the later ones, matches the reference over the fixture hits, and
 * a hit arriving late into a rolled-up day is counted at once (that day is read from events again
 * and rolled up anew).
 */
describe('filtered reads over whole days', () => {
  it('roll their finished days up per filter, exactly, and never serve a day whose events changed', async () => {
    const tz = 'America/New_York'
    const { services, site, ref, get } = await referenceSite('Filtered', 'filtered.rollup.test', tz, 23)
    const filters = [
      { dimension: 'country', operator: 'is', value: ['GB', 'US'] },
      { dimension: 'path', operator: 'contains', value: ['BLOG'] },
    ]
    const keep = (e: { path: string }, v: { country: string }) => ['GB', 'US'].includes(v.country) && e.path.includes('blog')
    const param = `&filters=${encodeURIComponent(JSON.stringify(filters))}`
    // a visit without a pageview has no entry page, and no row
    const breakdowns: [string, (e: RefEvent, v: RefVisit) => string | undefined][] = [
      ['path', (e) => e.path],
      ['source', (_, v) => v.source],
      ['entry_page', (_, v) => v.entry || undefined],
    ]
    const rolledKeys = async () =>
      await services.clickhouse.query<{ property: string; days: string }>(
        "SELECT toString(property) AS property, uniqExact(day) AS days FROM day_rollups WHERE site_id = {s:UUID} AND startsWith(property, 'filters:') GROUP BY property",
        { s: site.id },
      )
    const expectMatches = async (reference: typeof ref) => {
      const stats = await get(`/api/v1/stats?range=30d${param}`)
      expect(stats.totals).toEqual(expectedTotals(reference, stats.range.from, stats.range.to, keep))
      const series = await get(`/api/v1/timeseries?range=30d${param}`)
      for (const [i, bucket] of series.series.entries()) {
        const e = expectedTotals(reference, bucket.timestamp, series.series[i + 1]?.timestamp ?? series.range.to, keep)
        expect({ t: bucket.timestamp, visitors: bucket.visitors, visits: bucket.visits, pageviews: bucket.pageviews }).toEqual({
          t: bucket.timestamp,
          visitors: e.visitors,
          visits: e.visits,
          pageviews: e.pageviews,
        })
      }
      for (const [property, valueFor] of breakdowns) {
        const json = await get(`/api/v1/breakdown?range=30d&property=${property}&limit=1000${param}`)
        expect(json.results, property).toEqual(expectedBreakdown(reference, json.range.from, json.range.to, valueFor, true, keep))
      }
      return { ...stats.totals, range: stats.range as { from: string } }
    }

    expect(await rolledKeys()).toEqual([])
    // the first reads answer from events, and roll their days up after the answer
    const first = await expectMatches(ref)
    expect(first.pageviews).toBeGreaterThan(0)
    await rollupBuildsSettled()
    // rows for each finished day with events (today is always read from events)
    const finishedDays = new Set(
      ref.events
        .filter((e) => e.ts >= Date.parse(first.range.from))
        .map((e) => localDate(e.ts, tz))
        .filter((d) => d < '2026-11-22'),
    )
    expect(finishedDays.size).toBeGreaterThan(10)
    // one key for the totals and series, one for each breakdown
    const days = String(finishedDays.size)
    const keys = await rolledKeys()
    const base = keys.find((k) => /^filters:[0-9a-f]{32}$/.test(k.property))!.property
    expect(keys.sort((a, b) => a.property.localeCompare(b.property))).toEqual(
      ['', ':entry_page', ':path', ':source'].map((p) => ({ property: `${base}${p}`, days })),
    )
    expect(await expectMatches(ref)).toEqual(first)

    // a late hit into a rolled-up day: a matching pageview from an address in GB, ten days ago
    const late = {
      timestamp: '2026-11-12T15:00:00Z',
      site: site.snippetId,
      name: 'pageview',
      url: `https://${site.domain}/blog/late`,
      ip: '81.2.69.142',
      userAgent: UAS[1],
    }
    expect((await importHits([JSON.stringify(late)], services.ingestor)).rejected).toBe(0)
    const withLate = fixture(site.snippetId, site.domain, tz, 23)
    const at = Date.parse(late.timestamp)
    const visitor = `${late.ip}|${late.userAgent}|2026-11-12`
    // the reference's own rule: a new visitor that day, so a visit of one pageview
    expect(withLate.events.some((e) => e.visitor === visitor)).toBe(false)
    const visit = {
      id: `${visitor}|${at}`,
      visitor,
      start: at,
      end: at,
      pageviews: 1,
      custom: 0,
      source: 'Direct / None',
      country: 'GB',
      device: 'Desktop',
      entry: '/blog/late',
      exit: '/blog/late',
    }
    withLate.visits.set(visit.id, visit)
    withLate.events.push({ ts: at, kind: 'pageview', name: 'pageview', path: '/blog/late', visitor, visit: visit.id })
    const after = await expectMatches(withLate)
    expect(after.pageviews).toBe(first.pageviews + 1)
    expect(after.visits).toBe(first.visits + 1)
  })
})
