import { Temporal } from 'temporal-polyfill'
import type { RangeName } from '../dimensions'
import { ApiError } from '../../core/errors'

export type Interval = 'minute' | 'hour' | 'day' | 'week' | 'month'
/** The keyed ranges plus the live windows of the public count. */
export type WindowName = RangeName | '5m' | '30m'

export interface RangeInput {
  range: WindowName
  /** YYYY-MM-DD, with custom */
  from?: string
  to?: string
}

export interface ResolvedRange {
  name: WindowName
  timezone: string
  /** Inclusive start. */
  from: Temporal.ZonedDateTime
  /** Exclusive end. */
  to: Temporal.ZonedDateTime
  interval: Interval
}

const DATE = /^\d{4}-\d{2}-\d{2}$/

/**
 * The days the engine can hold: the daily rollup keys rows by Date (1970-01-01 to 2149-06-06),
 * and a window ends the day after its last day. Outside them a read could only fail or be empty.
 */
const FIRST_DAY = Temporal.PlainDate.from('1970-01-01')
const LAST_DAY = Temporal.PlainDate.from('2149-06-05')

function plainDate(value: string | undefined, name: 'from' | 'to'): Temporal.PlainDate {
  if (!value) throw new ApiError(400, `${name}: required with range=custom (YYYY-MM-DD)`)
  if (!DATE.test(value)) throw new ApiError(400, `${name}: must be a date as YYYY-MM-DD`)
  let date: Temporal.PlainDate
  try {
    date = Temporal.PlainDate.from(value, { overflow: 'reject' })
  } catch {
    throw new ApiError(400, `${name}: ${value} is not a calendar date`)
  }
  if (Temporal.PlainDate.compare(date, FIRST_DAY) < 0 || Temporal.PlainDate.compare(date, LAST_DAY) > 0) {
    throw new ApiError(400, `${name}: ${value} is outside the days this service stores (${FIRST_DAY} to ${LAST_DAY})`)
  }
  return date
}

/** The local day last resolved in each timezone: reads of a site ask for the same day all day long. */
const localDays = new Map<string, LocalDay>()

interface LocalDay {
  today: Temporal.ZonedDateTime
  tomorrow: Temporal.ZonedDateTime
  /** The starts of the days before it, by how many days before (the 7d, 30d and 90d windows' first days). */
  before: Map<number, Temporal.ZonedDateTime>
}

/** The start of the site-local day holding `now`, and of the next day: the last ones found while `now` is within them. */
function localDayOf(timezone: string, now: number): LocalDay {
  const kept = localDays.get(timezone)
  if (kept && now >= kept.today.epochMilliseconds && now < kept.tomorrow.epochMilliseconds) return kept
  const today = Temporal.Instant.fromEpochMilliseconds(now).toZonedDateTimeISO(timezone).startOfDay()
  const day = { today, tomorrow: today.add({ days: 1 }).startOfDay(), before: new Map() }
  localDays.set(timezone, day)
  return day
}

/** The start of the day `days` before a local day. */
function daysBefore(day: LocalDay, days: number): Temporal.ZonedDateTime {
  let start = day.before.get(days)
  if (!start) day.before.set(days, (start = day.today.subtract({ days }).startOfDay()))
  return start
}

/**
 * Resolves a symbolic range in the site's timezone at an injected `now`.
 * `series` asks for the timeseries window, which differs for realtime (30 minutes, not 5).
 * `firstEventAt` bounds `all`.
 */
