import type { Query, RolledDays } from '../model'
import { type DaySpan, rawDaySpans } from '../range'
import { ROLLUP_VERSION, markedDayLookups, atSignature, signatureOf } from './day-rollups'
import { mostFrequentCounted } from './most-frequent'
import { localDay } from './rows'
import { type Scope, daySpansScope, queryWindow, siteIs } from './scope'
import { selected } from './selection'
import { BACKGROUND_SETTINGS } from '../../../storage/clickhouse/execute'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'

/** Clicks: autocaptured ones, and the link clicks the collector files as outbound, download or affiliate. */
export const CLICK_KINDS = ['click', 'outbound', 'download', 'affiliate']

/**
 * The clicks among some events. A click's name is its kind (lib/ingest/rows.ts), and events are
 * ordered by name within a day: stating the names too reads the clicks' ranges of each day, not every event.
 */
const clicksAmong = (events: Fragment) => {
  const kinds = bind('Array(String)', CLICK_KINDS)
  return sql`${events} AND name IN ${kinds} AND kind IN ${kinds}`
}

/** The selected clicks of a scope (the query's window unless given). */
export const clickEvents = (query: Query, scope: Scope = queryWindow(query)) => clicksAmong(selected(query, scope))

/** The window's clicks, the visitors who clicked, and the clicks that did nothing. */
export function clickSummarySql(query: Query): Fragment {
  return sql`
SELECT count() AS clicks, uniqExact(visitor_id) AS visitors, countIf(dead_click = 1) AS dead_clicks
FROM events WHERE ${clickEvents(query)}`
}

/** The clicks read's columns per element and page: its clicks, dead clicks and whether it was interactive. */
const ELEMENT = raw('selector, element_text AS text, element_tag AS tag, link_url AS url')
const PAGE_CLICKS = raw('max(interactive) AS page_interactive, count() AS page_clicks, countIf(dead_click = 1) AS page_dead')

/** Per element, from its rows per page (page_*): the clicks read's row, but its visitors. */
const ELEMENT_FROM_PAGES = sql`selector, text, tag, url, max(page_interactive) AS any_interactive, sum(page_clicks) AS count, sum(page_dead) AS dead_clicks,
       ${mostFrequentCounted(raw('pathname'), raw('page_clicks'))} AS top_path, count() AS paths`

const MOST_CLICKED = (query: Query) =>
  sql`ORDER BY count DESC, selector ASC, text ASC, tag ASC, url ASC
LIMIT ${bind('UInt32', query.limit)}`

/**
 * Clicks grouped by the element (selector, text, tag) and the link it followed, most clicked
 * first. Counted per element and page first (the element's visitors kept as a set to merge), so
 * the most clicked page of each element comes from a few counted rows, not every click.
 */
export function clickGroupsSql(query: Query): Fragment {
  return sql`
SELECT ${ELEMENT_FROM_PAGES}, uniqExactMerge(page_visitors) AS visitors
FROM (
  SELECT ${ELEMENT}, pathname, ${PAGE_CLICKS}, uniqExactState(visitor_id) AS page_visitors
  FROM events WHERE ${clickEvents(query)}
  GROUP BY selector, text, tag, url, pathname
)
GROUP BY selector, text, tag, url
${MOST_CLICKED(query)}`
}

// --- the clicks rollup (migration 0025)

/** The rows of click_rollups: a day's row (written last, it marks the day built), an element's, an element's on one page. */
const GRAIN = { day: 0, element: 1, page: 2 } as const

const clickRollupOf = (siteId: string, timezone: string) =>
  sql`${siteIs(siteId)} AND timezone = ${bind('String', timezone)} AND version = ${bind('UInt16', ROLLUP_VERSION)}`

/** The rows of one grain on the rolled days whose signature still matches. */
const rolledClickRows = (query: Query, rolled: RolledDays, grain: keyof typeof GRAIN) => sql`FROM click_rollups FINAL
    WHERE ${clickRollupOf(query.siteId, query.range.timezone)} AND grain = ${raw(String(GRAIN[grain]))}
      AND ${atSignature(rolled)}`

/** The clicks of the window's days not rolled up (today, a day changed since its build). */
const unrolledClicks = (query: Query, rolled: RolledDays) =>
  clickEvents(query, daySpansScope(query.siteId, rawDaySpans(query.range, rolled.days)))

/**
 * clickSummarySql over a window of whole days, some rolled up: their day rows summed with the
 * rest from events. Visitor ids rotate at the site-local midnight, so the window's visitors who
 * clicked are the sum of its days'.
 */
export function rolledClickSummarySql(query: Query, rolled: RolledDays): Fragment {
  return sql`
SELECT sum(clicks) AS clicks, sum(visitors) AS visitors, sum(dead_clicks) AS dead_clicks
FROM (
  SELECT clicks, visitors, dead_clicks ${rolledClickRows(query, rolled, 'day')}
  UNION ALL
  SELECT count(), uniqExact(visitor_id), countIf(dead_click = 1) FROM events WHERE ${unrolledClicks(query, rolled)}
)
SETTINGS do_not_merge_across_partitions_select_final = 1`
}

