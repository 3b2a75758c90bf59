import type { Query } from '../model'
import { chTime } from '../range'
import { during, queryWindow } from './scope'
import { ACTION_COLUMNS } from './activity'
import { selected } from './selection'
import { type Fragment, bind, empty, sql } from '../../../storage/clickhouse/sql'

/** The visits a journey of the window may hold: they began at most 26 hours before it (scope). */
const journeyVisits = (query: Query) => sql`site_id = ${bind('UUID', query.siteId)} AND ${queryWindow(query).visitsBegan}`

/**
 * Journeys: one row per visitor id, and so per visitor and site-local day (the id rotates at the
 * site-local midnight and visits end there), from the sessions rollup. A journey is in the window
 * when one of its visits is; with filters, when it holds a selected event in the window.
 * Landing and exit are the first and last page of its first and last visit with a pageview;
 * duration sums its visits' durations (first to last event, engagement reports included);
 * source, referrer, country, device and browser are those of its first visit with a pageview
 * (the collector stamps the visit's first hit on every event of the visit). Newest last event
 * first; `total` counts every journey of the window, before the limit and offset.
 *
 * It takes two statements. The page of visitor ids is found first from two plain columns
 * (visitor, end), with the total (journeyPageSql; with `since`, among the journeys ending from
 * then on); then only those visitors' visits have their
 * aggregate states (entry and exit pages) merged (journeysSql): merging every visit's states of
 * the window to show a hundred rows was most of the cost, and a page found inside the second
 * statement was found twice (once to select the visits, once to join its total).
 */
export function journeyPageSql(query: Query, page: { offset: number; visitor?: string; since?: number }): Fragment {
  const scope = queryWindow(query)
  const oneVisitor = page.visitor === undefined ? empty : sql` AND visitor_id = ${bind('UInt64', page.visitor)}`
  const selectedVisitors = query.filters.length
    ? sql` AND visitor_id IN (SELECT visitor_id FROM events WHERE ${selected(query, scope)})`
    : empty
  // only the journeys that end from `since` on (epoch ms): their visits began at most 26 hours before it (journeysSql)
  const recent =
    page.since === undefined
      ? { visits: empty, ends: empty }
      : {
          visits: sql` AND ${during('session_start', page.since - 26 * 3_600_000, query.range.to.epochMilliseconds)}`,
          ends: sql` AND last_end >= ${bind('DateTime64(3)', chTime(page.since))}`,
        }
  return sql`
SELECT toString(visitor_id) AS visitor, max(end) AS last_end, count() OVER () AS total
FROM sessions WHERE ${journeyVisits(query)}${oneVisitor}${recent.visits}
GROUP BY visitor_id
HAVING last_end >= ${scope.windowFrom}${recent.ends}${selectedVisitors}
ORDER BY last_end DESC, visitor_id ASC
LIMIT ${bind('UInt32', query.limit)} OFFSET ${bind('UInt32', page.offset)}`
}

/**
 * The journeys of the given visitor ids (a page of journeyPageSql), newest last event first. A
 * visitor id lives within one site-local day, so every visit of the page began from `beganFrom`
 * on (epoch ms, a day before the page's earliest last event): the visits are read from those days,
 * not from the whole window.
 */
export function journeysSql(query: Query, visitors: readonly string[], beganFrom: number): Fragment {
  return sql`
SELECT toString(visitor) AS visitor, toUnixTimestamp64Milli(min(start)) AS first_seen, toUnixTimestamp64Milli(max(finish)) AS last_seen,
       argMinIf(entry, start, pv > 0) AS landing, argMaxIf(exit, finish, pv > 0) AS exit_page,
       sum(duration_ms) AS duration_ms, count() AS visits, sum(pv) AS pageviews, sum(ce) AS custom_events,
       argMinIf(source, start, pv > 0) AS source, argMinIf(referrer, start, pv > 0) AS referrer,
       argMin(country, start) AS country, argMin(device, start) AS device, argMin(browser, start) AS browser
FROM (
  SELECT session_id, any(visitor_id) AS visitor, min(session_start) AS start, max(end) AS finish,
         dateDiff('millisecond', min(session_start), max(end)) AS duration_ms,
         argMinMerge(entry_page) AS entry, argMaxMerge(exit_page) AS exit, sum(pageviews) AS pv, sum(custom_events) AS ce,
         any(referrer_source) AS source, any(referrer) AS referrer, any(country_code) AS country, any(device) AS device, any(browser) AS browser
  FROM sessions
  WHERE ${journeyVisits(query)} AND ${during('session_start', beganFrom, query.range.to.epochMilliseconds)} AND visitor_id IN (SELECT toUInt64(arrayJoin(${bind('Array(String)', visitors)})))
  GROUP BY session_id
)
GROUP BY visitor
ORDER BY last_seen DESC, visitor ASC`
}

/** Every event of one visitor id in the window, oldest first, at most `count`. */
export function visitorEventsSql(query: Query, visitor: string, count: number): Fragment {
  const scope = queryWindow(query)
  return sql`
SELECT ${ACTION_COLUMNS}
FROM events WHERE ${scope.events} AND visitor_id = ${bind('UInt64', visitor)}
ORDER BY timestamp ASC, kind ASC, name ASC
LIMIT ${bind('UInt32', count)}`
}
