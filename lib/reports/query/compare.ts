import { Temporal } from 'temporal-polyfill'
import { z } from 'zod'
import { ApiError } from '../../core/errors'
import { type ResolvedRange, previousWindow, resolveRange } from './range'
import { fraction } from './shape'

/**
 * Period comparisons (docs/api.md, Comparisons): the window a read is compared with, and the change
 * of each figure between the two.
 */

export const COMPARE_MODES = ['previous_period', 'year_over_year', 'custom'] as const
export type CompareMode = (typeof COMPARE_MODES)[number]

/** The query parameters of a read that compares, as the endpoints declare them. */
export const compareParams = {
  compare: z
    .enum(COMPARE_MODES)
    .optional()
    .describe('previous_period, year_over_year, or custom (with compare_from and compare_to): adds comparison'),
  compare_from: z.string().optional().describe('YYYY-MM-DD, with compare=custom'),
  compare_to: z.string().optional().describe('YYYY-MM-DD, with compare=custom (included)'),
}

export interface CompareInput {
  compare?: CompareMode
  compare_from?: string
  compare_to?: string
}

/** The whole site-local days of a window, counted on the calendar (a day of 23 or 25 hours is one day). */
const calendarDays = (range: ResolvedRange) => range.from.toPlainDate().until(range.to.toPlainDate(), { largestUnit: 'days' }).days

const isWholeDays = (range: ResolvedRange) => range.from.equals(range.from.startOfDay()) && range.to.equals(range.to.startOfDay())

/**
 * The window `range` is compared with, in the same timezone and with the same interval, of equal
 * length: as many site-local calendar days for a window of whole days (across a clock change too),
 * else as long in hours and minutes.
 *
 * - `previous_period`: the window just before. `week` (this week so far) is compared with the same
 *   weekdays of the week before; a window of whole weeks starts on its own weekday by construction.
 *   `today` and `week`, given the read's `now`, are compared up to the same time of day (site-local
 *   clock): yesterday up to now's time, last week up to now's weekday and time, not whole days: a
 *   window that has not ended is not set against one that has.
 * - `year_over_year`: the window starting on the same date one year earlier (29 February starts on
 *   28 February), of equal length: where one of the two windows spans a 29 February, the
 *   comparison ends a calendar day off the range's end date.
 * - `custom`: the site-local days `from` to `to` (YYYY-MM-DD, both included), which must be as many
 *   as the window's, for a window of whole days.
 *
 * Pure: a bad custom window is an ApiError(400) naming compare_from or compare_to.
 */
export function comparisonWindow(
  range: ResolvedRange,
  mode: CompareMode,
  custom: { from?: string; to?: string } = {},
  now?: Date,
): ResolvedRange {
  if (mode === 'previous_period') {
    if (range.name === 'week') return now ? soFar(range, 7, now) : shiftDays(range, -7)
    if (range.name === 'today' && now) return soFar(range, 1, now)
    return previousWindow(range)
  }
  if (mode === 'year_over_year') {
    const from = range.from.subtract({ years: 1 })
    if (isWholeDays(range)) {
      const start = from.toPlainDate().toZonedDateTime({ timeZone: range.timezone })
      return {
        ...range,
        from: start,
        to: start
          .toPlainDate()
          .add({ days: calendarDays(range) })
          .toZonedDateTime({ timeZone: range.timezone }),
      }
    }
    return { ...range, from, to: from.add(range.from.until(range.to, { largestUnit: 'hours' })) }
  }
  if (custom.from === undefined) throw new ApiError(400, 'compare_from: required with compare=custom (YYYY-MM-DD)')
  if (custom.to === undefined) throw new ApiError(400, 'compare_to: required with compare=custom (YYYY-MM-DD)')
  const days = customWindow(custom.from, custom.to, range.timezone)
  if (!isWholeDays(range))
    throw new ApiError(400, `compare: custom compares whole days, and the range ${range.name} is not made of whole days`)
  const length = calendarDays(range)
  const asked = calendarDays(days)
  if (asked !== length)
    throw new ApiError(400, `compare_to: the custom comparison spans ${asked} days, the range ${length}; they must be of equal length`)
  return { ...range, from: days.from, to: days.to }
}

/** The site-local days from and to, both included; the range machinery's checks, named as compare_from and compare_to. */
function customWindow(from: string, to: string, timezone: string): ResolvedRange {
  try {
    return resolveRange({ range: 'custom', from, to }, timezone, new Date(0))
  } catch (error) {
    if (error instanceof ApiError) {
      const message = error.message.replace(/^from:/, 'compare_from:').replace(/^to:/, 'compare_to:')
      throw new ApiError(
        400,
        message.replace('must not be after to', 'must not be after compare_to').replace('range=custom', 'compare=custom'),
      )
    }
    throw error
  }
}

/**
 * A window that runs up to `now` set against the same window `days` earlier, cut at the same time
 * of day on the site's clock: `today` against yesterday 00:00 up to now's time, `week` against the
 * week before's Monday 00:00 up to now's weekday and time.
 */
function soFar(range: ResolvedRange, days: number, now: Date): ResolvedRange {
  const at = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(range.timezone)
  const from = range.from.toPlainDate().subtract({ days }).toZonedDateTime({ timeZone: range.timezone })
  const to = at
    .toPlainDate()
    .subtract({ days })
    .toPlainDateTime(at.toPlainTime())
    .toZonedDateTime(range.timezone, { disambiguation: 'compatible' })
  return { ...range, from, to: Temporal.ZonedDateTime.compare(to, from) < 0 ? from : to }
}

