import type { Query, RolledDays } from '../model'
import { type DaySpan, rawDaySpans } from '../range'
import { ROLLUP_VERSION, markedDayLookups, atSignature, signatureOf } from './day-rollups'
import { mostFrequent, mostFrequentOfTally, tally } from './most-frequent'
import { localDay } from './rows'
import { type Scope, daySpansScope, queryWindow, siteIs } from './scope'
import { selected } from './selection'
import { bucket, dayBucket } from './series'
import { BACKGROUND_SETTINGS } from '../../../storage/clickhouse/execute'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * The errors among some events. An error's name is its kind (kindOfName in lib/ingest/hit.ts), and
 * events are ordered by name within a day: stating the name too reads the errors' range of each
 * day, not every event.
 */
const errorsAmong = (events: Fragment) => sql`${events} AND name = 'error' AND kind = 'error'`

/** The error events of the query: its window (or `scope`) and filters, and one group when a fingerprint is given. */
function errorEvents(query: Query, fingerprint?: string, scope: Scope = queryWindow(query)): Fragment {
  const events = selected(query, scope)
  if (fingerprint === undefined) return errorsAmong(events)
  return sql`${events} AND kind = 'error' AND error_fingerprint = ${bind('UInt64', fingerprint)} AND name = 'error'`
}

/** The window's error count, groups and affected visitors. */
export function errorSummarySql(query: Query): Fragment {
  return sql`
SELECT count() AS errors, uniqExact(error_fingerprint) AS groups, uniqExact(visitor_id) AS visitors
FROM events WHERE ${errorEvents(query)}`
}

/** The groups read's order: most occurrences first, ties by visitors then fingerprint (as text). */
const MOST_OCCURRENCES = (query: Query) =>
  sql`ORDER BY count DESC, visitors DESC, fingerprint ASC
LIMIT ${bind('UInt32', query.limit)}`

/**
 * Error groups, most occurrences first, at most the query's limit; or the one group of
 * `fingerprint`. A group's name and message are those of its latest occurrence (of occurrences in
 * the same millisecond either may be taken: breaking that tie by the text too made this read about
 * a third slower at ten million events). `per_bucket` maps each bucket start of the window (epoch seconds) with
 * occurrences to their count.
 */
export function errorGroupsSql(query: Query, fingerprint?: string): Fragment {
  return sql`
SELECT toString(error_fingerprint) AS fingerprint, any(kind) AS group_kind, argMax(error_name, timestamp) AS group_name, argMax(error_message, timestamp) AS message,
       count() AS count, uniqExact(visitor_id) AS visitors, uniqExact(pathname) AS paths,
       ${mostFrequent(raw('pathname'))} AS top_path, ${mostFrequent(raw('browser'))} AS top_browser,
       toUnixTimestamp64Milli(min(timestamp)) AS first_seen, toUnixTimestamp64Milli(max(timestamp)) AS last_seen,
       sumMap(map(toUnixTimestamp(${bucket(query.range)}), toUInt64(1))) AS per_bucket
FROM events WHERE ${errorEvents(query, fingerprint)}
GROUP BY error_fingerprint
${MOST_OCCURRENCES(query)}`
}

/** The columns a group's detail breaks down by; identifiers only from here. */
export const ERROR_BREAKDOWNS = { pages: 'pathname', browsers: 'browser', os: 'os', devices: 'device', countries: 'country_code' } as const
export type ErrorBreakdown = keyof typeof ERROR_BREAKDOWNS

/** One group's occurrences by a column's value, most first, from `offset`, at most the query's limit. */
export function errorBreakdownSql(query: Query, fingerprint: string, by: ErrorBreakdown, offset = 0): Fragment {
  return sql`
SELECT ${raw(ERROR_BREAKDOWNS[by])} AS value, count() AS count, uniqExact(visitor_id) AS visitors
FROM events WHERE ${errorEvents(query, fingerprint)}
GROUP BY value
ORDER BY count DESC, value ASC
LIMIT ${bind('UInt32', query.limit)} OFFSET ${bind('UInt32', offset)}`
}

