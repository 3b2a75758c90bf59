import { Temporal } from 'temporal-polyfill'
import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { comparisonWindow } from '../../lib/reports/query/compare'
import { resolveRange } from '../../lib/reports/query/range'
import { createGoal } from '../../lib/sites/goals'
import { newSite } from '../../lib/sites/sites'
import { client, getOk, testServices } from '../helpers'
import { NOW, UAS, type RawHit, type Ref, expectedBreakdown, expectedTotals, fixture, round } from './report-reference'

/**
 * Period comparisons (docs/api.md, Comparisons) over the reference fixture of a New York site, whose
 * clocks go back on 1 November 2026, plus hits of its own: a page seen only in a window, one only in
 * the window before, and days around 29 February 2024 for a year-over-year read.
 */
const TZ = 'America/New_York'
/** A site-local midnight as the API labels it, worked out by the calendar. */
const midnight = (day: string) => Temporal.PlainDate.from(day).toZonedDateTime(TZ).toString({ timeZoneName: 'never' })
const at = (iso: string) => Date.parse(iso)
const hit = (iso: string, path: string, n: number): RawHit => ({
  ts: at(iso),
  name: 'pageview',
  path,
  ip: ['81.2.69.142', '8.8.8.8', '46.114.0.1', '1.1.1.1'][n % 4],
  ua: UAS[n % UAS.length],
  referrer: null,
})
const EXTRA: RawHit[] = [
  // only in 1-7 November 2026
  hit('2026-11-03T15:00:00Z', '/appeared', 0),
  hit('2026-11-04T16:00:00Z', '/appeared', 1),
  // only in 25-31 October 2026
  hit('2026-10-27T15:00:00Z', '/vanished', 2),
  // around 29 February 2024 and the same weeks of 2025
  hit('2024-02-22T15:00:00Z', '/leap', 0),
  hit('2024-02-29T15:00:00Z', '/leap', 1),
  hit('2024-02-29T18:00:00Z', '/leap', 2),
  hit('2024-03-06T15:00:00Z', '/leap', 3),
  hit('2024-03-07T15:00:00Z', '/leap', 0),
  hit('2025-02-22T15:00:00Z', '/leap', 1),
  hit('2025-03-07T15:00:00Z', '/leap', 2),
]

/** The change as docs/api.md defines it, worked out here. */
const changeOf = (current: number, compared: number) => ({
  absolute: round(current - compared, 4),
  relative: compared === 0 ? null : round((current - compared) / compared, 4),
})

