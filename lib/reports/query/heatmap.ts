import type { ViewportClass } from '../../ingest/enrich'
import type { Site } from '../../sites/sites'
import { collectorRead, standaloneQuery } from './behaviour'
import {
  HEATMAP_COLUMNS,
  type HeatmapPage,
  SCROLL_STEPS,
  heatmapCellsSql,
  heatmapElementsSql,
  heatmapRows,
  heatmapSummarySql,
  scrollReachSql,
} from './compile/heatmap'
import type { ReportParams } from './parse'
import { rangeView } from './range'
import type { ReportDeps } from './reports'
import { execute } from '../../storage/clickhouse/execute'

export interface HeatmapParams extends ReportParams {
  path: string
  device: ViewportClass
}

type Row = Record<string, unknown>
const numberOf = (v: unknown) => Number(v ?? 0)
/** A share as a fraction from 0 to 1, four decimals. */
const share = (part: number, whole: number) => (whole ? Math.round((part / whole) * 10_000) / 10_000 : 0)

const emptyScroll = () => ({ pageLoads: 0, reach: SCROLL_STEPS.map((depth) => ({ depth, pageLoads: 0, share: 0 })) })

/** The page's click grid, most clicked elements and scroll reach for one device class. */
async function heatmapRead(deps: ReportDeps, site: Site, params: HeatmapParams) {
  const page: HeatmapPage = { path: params.path, device: params.device }
  const query = await standaloneQuery(deps, site, params)
  const summaryOf = (r: Row | undefined) => ({
    clicks: numberOf(r?.clicks),
    visitors: numberOf(r?.visitors),
    deadClicks: numberOf(r?.dead_clicks),
    rageClicks: numberOf(r?.rage_clicks),
  })
  if (!query)
    return {
      available: false,
      device: page.device,
      summary: summaryOf(undefined),
      grid: { columns: HEATMAP_COLUMNS, rows: 0, documentWidth: 0, documentHeight: 0, cells: [] },
      elements: [],
      scroll: emptyScroll(),
    }
  const [[totals], elementRows, [reach]] = await Promise.all([
    execute<Row>(deps.clickhouse, heatmapSummarySql(query, page)),
    execute<Row>(deps.clickhouse, heatmapElementsSql(query, page)),
    execute<Row>(deps.clickhouse, scrollReachSql(query, page)),
  ])
  const summary = summaryOf(totals)
  const documentWidth = summary.clicks ? numberOf(totals?.median_width) : 0
  const documentHeight = summary.clicks ? numberOf(totals?.median_height) : 0
  const rows = heatmapRows(documentWidth, documentHeight)
  const cells = rows ? await execute<Row>(deps.clickhouse, heatmapCellsSql(query, page, rows)) : []
  const loads = numberOf(reach?.loads)
  return {
    available: true,
    range: rangeView(query.range),
    device: page.device,
    summary,
    grid: {
      columns: HEATMAP_COLUMNS,
      rows,
      documentWidth,
      documentHeight,
      cells: cells.map((c) => ({
        row: numberOf(c.row),
        col: numberOf(c.col),
        clicks: numberOf(c.clicks),
        deadClicks: numberOf(c.dead_clicks),
        rageClicks: numberOf(c.rage_clicks),
      })),
    },
    elements: elementRows.map((r) => ({
      selector: String(r.selector),
      text: String(r.text),
      tag: String(r.tag),
      clicks: numberOf(r.clicks),
      share: share(numberOf(r.clicks), summary.clicks),
      visitors: numberOf(r.visitors),
      deadClicks: numberOf(r.dead_clicks),
      rageClicks: numberOf(r.rage_clicks),
    })),
    scroll: {
      pageLoads: loads,
      reach: SCROLL_STEPS.map((depth) => {
        const reached = numberOf(reach?.[`reached_${depth}`])
        return { depth, pageLoads: reached, share: share(reached, loads) }
      }),
    },
  }
}

/** GET /heatmap: where one page's clicks landed, for one device class. */
export const heatmap = (deps: ReportDeps, site: Site, params: HeatmapParams) =>
  collectorRead(site, params, () => heatmapRead(deps, site, params))
