import type { RolledDays } from '../model'
import type { DaySpan } from '../range'
import { ROLLUP_VERSION, uint64s } from './day-rollups'
import { breakdownRows, localDay } from './rows'
import { daySpansScope } from './scope'
import { type Fragment, bind, sql } from './sql'

/**
 * The daily rollup of one property over whole site-local days: per day and value, the rows a
 * read would compute, stamped with each day's signature (see day-rollups.ts).
 */
export function rollupInsertSql(siteId: string, timezone: string, property: string, spans: DaySpan[], days: RolledDays): Fragment {
  const scope = daySpansScope(siteId, spans)
  const tz = bind('String', timezone)
  const dayList = bind('Array(Date)', days.days)
  return sql`
INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms)
SELECT ${bind('UUID', siteId)}, ${tz}, ${bind('UInt16', ROLLUP_VERSION)}, ${bind('String', property)}, day,
       transform(day, ${dayList}, ${uint64s(days.events)}, toUInt64(0)), transform(day, ${dayList}, ${uint64s(days.sums)}, toUInt64(0)),
       value, visitors, visits, pageviews, events, bounces, duration_ms
FROM (${breakdownRows(property, scope, scope.events, { day: localDay(timezone) })})
WHERE has(${dayList}, day)`
}
