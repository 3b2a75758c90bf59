import { Temporal } from 'temporal-polyfill'
import { beforeAll, describe, expect, it } from 'vitest'
import { client, orgWithSites, testServices } from '../helpers'
import { type ImportUnit, importedRowsOf } from '../imported-rows'

/**
 * The "why traffic changed" reads, geo and page detail on the ga4 source: a year of GA4 days is
 * planted as an import stores it (tests/imported-rows.ts), shaped so that each rule has something
 * to find (a page that appeared, one that fell, one that faded from a peak, pages launched, a day
 * and an hour of a spike). Expected answers are computed here from the sessions, by the rules as
 * docs/traffic-changes.md states them; every session is its own user, so a day's users are its
 * sessions.
 */

const NOW = new Date('2026-11-22T15:00:00Z')
const TZ = 'Europe/Berlin'
const TODAY = Temporal.PlainDate.from('2026-11-22')
const YESTERDAY = TODAY.subtract({ days: 1 })

interface Session {
  user: string
  date: string
  hour: number
  path: string
  source: string
  channel: string
  country: string
  region: string
  city: string
}

const PLACES = [
  { country: 'DE', region: 'Berlin', city: 'Berlin' },
  { country: 'FR', region: 'Île-de-France', city: 'Paris' },
  { country: 'DE', region: 'Bavaria', city: 'Munich' },
]

/** Sessions a day per page, by day offset from today (negative: before). */
function perDay(path: string, daysAgo: number): number {
  if (path === '/steady') return 5
  if (path === '/fading') return daysAgo >= 200 && daysAgo <= 300 ? 8 : daysAgo < 200 ? 1 : 0
  if (path === '/falling') return daysAgo > 60 ? 0 : daysAgo >= 8 ? 6 : 1
  if (path === '/rising') return daysAgo <= 6 ? 6 : 0
  if (path === '/launch-a') return daysAgo <= 12 ? 3 : 0
  if (path === '/launch-b') return daysAgo <= 4 ? 1 : 0
  if (path === '/news') return daysAgo === 2 ? 60 : 0
  return 0
}
const PATHS = ['/steady', '/fading', '/falling', '/rising', '/launch-a', '/launch-b', '/news']

/** 400 days up to yesterday (an import has no today). */
function fixture(): Session[] {
  const sessions: Session[] = []
  for (let ago = 400; ago >= 1; ago--) {
    const date = TODAY.subtract({ days: ago }).toString()
    for (const path of PATHS)
      for (let i = 0; i < perDay(path, ago); i++) {
        const news = path === '/news'
        sessions.push({
          user: `${date}|${path}|${i}`,
          date,
          // the news arrived at 10:00; the rest is spread over the day
          hour: news ? 10 : (i * 7 + ago) % 24,
          path,
          source: news ? 'news.example' : 'google',
          channel: news ? 'Referral' : 'Organic Search',
          ...PLACES[(i + ago) % PLACES.length],
        })
      }
  }
  return sessions
}

function rowsOf(siteId: string, sessions: Session[]) {
  const unit = (s: Session, dims: Record<string, string>, hourly = false): ImportUnit => ({
    user: s.user,
    date: s.date,
    hour: hourly ? s.hour : undefined,
    engaged: true,
    dims,
    pageviews: 1,
    seconds: 30,
    events: 2,
  })
  return importedRowsOf(siteId, {
    visitors: sessions.map((s) => unit(s, {})),
    visitors_hourly: sessions.map((s) => unit(s, {}, true)),
    sources: sessions.map((s) => unit(s, { source_name: s.source, channel: s.channel })),
    pages: sessions.map((s) => unit(s, { hostname: 'ga4why.test', path: s.path })),
    locations: sessions.map((s) => unit(s, { country: s.country, region: s.region, city: s.city })),
  })
}

