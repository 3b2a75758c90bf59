import { Temporal } from 'temporal-polyfill'
import type { RangeName } from '../dimensions'
import { ApiError } from '../../errors'

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
  const at = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(timezone)
  const today = at.startOfDay()
  const tomorrow = today.add({ days: 1 }).startOfDay()
  const make = (from: Temporal.ZonedDateTime, to: Temporal.ZonedDateTime, interval: Interval): ResolvedRange => ({
    name: input.range,
    timezone,
    from,
    to,
    interval,
  })
  const lastDays = (n: number) => make(today.subtract({ days: n - 1 }).startOfDay(), tomorrow, 'day')
  const monthStart = today.with({ day: 1 }).startOfDay()
  const yearStart = today.with({ month: 1, day: 1 }).startOfDay()
  // a series has whole one-minute buckets ending with the current one; totals take the exact last n minutes
  const minutes = (n: number) =>
    options.series
      ? make(
          at.round({ smallestUnit: 'minute', roundingMode: 'floor' }).subtract({ minutes: n - 1 }),
          at.round({ smallestUnit: 'minute', roundingMode: 'floor' }).add({ minutes: 1 }),
          'minute',
        )
      : make(at.subtract({ minutes: n }), at, 'minute')

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
      return make(today.subtract({ days: 1 }).startOfDay(), today, 'hour')
    case '7d':
      return lastDays(7)
    case '30d':
      return lastDays(30)
    case '90d':
      return lastDays(90)
    case 'week':
      return make(today.subtract({ days: today.dayOfWeek - 1 }).startOfDay(), tomorrow, 'day')
    case 'month':
      return make(monthStart, tomorrow, 'day')
    case 'year':
    case 'ytd':
      return make(yearStart, tomorrow, 'month')
    case 'last-year':
      return make(yearStart.subtract({ years: 1 }).startOfDay(), yearStart, 'month')
    case '12mo':
      return make(monthStart.subtract({ months: 11 }).startOfDay(), tomorrow, 'month')
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

const iso = (z: Temporal.ZonedDateTime) => z.toString({ timeZoneName: 'never', smallestUnit: 'second' })

/** The range object every report echoes. `to` is the exclusive end. */
export function rangeView(range: ResolvedRange) {
  return { name: range.name, from: iso(range.from), to: iso(range.to), interval: range.interval, timezone: range.timezone }
}

/** Every bucket start of the window, as epoch seconds and as an ISO label with the site's offset. */
export function buckets(range: ResolvedRange): { epoch: number; label: string }[] {
  const out: { epoch: number; label: string }[] = []
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

/** The window is whole site-local days: it starts and ends at a local midnight. */
export const wholeDays = (range: ResolvedRange) => range.from.equals(range.from.startOfDay()) && range.to.equals(range.to.startOfDay())

/** The site-local days of a window made of whole days, as YYYY-MM-DD. */
export function windowDays(range: ResolvedRange): string[] {
  const days: string[] = []
  for (let d = range.from.toPlainDate(); Temporal.PlainDate.compare(d, range.to.toPlainDate()) < 0; d = d.add({ days: 1 }))
    days.push(d.toString())
  return days
}

/** The runs of days in the window other than `rolled`, as spans for a raw scan. */
export function rawDaySpans(range: ResolvedRange, rolled: readonly string[]): DaySpan[] {
  const skip = new Set(rolled)
  return daySpans(
    windowDays(range).filter((day) => !skip.has(day)),
    range.timezone,
  )
}

/** Runs of consecutive site-local days (YYYY-MM-DD, ascending), as spans. */
export function daySpans(days: readonly string[], timezone: string): DaySpan[] {
  const spans: DaySpan[] = []
  for (const day of days) {
    const from = Temporal.PlainDate.from(day).toZonedDateTime({ timeZone: timezone })
    const to = from.add({ days: 1 }).startOfDay()
    const last = spans[spans.length - 1]
    if (last?.to.equals(from)) last.to = to
    else spans.push({ from, to })
  }
  return spans
}
