import { z } from 'zod'
import { limitParam, reportParams } from '../../lib/reports/query/parse'
import { breakdown, exportAll, realtime, series, totals } from '../../lib/reports/query/reports'
import { ga4Events } from '../../lib/reports/query/ga4-events'
import { defineEndpoint } from '../endpoint'
import { TOTALS_FIGURES, compareParams } from '../../lib/reports/query/compare'
import {
  breakdownRowSchema,
  changesSchema,
  comparedBreakdownRowSchema,
  comparedSeriesSchema,
  comparisonSchema,
  rangeViewSchema,
  samplingSchema,
  seriesSchema,
  sourceSchema,
  totalsSchema,
} from './report-schemas'

const METRICS_NOTE =
  'visitors, visits and pageviews are integer counts; bounceRate is a fraction from 0 to 1 (not a percentage); avgDuration is seconds; viewsPerVisit is pageviews per visit; events counts custom events only.'

const COMPARE_NOTE =
  'compare=previous_period|year_over_year|custom (compare_from, compare_to) adds the comparison window and the change (docs: Comparisons).'

const GA4_NOTE =
  "With source=ga4 the numbers come from the imported GA4 property, its days read as the site's local days: visitors is totalUsers, and over several days (or several values one filter matches) it is the sum of the daily values, not distinct people; visits is sessions; pageviews is screenPageViews; bounceRate is (sessions - engagedSessions) / sessions; avgDuration is userEngagementDuration / sessions in seconds; viewsPerVisit is screenPageViews / sessions; events is eventCount of events other than GA4's automatic ones, null where the read's imported dataset cannot tell them apart. A dimension GA4 has no field for, and filters or a property that GA4 reports in different datasets (for example country with path, or any filter with hour buckets), are a 400 naming both."

