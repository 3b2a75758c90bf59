import type { Query } from '../model'
import { windowScope } from './scope'
import { selected } from './selection'
import { type Fragment, bind, empty, sql } from './sql'

/**
 * Where a flow is anchored in each visit's page sequence: the landing page (the first page of
 * the visit in the window), the first view of a start page (forward flow), or the first view of
 * a focus page (steps before and after it).
 */
export type FlowAnchor = { kind: 'entry' } | { kind: 'start' | 'focus'; path: string }

/**
 * Per step and page of the flow, and the page the visit went on to at the next step ('' where
 * it left or the flow ends), the visits that took it. A visit's page sequence is its pageviews
 * in the window in time order, a page repeated right after itself (a reload) counted once.
 * Steps run from -before to after, 0 being the anchor; a visit without the anchor page is not in
 * the flow. With filters, the visits holding a selected event, all their pages.
 */
export function flowSql(query: Query, anchor: FlowAnchor, before: number, after: number): Fragment {
  const scope = windowScope(query.siteId, query.range)
  const visits = query.filters.length ? sql` AND session_id IN (SELECT session_id FROM events WHERE ${selected(query, scope)})` : empty
  const at = anchor.kind === 'entry' ? sql`1` : sql`indexOf(seq, ${bind('String', anchor.path)})`
  const first = bind('UInt32', before)
  const last = bind('UInt32', after)
  return sql`
SELECT cell.1 AS step, cell.2 AS path, cell.3 AS next_path, count() AS visits
FROM (
  SELECT arrayJoin(arrayMap(
           k -> (k, seq[anchor + k], if(k < ${last} AND anchor + k < length(seq), seq[anchor + k + 1], '')),
           arrayFilter(k -> anchor + k >= 1 AND anchor + k <= length(seq), arrayMap(i -> toInt32(i) - toInt32(${first}), range(${first} + ${last} + 1)))
         )) AS cell
  FROM (
    SELECT seq, ${at} AS anchor
    FROM (
      SELECT arrayMap(t -> t.2, arraySort(groupArray((timestamp, pathname)))) AS pages,
             arrayFilter((p, i) -> i = 1 OR p != pages[i - 1], pages, arrayEnumerate(pages)) AS seq
      FROM events
      WHERE ${scope.events} AND name = 'pageview'${visits}
      GROUP BY session_id
    )
    WHERE anchor > 0
  )
)
GROUP BY step, path, next_path`
}
