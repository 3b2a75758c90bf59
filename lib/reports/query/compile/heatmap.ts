import type { ViewportClass } from '../../../ingest/enrich'
import { POSITION_SCALE } from '../../../ingest/rows'
import type { Query } from '../model'
import { clickEvents } from './clicks'
import { queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * The heatmap of one page for one device class: its clicks that carry a position, on a grid of
 * HEATMAP_COLUMNS columns across the document and as many rows as make the cells square on the
 * document's median size (at most HEATMAP_MAX_ROWS), and the scroll reach of its page loads.
 */
export const HEATMAP_COLUMNS = 20
export const HEATMAP_MAX_ROWS = 400
/** Scroll reach is reported for each tenth of the page. */
export const SCROLL_STEPS = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100] as const

export interface HeatmapPage {
  path: string
  device: ViewportClass
}

/** The page's clicks with a position, from the device class, under the query's window and filters. */
const placedClicks = (query: Query, page: HeatmapPage) =>
  sql`${clickEvents(query)} AND pathname = ${bind('String', page.path)} AND viewport_class = ${bind('String', page.device)} AND doc_width > 0`

/** Totals and the median document size, which sets the grid's rows. */
export function heatmapSummarySql(query: Query, page: HeatmapPage): Fragment {
  return sql`
SELECT count() AS clicks, uniqExact(visitor_id) AS visitors, countIf(dead_click = 1) AS dead_clicks, countIf(rage_click = 1) AS rage_clicks,
       quantileExact(0.5)(doc_width) AS median_width, quantileExact(0.5)(doc_height) AS median_height
FROM events WHERE ${placedClicks(query, page)}`
}

/** Rows of a grid of HEATMAP_COLUMNS columns whose cells are square on a document of this size. */
export function heatmapRows(docWidth: number, docHeight: number): number {
  if (docWidth <= 0 || docHeight <= 0) return 0
  return Math.min(HEATMAP_MAX_ROWS, Math.max(1, Math.round((HEATMAP_COLUMNS * docHeight) / docWidth)))
}

/**
 * Clicks per occupied cell. A position p (ten-thousandths) falls in cell floor(p * cells / scale),
 * the far edge in the last cell; integer arithmetic, so a cell never depends on float rounding.
 */
export function heatmapCellsSql(query: Query, page: HeatmapPage, rows: number): Fragment {
  const cell = (column: string, cells: number) =>
    sql`least(intDiv(toUInt64(${raw(column)}) * ${bind('UInt32', cells)}, ${raw(String(POSITION_SCALE))}), ${bind('UInt32', cells - 1)})`
  return sql`
SELECT ${cell('click_y', rows)} AS row, ${cell('click_x', HEATMAP_COLUMNS)} AS col,
       count() AS clicks, countIf(dead_click = 1) AS dead_clicks, countIf(rage_click = 1) AS rage_clicks
FROM events WHERE ${placedClicks(query, page)}
GROUP BY row, col
ORDER BY row, col`
}

/** The most clicked elements of the page, with their dead and rage clicks. */
export function heatmapElementsSql(query: Query, page: HeatmapPage): Fragment {
  return sql`
SELECT selector, element_text AS text, element_tag AS tag, count() AS clicks, uniqExact(visitor_id) AS visitors,
       countIf(dead_click = 1) AS dead_clicks, countIf(rage_click = 1) AS rage_clicks
FROM events WHERE ${placedClicks(query, page)}
GROUP BY selector, text, tag
ORDER BY clicks DESC, selector ASC, text ASC, tag ASC
LIMIT ${bind('UInt32', query.limit)}`
}

/** The page's leave-time engagement reports (one per page load) and how many reached each tenth of the page. */
export function scrollReachSql(query: Query, page: HeatmapPage): Fragment {
  const reached = SCROLL_STEPS.map((depth) => `countIf(scroll_depth >= ${depth}) AS reached_${depth}`).join(', ')
  return sql`
SELECT count() AS loads, ${raw(reached)}
FROM events
WHERE ${selected(query, queryWindow(query))} AND name = 'engagement' AND kind = 'engagement' AND pathname = ${bind('String', page.path)} AND viewport_class = ${bind('String', page.device)}`
}