describe('comparisons', () => {
  let call: ReturnType<typeof client>
  let key = ''
  let siteId = ''
  let ref: Ref

  beforeAll(async () => {
    const services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Compare', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'compare.test', timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    siteId = site.id
    ref = fixture(site.snippetId, site.domain, TZ, 17, EXTRA)
    expect((await importHits(ref.lines, services.ingestor)).rejected).toBe(0)
    await createGoal(services.repositories, site.id, { site_id: site.id, name: 'Signup', type: 'event', matchValue: 'Signup' }, NOW)
  })

  const get = (path: string) => getOk(call, `${path}${path.includes('?') ? '&' : '?'}site_id=${siteId}`, key)
  const refuse = async (path: string) => {
    const res = await call('GET', `${path}&site_id=${siteId}`, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(400)
    return String((res.json as { error: string }).error)
  }
  const WEEK = 'range=custom&from=2026-11-01&to=2026-11-07'

  it('stats: previous_period across the clock change, with the compared totals and each change', async () => {
    const json = await get(`/api/v1/stats?${WEEK}&compare=previous_period`)
    // 1-7 November starts in daylight time and ends in standard time; the week before is all daylight time
    expect(json.range).toMatchObject({ from: '2026-11-01T00:00:00-04:00', to: '2026-11-08T00:00:00-05:00' })
    expect(json.comparison.mode).toBe('previous_period')
    expect(json.comparison.range).toMatchObject({
      from: '2026-10-25T00:00:00-04:00',
      to: '2026-11-01T00:00:00-04:00',
      interval: 'day',
      timezone: TZ,
    })
    const current = expectedTotals(ref, json.range.from, json.range.to)
    const compared = expectedTotals(ref, json.comparison.range.from, json.comparison.range.to)
    expect(compared.visitors).toBeGreaterThan(0)
    expect(json.totals).toEqual(current)
    expect(json.comparison.totals).toEqual(compared)
    for (const name of Object.keys(current) as (keyof typeof current)[])
      expect(json.comparison.change[name], name).toEqual(changeOf(current[name], compared[name]))
  })

  it('stats without compare answers as before, with no comparison', async () => {
    const json = await get(`/api/v1/stats?${WEEK}`)
    expect(json.comparison).toBeUndefined()
    expect(json.totals).toEqual(expectedTotals(ref, midnight('2026-11-01'), midnight('2026-11-08')))
  })

  it('year_over_year over 29 February: the same start a year before, of equal length', async () => {
    const json = await get('/api/v1/stats?range=custom&from=2025-02-22&to=2025-03-07&compare=year_over_year')
    // 14 days from 22 February 2024 end with 6 March: 2024 has a 29 February
    expect(json.comparison.range).toMatchObject({ from: '2024-02-22T00:00:00-05:00', to: '2024-03-07T00:00:00-05:00' })
    const current = expectedTotals(ref, midnight('2025-02-22'), midnight('2025-03-08'))
    const compared = expectedTotals(ref, midnight('2024-02-22'), midnight('2024-03-07'))
    // the hits of 22 and 29 February and 6 March 2024, not of 7 March
    expect(compared.pageviews).toBe(4)
    expect(current.pageviews).toBe(2)
    expect(json.totals).toEqual(current)
    expect(json.comparison.totals).toEqual(compared)
    expect(json.comparison.change.pageviews).toEqual({ absolute: -2, relative: -0.5 })
    // from a leap day: 29 February 2024 is compared with 28 February 2023, one day
    const leap = await get('/api/v1/stats?range=custom&from=2024-02-29&to=2024-02-29&compare=year_over_year')
    expect(leap.comparison.range).toMatchObject({ from: '2023-02-28T00:00:00-05:00', to: '2023-03-01T00:00:00-05:00', interval: 'hour' })
    expect(leap.totals.pageviews).toBe(2)
    expect(leap.comparison.totals.pageviews).toBe(0)
    // a zero baseline has no relative change
    expect(leap.comparison.change.pageviews).toEqual({ absolute: 2, relative: null })
  })

  it('custom: the days asked, of the same length', async () => {
    const json = await get(`/api/v1/stats?${WEEK}&compare=custom&compare_from=2026-10-01&compare_to=2026-10-07`)
    expect(json.comparison).toMatchObject({
      mode: 'custom',
      range: { from: '2026-10-01T00:00:00-04:00', to: '2026-10-08T00:00:00-04:00' },
      totals: expectedTotals(ref, midnight('2026-10-01'), midnight('2026-10-08')),
    })
  })

  it('timeseries: each bucket paired one to one with the compared bucket of its position', async () => {
    const json = await get(`/api/v1/timeseries?${WEEK}&compare=previous_period`)
    expect(json.series).toHaveLength(7)
    expect(json.comparison.unpaired).toEqual([])
    for (let i = 0; i < 7; i++) {
      const day = Temporal.PlainDate.from('2026-11-01').add({ days: i })
      const before = day.subtract({ days: 7 })
      const now = expectedTotals(ref, midnight(day.toString()), midnight(day.add({ days: 1 }).toString()))
      const then = expectedTotals(ref, midnight(before.toString()), midnight(before.add({ days: 1 }).toString()))
      const bucket = json.series[i]
      expect(bucket).toMatchObject({ timestamp: midnight(day.toString()), visitors: now.visitors, pageviews: now.pageviews })
      expect(bucket.comparison).toEqual({
        timestamp: midnight(before.toString()),
        visitors: then.visitors,
        visits: then.visits,
        pageviews: then.pageviews,
      })
      expect(bucket.change.visitors).toEqual(changeOf(now.visitors, then.visitors))
    }
  })

  it('timeseries in hours over the 25-hour day: the extra hour pairs with nothing, and is listed when compared', async () => {
    // 2 November (24 hours) against 1 November (25 hours): the compared day has one hour more
    const json = await get('/api/v1/timeseries?range=custom&from=2026-11-02&to=2026-11-02&compare=previous_period')
    expect(json.comparison.range).toMatchObject({ from: '2026-11-01T00:00:00-04:00', to: '2026-11-02T00:00:00-05:00' })
    expect(json.series).toHaveLength(24)
    expect(json.series[0].comparison.timestamp).toBe('2026-11-01T00:00:00-04:00')
    // the second 01:00 of 1 November (standard time) is the 3rd bucket; 23:00 is the 25th
    expect(json.series[2].comparison.timestamp).toBe('2026-11-01T01:00:00-05:00')
    expect(json.series[23].comparison.timestamp).toBe('2026-11-01T22:00:00-05:00')
    expect(json.comparison.unpaired.map((b: { timestamp: string }) => b.timestamp)).toEqual(['2026-11-01T23:00:00-05:00'])
    // and the other way: 1 November's last hour has no compared hour
    const back = await get('/api/v1/timeseries?range=custom&from=2026-11-01&to=2026-11-01&compare=previous_period')
    expect(back.series).toHaveLength(25)
    expect(back.series[24].comparison).toBeNull()
    expect(back.series[24].change.visitors).toEqual({ absolute: null, relative: null })
  })

  it('breakdown: each row against the compared window, a row that appeared and one that vanished', async () => {
    const json = await get(`/api/v1/breakdown?${WEEK}&compare=previous_period&property=path`)
    const now = expectedBreakdown(ref, midnight('2026-11-01'), midnight('2026-11-08'), (e) => e.path, true)
    const then = expectedBreakdown(ref, midnight('2026-10-25'), midnight('2026-11-01'), (e) => e.path, true)
    const thenBy = new Map(then.map((r) => [r.value, r]))
    const nowValues = new Set(now.map((r) => r.value))
    const vanished = then.filter((r) => !nowValues.has(r.value))
    expect(vanished.map((r) => r.value)).toEqual(['/vanished'])
    expect(json.results).toHaveLength(now.length + vanished.length)
    now.forEach((row, i) => {
      const got = json.results[i]
      const was = thenBy.get(row.value)
      const { status, comparison, change, ...figures } = got
      expect(figures).toEqual(row)
      expect(status, String(row.value)).toBe(was ? 'continuing' : 'appeared')
      expect(comparison).toEqual(was ?? null)
      expect(change.visitors).toEqual(changeOf(row.visitors as number, (was?.visitors as number) ?? 0))
      expect(change.bounceRate).toEqual(changeOf(row.bounceRate as number, (was?.bounceRate as number) ?? 0))
    })
    expect(json.results.find((r: { value: string }) => r.value === '/appeared').status).toBe('appeared')
    const gone = json.results[now.length]
    expect(gone).toMatchObject({ value: '/vanished', status: 'vanished', visitors: 0, pageviews: 0, comparison: vanished[0] })
    expect(gone.change.visitors).toEqual({ absolute: -(vanished[0].visitors as number), relative: -1 })
  })

  it('goals: each goal with its conversions in the compared window', async () => {
    const json = await get(`/api/v1/goals?${WEEK}&compare=previous_period`)
    const converters = (from: string, to: string) => expectedTotals(ref, from, to, (e) => e.name === 'Signup')
    const now = converters(midnight('2026-11-01'), midnight('2026-11-08'))
    const then = converters(midnight('2026-10-25'), midnight('2026-11-01'))
    const all = expectedTotals(ref, midnight('2026-10-25'), midnight('2026-11-01'))
    const [goal] = json.goals
    expect(goal).toMatchObject({ name: 'Signup', visitors: now.visitors, conversions: now.events })
    expect(goal.comparison).toEqual({
      visitors: then.visitors,
      conversions: then.events,
      conversionRate: all.visitors ? round(then.visitors / all.visitors, 4) : 0,
    })
    expect(goal.change.conversions).toEqual(changeOf(now.events, then.events))
  })

  it('vitals and pages take compare and name the compared window', async () => {
    const vitals = await get(`/api/v1/vitals?${WEEK}&compare=year_over_year`)
    expect(vitals.comparison.range).toMatchObject({ from: '2025-11-01T00:00:00-04:00', to: '2025-11-08T00:00:00-05:00' })
    expect(vitals.comparison.summary.samples).toBe(0)
    expect(vitals.comparison.change.samples).toEqual({ absolute: 0, relative: null })
    const pages = await get(`/api/v1/pages?${WEEK}&compare=previous_period`)
    expect(pages.comparison.range.from).toBe('2026-10-25T00:00:00-04:00')
  })

  it('refuses bad input with a 400 naming the parameter', async () => {
    expect(await refuse(`/api/v1/stats?${WEEK}&compare=last_week`)).toMatch(/^compare:/)
    expect(await refuse(`/api/v1/stats?${WEEK}&compare_from=2026-10-01&compare_to=2026-10-07`)).toMatch(
      /^compare_from: taken only with compare=custom/,
    )
    expect(await refuse(`/api/v1/stats?${WEEK}&compare=previous_period&compare_to=2026-10-07`)).toMatch(/^compare_to: taken only/)
    expect(await refuse(`/api/v1/breakdown?property=path&${WEEK}&compare=custom&compare_from=2026-10-01`)).toMatch(/^compare_to: required/)
    expect(await refuse(`/api/v1/timeseries?${WEEK}&compare=custom&compare_to=2026-10-01`)).toMatch(/^compare_from: required/)
    expect(await refuse(`/api/v1/stats?${WEEK}&compare=custom&compare_from=2026-10-07&compare_to=2026-10-01`)).toMatch(
      /^compare_from: must not be after compare_to/,
    )
    expect(await refuse(`/api/v1/stats?${WEEK}&compare=custom&compare_from=2026-10-01&compare_to=2026-10-09`)).toMatch(
      /^compare_to: .*equal length/,
    )
    expect(await refuse(`/api/v1/stats?${WEEK}&compare=custom&compare_from=2026-02-30&compare_to=2026-03-06`)).toMatch(
      /^compare_from: .*not a calendar date/,
    )
    expect(await refuse('/api/v1/stats?range=realtime&compare=custom&compare_from=2026-10-01&compare_to=2026-10-01')).toMatch(
      /^compare: custom compares whole days/,
    )
    for (const path of ['/api/v1/goals', '/api/v1/vitals', '/api/v1/pages', '/api/v1/search'])
      expect(await refuse(`${path}?${WEEK}&compare_from=2026-10-01`), path).toMatch(/^compare_from:/)
    // reads without a window to compare
    expect(await refuse('/api/v1/realtime?compare=previous_period')).toMatch(/^compare: unknown parameter/)
    expect(await refuse('/api/v1/export?compare=previous_period')).toMatch(/^compare: unknown parameter/)
  })

  it('resolves windows by the calendar: this week so far against the same weekdays, whole weeks keep their weekday', () => {
    // Tuesday 24 November 2026, 10:00 in New York
    const tuesday = new Date('2026-11-24T15:00:00Z')
    const week = resolveRange({ range: 'week' }, TZ, tuesday)
    const before = comparisonWindow(week, 'previous_period')
    expect([before.from.toString(), before.to.toString()]).toEqual([
      '2026-11-16T00:00:00-05:00[America/New_York]',
      '2026-11-18T00:00:00-05:00[America/New_York]',
    ])
    const days28 = resolveRange({ range: 'custom', from: '2026-11-02', to: '2026-11-29' }, TZ, tuesday)
    const prior = comparisonWindow(days28, 'previous_period')
    expect(prior.from.toPlainDate().toString()).toBe('2026-10-05')
    expect(prior.from.dayOfWeek).toBe(days28.from.dayOfWeek)
  })
})
