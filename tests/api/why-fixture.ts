import { UAS } from './report-reference'

/**
 * Fixture traffic for the "why traffic changed" reads, with planted effects, and the reference
 * numbers the tests expect, computed here from the raw hits alone. Every hit comes from an
 * address of its own, so each hit is one visitor and one visit with one pageview: a page's visits
 * in a period are its hits there, and an hour's visitors are the hits in it.
 */

export const NOW = new Date('2026-11-22T15:00:00Z')
export const TZ = 'Europe/Berlin'
const dayFormat = new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit' })
/** The site-local day of an instant, YYYY-MM-DD. */
export const localDay = (ts: number) => dayFormat.format(new Date(ts))
const START = Date.parse('2026-07-01T00:00:00Z')
/** The last hit is before this: the hour under way has none. */
const END = NOW.getTime() - 3_600_000
const HOUR = 3_600_000
const DAY = 86_400_000

export const GOOGLE = 'https://www.google.com/'
export const HN = 'https://news.ycombinator.com/item?id=4242'
const TWITTER = 'https://t.co/abc'

export interface FixtureHit {
  ts: number
  path: string
  referrer: string | null
}

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

/** Site-local midnight of each day from START to END, as [day, startMs, endMs]. */
function localDays(): [string, number, number][] {
  const days: [string, number, number][] = []
  // every UTC hour, grouped by its local day
  const byDay = new Map<string, number[]>()
  for (let h = START; h < END; h += HOUR) {
    const d = localDay(h)
    byDay.set(d, [...(byDay.get(d) ?? []), h])
  }
  for (const [d, hours] of byDay) days.push([d, hours[0], Math.min(hours[hours.length - 1] + HOUR, END)])
  return days
}

/** The planted site. */
export function plantedHits(seed: number): FixtureHit[] {
  const r = prng(seed)
  const hits: FixtureHit[] = []
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]
  // evergreen pages: 2 to 4 visitors every hour
  for (let h = START; h < END; h += HOUR) {
    const n = 2 + Math.floor(r() * 3)
    for (let i = 0; i < n; i++)
      hits.push({
        ts: h + Math.floor(r() * HOUR),
        path: pick(['/', '/about', '/blog/a', '/blog/b']),
        referrer: pick([null, GOOGLE, TWITTER]),
      })
  }
  const spread = (from: number, to: number, n: number, path: string, referrer: () => string | null) => {
    for (let i = 0; i < n; i++) hits.push({ ts: from + Math.floor(r() * (to - from)), path, referrer: referrer() })
  }
  for (const [day, from, to] of localDays()) {
    const fraction = (to - from) / DAY
    // /pricing: 40 visits a day, half from 18 November on
    spread(from, to, Math.round((day < '2026-11-18' ? 40 : 20) * fraction), '/pricing', () => pick([null, GOOGLE]))
    // /old: 5 a day, then nothing from 16 November on
    if (day < '2026-11-16') spread(from, to, 5, '/old', () => null)
    // /guide: 25 a day from search until mid August, fading to 4 a day (1 from search) by mid October
    const t = (from - Date.parse('2026-08-15T00:00:00Z')) / (61 * DAY)
    const guide = t <= 0 ? 25 : t >= 1 ? 4 : Math.round(25 - 21 * t)
    const searched = t <= 0 ? guide : t >= 1 ? 1 : Math.round(guide * (1 - 0.75 * t))
    spread(from, to, searched, '/guide', () => GOOGLE)
    spread(from, to, guide - searched, '/guide', () => null)
    // a cohort launched 3 to 8 November: /new/i from day 2+i, 2(7-i) visits a day (the later, the fewer)
    for (let i = 1; i <= 6; i++)
      if (day >= `2026-11-0${2 + i}`) spread(from, to, Math.round(2 * (7 - i) * fraction), `/new/${i}`, () => null)
    // a page too small to be news
    if (Number(day.slice(8)) % 3 === 0) spread(from, to, 1, '/rare', () => null)
  }
  // the spike: 60 visitors from one Hacker News thread, 18 November 14:00 to 15:00 in Berlin
  spread(Date.parse('2026-11-18T13:00:00Z'), Date.parse('2026-11-18T14:00:00Z'), 60, '/blog/launch-post', () => HN)
  return hits.sort((a, b) => a.ts - b.ts)
}

/** The control site: exactly three visitors every hour, on three pages, no referrer. */
export function flatHits(): FixtureHit[] {
  const hits: FixtureHit[] = []
  for (let h = START; h < END; h += HOUR)
    ['/', '/a', '/b'].forEach((path, i) => hits.push({ ts: h + (i + 1) * 600_000, path, referrer: null }))
  return hits
}

/** The raw-hit import lines of a site: one address per hit. */
export function importLines(hits: FixtureHit[], snippet: string, domain: string, firstAddress: number): string[] {
  return hits.map((h, i) => {
    const n = firstAddress + i
    const ip = `198.${18 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`
    return JSON.stringify({
      timestamp: new Date(h.ts).toISOString(),
      site: snippet,
      name: 'pageview',
      url: `https://${domain}${h.path}`,
      referrer: h.referrer,
      ip,
      userAgent: UAS[n % UAS.length],
    })
  })
}

