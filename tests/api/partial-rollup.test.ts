import { describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { resolveRange } from '../../lib/reports/query/range'
import { compileRead, rolledDays, runRead } from '../../lib/reports/query/run'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { ROLLED_BREAKDOWNS, NOW, UAS, expectedBreakdown, expectedTotals, fixture, type RawHit, type Ref } from './report-reference'
import { referenceSite } from './reference-site'

const at = (iso: string) => Date.parse(iso)
const hit = (iso: string, ip: string, ua: string, path: string, name = 'pageview', referrer: string | null = null): RawHit => ({
  ts: at(iso),
  name,
  path,
  ip,
  ua,
  referrer,
})

// today is 22 November in Berlin (from 21 November 23:00 UTC); NOW is 15:00 UTC
const TODAY = [
  // a visitor's early visit, and a later one (after the cutoff) on the same page: counted once
  hit('2026-11-22T08:00:00Z', '8.8.8.8', UAS[0], '/pricing', 'pageview', 'https://www.google.com/'),
  hit('2026-11-22T08:05:00Z', '8.8.8.8', UAS[0], '/docs'),
  hit('2026-11-22T08:06:00Z', '8.8.8.8', UAS[0], '/docs', 'engagement'),
  hit('2026-11-22T14:50:00Z', '8.8.8.8', UAS[0], '/pricing', 'pageview', 'https://chatgpt.com/'),
  // a bounce
  hit('2026-11-22T12:00:00Z', '46.114.0.1', UAS[2], '/blog/a'),
  // a visit begun at 13:50 that is still going (an event every 20 minutes): the cutoff waits for it
  hit('2026-11-22T13:50:00Z', '81.2.69.142', UAS[1], '/blog/b', 'pageview', 'https://news.ycombinator.com/'),
  hit('2026-11-22T14:10:00Z', '81.2.69.142', UAS[1], '/docs'),
  hit('2026-11-22T14:30:00Z', '81.2.69.142', UAS[1], '/pricing'),
  hit('2026-11-22T14:50:00Z', '81.2.69.142', UAS[1], '/pricing', 'Signup'),
  // visits begun after the cutoff
  hit('2026-11-22T14:00:00Z', '1.1.1.1', UAS[2], '/'),
  hit('2026-11-22T14:55:00Z', '46.114.0.1', UAS[0], '/docs'),
  hit('2026-11-22T14:56:00Z', '46.114.0.1', UAS[0], '/docs', 'engagement'),
]

describe('partial rollup of today', () => {
  it("reads today's ended visits from the partial rollup and the later ones from recent events, exactly, and events again after a late hit", async () => {
    const tz = 'Europe/Berlin'
    const { services, site, ref, get } = await referenceSite('Partial', 'partial.reports.test', tz, 11, TODAY)
    const linesOf = (ref: Ref, from = 0) => ref.lines.slice(from)
    const to = '2026-11-23T00:00:00+01:00'
    const breakdowns = ROLLED_BREAKDOWNS
    const pageRows = async (range: string) =>
      (
        await runRead<Record<string, string>>(
          services.clickhouse,
          { siteId: site.id, range: resolveRange({ range: range as '7d' }, tz, NOW), filters: [], goals: [], limit: 1000, now: NOW },
          { kind: 'breakdown', property: 'path', reports: true },
        )
      ).map((r) => ({
        value: r.value,
        visitors: Number(r.visitors),
        reports: Number(r.reports),
        scroll: Number(r.scroll_sum),
        ms: Number(r.engaged_ms_sum),
      }))
    const expectedPageRows = (reference: Ref, lo: string) =>
      expectedBreakdown(reference, lo, to, (e) => e.path, false).map((r) => {
        const reports = reference.events.filter(
          (e) => e.path === r.value && e.engagement && e.ts >= Date.parse(lo) && e.ts < Date.parse(to),
        )
        return {
          value: r.value,
          visitors: r.visitors,
          reports: reports.length,
          scroll: reports.reduce((s, e) => s + e.engagement!.scroll, 0),
          ms: reports.reduce((s, e) => s + e.engagement!.ms, 0),
        }
      })
    const expectAllMatch = async (reference: Ref) => {
      for (const [range, lo] of [
        ['range=today', '2026-11-22T00:00:00+01:00'],
        ['range=7d', '2026-11-16T00:00:00+01:00'],
        ['range=30d', '2026-10-24T00:00:00+02:00'],
      ]) {
        expect((await get(`/api/v1/stats?${range}`)).totals, range).toEqual(expectedTotals(reference, lo, to))
        for (const [property, valueFor] of breakdowns) {
          expect((await get(`/api/v1/breakdown?${range}&property=${property}&limit=1000`)).results, `${range} ${property}`).toEqual(
            expectedBreakdown(reference, lo, to, valueFor, true),
          )
        }
        if (range !== 'range=today') {
          const json = await get(`/api/v1/timeseries?${range}`)
          for (const [i, bucket] of json.series.entries()) {
            const e = expectedTotals(reference, bucket.timestamp, json.series[i + 1]?.timestamp ?? json.range.to)
            expect({ t: bucket.timestamp, visitors: bucket.visitors, visits: bucket.visits, pageviews: bucket.pageviews }).toEqual({
              t: bucket.timestamp,
              visitors: e.visitors,
              visits: e.visits,
              pageviews: e.pageviews,
            })
          }
        }
      }
      expect(await pageRows('7d')).toEqual(expectedPageRows(reference, '2026-11-16T00:00:00+01:00'))
    }
    const query = { siteId: site.id, range: resolveRange({ range: '7d' }, tz, NOW), filters: [], goals: [], limit: 1000, now: NOW }
    await expectAllMatch(ref)
    expect((await rolledDays(services.clickhouse, query)).partial).toBeUndefined()

    // the refresh rolls up the finished days and today's visits begun before 13:45: the quarter
    // hour before the visit still going, begun at 13:50 (visits whose last event is over 35 minutes old have ended)
    await refreshRollups(services.clickhouse, services.repositories, NOW, 40)
    const rolled = await rolledDays(services.clickhouse, query)
    expect(rolled.partial).toMatchObject({
      day: '2026-11-22',
      from: '2026-11-21 23:00:00.000',
      to: '2026-11-22 23:00:00.000',
      before: '2026-11-22 13:45:00.000',
    })
    // the visits begun before the cutoff: the fixture's and the three early ones above
    const early = [...ref.visits.values()].filter((v) => v.start >= at('2026-11-21T23:00:00Z') && v.start < at('2026-11-22T13:45:00Z'))
    expect(early.length).toBeGreaterThanOrEqual(3)
    expect(Number(rolled.partial!.events)).toBe(ref.events.filter((e) => early.some((v) => v.id === e.visit)).length)
    // reads take the partial rollup, and of today only the later visits, from recent events
    const compiled = compileRead(query, { kind: 'breakdown', property: 'path' }, rolled)
    expect(compiled.sql).toContain('FROM partial_rollups FINAL')
    expect(compiled.sql).toContain('FROM recent_events WHERE')
    await expectAllMatch(ref)

    // a hit of a later visit changes nothing the partial rollup holds
    const later = fixture(site.snippetId, site.domain, tz, 11, [...TODAY, hit('2026-11-22T14:58:00Z', '8.8.8.8', UAS[0], '/blog/a')])
    expect((await importHits(linesOf(later, ref.lines.length), services.ingestor)).imported).toBe(1)
    expect((await rolledDays(services.clickhouse, query)).partial?.before).toBe('2026-11-22 13:45:00.000')
    await expectAllMatch(later)

    // a late hit of an early visit (the bounce at 12:00 gets a second page): today goes back to events until the next build
    const late = fixture(site.snippetId, site.domain, tz, 11, [
      ...TODAY,
      hit('2026-11-22T14:58:00Z', '8.8.8.8', UAS[0], '/blog/a'),
      hit('2026-11-22T12:10:00Z', '46.114.0.1', UAS[2], '/pricing'),
    ])
    expect((await importHits(linesOf(late, later.lines.length), services.ingestor)).imported).toBe(1)
    expect((await rolledDays(services.clickhouse, query)).partial).toBeUndefined()
    await expectAllMatch(late)
    // the next refresh builds it again, with the late page
    await refreshRollups(services.clickhouse, services.repositories, NOW, 3)
    expect((await rolledDays(services.clickhouse, query)).partial).toMatchObject({ before: '2026-11-22 13:45:00.000' })
    await expectAllMatch(late)
  })
})