const shiftDays = (range: ResolvedRange, days: number): ResolvedRange => {
  const shift = (z: Temporal.ZonedDateTime) =>
    z.toPlainDateTime().add({ days }).toZonedDateTime(range.timezone, { disambiguation: 'compatible' })
  return { ...range, from: shift(range.from), to: shift(range.to) }
}

/**
 * Checks the comparison parameters and resolves the window, or null without `compare`.
 * compare_from and compare_to without compare=custom are a 400 naming them. `now` is the read's
 * (it cuts `today`'s previous period at the same time of day).
 */
export function resolveComparison(
  range: ResolvedRange,
  params: CompareInput,
  now?: Date,
): { mode: CompareMode; window: ResolvedRange } | null {
  if (params.compare !== 'custom') {
    for (const name of ['compare_from', 'compare_to'] as const)
      if (params[name] !== undefined)
        throw new ApiError(
          400,
          `${name}: taken only with compare=custom (${params.compare ? `compare here is ${params.compare}` : 'no compare given'})`,
        )
  }
  if (!params.compare) return null
  return {
    mode: params.compare,
    window: comparisonWindow(range, params.compare, { from: params.compare_from, to: params.compare_to }, now),
  }
}

/** The change of one figure: current minus compared, and that over compared (null from zero or where either is null). */
export interface Change {
  absolute: number | null
  relative: number | null
}

export function change(current: number | null | undefined, compared: number | null | undefined): Change {
  if (current === null || current === undefined || compared === null || compared === undefined) return { absolute: null, relative: null }
  const absolute = current - compared
  // differences of rounded figures: keep the decimals they were answered with
  return { absolute: Math.round(absolute * 10_000) / 10_000, relative: compared === 0 ? null : fraction(absolute / compared) }
}

const figure = (v: unknown) => (typeof v === 'number' ? v : v === null ? null : 0)

/** The change of each named figure of two records; a figure one record lacks counts as 0 there (a row that appeared or vanished). */
export function changes<T extends object>(current: T | null, compared: T | null, names: readonly string[]): Record<string, Change> {
  const out: Record<string, Change> = {}
  for (const name of names) {
    const a = (current as Record<string, unknown> | null)?.[name]
    const b = (compared as Record<string, unknown> | null)?.[name]
    if (a === undefined && b === undefined) continue
    out[name] = change(figure(a), figure(b))
  }
  return out
}

/** The figures a totals answer compares. */
export const TOTALS_FIGURES = ['visitors', 'visits', 'pageviews', 'bounceRate', 'avgDuration', 'viewsPerVisit', 'events'] as const
/** The figures a breakdown row, a goal or a bucket may carry. */
export const ROW_FIGURES = [
  'visitors',
  'visits',
  'pageviews',
  'events',
  'bounceRate',
  'avgDuration',
  'conversions',
  'conversionRate',
] as const

const SERIES_FIGURES = ['visitors', 'visits', 'pageviews']
const NO_CHANGE: Change = { absolute: null, relative: null }

/** A timeseries bucket pairs with the compared bucket of the same position (one to one; docs/api.md, Comparisons). */
export function alignSeries<T extends { timestamp: string }>(current: T[], compared: T[]) {
  return {
    series: current.map((bucket, i) => ({
      ...bucket,
      comparison: compared[i] ?? null,
      // no compared bucket is no figure to compare with, not zeros
      change: compared[i] ? changes(bucket, compared[i], SERIES_FIGURES) : Object.fromEntries(SERIES_FIGURES.map((n) => [n, NO_CHANGE])),
    })),
    // a window of more buckets than the range (a 25-hour day against a 24-hour one): the buckets no bucket pairs with
    unpaired: compared.slice(current.length),
  }
}

export type RowStatus = 'continuing' | 'appeared' | 'vanished'

/**
 * A breakdown's rows against the compared window's, by value. `current` and `compared` are both
 * read in full up to the same cap; the answer lists the first `limit` current rows (a row absent
 * from the compared window `appeared`), then the compared window's first `limit` rows absent from
 * the current window (`vanished`, their current figures 0).
 */
export function compareRows<T extends { value: string }>(current: T[], compared: T[], limit: number) {
  const before = new Map(compared.map((r) => [r.value, r]))
  const now = new Set(current.map((r) => r.value))
  const rows = current.slice(0, limit).map((row) => {
    const was = before.get(row.value) ?? null
    return { ...row, status: (was ? 'continuing' : 'appeared') as RowStatus, comparison: was, change: changes(row, was, ROW_FIGURES) }
  })
  const vanished = compared
    .slice(0, limit)
    .filter((r) => !now.has(r.value))
    .map((was) => {
      const row = zeroed(was)
      return { ...row, status: 'vanished' as RowStatus, comparison: was, change: changes(row, was, ROW_FIGURES) }
    })
  return [...rows, ...vanished]
}

/** A row with every figure 0 (null stays null; a revenue amount 0 in its currency). */
function zeroed<T extends object>(row: T): T {
  const out: Record<string, unknown> = { ...(row as Record<string, unknown>) }
  for (const [name, v] of Object.entries(out)) {
    if (typeof v === 'number') out[name] = 0
    else if (v && typeof v === 'object' && 'amount' in v) out[name] = { ...v, amount: 0 }
  }
  return out as T
}