export function resolveRange(
  input: RangeInput,
  timezone: string,
  now: Date,
  options: { series?: boolean; firstEventAt?: Date | null } = {},
): ResolvedRange {
  // dates with a named range would be ignored, and the answer read as if they held
  if (input.range !== 'custom' && (input.from !== undefined || input.to !== undefined)) {
    throw new ApiError(400, `${input.from !== undefined ? 'from' : 'to'}: taken only with range=custom (the range here is ${input.range})`)
  }
  const day = localDayOf(timezone, now.getTime())
  const { today, tomorrow } = day
  const make = (from: Temporal.ZonedDateTime, to: Temporal.ZonedDateTime, interval: Interval): ResolvedRange => ({
    name: input.range,
    timezone,
    from,
    to,
    interval,
  })
  const lastDays = (n: number) => make(daysBefore(day, n - 1), tomorrow, 'day')
  // made only by the ranges that start there: each walk of the site's calendar costs
  const monthStart = () => today.with({ day: 1 }).startOfDay()
  const yearStart = () => today.with({ month: 1, day: 1 }).startOfDay()
  // a series has whole one-minute buckets ending with the current one; totals take the exact last n minutes
  const minutes = (n: number) => {
    const at = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(timezone)
    return options.series
      ? make(
          at.round({ smallestUnit: 'minute', roundingMode: 'floor' }).subtract({ minutes: n - 1 }),
          at.round({ smallestUnit: 'minute', roundingMode: 'floor' }).add({ minutes: 1 }),
          'minute',
        )
      : make(at.subtract({ minutes: n }), at, 'minute')
  }

  switch (input.range) {
    case 'realtime':
      return minutes(options.series ? 30 : 5)
    case '5m':
      return minutes(5)
    case '30m':
      return minutes(30)
    case 'today':
      return make(today, tomorrow, 'hour')
    case 'yesterday':
      return make(daysBefore(day, 1), today, 'hour')
    case '7d':
      return lastDays(7)
    case '30d':
      return lastDays(30)
    case '90d':
      return lastDays(90)
    case 'week':
      return make(daysBefore(day, today.dayOfWeek - 1), tomorrow, 'day')
    case 'month':
      return make(monthStart(), tomorrow, 'day')
    case 'year':
    case 'ytd':
      return make(yearStart(), tomorrow, 'month')
    case 'last-year':
      return make(yearStart().subtract({ years: 1 }).startOfDay(), yearStart(), 'month')
    case '12mo':
      return make(monthStart().subtract({ months: 11 }).startOfDay(), tomorrow, 'month')
    case 'all': {
      const first = options.firstEventAt
        ? Temporal.Instant.fromEpochMilliseconds(options.firstEventAt.getTime()).toZonedDateTimeISO(timezone).startOfDay()
        : today
      const from = Temporal.ZonedDateTime.compare(first, today) < 0 ? first : today
      const days = from.until(tomorrow, { largestUnit: 'days' }).days
      return make(from, tomorrow, days < 90 ? 'day' : 'month')
    }
    case 'custom': {
      const from = plainDate(input.from, 'from')
      const to = plainDate(input.to, 'to')
      if (Temporal.PlainDate.compare(from, to) > 0) throw new ApiError(400, 'from: must not be after to')
      const days = from.until(to).days + 1
      if (days > 3660) throw new ApiError(400, 'to: a custom range may span at most ten years')
      const start = from.toZonedDateTime({ timeZone: timezone })
      const end = to.add({ days: 1 }).toZonedDateTime({ timeZone: timezone })
      return make(start, end, days === 1 ? 'hour' : days <= 90 ? 'day' : 'month')
    }
  }
}

/**
 * The window of equal length just before `range`, as every comparison takes it: 7d from
 * 16 November is 9 to 16 November. Length counts calendar days in the site's timezone, then
 * hours, so a window of whole days is compared with as many whole days across a clock change too.
 */
export function previousWindow(range: ResolvedRange): ResolvedRange {
  const length = range.from.until(range.to, { largestUnit: 'day' })
  return { ...range, from: range.from.subtract(length), to: range.from }
}

/** Labels already written: the local day's bounds are shared by the reads of a day (localDayOf), and so are their labels. */
const labels = new WeakMap<Temporal.ZonedDateTime, string>()
function iso(z: Temporal.ZonedDateTime): string {
  let label = labels.get(z)
  if (label === undefined) labels.set(z, (label = z.toString({ timeZoneName: 'never', smallestUnit: 'second' })))
  return label
}

/** The range object every report echoes. `to` is the exclusive end. */
export function rangeView(range: ResolvedRange) {
  return { name: range.name, from: iso(range.from), to: iso(range.to), interval: range.interval, timezone: range.timezone }
}

export type Bucket = { readonly epoch: number; readonly label: string }

/** Windows whose buckets are kept: a site's reads ask for the same few windows all day long. */
const KEPT_BUCKET_WINDOWS = 256
const bucketsByWindow = new Map<string, readonly Bucket[]>()

/**
 * Every bucket start of the window, as epoch seconds and as an ISO label with the site's offset.
 * Walking the site's calendar is most of a series read's own time, and the same windows are asked
 * again and again (a day's 30d series, every page's trend of a listing): the last windows' buckets
 * are kept, shared and never changed.
 */
export function buckets(range: ResolvedRange): readonly Bucket[] {
  const key = `${range.timezone}|${range.interval}|${range.from.epochMilliseconds}|${range.to.epochMilliseconds}`
  let kept = bucketsByWindow.get(key)
  if (!kept) {
    kept = Object.freeze(walkBuckets(range))
    if (bucketsByWindow.size >= KEPT_BUCKET_WINDOWS) bucketsByWindow.delete(bucketsByWindow.keys().next().value!)
    bucketsByWindow.set(key, kept)
  }
  return kept
}

