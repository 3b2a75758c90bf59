import type { Query } from '../model'
import { combinedParts, hasEngagement, holdsGoal } from '../../dimensions'
import type { HumanPlan } from '../plan'
import { dimensionSql } from './filters'
import { goalBreakdownSql } from './goals'
import { breakdownRows, localDay, rowsWithRollup } from './rows'
import { dayBucket } from './series'
import { type Fragment, bind, empty, raw, sql } from '../../../storage/clickhouse/sql'
import { BOUNCED, selectedVisits, visitFacts } from './visits'
import { queryScope, selected, unrolledFromSessions, visitFilters } from './selection'

const limitOf = (query: Query) => bind('UInt32', query.limit)

/**
 * The order and limit of a breakdown's rows: most visitors first, then by value. Rows of several
 * dimensions together are ordered again by their values one by one (Stats API v2,
 * lib/plausible/query.ts), not by the JSON of the combination: those are the first rows by
 * visitors with every row tied with the last (WITH TIES), in any order among equal visitors.
 */
const orderedRows = (query: Query, property: string) =>
  combinedParts(property)
    ? sql`ORDER BY visitors DESC
LIMIT ${limitOf(query)} WITH TIES`
    : sql`ORDER BY visitors DESC, value ASC
LIMIT ${limitOf(query)}`

/**
 * The rows of one property, most visitors first, up to the query's limit. With `reports` (a path
 * breakdown only), rows carry the engagement reports of the page instead of bounces and duration;
 * with `visitsOnly`, visitors and visits alone (model.ts, Read).
 */
export function breakdownSql(
  query: Query,
  property: string,
  plan: HumanPlan,
  {
    reports = false,
    visitsOnly = false,
    byBucket = false,
    withoutEngagement = false,
  }: { reports?: boolean; visitsOnly?: boolean; byBucket?: boolean; withoutEngagement?: boolean } = {},
): Fragment {
  if (reports && property !== 'path') throw new Error(`engagement reports are rolled up for pages only, not ${property}`)
  if (byBucket) return bucketBreakdownSql(query, property, plan, !withoutEngagement)
  if (holdsGoal(property)) return goalBreakdownSql(query, property, plan)
  if (plan.table === 'sessions') return visitBreakdownFromSessions(query, property, visitsOnly)
  if (plan.table === 'events' && plan.visits) return visitBreakdown(query, property, plan)
  const scope = queryScope(query, plan)
  // the rollups hold the engagement already: only a read from events skips it
  const engagement = !reports && !(visitsOnly && plan.table === 'events') && hasEngagement(property)
  const filtered = query.filters.length ? { visitFilters: visitFilters(query, scope) } : undefined
  const rows =
    plan.table === 'rollup'
      ? rowsWithRollup(property, scope, query.range.timezone, plan.rolled, {
          selected: selected(query, scope),
          unrolled: unrolledFromSessions(query, property, plan, scope),
          engagement,
          reports,
          filtered,
        })
      : breakdownRows(property, scope, selected(query, scope), { engagement, reports, filtered })
  const rates = raw(
    engagement
      ? ', bounces / visits AS bounce_rate, duration_ms / 1000 / visits AS avg_duration'
      : reports
        ? ', reports, scroll_sum, engaged_ms_sum'
        : visitsOnly && hasEngagement(property)
          ? ', 0 AS bounce_rate, 0 AS avg_duration'
          : '',
  )
  // a filtered rollup marks each day with a row of value '', zeros where that value had no visitor
  return sql`
SELECT value, visitors, visits, pageviews, events${rates}
FROM (${rows})
WHERE visitors > 0
${orderedRows(query, property)}`
}

/**
 * A visit-attribute breakdown with visit-attribute filters: visits from the sessions rollup, views
 * from events (none with `visitsOnly`: no event is read).
 */