export const reportEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/stats',
    scope: 'read',
    tool: 'get_stats',
    summary: 'Totals for a range: visitors, visits, pageviews, bounce rate, visit duration, views per visit, custom events.',
    description: `Aggregate numbers for one site and range (default 30d, in the site timezone). ${METRICS_NOTE} range=realtime counts the last 5 minutes. filters narrow it (see list_dimensions). ${COMPARE_NOTE} ${GA4_NOTE}`,
    params: reportParams.extend(compareParams),
    response: z.object({
      source: sourceSchema,
      range: rangeViewSchema,
      sampling: samplingSchema,
      totals: totalsSchema,
      comparison: comparisonSchema.extend({ totals: totalsSchema, change: changesSchema(TOTALS_FIGURES) }).optional(),
    }),
    async handler(ctx, { params }) {
      return totals(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/timeseries',
    scope: 'read',
    tool: 'get_timeseries',
    summary: 'Visitors, visits and pageviews per bucket; every bucket of the window, empty ones zero.',
    description: `Buckets are minute (realtime: the last 30 minutes), hour (today, yesterday, one-day custom), day (up to 90 days) or month; each is labelled by its start as an ISO timestamp with the site offset. Counts are integers. ${COMPARE_NOTE} Buckets pair by position. ${GA4_NOTE} ga4 hour buckets come from GA4's dateHour, day and month buckets from its date.`,
    params: reportParams.extend(compareParams),
    response: z.object({
      source: sourceSchema,
      range: rangeViewSchema,
      sampling: samplingSchema,
      comparison: comparisonSchema
        .extend({ unpaired: seriesSchema.describe('Comparison buckets past the last bucket of the window (a 25-hour day)') })
        .optional(),
      series: comparedSeriesSchema,
    }),
    async handler(ctx, { params }) {
      return series(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/breakdown',
    scope: 'read',
    tool: 'get_breakdown',
    summary: 'Top values of one property (path, source, country, prop:<key>, goal, ...) with their metrics.',
    description: `Rows sorted by visitors, most first. property is any filter dimension, prop:<key> for a custom property, or goal (rows: visitors = unique converters, events = conversions, conversionRate 0-1, revenue where the goal has a currency). ${METRICS_NOTE} Rows of event, goal, interaction and prop: properties omit bounceRate and avgDuration. ${COMPARE_NOTE} ${GA4_NOTE}`,
    params: reportParams.extend(compareParams).extend({
      property: z
        .string({ message: 'required: the dimension to break down by' })
        .min(1, 'required')
        .max(200)
        .describe('Dimension to group by'),
    }),
    response: z.object({
      source: sourceSchema,
      range: rangeViewSchema,
      property: z.string(),
      sampling: samplingSchema,
      comparison: comparisonSchema.optional(),
      results: z.array(comparedBreakdownRowSchema),
    }),
    async handler(ctx, { params }) {
      return breakdown(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/export',
    scope: 'read',
    tool: 'export_report',
    summary: 'Totals, timeseries and every breakdown dimension for the range, up to 10,000 rows each.',
    description: `Everything at once for an offline copy. ${METRICS_NOTE} limit applies per dimension (default and maximum 10000). With source=ga4, breakdowns are the dimensions GA4 has a field for. ${GA4_NOTE}`,
    params: reportParams.extend({ limit: limitParam(10_000, 10_000) }),
    response: z.object({
      site: z.object({ id: z.string(), domain: z.string(), timezone: z.string() }),
      source: sourceSchema,
      range: rangeViewSchema,
      totals: totalsSchema,
      series: seriesSchema,
      breakdowns: z.record(z.string(), z.array(breakdownRowSchema)).describe('Rows per breakdown property'),
    }),
    async handler(ctx, { params }) {
      return exportAll(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/realtime',
    scope: 'read',
    tool: 'get_realtime',
    summary: 'Live: visitors in the last 5 minutes and 30 minutes, a minute series, active pages and sources.',
    description:
      'now counts the last 5 minutes (the same number as the public live count); halfHour the last 30. The series has 30 one-minute buckets. Pages and sources are over the last 5 minutes.',
    params: reportParams.omit({ range: true, from: true, to: true }),
    response: z.object({
      source: sourceSchema,
      range: rangeViewSchema
        .extend({
          windows: z.object({
            now: z.object({ from: z.string(), to: z.string() }).describe('The last 5 minutes: now, pages and sources'),
            halfHour: z.object({ from: z.string(), to: z.string() }).describe('The last 30 minutes: halfHour'),
          }),
        })
        .describe('from and to are the series (30 one-minute buckets); windows gives the two counted windows'),
      now: z.number().int().describe('Visitors in the last 5 minutes'),
      halfHour: z.number().int().describe('Visitors in the last 30 minutes'),
      series: seriesSchema,
      pages: z.array(breakdownRowSchema),
      sources: z.array(breakdownRowSchema),
    }),
    async handler(ctx, { params }) {
      return realtime(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/ga4-events',
    scope: 'read',
    tool: 'get_ga4_events',
    summary: 'Events of the imported GA4 property in the window with their count and users, most first.',
    description:
      "count is GA4's eventCount; users its totalUsers, which over several days is the sum of the daily values, not distinct people. GA4's automatic events (page_view, session_start, first_visit, user_engagement, scroll, click, file_download, form_start, form_submit, view_search_results, video_start, video_progress, video_complete) are listed only with builtin=1. Takes the common range, filters (event only) and limit. A site without the ga4 source answers available: false.",
    params: reportParams.extend({
      source: z.enum(['ga4']).optional().describe('ga4, the one source this read takes'),
      builtin: z.enum(['0', '1']).optional().describe('1 lists GA4 automatic events too'),
    }),
    response: z.object({
      available: z.boolean().describe('false for a site without the ga4 source'),
      source: z.literal('ga4'),
      range: rangeViewSchema.optional(),
      builtin: z.boolean(),
      events: z.array(
        z.object({
          name: z.string(),
          count: z.number().int().nonnegative().describe('eventCount'),
          users: z.number().int().nonnegative().describe('totalUsers, summed over the days'),
        }),
      ),
    }),
    async handler(ctx, { params }) {
      return ga4Events(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