function walkBuckets(range: ResolvedRange): Bucket[] {
  const out: Bucket[] = []
  let cursor =
    range.interval === 'minute'
      ? range.from.round({ smallestUnit: 'minute', roundingMode: 'floor' })
      : range.interval === 'hour'
        ? range.from.round({ smallestUnit: 'hour', roundingMode: 'floor' })
        : range.interval === 'day'
          ? range.from.startOfDay()
          : range.interval === 'week'
            ? range.from
                .startOfDay()
                .subtract({ days: range.from.dayOfWeek - 1 })
                .startOfDay()
            : range.from.with({ day: 1 }).startOfDay()
  const step = (z: Temporal.ZonedDateTime) =>
    range.interval === 'minute'
      ? z.add({ minutes: 1 })
      : range.interval === 'hour'
        ? z.add({ hours: 1 })
        : range.interval === 'day'
          ? z.add({ days: 1 }).startOfDay()
          : range.interval === 'week'
            ? z.add({ days: 7 }).startOfDay()
            : z.add({ months: 1 }).with({ day: 1 }).startOfDay()
  while (Temporal.ZonedDateTime.compare(cursor, range.to) < 0 && out.length < 100_000) {
    out.push({ epoch: cursor.epochMilliseconds / 1000, label: iso(cursor) })
    cursor = step(cursor)
  }
  return out
}

/** 2026-11-20 10:00:00.000 in UTC, as ClickHouse DateTime64 parameters are written. */
export { clickhouseTime as chTime } from '../../storage/clickhouse/time'

/** A run of whole site-local days, as its start and exclusive end. */
export interface DaySpan {
  from: Temporal.ZonedDateTime
  to: Temporal.ZonedDateTime
}

/** Instants already told apart: a read asks of its window's ends several times, and the local day's ends are shared (localDayOf). */
const dayStarts = new WeakMap<Temporal.ZonedDateTime, boolean>()

/** Whether an instant is the start of its site-local day. */
export function startsDay(at: Temporal.ZonedDateTime): boolean {
  let starts = dayStarts.get(at)
  if (starts === undefined) dayStarts.set(at, (starts = at.equals(at.startOfDay())))
  return starts
}

/** The window is whole site-local days: it starts and ends at a local midnight. */
export const wholeDays = (range: ResolvedRange) => startsDay(range.from) && startsDay(range.to)

const DAY_MS = 86_400_000

/** The dates from `from` up to `to` (excluded), as YYYY-MM-DD: counted on the calendar alone, a day being a date. */
export function datesBetween(from: Temporal.PlainDate, to: Temporal.PlainDate): string[] {
  const dates: string[] = []
  const end = Date.parse(to.toString())
  for (let day = Date.parse(from.toString()); day < end; day += DAY_MS) dates.push(new Date(day).toISOString().slice(0, 10))
  return dates
}

/** The site-local days of a window made of whole days, as YYYY-MM-DD. */
export const windowDays = (range: ResolvedRange): string[] => datesBetween(range.from.toPlainDate(), range.to.toPlainDate())

/** The runs of days in the window other than `rolled`, as spans for a raw scan. */
export function rawDaySpans(range: ResolvedRange, rolled: readonly string[]): DaySpan[] {
  const skip = new Set(rolled)
  return daySpans(
    windowDays(range).filter((day) => !skip.has(day)),
    range.timezone,
  )
}

/** Days whose bounds are kept: the days of the windows read lately, in the timezones of their sites. */
const KEPT_DAYS = 4096
const dayBounds = new Map<string, DaySpan>()

/** A site-local day's start and end (the next day's start), kept: every read of a window asks for them again. */
function boundsOf(day: string, timezone: string): DaySpan {
  const key = `${timezone}|${day}`
  let bounds = dayBounds.get(key)
  if (!bounds) {
    const from = Temporal.PlainDate.from(day).toZonedDateTime({ timeZone: timezone })
    bounds = { from, to: from.add({ days: 1 }).startOfDay() }
    if (dayBounds.size >= KEPT_DAYS) dayBounds.delete(dayBounds.keys().next().value!)
    dayBounds.set(key, bounds)
  }
  return bounds
}

/** Runs of consecutive site-local days (YYYY-MM-DD, ascending), as spans. */
export function daySpans(days: readonly string[], timezone: string): DaySpan[] {
  const spans: DaySpan[] = []
  for (const day of days) {
    const { from, to } = boundsOf(day, timezone)
    const last = spans[spans.length - 1]
    if (last?.to.equals(from)) last.to = to
    else spans.push({ from, to })
  }
  return spans
}