// ---- the reference ----

const hourFormat = new Intl.DateTimeFormat('en-CA', {
  timeZone: TZ,
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  hourCycle: 'h23',
})
/** YYYY-MM-DDTHH of the site-local hour of an instant. */
const localHour = (ts: number) => {
  const parts = hourFormat.formatToParts(new Date(ts))
  const get = (type: string) => parts.find((p) => p.type === type)!.value
  return `${get('year')}-${get('month')}-${get('day')}T${get('hour')}`
}
const shiftDays = (day: string, days: number) => new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY).toISOString().slice(0, 10)
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? (s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : 0
}

/**
 * Spiking site-local hours of the window [from, to) (ISO instants), by the documented rule:
 * baseline the same local hour of the 8 weeks before (after the first hit), median and MAD.
 */
export function referenceSpikeHours(hits: FixtureHit[], from: string, to: string) {
  const perHour = new Map<string, number>()
  for (const h of hits) perHour.set(localHour(h.ts), (perHour.get(localHour(h.ts)) ?? 0) + 1)
  const first = localHour(hits[0].ts)
  const found: { hour: string; visitors: number; expected: number; baseline: string[] }[] = []
  for (let t = Date.parse(from); t < Date.parse(to); t += HOUR) {
    const hour = localHour(t)
    const baseline = Array.from({ length: 8 }, (_, w) => `${shiftDays(hour.slice(0, 10), -7 * (w + 1))}T${hour.slice(11)}`).filter(
      (b) => b >= first,
    )
    if (hour < first || baseline.length < 3) continue
    const samples = baseline.map((b) => perHour.get(b) ?? 0)
    const m = median(samples)
    const spread = Math.max(1.4826 * median(samples.map((x) => Math.abs(x - m))), Math.sqrt(m), 1)
    const visitors = perHour.get(hour) ?? 0
    if (visitors - m >= Math.max(5 * spread, 10)) found.push({ hour, visitors, expected: m, baseline })
  }
  return found
}

/** Visits per path in [from, to). */
export function visitsByPath(hits: FixtureHit[], from: number, to: number) {
  const by = new Map<string, number>()
  for (const h of hits) if (h.ts >= from && h.ts < to) by.set(h.path, (by.get(h.path) ?? 0) + 1)
  return by
}

/** The movers of [from, to) against the window of equal length before, by the documented rule. */
export function referenceMovers(hits: FixtureHit[], from: number, to: number) {
  const current = visitsByPath(hits, from, to)
  const previous = visitsByPath(hits, from - (to - from), from)
  const sitePrevious = [...previous.values()].reduce((a, b) => a + b, 0)
  return [...new Set([...current.keys(), ...previous.keys()])]
    .map((path) => {
      const c = current.get(path) ?? 0
      const p = previous.get(path) ?? 0
      return { path, current: c, previous: p, change: c - p, relativeChange: p ? (c - p) / p : null, impact: (c - p) / sitePrevious }
    })
    .filter(
      (m) =>
        Math.max(m.current, m.previous) >= 20 &&
        Math.abs(m.change) >= 10 &&
        (m.relativeChange === null || m.current === 0 || Math.abs(m.relativeChange) >= 0.25),
    )
    .sort((a, b) => Math.abs(b.change) - Math.abs(a.change) || (a.path < b.path ? -1 : 1))
}

/** Visits per path and site-local day. */
export function dailyVisits(hits: FixtureHit[]) {
  const by = new Map<string, Map<string, number>>()
  for (const h of hits) {
    const day = localDay(h.ts)
    const days = by.get(h.path) ?? new Map<string, number>()
    days.set(day, (days.get(day) ?? 0) + 1)
    by.set(h.path, days)
  }
  return by
}

/** Fading pages as of `today` (YYYY-MM-DD, site-local), by the documented rule. */
export function referenceDecay(hits: FixtureHit[], today: string) {
  const daily = dailyVisits(hits)
  const siteDaily = new Map<string, number>()
  for (const h of hits) siteDaily.set(localDay(h.ts), (siteDaily.get(localDay(h.ts)) ?? 0) + 1)
  const over = (days: Map<string, number> | undefined, end: string) =>
    Array.from({ length: 28 }, (_, i) => days?.get(shiftDays(end, -i)) ?? 0).reduce((a, b) => a + b, 0)
  const yesterday = shiftDays(today, -1)
  const siteCurrent = over(siteDaily, yesterday)
  const pages = []
  for (const [path, days] of daily) {
    let peak = 0
    let peakTo = ''
    for (let end = shiftDays(today, -365 + 27); end <= yesterday; end = shiftDays(end, 1)) {
      const v = over(days, end)
      if (v > 0 && v >= peak) [peak, peakTo] = [v, end]
    }
    const current = over(days, yesterday)
    const siteChange = siteCurrent / over(siteDaily, peakTo) - 1
    const adjustedChange = current / peak / (1 + siteChange) - 1
    if (peak >= 30 && current <= 0.7 * peak && adjustedChange <= -0.25)
      pages.push({ path, peak, peakTo, current, siteChange, adjustedChange, lost: peak - current })
  }
  return pages.sort((a, b) => b.lost - a.lost)
}
