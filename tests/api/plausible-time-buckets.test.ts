import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { rollupBuildsSettled } from '../../lib/reports/query/run'
import { newSite } from '../../lib/sites/sites'
import { client, testServices } from '../helpers'
import {
  NOW,
  type RawHit,
  type Ref,
  type RefEvent,
  type RefVisit,
  UAS,
  expectedBreakdown,
  expectedTotals,
  fixture,
  round,
} from './report-reference'

/**
 * POST /api/v2/query with a time dimension beside other dimensions, read as one statement grouped
 * by bucket and value: hour buckets past the 400 a bucket-by-bucket read allowed, and day, week
 * and month buckets over the daily rollup and over events, against the reference computation of
 * report-reference.ts, bucket by bucket.
 */

const TZ = 'America/New_York'
const DOMAIN = 'buckets.plausible.test'
const FROM = '2026-08-01T00:00:00-04:00'
const TO = '2026-11-23T00:00:00-05:00'
const CUSTOM = ['2026-08-01', '2026-11-22']

/** A pageview every hour of 2026-09-01 to 2026-09-18 (New York), one visitor: 432 hour buckets with data. */
const HOURLY: RawHit[] = Array.from({ length: 18 * 24 }, (_, h) => ({
  ts: Date.parse('2026-09-01T00:00:00-04:00') + h * 3_600_000,
  name: 'pageview',
  path: '/hourly',
  ip: '46.114.0.1',
  ua: UAS[1],
  referrer: h % 5 === 0 ? 'https://www.google.com/' : null,
}))

type Row = { metrics: number[]; dimensions: string[] }
type ValueFor = (e: RefEvent, v: RefVisit) => string | undefined

