import { z } from 'zod'
import { MAX_FILTERS } from '../reports/query/parse'

/**
 * The request body of Plausible's Stats API v2 (`POST /api/v2/query`), as its reference documents
 * it: the shapes only. What this service can answer of it is decided in translate.ts.
 */

export const PLAUSIBLE_METRICS = [
  'visitors',
  'visits',
  'pageviews',
  'views_per_visit',
  'bounce_rate',
  'visit_duration',
  'events',
  'scroll_depth',
  'time_on_page',
  'percentage',
  'conversion_rate',
  'group_conversion_rate',
  'average_revenue',
  'total_revenue',
] as const
export type PlausibleMetric = (typeof PLAUSIBLE_METRICS)[number]

export const NAMED_DATE_RANGES = ['day', '7d', '28d', '30d', '91d', 'month', '6mo', '12mo', 'year', 'all'] as const
export type NamedDateRange = (typeof NAMED_DATE_RANGES)[number]

/** YYYY-MM-DD, or an ISO 8601 date-time with an offset. */
const DATE_OR_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2}))?$/
const dateOrTime = z.string().regex(DATE_OR_TIME, 'must be YYYY-MM-DD or an ISO 8601 date-time with an offset')

export const dateRangeSchema = z.union([z.enum(NAMED_DATE_RANGES), z.tuple([dateOrTime, dateOrTime])], {
  message: `must be one of ${NAMED_DATE_RANGES.join(', ')}, or [from, to] as two ISO 8601 dates or date-times`,
})
export type PlausibleDateRange = z.infer<typeof dateRangeSchema>

export const comparisonSchema = z.strictObject({
  mode: z.enum(['previous_period', 'year_over_year', 'custom']),
  date_range: z.tuple([dateOrTime, dateOrTime]).optional().describe('With mode custom: the window compared with'),
  match_day_of_week: z.boolean().optional(),
})
export type PlausibleComparison = z.infer<typeof comparisonSchema>

export const plausibleQuerySchema = z.strictObject({
  site_id: z.string().min(1, 'required').max(253).describe("The site's domain, or its UUID or snippet id"),
  metrics: z
    .array(z.enum(PLAUSIBLE_METRICS))
    .min(1, 'at least one metric')
    .max(PLAUSIBLE_METRICS.length, `at most ${PLAUSIBLE_METRICS.length} metrics`),
  date_range: dateRangeSchema,
  dimensions: z.array(z.string().min(1).max(200)).max(8, 'at most 8 dimensions').default([]),
  // the filters inside and, or and not count too, and nest at most MAX_FILTER_DEPTH deep (translate.ts)
  filters: z
    .array(z.array(z.unknown()))
    .max(MAX_FILTERS, `at most ${MAX_FILTERS} filters`)
    .default([])
    .describe('[operator, dimension, clauses, modifiers?], combined with ["and" | "or", [...]] and ["not", filter]'),
  order_by: z
    .array(z.tuple([z.string().min(1).max(200), z.enum(['asc', 'desc'])]))
    .max(10, 'at most 10 orderings')
    .optional(),
  include: z
    .strictObject({
      imports: z.boolean().optional(),
      time_labels: z.boolean().optional(),
      total_rows: z.boolean().optional(),
      comparisons: comparisonSchema.optional(),
    })
    .default({}),
  pagination: z
    .strictObject({
      limit: z.number().int().min(1).max(10_000).default(10_000),
      offset: z.number().int().min(0).max(1_000_000).default(0),
    })
    .default({ limit: 10_000, offset: 0 }),
})
export type PlausibleQuery = z.infer<typeof plausibleQuerySchema>

const metricValue = z.union([
  z.number(),
  z.null(),
  z.object({ value: z.number(), currency: z.string(), short: z.string(), long: z.string() }).describe('Revenue'),
])

const resultRow = z.object({
  metrics: z.array(metricValue),
  dimensions: z.array(z.string()),
})

export const plausibleAnswerSchema = z.object({
  results: z.array(
    resultRow.extend({
      comparison: resultRow
        .extend({ change: z.array(z.number().nullable()).describe('Percent change; bounce_rate the difference in points') })
        .optional(),
    }),
  ),
  meta: z.object({
    imports_included: z.boolean().optional(),
    imports_skip_reason: z.string().optional(),
    imports_warning: z.string().optional(),
    time_labels: z.array(z.string()).optional(),
    comparison_time_labels: z.array(z.string()).optional(),
    total_rows: z.number().int().optional(),
    metric_warnings: z.record(z.string(), z.object({ code: z.string(), warning: z.string() })).optional(),
  }),
  query: z.object({
    site_id: z.string(),
    metrics: z.array(z.string()),
    date_range: z.tuple([z.string(), z.string()]).describe("The resolved window, inclusive, in the site's timezone"),
    comparison_date_range: z.tuple([z.string(), z.string()]).optional(),
    dimensions: z.array(z.string()),
    filters: z.array(z.unknown()),
    order_by: z.array(z.tuple([z.string(), z.enum(['asc', 'desc'])])),
    include: z.record(z.string(), z.unknown()),
    pagination: z.object({ limit: z.number().int(), offset: z.number().int() }),
  }),
})
export type PlausibleAnswer = z.infer<typeof plausibleAnswerSchema>
