/**
 * How the web pages write numbers, durations, times and places for people: one module, used by
 * every page, so a figure reads the same wherever it is shown.
 */

import type { RANGES } from '../../lib/reports/dimensions'

/** The named ranges of the picker, in the API's names; custom dates go through from and to. */
export const RANGE_LABELS: Record<Exclude<(typeof RANGES)[number], 'custom'>, string> = {
  realtime: 'Last 5 minutes',
  today: 'Today',
  yesterday: 'Yesterday',
  '7d': 'Last 7 days',
  week: 'This week',
  month: 'This month',
  '30d': 'Last 30 days',
  '90d': 'Last 90 days',
  year: 'This year',
  ytd: 'Year to date',
  'last-year': 'Last year',
  '12mo': 'Last 12 months',
  all: 'All time',
}

/** A count with thousands separators: 12,345. */
export const count = (n: number) => Math.round(n).toLocaleString('en')

/** A share (0.1234) as a percentage: 12%, or 12.3% with one digit. */
export const percent = (share: number, digits = 0) => `${(share * 100).toFixed(digits)}%`

/** Seconds as a person says them: 45 s, 6 min 25 s, 2 h 5 min. */
export function duration(seconds: number) {
  const s = Math.round(seconds)
  if (s < 60) return `${s} s`
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`
  const m = Math.floor(s / 60)
  return `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ''}`
}

/** Milliseconds, in ms below a second and in seconds above: 420 ms, 3.35 s. */
export const millis = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`)

const epoch = (iso: string) => Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) || !iso.includes('T') ? iso : `${iso}Z`)

/** How long before `now` a moment was, in words: just now, 3 min ago, 2 h ago, 5 days ago. */
export function ago(iso: string, now: number) {
  const s = Math.max(0, Math.round((now - epoch(iso)) / 1000))
  if (s < 10) return 'just now'
  if (s < 60) return `${s} s ago`
  if (s < 3600) return `${Math.floor(s / 60)} min ago`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`
  const d = Math.floor(s / 86_400)
  return d === 1 ? 'yesterday' : d < 60 ? `${d} days ago` : `${Math.floor(d / 30)} months ago`
}

/** A moment in the site's timezone: 7 Dec 2026, 12:25. */
export const dateTime = (iso: string, timeZone: string) =>
  new Intl.DateTimeFormat('en-GB', {
    timeZone,
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  }).format(epoch(iso))

/** A moment's time of day in the site's timezone: 12:25. */
export const clock = (iso: string, timeZone: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit' }).format(epoch(iso))

/** A calendar day (2026-12-07, or a moment in the site's timezone): 7 Dec 2026. */
export const day = (isoOrDate: string, timeZone = 'UTC') =>
  new Intl.DateTimeFormat('en-GB', {
    timeZone: isoOrDate.includes('T') ? timeZone : 'UTC',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
  }).format(epoch(isoOrDate.includes('T') ? isoOrDate : `${isoOrDate}T00:00:00Z`))

let regions: Intl.DisplayNames | undefined

/** A country's name from its ISO code (US: United States); the code when no name is known, "Unknown" for none. */
export function country(code: string | null | undefined) {
  if (!code) return 'Unknown'
  try {
    regions ??= new Intl.DisplayNames(['en'], { type: 'region' })
    return regions.of(code.toUpperCase()) ?? code
  } catch {
    return code
  }
}

/** The IANA zones the runtime knows, by region and city as people look for them (Europe/Paris: Europe / Paris), UTC first. */
export const TIMEZONES: readonly (readonly [string, string])[] = [
  ['UTC', 'UTC'],
  ...Intl.supportedValuesOf('timeZone')
    .filter((zone) => zone !== 'UTC')
    .map((zone) => [zone, zone.replaceAll('_', ' ').replaceAll('/', ' / ')] as const),
]
