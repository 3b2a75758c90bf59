import { siteIs, type Scope } from './scope'
import { type Fragment, empty, join, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * A visit's counts, summed over its rows of the sessions rollup: pageviews (`pv`), custom events
 * (`ce`) and, of those, the interactive ones (`ie`); custom events sent as non-interactive are in
 * `ce` only.
 */
export const VISIT_COUNTS = raw('sum(pageviews) AS pv, sum(custom_events) AS ce, sum(interactive_events) AS ie')

/**
 * A visit of VISIT_COUNTS bounced: at most one pageview and no interactive custom event. The one
 * definition of a bounce every read counts with (the rollups store what reads counted with it).
 */
export const BOUNCED = raw('pv <= 1 AND ie = 0')

/**
 * Whole-visit facts from the sessions rollup, one row a visit begun in the scope's visit span:
 * visitor, VISIT_COUNTS, first to last event, and optionally a visit attribute as
 * `value`. Filters on visit attributes narrow it (they are stamped on every row of a visit);
 * `inWindow` keeps only visits whose last event is in or after the window's start.
 */
export function visitFacts(
  scope: Scope,
  visitFilters: readonly Fragment[],
  options: { value?: Fragment; inWindow?: boolean } = {},
): Fragment {
  const value = options.value ? sql`${options.value} AS value, ` : empty
  const filters = join(
    visitFilters.map((f) => sql` AND ${f}`),
    '',
  )
  // a visit's last event is at or after the window's start exactly when it has an event there; for a
  // live window those are a short range of recent_events, and few visits: those, not the day's
  const recent =
    options.inWindow && scope.table === 'recent_events'
      ? sql` AND session_id IN (SELECT session_id FROM recent_events WHERE ${siteIs(scope.siteId)} AND timestamp >= ${scope.windowFrom})`
      : empty
  return sql`SELECT session_id, ${value}any(visitor_id) AS visitor, ${VISIT_COUNTS},
         dateDiff('millisecond', min(session_start), max(end)) / 1000 AS duration
  FROM sessions
  WHERE ${siteIs(scope.siteId)} AND ${scope.visitsBegan}${filters}${recent}
  GROUP BY session_id${
    options.inWindow
      ? sql`
  HAVING max(end) >= ${scope.windowFrom}`
      : empty
  }`
}

/**
 * Rows of a visit attribute (or of the totals, `value` '') over whole site-local days, from the
 * sessions rollup alone: a visit never crosses the site-local midnight, and under filters on visit
 * attributes only, every event of a kept visit is selected, so its pageviews and custom events
 * are the visit's own. The columns of breakdownRows, without an event scan; with `visitorStates`,
 * visitors as a uniqExact state, to merge with a partial rollup's.
 */
export function visitAttributeRows(
  siteId: string,
  value: Fragment,
  began: Fragment,
  visitFilters: readonly Fragment[],
  options: { visitorStates?: boolean } = {},
): Fragment {
  const filters = join(
    visitFilters.map((f) => sql` AND ${f}`),
    '',
  )
  return sql`SELECT value, ${raw(options.visitorStates ? 'uniqExactState' : 'uniqExact')}(visitor) AS visitors, count() AS visits, sum(pv) AS pageviews, sum(ce) AS events,
         countIf(${BOUNCED}) AS bounces, toUInt64(round(sum(duration) * 1000)) AS duration_ms
  FROM (
    SELECT session_id, any(${value}) AS value, any(visitor_id) AS visitor, ${VISIT_COUNTS},
           dateDiff('millisecond', min(session_start), max(end)) / 1000 AS duration
    FROM sessions WHERE ${siteIs(siteId)} AND ${began}${filters}
    GROUP BY session_id
  )
  GROUP BY value`
}

/** The visits holding a selected event of the scope, with the selected pageviews and custom events of each. */
export const selectedVisits = (scope: Scope, selected: Fragment) =>
  sql`SELECT session_id, countIf(kind = 'pageview') AS sel_pv, countIf(kind = 'custom') AS sel_ce FROM ${raw(scope.table)} WHERE ${selected} GROUP BY session_id`