describe('POST /api/v2/query: a time dimension beside others, one read by bucket', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key = ''
  let ref: Ref

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Buckets', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: DOMAIN, timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    ref = fixture(site.snippetId, site.domain, TZ, 5, HOURLY)
    expect((await importHits(ref.lines, services.ingestor)).rejected).toBe(0)
  })

  const query = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/api/v2/query', { key, body: { site_id: DOMAIN, ...body } })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }

  /** The site-local starts of the buckets of [from, to): hours, days, Monday-started weeks (the first holding `from`), months. */
  function bucketStarts(from: string, to: string, unit: 'hour' | 'day' | 'week' | 'month') {
    const local = (ms: number) =>
      new Intl.DateTimeFormat('en-CA', {
        timeZone: TZ,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        weekday: 'short',
        hourCycle: 'h23',
      }).formatToParts(new Date(ms))
    const part = (ms: number, type: string) => local(ms).find((p) => p.type === type)?.value ?? ''
    const label = (ms: number) => `${part(ms, 'year')}-${part(ms, 'month')}-${part(ms, 'day')}`
    const starts: { at: number; label: string }[] = []
    const seen = new Set<string>()
    const weekday = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
    // walk the window hour by hour: a bucket starts where its key changes
    for (let ms = Date.parse(from); ms < Date.parse(to); ms += 3_600_000) {
      const day = label(ms)
      const keyOf = {
        hour: `${day} ${part(ms, 'hour')}:00:00`,
        day,
        week: (() => {
          const date = new Date(`${day}T00:00:00Z`)
          date.setUTCDate(date.getUTCDate() - weekday.indexOf(part(ms, 'weekday')))
          return date.toISOString().slice(0, 10)
        })(),
        month: `${day.slice(0, 7)}-01`,
      }[unit]
      if (!seen.has(keyOf)) {
        seen.add(keyOf)
        starts.push({ at: ms, label: keyOf })
      }
    }
    return starts
  }

  /**
   * The reference rows of each bucket: each value's visitors, visits, pageviews, bounce rate, visit
   * duration, events (pageviews and custom events) and percentage of the bucket's visitors.
   */
  function expectedRows(from: string, to: string, unit: 'hour' | 'day' | 'week' | 'month', valueFor: ValueFor): Row[] {
    const starts = bucketStarts(from, to, unit)
    return starts.flatMap(({ at, label }, i) => {
      const [lo, hi] = [new Date(at).toISOString(), new Date(starts[i + 1]?.at ?? Date.parse(to)).toISOString()]
      const all = new Set(ref.events.filter((e) => e.ts >= Date.parse(lo) && e.ts < Date.parse(hi)).map((e) => e.visitor)).size
      const rows = expectedBreakdown(ref, lo, hi, valueFor, true)
      // ties in visitors by value, as the service orders them
      rows.sort((a, b) => (b.visitors as number) - (a.visitors as number) || (String(a.value) < String(b.value) ? -1 : 1))
      return rows.map((r) => ({
        metrics: [
          r.visitors as number,
          r.visits as number,
          r.pageviews as number,
          Math.round((r.bounceRate as number) * 100),
          r.avgDuration as number,
          (r.pageviews as number) + (r.events as number),
          round(((r.visitors as number) / all) * 100, 1),
        ],
        dimensions: [label, r.value as string],
      }))
    })
  }
  const METRICS = ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration', 'events', 'percentage']
  const bySource: ValueFor = (_e, v) => v.source

  it('hour buckets beside a source: more than 400 hours with data, in one read', async () => {
    const [from, to] = ['2026-09-01T00:00:00-04:00', '2026-09-19T00:00:00-04:00']
    const expected = expectedRows(from, to, 'hour', bySource).map((r) => ({ ...r, metrics: [r.metrics[0], r.metrics[2], r.metrics[6]] }))
    expect(new Set(expected.map((r) => r.dimensions[0])).size).toBeGreaterThan(400)
    const json = await query({
      metrics: ['visitors', 'pageviews', 'percentage'],
      date_range: ['2026-09-01', '2026-09-18'],
      dimensions: ['time:hour', 'visit:source'],
    })
    expect(json.results).toEqual(expected)
  })

  it.each([
    ['day', ['2026-11-01', '2026-11-22'], '2026-11-01T00:00:00-04:00', 'visit:source', bySource],
    ['week', CUSTOM, FROM, 'visit:source', bySource],
    ['month', CUSTOM, FROM, 'event:page', ((e) => e.path) as ValueFor],
  ] as const)(
    '%s buckets beside a dimension, from events and then from the daily rollup',
    async (unit, dateRange, from, dimension, valueFor) => {
      const expected = expectedRows(from, TO, unit, valueFor)
      expect(expected.length).toBeGreaterThan(6)
      const body = { metrics: METRICS, date_range: dateRange, dimensions: [`time:${unit}`, dimension] }
      expect((await query(body)).results).toEqual(expected)
      // the first case rolls the fixture's days up; the next find them rolled
      await refreshRollups(services.clickhouse, services.repositories, NOW, 120)
      expect((await query(body)).results).toEqual(expected)
    },
  )

  it("a time dimension alone with bounce rate, visit duration and events: each bucket's totals in one read", async () => {
    const totalsOf = (from: string, to: string, unit: 'hour' | 'week') => {
      const starts = bucketStarts(from, to, unit)
      return starts
        .map(({ at, label }, i) => {
          const t = expectedTotals(ref, new Date(at).toISOString(), new Date(starts[i + 1]?.at ?? Date.parse(to)).toISOString())
          return { metrics: [t.visitors, Math.round(t.bounceRate * 100), t.avgDuration, t.pageviews + t.events], dimensions: [label] }
        })
        .filter((r) => r.metrics[0] > 0)
    }
    const hours = totalsOf('2026-09-01T00:00:00-04:00', '2026-09-19T00:00:00-04:00', 'hour').map((r) => ({
      ...r,
      metrics: [r.metrics[0], r.metrics[3]],
    }))
    expect(hours.length).toBeGreaterThan(400)
    const hourly = await query({ metrics: ['visitors', 'events'], date_range: ['2026-09-01', '2026-09-18'], dimensions: ['time:hour'] })
    expect(hourly.results).toEqual(hours)
    const weekly = await query({
      metrics: ['visitors', 'bounce_rate', 'visit_duration', 'events'],
      date_range: CUSTOM,
      dimensions: ['time:week'],
    })
    expect(weekly.results).toEqual(totalsOf(FROM, TO, 'week'))
  })

  it('the first page in the default order reads the first buckets alone once their days are rolled up: the rows of the whole window', async () => {
    await refreshRollups(services.clickhouse, services.repositories, NOW, 120)
    // the statements the service runs: the count of each rolled day's values tells that the window was cut
    const ran: string[] = []
    const query0 = services.clickhouse.query
    services.clickhouse.query = ((sql: string, params?: Record<string, unknown>) => {
      ran.push(sql)
      return query0.call(services.clickhouse, sql, params)
    }) as typeof query0
    try {
      const bySourceAndPage: ValueFor = (e, v) => JSON.stringify([v.source, e.path])
      const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
      // the reference rows in the service's order: the bucket, visitors descending, then each dimension's value
      const reference = (from: string, unit: 'day' | 'week', timeAt: number) =>
        expectedRows(from, TO, unit, bySourceAndPage)
          .map((r) => ({ metrics: r.metrics.slice(0, 3), values: JSON.parse(r.dimensions[1]) as string[], label: r.dimensions[0] }))
          .sort(
            (a, b) =>
              compare(a.label, b.label) ||
              b.metrics[0] - a.metrics[0] ||
              compare(a.values[0], b.values[0]) ||
              compare(a.values[1], b.values[1]),
          )
          .map((r) => ({ metrics: r.metrics, dimensions: r.values.toSpliced(timeAt, 0, r.label) }))
      for (const [unit, dateRange, from, dimensions, timeAt] of [
        ['day', ['2026-11-01', '2026-11-22'], '2026-11-01T00:00:00-04:00', ['time:day', 'visit:source', 'event:page'], 0],
        ['week', CUSTOM, FROM, ['visit:source', 'event:page', 'time:week'], 2],
      ] as const) {
        const expected = reference(from, unit, timeAt)
        for (const pagination of [
          { limit: 3, offset: 0 },
          { limit: 10, offset: 5 },
        ]) {
          const body = { metrics: ['visitors', 'visits', 'pageviews'], date_range: dateRange, dimensions, pagination }
          // the first read rolls the combination's days up after its answer
          await query(body)
          await rollupBuildsSettled()
          ran.length = 0
          const fast = await query(body)
          expect(ran.some((s) => s.includes('countIf(visitors > 0)'))).toBe(true)
          // the same order spelt out in full is not the default: every row of the window is read and sorted
          const time = dimensions[timeAt]
          const whole = await query({
            ...body,
            order_by: [
              [time, 'asc'],
              ['visitors', 'desc'],
              ['visit:source', 'asc'],
              ['event:page', 'asc'],
            ],
          })
          expect(fast.results, `${unit} ${JSON.stringify(pagination)}`).toEqual(whole.results)
          expect(fast.results).toEqual(expected.slice(pagination.offset, pagination.offset + pagination.limit))
          // total_rows counted by the engine, the page read as without it
          const counted = await query({ ...body, include: { total_rows: true } })
          expect(counted.results).toEqual(fast.results)
          expect(counted.meta.total_rows).toBe(expected.length)
        }
      }
    } finally {
      services.clickhouse.query = query0
    }
  })

  it('under a filter, two dimensions beside the days', async () => {
    const filters = [['is', 'visit:device', ['Desktop']]]
    const keep = (_e: RefEvent, v: RefVisit) => v.device === 'Desktop'
    const valueFor: ValueFor = (e, v) => (keep(e, v) ? JSON.stringify([v.country, e.path]) : undefined)
    const expected = expectedRows('2026-11-10T00:00:00-05:00', TO, 'day', valueFor).map((r) => ({
      metrics: r.metrics.slice(0, 6),
      dimensions: [r.dimensions[0], ...JSON.parse(r.dimensions[1])],
    }))
    expect(expected.length).toBeGreaterThan(6)
    const json = await query({
      metrics: METRICS.slice(0, 6),
      date_range: ['2026-11-10', '2026-11-22'],
      dimensions: ['time:day', 'visit:country', 'event:page'],
      filters,
    })
    expect(json.results).toEqual(expected)
  })
})
