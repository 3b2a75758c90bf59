import { z } from 'zod'
import { VIEWPORT_CLASSES } from '../../lib/ingest/enrich'
import { HEATMAP_COLUMNS, HEATMAP_MAX_ROWS } from '../../lib/reports/query/compile/heatmap'
import { heatmap } from '../../lib/reports/query/heatmap'
import { reportParams } from '../../lib/reports/query/parse'
import { defineEndpoint } from '../endpoint'
import { rangeViewSchema, sourceSchema } from './report-schemas'

const count = z.number().int().nonnegative()
const fraction = z.number().min(0).max(1)

export const heatmapEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/heatmap',
    scope: 'read',
    tool: 'get_heatmap',
    summary: 'Click heatmap of one page: density grid, top elements, dead and rage clicks, scroll reach.',
    description: `Clicks with a position on path from viewports of device (desktop, tablet, phone by viewport width). grid: ${HEATMAP_COLUMNS} columns across the document, rows so cells are square on the median document size (at most ${HEATMAP_MAX_ROWS}); cells list occupied cells (row 0 at the top). share is a fraction of the clicks. rageClicks: the third click on one spot within a second. scroll.reach: page loads (leave-time reports) reaching each tenth of the page. Filters honoured. A ga4-only site answers available: false.`,
    params: reportParams.extend({
      path: z.string().min(1, 'required').max(2000).startsWith('/', 'must start with /'),
      device: z.enum(VIEWPORT_CLASSES).default('desktop'),
    }),
    response: z.object({
      source: sourceSchema,
      available: z.boolean().describe('false for a site that reads only ga4: the collector alone records clicks'),
      range: rangeViewSchema.optional(),
      device: z.string(),
      summary: z.object({ clicks: count, visitors: count, deadClicks: count, rageClicks: count }),
      grid: z.object({
        columns: count,
        rows: count.describe('0 without clicks'),
        documentWidth: count.describe('Median document width of the clicks, CSS px'),
        documentHeight: count.describe('Median document height of the clicks, CSS px'),
        cells: z.array(z.object({ row: count, col: count, clicks: count, deadClicks: count, rageClicks: count })),
      }),
      elements: z.array(
        z.object({
          selector: z.string(),
          text: z.string(),
          tag: z.string(),
          clicks: count,
          share: fraction,
          visitors: count,
          deadClicks: count,
          rageClicks: count,
        }),
      ),
      scroll: z.object({
        pageLoads: count,
        reach: z.array(z.object({ depth: count.describe('Percent of the page'), pageLoads: count, share: fraction })),
      }),
    }),
    async handler(ctx, { params }) {
      return heatmap(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
