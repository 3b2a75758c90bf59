import type { Goal } from '../../sites/goals'
import type { OPERATORS } from '../dimensions'
import type { ResolvedRange } from './range'

/**
 * The operators a filter may hold: the filters parameter's, and the negated contains and matches
 * that Plausible's Stats API v2 queries add (lib/plausible).
 */
export type FilterOperator = (typeof OPERATORS)[number] | 'contains_not' | 'matches_not'

/** One filter: a dimension, an operator, and values OR-ed together. */
export interface Filter {
  dimension: string
  operator: FilterOperator
  value: string[]
  /**
   * With the dimension FILTER_GROUPS (Plausible's Stats API v2 queries): groups of AND-ed filters,
   * OR-ed together (is), or none of them holding (is_not); value is empty.
   */
  groups?: readonly (readonly Filter[])[]
}

/** The query model: everything a report needs, resolved and validated. */
export interface Query {
  siteId: string
  range: ResolvedRange
  filters: Filter[]
  goals: Goal[]
  limit: number
  /** The instant the range was resolved at: the read's now. */
  now: Date
  /** The sample the reads of raw events take, when the site samples and the window is over its threshold (sampling.ts). */
  sample?: Sample
  /**
   * Reads for a caller who is neither a signed-in member nor a key (a shared or public dashboard):
   * they store none of the rollups a read builds under its filters on demand (a filter's days, a
   * filtered flow's), which such a caller could grow without bound, one new filter after another.
   * They take what is rolled up already and read the rest from events.
   */
  transient?: true
}

/**
 * What a report reads: the window's totals, its series, or the rows of one property. A path
 * breakdown with `reports` carries each page's leave-time engagement reports (their count and the
 * sums of scroll depth and engaged time) instead of its visits' bounces and duration: the pages read.
 * A breakdown with `visitsOnly` is asked for visitors and visits alone: the read may skip what only
 * the other numbers need (the engagement of visits read from events, views where visits come from
 * the sessions rollup), and its rows then carry those as zeros. A breakdown `byBucket` has rows per
 * time bucket of the range's interval and value, each with its bucket's start as `bucket` (epoch
 * seconds): a time dimension beside others in Plausible's Stats API v2 queries. Its hour buckets
 * carry no engagement, nor do its rows `withoutEngagement` (asked for no bounce rate or duration).
 */
export type Read =
  | { kind: 'stats' }
  | { kind: 'series' }
  | { kind: 'breakdown'; property: string; reports?: true; visitsOnly?: true; byBucket?: true; withoutEngagement?: true }

/** The options of a breakdown read besides its property. */
export type BreakdownOptions = Pick<Extract<Read, { kind: 'breakdown' }>, 'visitsOnly'>

/** The breakdown "property" of a window's totals: one row, value ''. */
export const TOTALS = ''

/** Days of a window whose daily rollup is current, with the signatures it was built from. */
export interface RolledDays {
  days: string[]
  events: string[]
  sums: string[]
  /** A filtered read's days: rolled up under this key (its filters), not the unfiltered rollup. */
  filtersKey?: string
  /** A day of the window not rolled up (today) whose visits begun before a cutoff are: partial_rollups. */
  partial?: PartialDay
}

/** Signature rows (day, event count, session-id sum) as the arrays reads and builds bind. */
export const asRolledDays = (rows: readonly { d: string; n: string; s: string }[]): RolledDays => ({
  days: rows.map((r) => r.d),
  events: rows.map((r) => r.n),
  sums: rows.map((r) => r.s),
})

/**
 * The rollup of one day's visits begun before `before` (a UTC quarter hour, as ClickHouse
 * DateTime text), current while the visits begun before it still have the signature it was built
 * from: their event count and session-id sum.
 */
export interface PartialDay {
  day: string
  /** The day's start and end, UTC, as ClickHouse DateTime text. */
  from: string
  to: string
  before: string
  events: string
  sum: string
}

/**
 * The goals a goal filter names: by exact name (is, is_not), by a case-insensitive part of the
 * name (contains), or by a regular expression over the name (matches), like every dimension.
 */
export function goalsOfFilter(filter: Filter, goals: readonly Goal[]): Goal[] {
  const wanted = (name: string) =>
    filter.operator === 'contains'
      ? filter.value.some((v) => name.toLowerCase().includes(v.toLowerCase()))
      : filter.operator === 'matches'
        ? filter.value.some((v) => new RegExp(v).test(name))
        : filter.value.includes(name)
  return goals.filter((g) => wanted(g.name))
}

/**
 * Sampling by visitor, opt-in per site (tracking.samplingThreshold): when a window holds more
 * events than the site's threshold, the reads the planner takes from raw events (plan.ts: the
 * events plan) read `SAMPLE 1/n` of the events table, the rows of about one visitor in n
 * (migration 0020: the sampling key is the visitor id, itself a hash), and their counts are
 * multiplied by n, the engine's _sample_factor for that clause. n is the window's events over the
 * threshold, rounded up, so a sampled read scans about as many events as the threshold. Reads from
 * the rollups (whole days already rolled up, the sessions rollup) are cheap and stay exact.
 */
export interface Sample {
  /** n of `SAMPLE 1/n`, at least 2. */
  denominator: number
}
