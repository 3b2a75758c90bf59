import type { PartialDay, Query, RolledDays } from '../model'
import type { RollupBuild } from '../plan'
import { type DaySpan, daySpans } from '../range'
import { ROLLUP_VERSION, signatureOf } from './day-rollups'
import { selectedEvents } from './filters'
import { breakdownRows, carriesReports, localDay } from './rows'
import { daySpansScope } from './scope'
import { visitFilters } from './selection'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * The daily rollup of one property over whole site-local days: per day and value, the rows a
 * read would compute, stamped with each day's signature (see day-rollups.ts).
 */
export function rollupInsertSql(siteId: string, timezone: string, property: string, spans: DaySpan[], days: RolledDays): Fragment {
  const scope = daySpansScope(siteId, spans)
  const tz = bind('String', timezone)
  const dayList = bind('Array(Date)', days.days)
  const reports = carriesReports(property)
  return sql`
INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms, reports, scroll_sum, engaged_ms_sum)
SELECT ${bind('UUID', siteId)}, ${tz}, ${bind('UInt16', ROLLUP_VERSION)}, ${bind('String', property)}, day,
       ${signatureOf(days)},
       value, visitors, visits, pageviews, events, bounces, duration_ms, ${raw(reports ? 'reports, scroll_sum, engaged_ms_sum' : '0, 0, 0')}
FROM (${breakdownRows(property, scope, scope.events, { day: localDay(timezone), reports })})
WHERE has(${dayList}, day)`
}

/**
 * The partial rollup of one property (lib/reports/rollup/partial.ts): the rows of the day's visits begun
 * before the cutoff, as a read of that day would compute them, with visitors as a uniqExact state,
 * stamped with the cutoff and the signature of those visits.
 */
export function partialRollupInsertSql(siteId: string, timezone: string, property: string, partial: PartialDay): Fragment {
  const scope = daySpansScope(siteId, [], { day: partial, only: true })
  const reports = carriesReports(property)
  return sql`
INSERT INTO partial_rollups (site_id, timezone, version, property, day, began_before, part_events, part_sum, value, visitors, visits, pageviews, events, bounces, duration_ms, reports, scroll_sum, engaged_ms_sum)
SELECT ${bind('UUID', siteId)}, ${bind('String', timezone)}, ${bind('UInt16', ROLLUP_VERSION)}, ${bind('String', property)}, ${bind('Date', partial.day)},
       ${bind('DateTime64(3)', partial.before)}, ${bind('UInt64', partial.events)}, ${bind('UInt64', partial.sum)},
       value, visitors, visits, pageviews, events, bounces, duration_ms, ${raw(reports ? 'reports, scroll_sum, engaged_ms_sum' : '0, 0, 0')}
FROM (${breakdownRows(property, scope, scope.events, { reports, visitorStates: true, engagement: true })})`
}

/**
 * A filtered read's rows over the days of a build, rolled up under its key (plan.ts, filteredRollupKey):
 * per day and value the rows a read of that day with these filters would compute, stamped with
 * the day's signature. Every day gets a row of value '' (zeros unless that value has events), so
 * a day where nothing matched counts as built; reads skip rows without visitors.
 */
export function filteredRollupInsertSql(query: Query, { key, property, days }: RollupBuild): Fragment {
  const { timezone } = query.range
  const scope = daySpansScope(query.siteId, daySpans(days.days, timezone))
  const tz = bind('String', timezone)
  const dayList = bind('Array(Date)', days.days)
  const rows = breakdownRows(property, scope, selectedEvents(query.filters, query.goals, scope), {
    day: localDay(timezone),
    engagement: true,
    filtered: { visitFilters: visitFilters(query, scope) },
  })
  return sql`
INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms)
SELECT ${bind('UUID', query.siteId)}, ${tz}, ${bind('UInt16', ROLLUP_VERSION)}, ${bind('String', key)}, day,
       ${signatureOf(days)},
       value, sum(visitors), sum(visits), sum(pageviews), sum(events), sum(bounces), sum(duration_ms)
FROM (
  SELECT day, value, visitors, visits, pageviews, events, bounces, duration_ms FROM (${rows})
  UNION ALL
  SELECT arrayJoin(${dayList}) AS day, '' AS value, toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0), toUInt64(0)
)
WHERE has(${dayList}, day)
GROUP BY day, value`
}
