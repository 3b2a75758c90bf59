import type { Query } from '../model'
import { mostFrequent } from './most-frequent'
import { windowScope } from './scope'
import { selected } from './selection'
import { type Fragment, bind, raw, sql } from './sql'

/** Clicks: autocaptured ones, and the link clicks the collector files as outbound, download or affiliate. */
const CLICK_KINDS = ['click', 'outbound', 'download', 'affiliate']

const clickEvents = (query: Query) => sql`${selected(query, windowScope(query.siteId, query.range))} AND kind IN ${bind('Array(String)', CLICK_KINDS)}`

/** The window's clicks, the visitors who clicked, and the clicks that did nothing. */
export function clickSummarySql(query: Query): Fragment {
  return sql`
SELECT count() AS clicks, uniqExact(visitor_id) AS visitors, countIf(dead_click = 1) AS dead_clicks
FROM events WHERE ${clickEvents(query)}`
}

/** Clicks grouped by the element (selector, text, tag) and the link it followed, most clicked first. */
export function clickGroupsSql(query: Query): Fragment {
  return sql`
SELECT selector, element_text AS text, element_tag AS tag, link_url AS url, max(interactive) AS any_interactive,
       count() AS count, uniqExact(visitor_id) AS visitors, countIf(dead_click = 1) AS dead_clicks,
       ${mostFrequent(raw('pathname'))} AS top_path, uniqExact(pathname) AS paths
FROM events WHERE ${clickEvents(query)}
GROUP BY selector, text, tag, url
ORDER BY count DESC, selector ASC, text ASC, tag ASC, url ASC
LIMIT ${bind('UInt32', query.limit)}`
}
