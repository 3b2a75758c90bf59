import { type Query, type RolledDays, TOTALS } from '../model'
import type { HumanPlan } from '../plan'
import type { ResolvedRange } from '../range'
import { localDay, rowsWithRollup } from './rows'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'
import { BOUNCED, selectedVisits, visitAttributeRows, visitFacts } from './visits'
import { queryScope, selected, unrolledFromSessions, unrolledScope, visitFilters } from './selection'

/**
 * The window's totals as one row: visitors, visits, pageviews, custom events, and the visits,
 * bounces and mean duration the engagement rates are over (facts_visits, bounces, duration).
 */
export function statsSql(query: Query, plan: HumanPlan): Fragment {
  const scope = queryScope(query, plan)
  switch (plan.table) {
    case 'rollup':
      return sql`
SELECT sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews, sum(events) AS events,
       visits AS facts_visits, sum(bounces) AS bounces, if(visits = 0, 0, sum(duration_ms) / 1000 / visits) AS duration
FROM (${rowsWithRollup(TOTALS, scope, query.range.timezone, plan.rolled, { selected: selected(query, scope), unrolled: unrolledFromSessions(query, TOTALS, plan, scope) })})`
    case 'sessions':
      // a visit counts when it began before the window's end and its last event is in or after
      // the window's start, which for windows over 30 minutes (or ending now) means it has an
      // event inside, since a gap over 30 minutes ends a visit; views still come from events
      return sql`
SELECT visitors, visits, pageviews, events, visits AS facts_visits, bounces, duration
FROM (
  SELECT countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events FROM ${raw(scope.table)} WHERE ${selected(query, scope)}
) AS counts
CROSS JOIN (
  SELECT uniqExact(visitor) AS visitors, count() AS visits, countIf(${BOUNCED}) AS bounces, if(count() = 0, 0, avg(duration)) AS duration
  FROM (${visitFacts(scope, visitFilters(query, scope), { inWindow: true })})
) AS visits`
    case 'events':
      // the visits holding a selected event, joined to their whole-visit facts
      return sql`
SELECT uniqExact(visitor) AS visitors, count() AS visits, sum(sel_pv) AS pageviews, sum(sel_ce) AS events,
       count() AS facts_visits, countIf(${BOUNCED}) AS bounces, if(count() = 0, 0, avg(duration)) AS duration
FROM (${selectedVisits(scope, selected(query, scope))}) AS selected
INNER JOIN (${visitFacts(scope, visitFilters(query, scope))}) AS facts USING session_id`
  }
}

/**
 * A site's totals per site-local day of a window of whole days, with the bounces and summed
 * duration (ms) of each day's visits: the rolled days (and today's partial rollup) from the
 * rollups, the rest from the sessions rollup. A window of whole days is the sum of its days, as visitor ids
 * rotate and visits end at the site-local midnight, so one statement over a listing's window and
 * the one before it gives both totals and a daily or monthly sparkline.
 */
export function dailyTotalsSql(siteId: string, range: ResolvedRange, rolled: RolledDays): Fragment {
  const { timezone } = range
  const scope = unrolledScope(siteId, range, rolled)
  // the days not rolled up from the sessions rollup, per the site-local day each visit began (and ended) on
  const visitDay = sql`toDate(session_start, ${bind('String', timezone)})`
  const unrolled = sql`SELECT began AS day, '' AS value, visitors, visits, pageviews, events, bounces, duration_ms
  FROM (SELECT value AS began, visitors, visits, pageviews, events, bounces, duration_ms FROM (${visitAttributeRows(siteId, visitDay, scope.visitsBegan, [], { visitorStates: !!scope.partial })}))`
  return sql`SELECT toString(day) AS day, visitors, visits, pageviews, events, bounces, duration_ms
FROM (${rowsWithRollup(TOTALS, scope, timezone, rolled, { day: localDay(timezone), engagement: true, unrolled })})`
}