/** The number of distinct pages a group fired on, for paging through them. */
export function errorPageCountSql(query: Query, fingerprint: string): Fragment {
  return sql`SELECT uniqExact(pathname) AS total FROM events WHERE ${errorEvents(query, fingerprint)}`
}

/** A group's most recent occurrences, newest first. */
export function recentErrorsSql(query: Query, fingerprint: string, count: number): Fragment {
  return sql`
SELECT toUnixTimestamp64Milli(timestamp) AS at, pathname, error_message, browser, os, device, country_code
FROM events WHERE ${errorEvents(query, fingerprint)}
ORDER BY timestamp DESC, pathname ASC
LIMIT ${bind('UInt32', count)}`
}

// --- the errors rollup (migration 0028)

/** The rows of error_rollups: a day's row (written last, it marks the day built), a group's. */
const GRAIN = { day: 0, group: 1 } as const

/**
 * A group's numbers over some events, as the rollup stores them per day and the read sums them:
 * occurrences, visitors, the latest occurrence's name and message (with the first and last seen),
 * and its pages and browsers tallied (value to occurrences).
 */
const GROUP_OF_EVENTS = sql`count(), uniqExact(visitor_id), argMax(error_name, timestamp), argMax(error_message, timestamp), min(timestamp), max(timestamp),
       ${tally(raw('pathname'))}, ${tally(raw('browser'))}`

const errorRollupOf = (siteId: string, timezone: string) =>
  sql`${siteIs(siteId)} AND timezone = ${bind('String', timezone)} AND version = ${bind('UInt16', ROLLUP_VERSION)}`

/** The rows of the given grains on the rolled days whose signature still matches. */
const rolledErrorRows = (query: Query, rolled: RolledDays, grains: (keyof typeof GRAIN)[]) => sql`FROM error_rollups FINAL
    WHERE ${errorRollupOf(query.siteId, query.range.timezone)} AND grain IN (${raw(grains.map((g) => GRAIN[g]).join(', '))})
      AND ${atSignature(rolled)}`

/** The errors of the window's days not rolled up (today, a day changed since its build). */
const unrolledErrors = (query: Query, rolled: RolledDays) =>
  errorEvents(query, undefined, daySpansScope(query.siteId, rawDaySpans(query.range, rolled.days)))

/**
 * errorSummarySql over a window of whole days, some rolled up: their day rows (errors, visitors)
 * and group rows (the groups, counted once however many days they fired on) with the rest from
 * events. Visitor ids rotate at the site-local midnight, so the window's affected visitors are
 * the sum of its days'.
 */
export function rolledErrorSummarySql(query: Query, rolled: RolledDays): Fragment {
  const unrolled = unrolledErrors(query, rolled)
  return sql`
SELECT sumIf(n, grain = ${raw(String(GRAIN.day))}) AS errors, uniqExactIf(fp, grain = ${raw(String(GRAIN.group))}) AS groups,
       sumIf(v, grain = ${raw(String(GRAIN.day))}) AS visitors
FROM (
  SELECT grain, fingerprint AS fp, errors AS n, visitors AS v ${rolledErrorRows(query, rolled, ['day', 'group'])}
  UNION ALL
  SELECT ${raw(String(GRAIN.day))}, 0, count(), uniqExact(visitor_id) FROM events WHERE ${unrolled}
  UNION ALL
  SELECT DISTINCT ${raw(String(GRAIN.group))}, error_fingerprint, 0, 0 FROM events WHERE ${unrolled}
)
SETTINGS do_not_merge_across_partitions_select_final = 1`
}

/**
 * errorGroupsSql (without a fingerprint) over a window of whole days in day, week or month
 * buckets, some rolled up: per group the rolled days' rows and the rest's numbers from events,
 * summed. A group's visitors are the sum of its days'; its pages and browsers are its days'
 * tallies summed, so its distinct pages and most frequent page and browser (ties to the smallest)
 * are those of its events.
 */
