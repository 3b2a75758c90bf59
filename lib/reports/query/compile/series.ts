import { type Query, TOTALS } from '../model'
import type { HumanPlan } from '../plan'
import type { ResolvedRange } from '../range'
import { localDay, rowsWithRollup } from './rows'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'
import { queryScope, selected } from './selection'
import { eventsFrom } from './scope'

/** The start of the bucket of the range's interval that an event falls in. */
export function bucket(range: ResolvedRange): Fragment {
  const tz = bind('String', range.timezone)
  switch (range.interval) {
    case 'minute':
      return sql`toStartOfMinute(timestamp)`
    case 'hour':
      return sql`toStartOfHour(timestamp, ${tz})`
    case 'day':
      return sql`toStartOfDay(timestamp, ${tz})`
    case 'week':
      return sql`toDateTime(toMonday(timestamp, ${tz}), ${tz})`
    case 'month':
      return sql`toDateTime(toStartOfMonth(timestamp, ${tz}), ${tz})`
  }
}

/** The start of the day, week or month bucket of the range that a site-local day (a Date) falls in. */
export function dayBucket(range: ResolvedRange, day: Fragment): Fragment {
  const tz = bind('String', range.timezone)
  if (range.interval === 'month') return sql`toDateTime(toStartOfMonth(${day}), ${tz})`
  if (range.interval === 'week') return sql`toDateTime(toMonday(${day}), ${tz})`
  return sql`toDateTime(${day}, ${tz})`
}

/** Visitors, visits and pageviews per bucket start (epoch seconds); buckets without events have no row. */
export function seriesSql(query: Query, plan: HumanPlan): Fragment {
  const scope = queryScope(query, plan)
  if (plan.table === 'rollup') {
    // day, week or month buckets: per-day totals summed into buckets
    const { timezone } = query.range
    const inner = rowsWithRollup(TOTALS, scope, timezone, plan.rolled, {
      day: localDay(timezone),
      engagement: false,
      selected: selected(query, scope),
    })
    return sql`
SELECT toUnixTimestamp(${dayBucket(query.range, raw('day'))}) AS bucket, sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews
FROM (${inner})
GROUP BY bucket ORDER BY bucket`
  }
  return sql`
SELECT toUnixTimestamp(${bucket(query.range)}) AS bucket, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits, countIf(kind = 'pageview') AS pageviews
FROM ${eventsFrom(scope)} WHERE ${selected(query, scope)}
GROUP BY bucket ORDER BY bucket`
}