const round4 = (v: number) => Math.round(v * 1e4) / 1e4
const median = (xs: number[]) => {
  if (!xs.length) return 0
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const daysFrom = (from: Temporal.PlainDate, to: Temporal.PlainDate) => {
  const list: string[] = []
  for (let d = from; Temporal.PlainDate.compare(d, to) < 0; d = d.add({ days: 1 })) list.push(d.toString())
  return list
}

describe('why-traffic-changed reads of the ga4 source', () => {
  let call: ReturnType<typeof client>
  let key: string
  let siteId: string
  const sessions = fixture()
  const visitsOf = (path: string | null, days: string[]) => {
    const set = new Set(days)
    return sessions.filter((s) => (path === null || s.path === path) && set.has(s.date)).length
  }

  beforeAll(async () => {
    const services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await orgWithSites(
      services,
      'GA4 why',
      [{ domain: 'ga4why.test', timezone: TZ, sources: ['ga4'], primarySource: 'ga4' }],
      NOW,
    )
    key = org.key
    siteId = org.sites[0].id
    await services.clickhouse.insert('imported_aggregates', rowsOf(siteId, sessions))
  })

  const get = async (path: string, status = 200) => {
    const res = await call('GET', path, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(status)
    return res.json
  }

  it('anomalies: page movers from GA4 sessions per page, by the same rule', async () => {
    const json = await get(`/api/v1/anomalies?site_id=${siteId}`)
    // range 7d: today and the 6 days before; the previous window is the 7 days before that
    const current = daysFrom(TODAY.subtract({ days: 6 }), TODAY.add({ days: 1 }))
    const previous = daysFrom(TODAY.subtract({ days: 13 }), TODAY.subtract({ days: 6 }))
    const expected = PATHS.map((path) => ({ path, current: visitsOf(path, current), previous: visitsOf(path, previous) }))
      .filter((p) => Math.max(p.current, p.previous) >= 20)
      .map((p) => ({ ...p, change: p.current - p.previous }))
      .filter((p) => Math.abs(p.change) >= 10 && (p.previous === 0 || p.current === 0 || Math.abs(p.change / p.previous) >= 0.25))
      .sort((a, b) => Math.abs(b.change) - Math.abs(a.change) || (a.path < b.path ? -1 : 1))
    expect(expected.map((p) => p.path)).toEqual(['/news', '/rising', '/falling'])
    expect(json).toMatchObject({ source: 'ga4', available: true })
    const sitePrevious = visitsOf(null, previous)
    expect(json.site).toEqual({
      current: visitsOf(null, current),
      previous: sitePrevious,
      change: visitsOf(null, current) - sitePrevious,
      relativeChange: round4((visitsOf(null, current) - sitePrevious) / sitePrevious),
    })
    expect(
      json.pages.map((p: Record<string, unknown>) => [p.path, p.status, p.current, p.previous, p.change, p.relativeChange, p.impact]),
    ).toEqual(
      expected.map((p) => [
        p.path,
        p.previous === 0 ? 'appeared' : p.current === 0 ? 'went_quiet' : p.change > 0 ? 'rose' : 'fell',
        p.current,
        p.previous,
        p.change,
        p.previous ? round4(p.change / p.previous) : null,
        round4(p.change / sitePrevious),
      ]),
    )
    // filters are named as what GA4's pages cannot take
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'country', operator: 'is', value: ['DE'] }]))
    expect((await get(`/api/v1/anomalies?site_id=${siteId}&filters=${filters}`, 400)).error).toMatch(/^filters: /)
  })

  it('decay: a page fading from its peak, the channel said to be unknown', async () => {
    const json = await get(`/api/v1/decay?site_id=${siteId}`)
    const days = daysFrom(TODAY.subtract({ days: 365 }), TODAY)
    const window = (end: number) => days.slice(end - 27, end + 1)
    const currentDays = window(days.length - 1)
    const siteCurrent = visitsOf(null, currentDays)
    const expected = PATHS.flatMap((path) => {
      let peak = { visits: 0, end: -1 }
      for (let end = 27; end < days.length; end++) {
        const v = visitsOf(path, window(end))
        if (v > 0 && v >= peak.visits) peak = { visits: v, end }
      }
      const current = visitsOf(path, currentDays)
      if (peak.visits < 30) return []
      const siteAtPeak = visitsOf(null, window(peak.end))
      const siteChange = siteCurrent / siteAtPeak - 1
      const adjusted = current / peak.visits / (1 + siteChange) - 1
      if (current > 0.7 * peak.visits || adjusted > -0.25) return []
      return [
        {
          path,
          peak: peak.visits,
          peakFrom: window(peak.end)[0],
          peakTo: days[peak.end],
          current,
          change: round4(current / peak.visits - 1),
          siteChange: round4(siteChange),
          adjustedChange: round4(adjusted),
          lost: peak.visits - current,
        },
      ]
    })
    expect(expected.map((p) => p.path)).toEqual(['/fading'])
    expect(json).toMatchObject({ source: 'ga4', available: true })
    expect(json.notAvailable[0].part).toMatch(/diagnosis/)
    expect(json.pages.map(({ diagnosis, contentChanges, refreshed, search, ...p }: Record<string, unknown>) => p)).toEqual(expected)
    expect(json.pages[0].diagnosis).toEqual({ kind: 'channel_unknown', confidence: 0, evidence: [] })
  })

  it('spikes: the news day from GA4 users per day with its source; per hour without one, and saying why', async () => {
    const byDay = await get(`/api/v1/spikes?site_id=${siteId}&interval=day`)
    const spikeDay = TODAY.subtract({ days: 2 })
    const usersOn = (d: Temporal.PlainDate) => sessions.filter((s) => s.date === d.toString()).length
    const baseline = median(Array.from({ length: 8 }, (_, w) => usersOn(spikeDay.subtract({ weeks: w + 1 }))))
    const news = sessions.filter((s) => s.path === '/news').length
    expect(byDay).toMatchObject({ source: 'ga4', available: true })
    expect(byDay.notAvailable).toBeUndefined()
    expect(byDay.spikes).toHaveLength(1)
    const [spike] = byDay.spikes
    expect(spike).toMatchObject({
      start: '2026-11-20T00:00:00+01:00',
      end: '2026-11-21T00:00:00+01:00',
      visitors: usersOn(spikeDay),
      expected: baseline,
      excess: usersOn(spikeDay) - baseline,
    })
    expect(spike.source).toEqual({
      dimension: 'source',
      value: 'news.example',
      referrerUrl: null,
      visitors: news,
      expected: 0,
      excess: news,
      share: round4(news / (usersOn(spikeDay) - baseline)),
    })

    const byHour = await get(`/api/v1/spikes?site_id=${siteId}`)
    expect(byHour.notAvailable).toEqual([{ part: 'spikes.source', reason: expect.stringMatching(/per day, not per hour/) }])
    const hour = byHour.spikes.find((s: { start: string }) => s.start === '2026-11-20T10:00:00+01:00')
    expect(hour).toBeDefined()
    const atTen = (d: Temporal.PlainDate) => sessions.filter((s) => s.date === d.toString() && s.hour === 10).length
    expect(hour.visitors).toBe(atTen(spikeDay))
    expect(hour.expected).toBe(median(Array.from({ length: 8 }, (_, w) => atTen(spikeDay.subtract({ weeks: w + 1 })))))
    expect(hour.source).toBeNull()
  })

  it('launches: pages whose first GA4 view is in the window, against their cohort', async () => {
    const json = await get(`/api/v1/pages/launches?site_id=${siteId}`)
    const windowFrom = TODAY.subtract({ days: 29 })
    const firstDay = (path: string) => sessions.find((s) => s.path === path)!.date
    const launched = PATHS.filter((p) => firstDay(p) >= windowFrom.toString()).map((path) => {
      const day = Temporal.PlainDate.from(firstDay(path))
      const measuredDays = Math.min(30, day.until(TODAY).days + 1)
      const daily = Array.from({ length: measuredDays }, (_, d) => visitsOf(path, [day.add({ days: d }).toString()]))
      return { path, day, measuredDays, daily }
    })
    expect(launched.map((p) => p.path).sort()).toEqual(['/launch-a', '/launch-b', '/news', '/rising'])
    const firstN = (p: (typeof launched)[number], n: number) => p.daily.slice(0, n).reduce((a, b) => a + b, 0)
    const medianAt = (n: number) => median(launched.filter((p) => p.measuredDays >= n).map((p) => firstN(p, n)))
    const expected = launched
      .map((p) => {
        const visits = firstN(p, p.measuredDays)
        const mid = medianAt(p.measuredDays)
        return {
          path: p.path,
          launchedAt: `${p.day}T00:00:00+01:00`,
          measuredDays: p.measuredDays,
          complete: false,
          visits,
          cohortMedian: mid,
          band: visits > mid * 1.2 ? 'over' : visits < mid * 0.8 ? 'under' : 'at',
          vsMedian: mid ? round4(visits / mid) : null,
        }
      })
      .sort((a, b) => b.visits - a.visits || (a.path < b.path ? -1 : 1))
    expect(json).toMatchObject({ source: 'ga4', available: true, cohort: { pages: 4, median: null } })
    expect(json.pages).toEqual(expected)
  })

  it('page detail: the series and its shift from GA4 pages; no drivers, and saying why', async () => {
    const json = await get(`/api/v1/pages/detail?site_id=${siteId}&path=/falling`)
    const windowDays = daysFrom(TODAY.subtract({ days: 29 }), TODAY.add({ days: 1 }))
    expect(json).toMatchObject({ source: 'ga4', available: true })
    expect(json.notAvailable[0].part).toMatch(/drivers/)
    const first = Temporal.PlainDate.from(sessions.find((s) => s.path === '/falling')!.date).toZonedDateTime(TZ)
    expect(json.page.firstPageviewAt).toBe(first.toString({ timeZoneName: 'never' }))
    expect(json.series.map((d: { date: string; visits: number }) => [d.date, d.visits])).toEqual(
      windowDays.map((d) => [d, visitsOf('/falling', [d])]),
    )
    expect(json.totals.visits).toBe(visitsOf('/falling', windowDays))
    expect(json.drivers).toEqual({ sources: [], channels: [] })
    // 6 a day until 8 days ago, then 1: the shift is the first day of the fall, against the 7 days before and the 7 after
    expect(json.shift).toEqual({
      day: YESTERDAY.subtract({ days: 6 }).toString(),
      direction: 'down',
      beforeDays: 7,
      afterDays: 7,
      before: 6,
      after: 1,
      change: round4(-5 / 6),
    })
    expect(json.causes.some((c: { kind: string }) => c.kind === 'source_shift')).toBe(false)
  })

  it('geo: places from GA4 locations, without coordinates', async () => {
    const json = await get(`/api/v1/geo?site_id=${siteId}&granularity=city&range=30d`)
    const days = new Set(daysFrom(TODAY.subtract({ days: 29 }), TODAY.add({ days: 1 })))
    const inWindow = sessions.filter((s) => days.has(s.date))
    const expected = PLACES.map((p) => {
      const n = inWindow.filter((s) => s.city === p.city).length
      return { ...p, latitude: null, longitude: null, visitors: n, visits: n }
    }).sort((a, b) => b.visitors - a.visitors || a.country.localeCompare(b.country) || a.region.localeCompare(b.region))
    expect(json).toMatchObject({ source: 'ga4', available: true, granularity: 'city' })
    expect(json.places).toEqual(expected)
  })
})
