import type { Query } from '../model'
import { queryWindow } from './scope'
import { selected } from './selection'
import { bucket } from './series'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'
import { mostFrequent } from './most-frequent'

/**
 * The error events of the query: its window and filters, and one group when a fingerprint is given.
 * An error's name is its kind (kindOfName in lib/ingest/hit.ts), and events are ordered by name
 * within a day: stating the name too reads the errors' range of each day, not every event.
 */
function errorEvents(query: Query, fingerprint?: string): Fragment {
  const events = selected(query, queryWindow(query))
  if (fingerprint === undefined) return sql`${events} AND name = 'error' AND kind = 'error'`
  return sql`${events} AND kind = 'error' AND error_fingerprint = ${bind('UInt64', fingerprint)} AND name = 'error'`
}

/** The window's error count, groups and affected visitors. */
export function errorSummarySql(query: Query): Fragment {
  return sql`
SELECT count() AS errors, uniqExact(error_fingerprint) AS groups, uniqExact(visitor_id) AS visitors
FROM events WHERE ${errorEvents(query)}`
}

/**
 * Error groups, most occurrences first, at most the query's limit; or the one group of
 * `fingerprint`. `per_bucket` maps each bucket start of the window (epoch seconds) with
 * occurrences to their count.
 */
export function errorGroupsSql(query: Query, fingerprint?: string): Fragment {
  return sql`
SELECT toString(error_fingerprint) AS fingerprint, any(kind) AS group_kind, any(error_name) AS group_name, argMax(error_message, timestamp) AS message,
       count() AS count, uniqExact(visitor_id) AS visitors, uniqExact(pathname) AS paths,
       ${mostFrequent(raw('pathname'))} AS top_path, ${mostFrequent(raw('browser'))} AS top_browser,
       toUnixTimestamp64Milli(min(timestamp)) AS first_seen, toUnixTimestamp64Milli(max(timestamp)) AS last_seen,
       sumMap(map(toUnixTimestamp(${bucket(query.range)}), toUInt64(1))) AS per_bucket
FROM events WHERE ${errorEvents(query, fingerprint)}
GROUP BY error_fingerprint
ORDER BY count DESC, visitors DESC, fingerprint ASC
LIMIT ${bind('UInt32', query.limit)}`
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
