import { z } from 'zod'
import { SOURCES } from '../../lib/sites/sites'
import { COMPARE_MODES, ROW_FIGURES } from '../../lib/reports/query/compare'

/** Pieces of the answers of the report endpoints, shared by their declarations. */

export const sourceSchema = z.enum(SOURCES).describe('The source read')

export const rangeViewSchema = z.object({
  name: z.string(),
  from: z.string().describe('Start, ISO 8601 with the site offset'),
  to: z.string().describe('Exclusive end, ISO 8601 with the site offset'),
  interval: z.enum(['minute', 'hour', 'day', 'week', 'month']).describe('week: Plausible v2 queries only'),
  timezone: z.string(),
})

const count = z.number().int().nonnegative()

/** Present when the site samples (its samplingThreshold) and the answer was read from a sample of visitors; counts are then estimates. */
export const samplingSchema = z
  .object({
    fraction: z.number().describe("The share of visitors read, 1/n; counts are the sample's multiplied by n"),
    relativeError: z
      .number()
      .nullable()
      .describe(
        "The 95% margin of error of the answer's largest visitor figure (the totals, the busiest bucket, the top row), relative to it; null when that figure is 0. A figure of V visitors has 1.96 * sqrt((1/fraction - 1) / V)",
      ),
  })
  .optional()
  .describe('Present only when the answer was read from a sample (docs: Sampling)')

export const totalsSchema = z.object({
  visitors: count,
  visits: count,
  pageviews: count,
  bounceRate: z
    .number()
    .nullable()
    .describe("Fraction from 0 to 1; null on a ga4 read of range=realtime (GA4's Realtime API reports no sessions or engagement)"),
  avgDuration: z.number().nullable().describe('Seconds; null on a ga4 read of range=realtime'),
  viewsPerVisit: z.number(),
  events: count
    .nullable()
    .describe(
      "Custom events; on a ga4 read GA4's events that are not automatic ones, null where the read's imported dataset cannot tell them apart (filters other than event) and on range=realtime",
    ),
})

export const seriesSchema = z.array(
  z.object({
    timestamp: z.string().describe("The bucket's start, ISO 8601 with the site offset"),
    visitors: count,
    visits: count,
    pageviews: count,
  }),
)

/** A breakdown row; goal rows carry conversions instead of visits and pageviews, and engagement only where the dimension has it. */
export const breakdownRowSchema = z.object({
  value: z.string(),
  visitors: count,
  visits: count.optional(),
  pageviews: count.optional(),
  events: count
    .nullable()
    .describe('Custom events; null on a ga4 breakdown by anything but event (only that dataset tells automatic events apart)'),
  bounceRate: z.number().optional().describe('Fraction from 0 to 1; visit-engagement dimensions only'),
  avgDuration: z.number().optional().describe('Seconds; visit-engagement dimensions only'),
  conversions: count.optional().describe('Goal rows: completions'),
  conversionRate: z.number().optional().describe('Goal rows: converters over all visitors, 0 to 1'),
  revenue: z.object({ amount: z.number(), currency: z.string() }).optional().describe('Goal rows of goals with a currency'),
})

/** The change of one figure between the window and the comparison window (docs/api.md, Comparisons). */
export const changeSchema = z.object({
  absolute: z.number().nullable().describe('Current minus compared; null where either is null'),
  relative: z.number().nullable().describe('absolute over compared, to 4 decimals; null when compared is 0 or null'),
})

/** The change of each named figure. */
export const changesSchema = (names: readonly string[]) =>
  z.object(Object.fromEntries(names.map((n) => [n, changeSchema.optional()])) as Record<string, z.ZodOptional<typeof changeSchema>>)

/** The comparison window of a read asked with compare. */
export const comparisonSchema = z.object({
  mode: z.enum(COMPARE_MODES),
  range: rangeViewSchema.describe('The comparison window, of equal length, in the site timezone'),
})

const bucketSchema = seriesSchema.element

export const comparedSeriesSchema = z.array(
  bucketSchema.extend({
    comparison: bucketSchema.nullable().optional().describe('compare: the comparison bucket of the same position; null where it has none'),
    change: changesSchema(['visitors', 'visits', 'pageviews']).optional(),
  }),
)

export const comparedBreakdownRowSchema = breakdownRowSchema.extend({
  status: z
    .enum(['continuing', 'appeared', 'vanished'])
    .optional()
    .describe('compare: appeared (not in the comparison window), vanished (only there; figures 0), continuing'),
  comparison: breakdownRowSchema.nullable().optional().describe("compare: the row's figures in the comparison window"),
  change: changesSchema(ROW_FIGURES).optional(),
})

/** The parts of an answer its source cannot give (a ga4 read), each with why; absent when the answer is whole. */
export const notAvailableSchema = z
  .array(z.object({ part: z.string(), reason: z.string() }))
  .optional()
  .describe('ga4 reads: the parts GA4 cannot give, and why')
