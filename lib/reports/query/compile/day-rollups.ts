import type { PartialDay, RolledDays } from '../model'
import { type ResolvedRange, chTime } from '../range'
import { siteIs } from './scope'
import { type Fragment, bind, empty, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * The daily rollup's rows and signatures. Per site, site-local day, property and value,
 * `day_rollups` holds the finished numbers of a breakdown, plus the day's totals under the
 * property ''. Each rolled day carries a signature of the events it was built from: the day's
 * event count and session-id sum, from the quarter-hour counts of `quarters`. A read uses a
 * day's rows only while the day's current signature still matches, so a late hit or an import
 * into a rolled day sends that day back to events until the next refresh rebuilds it, and rows
 * of another timezone or rollup version never match. Nothing is served stale.
 */

/** Bumped whenever what the daily rollup stores changes: rows of other versions are never read. */
export const ROLLUP_VERSION = 3

const version = () => bind('UInt16', ROLLUP_VERSION)

/** 64-bit values travel as strings. */
export const uint64s = (values: string[]) => sql`arrayMap(x -> toUInt64(x), ${bind('Array(String)', values)})`

const propertyIs = (property: string | readonly string[]) =>
  typeof property === 'string' ? sql`property = ${bind('String', property)}` : sql`property IN ${bind('Array(String)', property)}`

/** The stored rows of one property (or of several) on the rolled days whose signature still matches. */
export function rolledRows(
  siteId: string,
  timezone: string,
  property: string | readonly string[],
  rolled: RolledDays,
  columns: Fragment,
): Fragment {
  return sql`SELECT ${columns}
  FROM day_rollups FINAL
  WHERE ${siteIs(siteId)} AND timezone = ${bind('String', timezone)} AND version = ${version()} AND ${propertyIs(property)}
    AND ${atSignature(rolled)}`
}

/**
 * Per rolled day, the values of a property (or of a filtered read's key) with visitors: the rows a
 * breakdown by day takes from the rollup. Rows: d (the day), n.
 */
export const valuesPerRolledDaySql = (siteId: string, timezone: string, property: string, rolled: RolledDays): Fragment =>
  sql`SELECT toString(day) AS d, countIf(visitors > 0) AS n FROM (${rolledRows(siteId, timezone, rolled.filtersKey ?? property, rolled, raw('day, visitors'))}) GROUP BY day`

/**
 * The stored rows of one property on the window's days, whichever signature each was built from
 * (its day, day_events and day_sum): for a read that matches them against the days' current
 * signatures itself, taken in the same statement (daySignatures) instead of looked up first.
 */
export function storedRows(siteId: string, window: Window, property: string, columns: Fragment): Fragment {
  return sql`SELECT ${columns}
  FROM day_rollups FINAL
  WHERE ${siteIs(siteId)} AND timezone = ${bind('String', window.timezone)} AND version = ${version()} AND ${propertyIs(property)}
    AND day >= ${bind('Date', window.from.toPlainDate().toString())} AND day < ${bind('Date', window.to.toPlainDate().toString())}`
}

/**
 * The partial rollup's rows of one property: the day's visits begun before its cutoff, visitors as
 * a uniqExact state (lib/reports/rollup/partial.ts).
 */
export function partialRows(
  siteId: string,
  timezone: string,
  property: string | readonly string[],
  partial: PartialDay,
  columns: Fragment,
): Fragment {
  return sql`SELECT ${columns}
  FROM partial_rollups FINAL
  WHERE ${siteIs(siteId)} AND timezone = ${bind('String', timezone)} AND version = ${version()} AND ${propertyIs(property)}
    AND day = ${bind('Date', partial.day)} AND began_before = ${bind('DateTime64(3)', partial.before)}
    AND part_events = ${bind('UInt64', partial.events)} AND part_sum = ${bind('UInt64', partial.sum)}`
}

/** Partial rollups are a cache that expires three hours after a build (migration 0011): reads use builds under two hours old. */
const PARTIAL_FRESH_HOURS = 2

type Window = Pick<ResolvedRange, 'from' | 'to' | 'timezone'>

/** Each day's current signature, from the quarter-hour counts. */
export const daySignatures = (siteId: string, window: Window) => sql`
SELECT toDate(quarter, ${bind('String', window.timezone)}) AS day, sum(events) AS n, sum(session_sum) AS s
FROM quarters
WHERE ${siteIs(siteId)} AND events > 0 AND quarter >= ${bind('DateTime64(3)', chTime(window.from))} AND quarter < ${bind('DateTime64(3)', chTime(window.to))}
GROUP BY day`

/**
 * The signatures the built days were built from; the totals row is written last, so its presence
 * says every property of the day is built. A filtered read's days are marked by their own rows.
 */
const built = (siteId: string, window: Window, marker = '') => sql`(SELECT DISTINCT day, day_events AS n, day_sum AS s FROM day_rollups
  WHERE ${siteIs(siteId)} AND timezone = ${bind('String', window.timezone)} AND version = ${version()} AND property = ${bind('String', marker)}
    AND day >= ${bind('Date', window.from.toPlainDate().toString())} AND day < ${bind('Date', window.to.toPlainDate().toString())}) AS rolled`

/**
 * The newest partial rollup of the window's last day (its totals row, written last, marks it
 * built), and the event counts of that day's visits per quarter hour of their start, which the
 * caller sums up to its cutoff: its visits' current signature. Rows: rolled 2 (d, n, s and the
 * cutoff b) and 3 (the quarter as d, n, s). Each table is read once.
 */
function latestPartial(siteId: string, window: Window): Fragment {
  const lastDay = window.to.subtract({ days: 1 }).startOfDay()
  return sql`SELECT 2, toString(day), part_events, part_sum, toString(began_before) FROM (
    SELECT day, began_before, part_events, part_sum FROM partial_rollups
    WHERE ${siteIs(siteId)} AND timezone = ${bind('String', window.timezone)} AND version = ${version()} AND property = '' AND day = ${bind('Date', lastDay.toPlainDate().toString())}
      AND built_at >= now() - toIntervalHour(${bind('UInt16', PARTIAL_FRESH_HOURS)})
    ORDER BY began_before DESC, built_at DESC LIMIT 1)
  UNION ALL
  SELECT 3, toString(quarter), visit_events, visit_session_sum, '' FROM quarters
  WHERE ${siteIs(siteId)} AND visit_events > 0 AND quarter >= ${bind('DateTime64(3)', chTime(lastDay))} AND quarter < ${bind('DateTime64(3)', chTime(window.to))}`
}

/**
 * Both sides in one statement, matched by the caller: cheaper on the engine than a join. Rows:
 * rolled (0 current, 1 built), d, n, s; for the unfiltered rollup (marker ''), unless
 * `withPartial` is false, also the newest partial rollup of the window's last day (latestPartial).
 */
export const signaturesAndBuilt = (siteId: string, window: Window, marker = '', withPartial = marker === '') =>
  sql`SELECT 0 AS rolled, toString(day) AS d, n, s, '' AS b FROM (${daySignatures(siteId, window)}) UNION ALL SELECT 1, toString(day), n, s, '' FROM ${built(siteId, window, marker)}${
    withPartial && marker === '' ? sql` UNION ALL ${latestPartial(siteId, window)}` : empty
  }`

/**
 * signaturesAndBuilt of several keys without the partial rollup (rollups built on demand), in one
 * statement: the current signatures once (rolled 0, key ''), then each key's built days (rolled 1,
 * its key as `k`). Rows: rolled, k, d, n, s.
 */
export const signaturesAndBuiltOfKeys = (siteId: string, window: Window, keys: readonly string[]) =>
  sql`SELECT 0 AS rolled, '' AS k, toString(day) AS d, n, s FROM (${daySignatures(siteId, window)}) UNION ALL SELECT 1, property, toString(day), n, s FROM (SELECT DISTINCT property, day, day_events AS n, day_sum AS s FROM day_rollups
  WHERE ${siteIs(siteId)} AND timezone = ${bind('String', window.timezone)} AND version = ${version()} AND property IN ${bind('Array(String)', keys)}
    AND day >= ${bind('Date', window.from.toPlainDate().toString())} AND day < ${bind('Date', window.to.toPlainDate().toString())}) AS rolled`

/** The days whose current signature has no built rows. Rows: d, n, s. */
export const staleDays = (siteId: string, window: Window) =>
  sql`SELECT toString(day) AS d, n, s FROM (${daySignatures(siteId, window)}) AS sig LEFT ANTI JOIN ${built(siteId, window)} USING (day, n, s) ORDER BY day`

/**
 * The rollups of their own table built by the rollup refresh (flow_rollups, click_rollups,
 * ai_rollups, error_rollups): each built day has a marker row, written after the day's other rows.
 * The signatures the window's built days were built from, `marker` naming the marker rows.
 */
export const markedBuiltDays = (
  table: 'flow_rollups' | 'click_rollups' | 'ai_rollups' | 'error_rollups',
  marker: Fragment,
  siteId: string,
  window: Window,
) =>
  sql`SELECT day, day_events AS n, day_sum AS s FROM ${raw(table)}
    WHERE ${siteIs(siteId)} AND timezone = ${bind('String', window.timezone)} AND version = ${version()} AND ${marker}
      AND day >= ${bind('Date', window.from.toPlainDate().toString())} AND day < ${bind('Date', window.to.toPlainDate().toString())}`

/**
 * The lookup of a window's days whose marked rollup is current: each day's signature (rolled 0)
 * and the built ones (rolled 1), as plan.ts's rolledDaysOf reads them. `signatures` are the
 * events' (daySignatures) unless the rollup reads more than events.
 */
export const markedRolledDaysSql = (siteId: string, window: Window, built: Fragment, signatures = daySignatures(siteId, window)) =>
  sql`SELECT 0 AS rolled, toString(day) AS d, n, s, '' AS b FROM (${signatures})
  UNION ALL
  SELECT 1, toString(day), n, s, '' FROM (${built})`

/** The days of the window whose current signature (as markedRolledDaysSql's) has no marked rollup. Rows: d, n, s. */
export const markedStaleDaysSql = (siteId: string, window: Window, built: Fragment, signatures = daySignatures(siteId, window)) =>
  sql`SELECT toString(day) AS d, n, s FROM (${signatures}) AS sig LEFT ANTI JOIN (${built}) AS built USING (day, n, s) ORDER BY day`

/**
 * A marked rollup's two day lookups, for a read (rolledDaysSql) and for its build (staleDaysSql),
 * from its table and marker rows; `signatures` are the events' (daySignatures) unless the rollup
 * reads more than events.
 */
export function markedDayLookups(
  table: Parameters<typeof markedBuiltDays>[0],
  marker: Fragment,
  signatures: (siteId: string, window: Window) => Fragment = daySignatures,
) {
  const built = (siteId: string, window: Window) => markedBuiltDays(table, marker, siteId, window)
  return {
    rolledDaysSql: (siteId: string, window: Window): Fragment =>
      markedRolledDaysSql(siteId, window, built(siteId, window), signatures(siteId, window)),
    staleDaysSql: (siteId: string, window: Window): Fragment =>
      markedStaleDaysSql(siteId, window, built(siteId, window), signatures(siteId, window)),
  }
}

/** A marked rollup's rows of the site's rolled days, at their current signature, in this timezone and version. */
export const currentRows = (siteId: string, timezone: string, rolled: RolledDays) =>
  sql`${siteIs(siteId)} AND timezone = ${bind('String', timezone)} AND version = ${version()} AND ${atSignature(rolled)}`

/**
 * A rollup's rows of the rolled days built at the signature each still has: the days themselves
 * (the engine narrows a table's key by them), and each row's signature columns equal to its day's,
 * looked up as a build stamps them (signatureOf). A lookup by day costs a third of testing the
 * (day, day_events, day_sum) tuple against the list, which the engine does row by row, tuple by
 * tuple (the flow's 58,000 rolled rows at 10M: 17 ms against 5).
 */
export const atSignature = (rolled: RolledDays) => {
  const [events, sums] = signatureColumns(rolled)
  return sql`day IN ${bind('Array(Date)', rolled.days)} AND day_events = ${events} AND day_sum = ${sums}`
}

/** A row's signature (day_events, day_sum) by its `day`, from the given days' signatures; 0 for a day not given. */
function signatureColumns(days: RolledDays): [Fragment, Fragment] {
  const dayList = bind('Array(Date)', days.days)
  return [
    sql`transform(day, ${dayList}, ${uint64s(days.events)}, toUInt64(0))`,
    sql`transform(day, ${dayList}, ${uint64s(days.sums)}, toUInt64(0))`,
  ]
}

/** A built row's signature columns (day_events, day_sum), by its `day`, from the days a build is given. */
export function signatureOf(days: RolledDays): Fragment {
  const [events, sums] = signatureColumns(days)
  return sql`${events}, ${sums}`
}

/** Rows of the given days from another signature, timezone or version: never read, dropped after a build. */
export function outdatedRows(siteId: string, timezone: string, days: RolledDays): Fragment {
  const dayList = bind('Array(Date)', days.days)
  return sql`${siteIs(siteId)} AND day IN ${dayList}
    AND NOT (timezone = ${bind('String', timezone)} AND version = ${version()} AND (day, toString(day_events), toString(day_sum)) IN arrayZip(${dayList}, ${bind('Array(String)', days.events)}, ${bind('Array(String)', days.sums)}))`
}