export function rolledErrorGroupsSql(query: Query, rolled: RolledDays): Fragment {
  return sql`
SELECT toString(fp) AS fingerprint, 'error' AS group_kind, argMax(name, seen_last) AS group_name, argMax(msg, seen_last) AS message,
       sum(n) AS count, sum(v) AS visitors, length(sumMap(pages)) AS paths,
       ${mostFrequentOfTally(raw('sumMap(pages)'))} AS top_path, ${mostFrequentOfTally(raw('sumMap(browsers)'))} AS top_browser,
       toUnixTimestamp64Milli(min(seen_first)) AS first_seen, toUnixTimestamp64Milli(max(seen_last)) AS last_seen, sumMap(buckets) AS per_bucket
FROM (
  SELECT fingerprint AS fp, errors AS n, visitors AS v, error_name AS name, message AS msg, first_seen AS seen_first, last_seen AS seen_last, pages, browsers,
         map(toUnixTimestamp(${dayBucket(query.range, raw('day'))}), errors) AS buckets
  ${rolledErrorRows(query, rolled, ['group'])}
  UNION ALL
  SELECT error_fingerprint, ${GROUP_OF_EVENTS}, sumMap(map(toUnixTimestamp(${bucket(query.range)}), toUInt64(1)))
  FROM events WHERE ${unrolledErrors(query, rolled)}
  GROUP BY error_fingerprint
)
GROUP BY fp
${MOST_OCCURRENCES(query)}
SETTINGS do_not_merge_across_partitions_select_final = 1`
}

/**
 * The errors rollup of whole site-local days, stamped with each day's signature (day-rollups.ts):
 * per day and group its numbers (GROUP_OF_EVENTS). Then each day's row, which marks it built: its
 * errors and the visitors who ran into one (zeros for a day without errors).
 */
export function errorRollupInsertSql(siteId: string, timezone: string, spans: DaySpan[], days: RolledDays): Fragment[] {
  const errors = errorsAmong(daySpansScope(siteId, spans).events)
  const dayList = bind('Array(Date)', days.days)
  const day = localDay(timezone)
  const stamp = sql`${bind('UUID', siteId)}, ${bind('String', timezone)}, ${bind('UInt16', ROLLUP_VERSION)}`
  const signature = signatureOf(days)
  const background = raw(`SETTINGS ${BACKGROUND_SETTINGS}`)
  return [
    sql`
INSERT INTO error_rollups (site_id, timezone, version, grain, day, day_events, day_sum, fingerprint,
                           errors, visitors, error_name, message, first_seen, last_seen, pages, browsers)
SELECT ${stamp}, ${raw(String(GRAIN.group))}, ${day} AS day, ${signature}, error_fingerprint, ${GROUP_OF_EVENTS}
FROM events WHERE ${errors}
GROUP BY day, error_fingerprint
HAVING has(${dayList}, day)
${background}`,
    sql`
INSERT INTO error_rollups (site_id, timezone, version, grain, day, day_events, day_sum, errors, visitors)
SELECT ${stamp}, ${raw(String(GRAIN.day))}, day, ${signature}, sum(n), sum(v)
FROM (
  SELECT ${day} AS day, count() AS n, uniqExact(visitor_id) AS v FROM events WHERE ${errors} GROUP BY day
  UNION ALL
  SELECT arrayJoin(${dayList}) AS day, 0, 0
)
WHERE has(${dayList}, day)
GROUP BY day
${background}`,
  ]
}

/** The lookups of a window's days whose errors rollup is current (plan.ts's rolledDaysOf reads them), and of those with none at their current signature (rows: d, n, s). */
export const { rolledDaysSql: errorRolledDaysSql, staleDaysSql: errorStaleDaysSql } = markedDayLookups(
  'error_rollups',
  raw(`grain = ${GRAIN.day}`),
)
