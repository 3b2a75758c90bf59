import type { Query } from '../model'
import { queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * The columns of one recorded action, as the answer reads them; a kind that does not carry a
 * field holds its empty value.
 */
export const ACTION_COLUMNS =
  raw(`toUnixTimestamp64Milli(timestamp) AS at, kind, name, pathname, selector, element_text, element_tag, link_url, dead_click,
       error_name, error_message, vital_name, vital_value, engaged_ms, scroll_depth, props`)

/** The actions of the live tape: page loads, clicks (autocaptured and link clicks), custom events, engagement reports and errors. */
export const TAPE_KINDS = ['pageview', 'click', 'outbound', 'download', 'affiliate', 'custom', 'engagement', 'error']

/**
 * The window's actions, newest first, at most the query's limit, each with its visitor and the
 * referrer of that visitor's first pageview of the day (the visitor id rotates daily, so every
 * event of the id is of that day, which began at most 26 hours before the window). The tape is
 * read from the window's table (recent_events for the live windows); the first pageviews from
 * events, whose order by name and visitor finds a visitor's pageviews of the day directly.
 */
export function activitySql(query: Query): Fragment {
  const scope = queryWindow(query)
  const table = raw(scope.table)
  const tape = sql`${selected(query, scope)} AND kind IN ${bind('Array(String)', TAPE_KINDS)}`
  return sql`
SELECT toString(visitor_id) AS visitor, ${ACTION_COLUMNS}, country_code, device, browser, first.source AS source, first.referrer AS referrer
FROM (
  SELECT visitor_id, timestamp, kind, name, pathname, selector, element_text, element_tag, link_url, dead_click,
         error_name, error_message, vital_name, vital_value, engaged_ms, scroll_depth, props, country_code, device, browser
  FROM ${table} WHERE ${tape}
  ORDER BY timestamp DESC, visitor_id ASC, kind ASC, name ASC, pathname ASC
  LIMIT ${bind('UInt32', query.limit)}
) AS tape
LEFT JOIN (
  SELECT visitor_id, argMin(referrer_source, timestamp) AS source, argMin(referrer, timestamp) AS referrer
  FROM events
  WHERE ${scope.visitScan} AND name = 'pageview' AND visitor_id IN (SELECT visitor_id FROM ${table} WHERE ${tape})
  GROUP BY visitor_id
) AS first USING visitor_id
ORDER BY timestamp DESC, visitor_id ASC, kind ASC, name ASC, pathname ASC`
}