/**
 * clickGroupsSql over a window of whole days, some rolled up: per element and page the rolled
 * days' rows and the rest's clicks from events, summed, then grouped per element as clickGroupsSql
 * does; each element's visitors are the sum of its days' (rolled, or counted from events).
 */
export function rolledClickGroupsSql(query: Query, rolled: RolledDays): Fragment {
  const unrolled = unrolledClicks(query, rolled)
  return sql`
SELECT selector, text, tag, url, any_interactive, count, visitors, dead_clicks, top_path, paths
FROM (
  SELECT ${ELEMENT_FROM_PAGES}
  FROM (
    SELECT selector, text, tag, url, pathname, max(interactive) AS page_interactive, sum(clicks) AS page_clicks, sum(dead_clicks) AS page_dead
    FROM (
      SELECT selector, text, tag, url, pathname, interactive, clicks, dead_clicks ${rolledClickRows(query, rolled, 'page')}
      UNION ALL
      SELECT ${ELEMENT}, pathname, ${PAGE_CLICKS} FROM events WHERE ${unrolled} GROUP BY selector, text, tag, url, pathname
    )
    GROUP BY selector, text, tag, url, pathname
  )
  GROUP BY selector, text, tag, url
) AS elements
LEFT JOIN (
  SELECT selector, text, tag, url, sum(day_visitors) AS visitors
  FROM (
    SELECT selector, text, tag, url, visitors AS day_visitors ${rolledClickRows(query, rolled, 'element')}
    UNION ALL
    SELECT ${ELEMENT}, uniqExact(visitor_id) FROM events WHERE ${unrolled} GROUP BY selector, text, tag, url
  )
  GROUP BY selector, text, tag, url
) AS element_visitors USING (selector, text, tag, url)
${MOST_CLICKED(query)}
SETTINGS do_not_merge_across_partitions_select_final = 1`
}

/**
 * The clicks rollup of whole site-local days, stamped with each day's signature (day-rollups.ts):
 * per day, element and page the clicks, dead clicks and whether it was interactive; per day and
 * element the same summed and its visitors. Then each day's row, which marks it built: its
 * clicks, dead clicks and visitors who clicked (zeros for a day without clicks).
 */
export function clickRollupInsertSql(siteId: string, timezone: string, spans: DaySpan[], days: RolledDays): Fragment[] {
  const clicks = clicksAmong(daySpansScope(siteId, spans).events)
  const dayList = bind('Array(Date)', days.days)
  const day = localDay(timezone)
  const stamp = sql`${bind('UUID', siteId)}, ${bind('String', timezone)}, ${bind('UInt16', ROLLUP_VERSION)}`
  const signature = signatureOf(days)
  const columns = raw(
    'INSERT INTO click_rollups (site_id, timezone, version, grain, day, day_events, day_sum, selector, text, tag, url, pathname, clicks, dead_clicks, interactive, visitors)',
  )
  const background = raw(`SETTINGS ${BACKGROUND_SETTINGS}`)
  return [
    sql`
${columns}
SELECT ${stamp}, grain, day, ${signature}, selector, text, tag, url, if(grain = ${raw(String(GRAIN.page))}, pathname, '') AS path,
       sum(page_clicks), sum(page_dead), max(page_interactive), if(grain = ${raw(String(GRAIN.element))}, uniqExactMerge(page_visitors), 0)
FROM (
  SELECT ${day} AS day, ${ELEMENT}, pathname, ${PAGE_CLICKS}, uniqExactState(visitor_id) AS page_visitors
  FROM events WHERE ${clicks}
  GROUP BY day, selector, text, tag, url, pathname
)
ARRAY JOIN [${raw(`${GRAIN.element}, ${GRAIN.page}`)}] AS grain
WHERE has(${dayList}, day)
GROUP BY grain, day, selector, text, tag, url, path
${background}`,
    sql`
${columns}
SELECT ${stamp}, ${raw(String(GRAIN.day))}, day, ${signature}, '', '', '', '', '', sum(n), sum(dead), 0, sum(visitors)
FROM (
  SELECT ${day} AS day, count() AS n, countIf(dead_click = 1) AS dead, uniqExact(visitor_id) AS visitors FROM events WHERE ${clicks} GROUP BY day
  UNION ALL
  SELECT arrayJoin(${dayList}) AS day, 0, 0, 0
)
WHERE has(${dayList}, day)
GROUP BY day
${background}`,
  ]
}

/** The lookups of a window's days whose clicks rollup is current (plan.ts's rolledDaysOf reads them), and of those with none at their current signature (rows: d, n, s). */
export const { rolledDaysSql: clickRolledDaysSql, staleDaysSql: clickStaleDaysSql } = markedDayLookups(
  'click_rollups',
  raw(`grain = ${GRAIN.day}`),
)