function visitBreakdownFromSessions(query: Query, property: string, visitsOnly: boolean): Fragment {
  const scope = queryScope(query, { table: 'sessions' })
  const value = dimensionSql(property)
  const visits = sql`
  SELECT value, uniqExact(visitor) AS visitors, count() AS visits, countIf(${BOUNCED}) / count() AS bounce_rate, avg(duration) AS avg_duration
  FROM (${visitFacts(scope, visitFilters(query, scope), { value: sql`any(${value})`, inWindow: true })})
  GROUP BY value`
  if (visitsOnly)
    return sql`
SELECT value, visitors, visits, 0 AS pageviews, 0 AS events, bounce_rate, avg_duration
FROM (${visits})
${orderedRows(query, property)}`
  return sql`
SELECT visits_by_value.value AS value, visitors, visits, pageviews, events, bounce_rate, avg_duration
FROM (${visits}
) AS visits_by_value
LEFT JOIN (
  SELECT ${value} AS value, countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events FROM ${raw(scope.table)} WHERE ${selected(query, scope)} GROUP BY value
) AS views USING value
${orderedRows(query, property)}`
}

/**
 * A visit-attribute breakdown under any other filters: the visits holding a selected event, each
 * joined once to its whole-visit facts and attribute (entry and exit pages included) from the
 * sessions rollup, instead of joining every event to its visit.
 */
function visitBreakdown(query: Query, property: string, plan: HumanPlan): Fragment {
  const scope = queryScope(query, plan)
  const page = property === 'entry_page' ? raw('argMinMerge(entry_page)') : property === 'exit_page' ? raw('argMaxMerge(exit_page)') : null
  const value = page ?? sql`any(${dimensionSql(property)})`
  return sql`
SELECT value, uniqExact(visitor) AS visitors, count() AS visits, sum(sel_pv) AS pageviews, sum(sel_ce) AS events,
       countIf(${BOUNCED}) / count() AS bounce_rate, avg(duration) AS avg_duration
FROM (${selectedVisits(scope, selected(query, scope))}) AS selected
INNER JOIN (${visitFacts(scope, visitFilters(query, scope), { value })}) AS facts USING session_id
${page ? raw("WHERE value != ''") : empty}
GROUP BY value
${orderedRows(query, property)}`
}

/**
 * The rows of one property in each time bucket of the window (read.byBucket), one statement: rows
 * per site-local day (per hour for hour buckets) and value, from the daily rollup where the plan
 * takes it and from events otherwise, summed into the buckets. Visitors and visits add up across
 * days because ids rotate and visits end at the site-local midnight; a visit spans hours, so hour
 * buckets carry no engagement (nor rows read without it, which skip the visits' facts). Goal rows
 * are not read this way.
 */
function bucketBreakdownSql(query: Query, property: string, plan: HumanPlan, withEngagement: boolean): Fragment {
  if (holdsGoal(property)) throw new Error('goal rows are not read by bucket')
  const { timezone, interval } = query.range
  const hourly = interval === 'hour' || interval === 'minute'
  const day = hourly ? sql`toStartOfHour(timestamp, ${bind('String', timezone)})` : localDay(timezone)
  // the sessions rollup holds no days: a visit attribute's rows come from events here too
  const read: HumanPlan = plan.table === 'rollup' || plan.table === 'events' ? plan : { table: 'events', visits: false }
  const scope = queryScope(query, read)
  const engagement = withEngagement && !hourly && hasEngagement(property)
  const filtered = query.filters.length ? { visitFilters: visitFilters(query, scope) } : undefined
  const rows =
    read.table === 'rollup'
      ? rowsWithRollup(property, scope, timezone, read.rolled, { day, selected: selected(query, scope), engagement, filtered })
      : breakdownRows(property, scope, selected(query, scope), { day, engagement, filtered })
  return sql`
SELECT bucket, value, visitors, visits, pageviews, events${raw(engagement ? ', bounces / visits AS bounce_rate, duration_ms / 1000 / visits AS avg_duration' : '')}
FROM (
  SELECT toUnixTimestamp(${hourly ? raw('day') : dayBucket(query.range, raw('day'))}) AS bucket, value,
         sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews, sum(events) AS events${raw(engagement ? ', sum(bounces) AS bounces, sum(duration_ms) AS duration_ms' : '')}
  FROM (${rows})
  GROUP BY bucket, value
)
WHERE visitors > 0
ORDER BY bucket, visitors DESC
LIMIT ${limitOf(query)} WITH TIES`
}
