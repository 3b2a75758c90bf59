import { Temporal } from 'temporal-polyfill'
import { describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { resolveRange } from '../../lib/reports/query/range'
import { rolledDays, runRead } from '../../lib/reports/query/run'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { ROLLED_BREAKDOWNS, NOW, UAS, localDate, fixture, expectedTotals, expectedBreakdown, type Ref } from './report-reference'
import { referenceSite } from './reference-site'

describe('daily rollup', () => {
  it('unfiltered reads sum finished days from day_rollups, exactly, and read a day that changed from events until it is rebuilt', async () => {
    const tz = 'Europe/Berlin'
    const { services, site, ref, get } = await referenceSite('Rollup', 'rollup.reports.test', tz, 7)
    // the 30 days end with today, 22 November, and span the end of summer time on 25 October
    const from = '2026-10-24T00:00:00+02:00'
    const to = '2026-11-23T00:00:00+01:00'
    const breakdowns = ROLLED_BREAKDOWNS
    const expectAllMatch = async (reference: Ref) => {
      for (const [range, lo, hi] of [
        ['range=30d', from, to],
        ['range=7d', '2026-11-16T00:00:00+01:00', to],
        ['range=year', '2026-01-01T00:00:00+01:00', to],
        ['range=custom&from=2026-10-25&to=2026-11-20', '2026-10-25T00:00:00+02:00', '2026-11-21T00:00:00+01:00'],
      ]) {
        expect((await get(`/api/v1/stats?${range}`)).totals, range).toEqual(expectedTotals(reference, lo, hi))
        for (const [property, valueFor] of breakdowns) {
          expect((await get(`/api/v1/breakdown?${range}&property=${property}&limit=1000`)).results, `${range} ${property}`).toEqual(
            expectedBreakdown(reference, lo, hi, valueFor, true),
          )
        }
      }
      for (const range of ['30d', 'year']) {
        const json = await get(`/api/v1/timeseries?range=${range}`)
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
    await expectAllMatch(ref)

    const query = { siteId: site.id, range: resolveRange({ range: '30d' }, tz, NOW), filters: [], goals: [], limit: 1000, now: NOW }
    // the pages read's path rows: visitors and pageviews with each page's engagement reports (count, scroll and engaged-time sums)
    const pageRows = (days: string) =>
      runRead(
        services.clickhouse,
        { ...query, range: resolveRange({ range: days as '30d' }, tz, NOW) },
        { kind: 'breakdown', property: 'path', reports: true },
      )
    const expectedPageRows = (reference: Ref, lo: string, hi: string) => {
      const by = new Map<string, { reports: number; scroll: number; ms: number }>()
      for (const e of reference.events) {
        if (e.ts < Date.parse(lo) || e.ts >= Date.parse(hi)) continue
        const row = by.get(e.path) ?? { reports: 0, scroll: 0, ms: 0 }
        if (e.engagement)
          by.set(e.path, { reports: row.reports + 1, scroll: row.scroll + e.engagement.scroll, ms: row.ms + e.engagement.ms })
        else by.set(e.path, row)
      }
      return expectedBreakdown(reference, lo, hi, (e) => e.path, false).map((r) => ({
        value: r.value,
        visitors: r.visitors,
        pageviews: r.pageviews,
        ...by.get(String(r.value))!,
      }))
    }
    const shapePageRows = (rows: Record<string, unknown>[]) =>
      rows.map((r) => ({
        value: String(r.value),
        visitors: Number(r.visitors),
        pageviews: Number(r.pageviews),
        reports: Number(r.reports),
        scroll: Number(r.scroll_sum),
        ms: Number(r.engaged_ms_sum),
      }))
    const expectPageRows = async (reference: Ref) =>
      expect(shapePageRows(await pageRows('30d'))).toEqual(expectedPageRows(reference, from, to))
    await expectPageRows(ref)

    expect((await rolledDays(services.clickhouse, query)).days).toEqual([])
    await refreshRollups(services.clickhouse, services.repositories, NOW, 200)
    const finished = [
      ...new Set(ref.events.filter((e) => e.ts >= Date.parse(from) && e.ts < Date.parse(to)).map((e) => localDate(e.ts, tz))),
    ]
      .filter((d) => d < '2026-11-22')
      .sort()
    expect(finished.length).toBeGreaterThan(3)
    const rolled = (await rolledDays(services.clickhouse, query)).days
    expect(rolled).toEqual(finished)
    await expectAllMatch(ref)
    await expectPageRows(ref)
    // a window of rolled days only (no day left to read from events): two days the fixture has visits on
    const [a, b] = finished.slice(-3)
    const onlyRolled = `range=custom&from=${a}&to=${b}`
    const [lo, hi] = [`${a}T00:00:00+01:00`, `${Temporal.PlainDate.from(b).add({ days: 1 }).toString()}T00:00:00+01:00`]
    expect(
      (await rolledDays(services.clickhouse, { ...query, range: resolveRange({ range: 'custom', from: a, to: b }, tz, NOW) })).days.length,
    ).toBe(Temporal.PlainDate.from(a).until(b).days + 1)
    expect((await get(`/api/v1/stats?${onlyRolled}`)).totals).toEqual(expectedTotals(ref, lo, hi))
    for (const [property, valueFor] of breakdowns) {
      expect((await get(`/api/v1/breakdown?${onlyRolled}&property=${property}&limit=1000`)).results, property).toEqual(
        expectedBreakdown(ref, lo, hi, valueFor, true),
      )
    }
    // an export's reads share one lookup of the rolled days and still agree with the reference
    const exported = await get('/api/v1/export?range=30d')
    expect(exported.totals).toEqual(expectedTotals(ref, from, to))
    for (const [property, valueFor] of breakdowns)
      expect(exported.breakdowns[property], `export ${property}`).toEqual(expectedBreakdown(ref, from, to, valueFor, true))
    // rows built for one timezone are never read for another
    expect((await rolledDays(services.clickhouse, { ...query, range: resolveRange({ range: '30d' }, 'UTC', NOW) })).days).toEqual([])

    // a late visit into a finished, rolled day: that day is read from events until the next refresh
    const lateHits = [
      {
        timestamp: '2026-11-20T12:00:00Z',
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/late`,
        referrer: 'https://www.google.com/',
        ip: '8.8.8.8',
        userAgent: UAS[1],
      },
      {
        timestamp: '2026-11-20T12:04:00Z',
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/pricing`,
        ip: '8.8.8.8',
        userAgent: UAS[1],
      },
    ]
    expect(
      (
        await importHits(
          lateHits.map((h) => JSON.stringify(h)),
          services.ingestor,
        )
      ).imported,
    ).toBe(2)
    const late = fixture(site.snippetId, site.domain, tz, 7)
    const visitor = `8.8.8.8|${UAS[1]}|2026-11-20`
    const id = `${visitor}|late`
    late.visits.set(id, {
      id,
      visitor,
      start: Date.parse(lateHits[0].timestamp),
      end: Date.parse(lateHits[1].timestamp),
      pageviews: 2,
      custom: 0,
      source: 'Google',
      country: 'US',
      device: 'Desktop',
      entry: '/late',
      exit: '/pricing',
    })
    for (const h of lateHits)
      late.events.push({
        ts: Date.parse(h.timestamp),
        kind: 'pageview',
        name: 'pageview',
        path: new URL(h.url).pathname,
        visitor,
        visit: id,
      })
    expect((await rolledDays(services.clickhouse, query)).days).toEqual(rolled.filter((d) => d !== '2026-11-20'))
    await expectAllMatch(late)
    expect(await refreshRollups(services.clickhouse, services.repositories, NOW, 200)).toBe(1)
    expect((await rolledDays(services.clickhouse, query)).days).toEqual(rolled)
    await expectAllMatch(late)
    await expectPageRows(late)
  })
})
