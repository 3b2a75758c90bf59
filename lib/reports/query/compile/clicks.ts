import type { Query } from '../model'
import { mostFrequentCounted } from './most-frequent'
import { queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'

/** Clicks: autocaptured ones, and the link clicks the collector files as outbound, download or affiliate. */
export const CLICK_KINDS = ['click', 'outbound', 'download', 'affiliate']

/**
 * The selected clicks. A click's name is its kind (lib/ingest/rows.ts), and events are ordered by
 * name within a day: stating the names too reads the clicks' ranges of each day, not every event.
 */
export const clickEvents = (query: Query) => {
  const kinds = bind('Array(String)', CLICK_KINDS)
  return sql`${selected(query, queryWindow(query))} AND name IN ${kinds} AND kind IN ${kinds}`
}

/** The window's clicks, the visitors who clicked, and the clicks that did nothing. */
export function clickSummarySql(query: Query): Fragment {
  return sql`
SELECT count() AS clicks, uniqExact(visitor_id) AS visitors, countIf(dead_click = 1) AS dead_clicks
FROM events WHERE ${clickEvents(query)}`
}

/**
 * Clicks grouped by the element (selector, text, tag) and the link it followed, most clicked
 * first. Counted per element and page first (the element's visitors kept as a set to merge), so
 * the most clicked page of each element comes from a few counted rows, not every click.
 */
export function clickGroupsSql(query: Query): Fragment {
  return sql`
SELECT selector, text, tag, url, max(page_interactive) AS any_interactive, sum(page_clicks) AS count, uniqExactMerge(page_visitors) AS visitors,
       sum(page_dead) AS dead_clicks, ${mostFrequentCounted(raw('pathname'), raw('page_clicks'))} AS top_path, count() AS paths
FROM (
  SELECT selector, element_text AS text, element_tag AS tag, link_url AS url, pathname, max(interactive) AS page_interactive, count() AS page_clicks,
         uniqExactState(visitor_id) AS page_visitors, countIf(dead_click = 1) AS page_dead
  FROM events WHERE ${clickEvents(query)}
  GROUP BY selector, text, tag, url, pathname
)
GROUP BY selector, text, tag, url
ORDER BY count DESC, selector ASC, text ASC, tag ASC, url ASC
LIMIT ${bind('UInt32', query.limit)}`
}
