import type { Query, RolledDays } from '../model'
import { type DaySpan, type ResolvedRange, rawDaySpans } from '../range'
import { ROLLUP_VERSION, markedBuiltDays, markedRolledDaysSql, markedStaleDaysSql, atSignature, signatureOf } from './day-rollups'
import { type Scope, daySpansScope, queryWindow, siteIs } from './scope'
import { selected } from './selection'
import { BACKGROUND_SETTINGS } from '../../../storage/clickhouse/execute'
import { type Bound, type Fragment, bind, empty, raw, sql } from '../../../storage/clickhouse/sql'

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
 *
 * This is the flow of any window from visit_pages alone; an unfiltered flow over whole days with
 * rolled-up days is rolledFlowSql's, which answers the same graph.
 */
export function flowSql(query: Query, anchor: FlowAnchor, before: number, after: number): Fragment {
  return foldedFlow(query, flowRawCells(visitSlices(query, queryWindow(query), anchor, before, after)))
}

/** The graph folded from the cells (step, path, next_path, visits) in one pass (flowSql). */
function foldedFlow(query: Query, cells: Fragment): Fragment {
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
          FROM (${cells})
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

/** Each visit's pageviews in [from, to) in time order, as paths (the column `pages` of visit_pages). */
const viewedPages = (from: Bound, to: Bound) => sql`arrayMap(v -> v.2, arraySort(arrayFilter(v -> v.1 >= ${from} AND v.1 < ${to}, pages)))`

/** The page sequence of `viewed`: a page repeated right after itself (a reload, or a pageview stored twice) once. */
const WITHOUT_RELOADS = sql`arrayFilter((p, previous) -> p != previous, viewed, arrayPopBack(arrayPushFront(viewed, '')))`

/** The visits holding an event the query's filters select (every visit without filters). */
const selectedVisits = (query: Query, scope: Scope) =>
  query.filters.length ? sql` AND session_id IN (SELECT session_id FROM events WHERE ${selected(query, scope)})` : empty

/** The visits that viewed a start or focus page in the scope, tested on their pages as stored (most visits never viewed it). */
const viewedAnchor = (scope: Scope, anchor: FlowAnchor) =>
  anchor.kind === 'entry'
    ? empty
    : sql` AND arrayExists(v -> v.2 = ${bind('String', anchor.path)} AND v.1 >= ${scope.windowFrom} AND v.1 < ${scope.visitsTo}, pages)`

/**
 * The visits of a scope that have the anchor, each as the slice of its page sequence the flow
 * shows (`pages`), the index in its sequence of the slice's first page (`first`) and of the anchor.
 */
function visitSlices(query: Query, scope: Scope, anchor: FlowAnchor, before: number, after: number): Fragment {
  const at = anchor.kind === 'entry' ? sql`notEmpty(seq)` : sql`indexOf(seq, ${bind('String', anchor.path)})`
  return sql`SELECT anchor, greatest(1, anchor - ${bind('UInt32', before)}) AS first, arraySlice(seq, first, least(toInt64(length(seq)), anchor + ${bind('UInt32', after)}) - first + 1) AS pages
      FROM (
        SELECT ${WITHOUT_RELOADS} AS seq, toInt64(${at}) AS anchor
        FROM (
          SELECT ${viewedPages(scope.windowFrom, scope.visitsTo)} AS viewed
          FROM visit_pages FINAL
          WHERE ${siteIs(query.siteId)} AND ${scope.visitsBegan}${selectedVisits(query, scope)}${viewedAnchor(scope, anchor)}
        )
      )
      WHERE anchor > 0`
}

/** The slices' steps: each page with its step and the next page ('' where the slice ends). */
const SLICE_STEPS = sql`ARRAY JOIN arrayMap(i -> toInt32(i + first - anchor - 1), arrayEnumerate(pages)) AS step, pages AS path,
      arrayPushBack(arrayPopFront(pages), '') AS next_path`

/** The same, and whether the visit's sequence opens with the page. */
const SLICE_STEPS_AND_OPENS = sql`${SLICE_STEPS}, arrayMap(i -> i + first = 2, arrayEnumerate(pages)) AS opens`

/** The (step, page, next page) cells of the slices, with their visits. */
const flowRawCells = (slices: Fragment) => sql`SELECT step, path, next_path, count() AS visits
    FROM (${slices})
    ${SLICE_STEPS}
    GROUP BY step, path, next_path`

// --- the flow rollup (migration 0022)

/** The most steps a flow shows on either side of its anchor: the flow rollup holds this many. */
export const FLOW_MAX_DEPTH = 5
/** The flow rollup's anchor of a visit's landing page; other anchors are paths, which start with "/". */
const ENTRY_ANCHOR = '(entry)'
/** The flow rollup's row that marks a day built, written after the day's cells. */
const BUILT_ANCHOR = '(built)'

/** The flow rollup's anchor of a flow without filters: the landing page's, or the page's. */
const anchorOf = (anchor: FlowAnchor) => (anchor.kind === 'entry' ? ENTRY_ANCHOR : anchor.path)

/**
 * A filtered flow's rows have the filters' key as their anchor (plan.ts, filteredRollupKey, with
 * the property flowRollupProperty names); the row that marks one of its days built has this step,
 * which no flow shows.
 */
const FILTERED_BUILT_STEP = -128

/** The property of a filtered flow's key: one per anchor (a start and a focus page share it). */
export const flowRollupProperty = (anchor: FlowAnchor) => `flow:${anchorOf(anchor)}`

/** A filtered flow's rollup (flowRollupInsertSql): the filters, their key and the one anchor it holds. */
export interface FilteredFlow {
  query: Query
  key: string
  anchor: FlowAnchor
}

const flowRollupOf = (siteId: string, timezone: string) =>
  sql`${siteIs(siteId)} AND timezone = ${bind('String', timezone)} AND version = ${bind('UInt16', ROLLUP_VERSION)}`

/**
 * A flow over whole days, some of them rolled up, as the nodes and links foldRolledFlow (in
 * journeys.ts) folds: one row per page of each step with its visits, the visits that left there
 * (`exits`, every visit at the last step shown) and those whose sequence begins there (`opens`);
 * and the links between two pages each kept at its step, with their visits. The pages kept at a
 * step are the `limit` with the most visits (ties to the smaller path), so only the links between
 * those are read, found by the rollup's order; every other link folds into a count the node rows
 * give. Rows: kind (0 node, 1 link), step, path, next_path, visits, exits, opens, and a node's rank at its step.
 *
 * The nodes of the days not rolled up (`unrolled`, today) are computed from visit_pages once, as
 * one array, and read by both parts.
 */
export function rolledFlowSql(query: Query, anchor: FlowAnchor, before: number, after: number, rolled: RolledDays): Fragment {
  const last = bind('UInt32', after)
  const spans = rawDaySpans(query.range, rolled.days)
  const unrolled = spans.length
    ? sql`(SELECT groupArray((step, path, visits, exits, opens, outs)) FROM (
      SELECT step, path, count() AS visits, countIf(next_path = '') AS exits, countIf(opens) AS opens, groupArrayIf((next_path, toUInt64(1)), next_path != '') AS outs
      FROM (${visitSlices(query, daySpansScope(query.siteId, spans), anchor, before, after)})
      ${SLICE_STEPS_AND_OPENS}
      GROUP BY step, path))`
    : sql`CAST([], 'Array(Tuple(Int32, String, UInt64, UInt64, UInt64, Array(Tuple(String, UInt64))))')`
  const rolledRows = sql`FROM flow_rollups FINAL
    WHERE ${flowRollupOf(query.siteId, query.range.timezone)} AND anchor = ${bind('String', rolled.filtersKey ?? anchorOf(anchor))}
      AND ${atSignature(rolled)}
      AND step >= -${bind('UInt32', before)} AND step <= ${last}`
  const unrolledRows = sql`FROM (SELECT arrayJoin(unrolled) AS n)`
  const nodes = sql`SELECT step, path, sum(visits) AS visits, sum(exits) AS exits, sum(opens) AS opens FROM (
      SELECT toInt32(step) AS step, path, visits, if(step = ${last}, visits, exits) AS exits, opens ${rolledRows}
      UNION ALL
      SELECT n.1, n.2, n.3, n.4, n.5 ${unrolledRows}
    ) GROUP BY step, path`
  // a page's links are read only where it and the next page are both kept
  const isKept = (step: Fragment, path: Fragment) => sql`(${step}, ${path}) IN (SELECT arrayJoin(kept))`
  return sql`
WITH ${unrolled} AS unrolled,
  (SELECT groupArray((step, path, visits, exits, opens, node_rank)) FROM (
    SELECT step, path, visits, exits, opens, row_number() OVER (PARTITION BY step ORDER BY visits DESC, path ASC) AS node_rank FROM (${nodes})
  )) AS ranked,
  arrayMap(n -> (n.1, n.2), arrayFilter(n -> n.6 <= ${bind('UInt32', query.limit)}, ranked)) AS kept
SELECT 0 AS kind, n.1 AS step, n.2 AS path, '' AS next_path, n.3 AS visits, n.4 AS exits, n.5 AS opens, n.6 AS node_rank
FROM (SELECT arrayJoin(ranked) AS n)
UNION ALL
SELECT 1, step, path, out.1 AS next_path, sum(out.2), 0, 0, 0
FROM (
  SELECT toInt32(step) AS step, path, outs ${rolledRows} AND step < ${last}
    AND (flow_rollups.step, flow_rollups.path) IN (SELECT toInt8(k.1), k.2 FROM (SELECT arrayJoin(kept) AS k))
  UNION ALL
  SELECT n.1, n.2, n.6 ${unrolledRows} WHERE n.1 < ${last} AND ${isKept(raw('n.1'), raw('n.2'))}
)
ARRAY JOIN outs AS out
WHERE ${isKept(raw('step + 1'), raw('out.1'))}
GROUP BY step, path, next_path
SETTINGS do_not_merge_across_partitions_select_final = 1`
}

/**
 * The flow rollup of whole site-local days: per day, for the landing page and for the first view
 * of each page a visit viewed, the visits at each step up to FLOW_MAX_DEPTH either side (the
 * landing page has none before it) that went from a page to the next ('' where the visit left),
 * stamped with the day's signature (day-rollups.ts). A visit never crosses the site-local
 * midnight, so a day's visits are the window's visits of that day with all their pages, and a
 * flow over whole days is the sum of its days' cells. Then the day's marker row.
 *
 * A filtered flow's (`filtered`, built on its first read, lib/reports/rollup/flow.ts): the visits
 * holding a selected event (on their day, as a visit's events all are), and their cells of its one
 * anchor, under the filters' key; its marker is that key's row of step FILTERED_BUILT_STEP. Its
 * rows expire 30 days after their build (migration 0026), the marker a day before its cells: a
 * day is never marked built without them.
 */
export function flowRollupInsertSql(
  siteId: string,
  timezone: string,
  spans: DaySpan[],
  days: RolledDays,
  filtered?: FilteredFlow,
): Fragment[] {
  const scope = daySpansScope(siteId, spans)
  const tz = bind('String', timezone)
  const dayList = bind('Array(Date)', days.days)
  const stamp = sql`${bind('UUID', siteId)}, ${tz}, ${bind('UInt16', ROLLUP_VERSION)}`
  const signature = signatureOf(days)
  const depth = bind('UInt16', FLOW_MAX_DEPTH)
  // the cell of the page at index i, anchored at index a: (anchor, step, page, next page, whether the visit opens there)
  const cell = (anchorPath: Fragment | Bound, a: Fragment) =>
    sql`(${anchorPath}, toInt8(i - ${a}), seq[i], if(i < length(seq), seq[i + 1], ''), i = 1)`
  // the cells anchored at each index of `indexes`: the pages up to FLOW_MAX_DEPTH either side
  const anchoredAt = (anchorPath: Fragment | Bound, indexes: Fragment) =>
    sql`arrayFlatten(arrayMap(a -> arrayMap(i -> ${cell(anchorPath, raw('a'))}, range(toUInt64(greatest(1, toInt64(a) - ${depth})), least(length(seq), a + ${depth}) + 1)), ${indexes}))`
  // a filtered rollup's one anchor is its key, set once per row rather than carried by every cell
  const key = filtered ? bind('String', filtered.key) : undefined
  const cells = !filtered
    ? sql`arrayConcat(${anchoredAt(bind('String', ENTRY_ANCHOR), raw('[1]'))}, ${anchoredAt(raw('seq[a]'), raw('arrayFilter(a -> indexOf(seq, seq[a]) = a, arrayEnumerate(seq))'))})`
    : filtered.anchor.kind === 'entry'
      ? anchoredAt(raw("''"), raw('[1]'))
      : anchoredAt(raw("''"), sql`arrayFilter(a -> a > 0, [indexOf(seq, ${bind('String', filtered.anchor.path)})])`)
  const visits = filtered ? sql`${selectedVisits(filtered.query, scope)}${viewedAnchor(scope, filtered.anchor)}` : empty
  // the refresh's builds run at background priority; a read waits for a filtered one
  const priority = filtered ? empty : sql`, ${raw(BACKGROUND_SETTINGS)}`
  return [
    sql`
INSERT INTO flow_rollups (site_id, timezone, version, anchor, step, path, day, day_events, day_sum, visits, exits, opens, outs)
SELECT ${stamp}, ${key ?? raw('anchor')}, step, path, day, ${signature},
       sum(n) AS visits, sumIf(n, next_path = '') AS exits, sumIf(n, opens) AS opens, groupArrayIf((next_path, n), next_path != '') AS outs
FROM (
SELECT day, cell.1 AS anchor, cell.2 AS step, cell.3 AS path, cell.4 AS next_path, cell.5 AS opens, count() AS n
FROM (
  SELECT day, ${WITHOUT_RELOADS} AS seq
  FROM (
    SELECT toDate(session_start, ${tz}) AS day, ${viewedPages(scope.windowFrom, scope.visitsTo)} AS viewed
    FROM visit_pages FINAL
    WHERE ${scope.visitsBegan} AND ${siteIs(siteId)}${visits}
  )
  WHERE has(${dayList}, day)
)
ARRAY JOIN ${cells} AS cell
GROUP BY day, cell
)
GROUP BY day, anchor, step, path
SETTINGS do_not_merge_across_partitions_select_final = 1, use_skip_indexes_if_final = 1${priority}`,
    filtered
      ? sql`
INSERT INTO flow_rollups (site_id, timezone, version, anchor, step, path, day, day_events, day_sum, visits, exits, opens, outs, built_at)
SELECT ${stamp}, ${bind('String', filtered.key)}, ${raw(String(FILTERED_BUILT_STEP))}, '', day, ${signature}, 0, 0, 0, [], now() - INTERVAL 1 DAY
FROM (SELECT arrayJoin(${dayList}) AS day)`
      : sql`
INSERT INTO flow_rollups (site_id, timezone, version, anchor, step, path, day, day_events, day_sum, visits, exits, opens, outs)
SELECT ${stamp}, ${bind('String', BUILT_ANCHOR)}, 0, '', day, ${signature}, 0, 0, 0, []
FROM (SELECT arrayJoin(${dayList}) AS day)`,
  ]
}

/**
 * The signatures the window's days' flow rollup was built from: their '(built)' rows; with
 * `filtersKey`, a filtered flow's marker rows under that key.
 */
const flowBuilt = (siteId: string, window: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>, filtersKey?: string) =>
  markedBuiltDays(
    'flow_rollups',
    filtersKey === undefined
      ? sql`anchor = ${bind('String', BUILT_ANCHOR)}`
      : sql`anchor = ${bind('String', filtersKey)} AND step = ${raw(String(FILTERED_BUILT_STEP))}`,
    siteId,
    window,
  )

/**
 * The lookup of a window's days whose flow rollup is current: each day's signature (rolled 0) and
 * the signatures its flow rollup was built from (rolled 1), as plan.ts's rolledDaysOf and
 * daysOnDemand read them; with `filtersKey`, those of a filtered flow's rollup under that key.
 */
export const flowRolledDaysSql = (siteId: string, window: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>, filtersKey?: string): Fragment =>
  markedRolledDaysSql(siteId, window, flowBuilt(siteId, window, filtersKey))

/** The days of the window whose current signature has no flow rollup. Rows: d, n, s. */
export const flowStaleDaysSql = (siteId: string, window: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>): Fragment =>
  markedStaleDaysSql(siteId, window, flowBuilt(siteId, window))
