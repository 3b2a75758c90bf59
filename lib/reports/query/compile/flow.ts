import type { Query } from '../model'
import { siteIs, queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, empty, sql } from '../../../storage/clickhouse/sql'

/**
 * Where a flow is anchored in each visit's page sequence: the landing page (the first page of
 * the visit in the window), the first view of a start page (forward flow), or the first view of
 * a focus page (steps before and after it).
 */
export type FlowAnchor = { kind: 'entry' } | { kind: 'start' | 'focus'; path: string }

/** The path of a step's folded node; a real path starts with "/", so the two never meet. */
export const OTHER_PATH = '(other)'

/**
 * The flow's graph, folded: one row per node and the node the visit went on to at the next step
 * ('' where it left or the flow ends), with the visits that did, and per step the number of
 * distinct pages (`paths`).
 *
 * A visit's page sequence is its pageviews in the window in time order, a page repeated right
 * after itself (a reload) counted once. Steps run from -before to after, 0 being the anchor; a
 * visit without the anchor page is not in the flow. With filters: the visits holding a selected
 * event, all their pages. At each step the `limit` pages with the most visits (ties to the
 * smaller path) keep their node; the others of that step fold into one, OTHER_PATH.
 *
 * Each visit's pageviews come as one row of visit_pages (migration 0008), read FINAL: merging
 * the few rows of a visit not yet merged in the background costs far less than grouping the
 * window's pageviews by visit. Two settings keep FINAL from merging rows that cannot belong to
 * one visit: a visit's rows share its start, so they lie in one partition (month), which the
 * engine cannot tell by itself; and they share the site, so the site-id set index may skip other
 * sites' granules (one spanning the site's key range made FINAL merge every row of the site).
 * Visits began at most 26 hours before the window (scope); their pages outside the window are
 * dropped. Sorting (time, path) pairs puts a pageview stored twice next to itself, where it
 * collapses like a reload.
 *
 * It runs in one pass: the (step, page, next page) cells are grouped by node with their outgoing
 * links as an array, so ranking the nodes and the set of kept pages work on the few nodes, not on
 * every cell; each outgoing link then looks its page up among the kept pages of the next step
 * only. Lambdas take arrays as arguments rather than capturing them (a captured array is copied
 * for every element).
 *
 * A flow from a start or focus page keeps only the visits that viewed that page in the window,
 * tested on each visit's pages as stored, before they are sorted (most visits never viewed it).
 */
export function flowSql(query: Query, anchor: FlowAnchor, before: number, after: number): Fragment {
  const scope = queryWindow(query)
  const visits = query.filters.length ? sql` AND session_id IN (SELECT session_id FROM events WHERE ${selected(query, scope)})` : empty
  const at = anchor.kind === 'entry' ? sql`notEmpty(seq)` : sql`indexOf(seq, ${bind('String', anchor.path)})`
  // the visits whose anchor is found below (anchor > 0): those that viewed the page in the window
  const viewedAnchor =
    anchor.kind === 'entry'
      ? empty
      : sql` AND arrayExists(v -> v.2 = ${bind('String', anchor.path)} AND v.1 >= ${scope.windowFrom} AND v.1 < ${scope.visitsTo}, pages)`
  const limit = bind('UInt32', query.limit)
  const other = bind('String', OTHER_PATH)
  return sql`
SELECT step, node, next_node, sum(visits) AS visits, any(paths) AS paths
FROM (
  SELECT step, if(node_rank <= ${limit}, path, ${other}) AS node, paths, out.1 AS next_path, out.2 AS visits,
         if(next_path = '', '', if(has(next_kept, next_path), next_path, ${other})) AS next_node
  FROM (
    SELECT step, path, outs, node_rank, paths, arrayMap(k -> k.2, arrayFilter(k -> k.1 = step + 1, kept)) AS next_kept
    FROM (
      SELECT step, path, outs, node_rank, max(node_rank) OVER (PARTITION BY step) AS paths,
             groupArrayIf((step, path), node_rank <= ${limit}) OVER () AS kept
      FROM (
        SELECT step, path, outs, row_number() OVER (PARTITION BY step ORDER BY node_visits DESC, path ASC) AS node_rank
        FROM (
          SELECT step, path, sum(visits) AS node_visits, groupArray((next_path, visits)) AS outs
          FROM (
            SELECT step, path, next_path, count() AS visits
            FROM (
              SELECT anchor, greatest(1, anchor - ${bind('UInt32', before)}) AS first, arraySlice(seq, first, least(toInt64(length(seq)), anchor + ${bind('UInt32', after)}) - first + 1) AS pages
              FROM (
                SELECT arrayFilter((p, previous) -> p != previous, viewed, arrayPopBack(arrayPushFront(viewed, ''))) AS seq, toInt64(${at}) AS anchor
                FROM (
                  SELECT arrayMap(v -> v.2, arraySort(arrayFilter(v -> v.1 >= ${scope.windowFrom} AND v.1 < ${scope.visitsTo}, pages))) AS viewed
                  FROM visit_pages FINAL
                  WHERE ${siteIs(query.siteId)} AND ${scope.visitsBegan}${visits}${viewedAnchor}
                )
              )
              WHERE anchor > 0
            )
            ARRAY JOIN arrayMap(i -> toInt32(i + first - anchor - 1), arrayEnumerate(pages)) AS step, pages AS path, arrayPushBack(arrayPopFront(pages), '') AS next_path
            GROUP BY step, path, next_path
          )
          GROUP BY step, path
        )
      )
    )
  )
  ARRAY JOIN outs AS out
)
GROUP BY step, node, next_node
SETTINGS do_not_merge_across_partitions_select_final = 1, use_skip_indexes_if_final = 1`
}
