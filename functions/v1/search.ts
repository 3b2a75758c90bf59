import { z } from 'zod'
import { RANGES } from '../../lib/reports/dimensions'
import { limitParam, reportParams } from '../../lib/reports/query/parse'
import { searchReport, seoReport } from '../../lib/insights/search/search'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'
import { compareParams } from '../../lib/reports/query/compare'
import { changesSchema, comparisonSchema, rangeViewSchema, sourceSchema } from './report-schemas'
import { changeEvidenceSchema } from './why'
import { lostQueriesSchema, metrics, searchChangeSchema, searchDiagnosisSchema, searchMetricsSchema } from './search-schemas'

/** Search Console: the search read and the rankings report (docs/api.md, Search). */

const count = z.number().int().nonnegative()
const day = z.string().describe('YYYY-MM-DD')

const windowParams = {
  site_id: siteRefSchema,
  range: z.enum(RANGES).default('30d').describe('Named range, resolved in the site timezone; custom needs from and to'),
  from: z.string().optional().describe('YYYY-MM-DD, with range=custom'),
  to: z.string().optional().describe('YYYY-MM-DD, with range=custom (included)'),
  filters: z
    .string()
    .optional()
    .describe(
      'URL-encoded JSON array of {dimension: path|entry_page|country|device, operator: is|is_not|contains|matches, value: [strings]}',
    ),
}
const notConnected = { connected: z.boolean().describe('false: the site has no Search Console property bound; nothing else is answered') }
const siteUrl = z.string().nullable().describe('The bound property')

export const searchEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/search',
    scope: 'read',
    tool: 'get_search_console',
    summary: 'Google Search Console: clicks, impressions, ctr, position, daily series, top queries and pages, vs the previous window.',
    description:
      'totals come from Search Console’s daily totals, which include anonymized queries; queries and pages come from its query rows, which do not, so they add up to less (with a path or query, totals come from the rows too). position is impression-weighted. dimension=query|page with value= gives that query’s or landing page’s trend, with its pages (a query) or queries (a page). Filters: path or entry_page (the landing page), country (ISO 3166-1 alpha-3, as Search Console names it), device (Desktop, Mobile, Tablet). Days are Search Console’s dates. Not source-scoped. previous and change are always against the window just before; compare=previous_period|year_over_year|custom adds comparison: the totals of that window and their change (docs: Comparisons).',
    params: z.object({
      ...windowParams,
      ...compareParams,
      dimension: z.enum(['query', 'page']).optional(),
      value: z.string().min(1, 'required').max(2000).optional(),
      limit: limitParam(1000, 10),
    }),
    response: z.object({
      ...notConnected,
      siteUrl,
      range: rangeViewSchema.optional(),
      totals: searchMetricsSchema.optional(),
      previous: searchMetricsSchema.optional(),
      change: searchChangeSchema.optional(),
      comparison: comparisonSchema
        .extend({ totals: searchMetricsSchema, change: changesSchema(['clicks', 'impressions', 'ctr', 'position']) })
        .optional(),
      series: z.array(z.object({ date: day, ...metrics })).optional(),
      queries: z
        .array(z.object({ query: z.string(), ...metrics, change: searchChangeSchema }))
        .optional()
        .describe('Most clicks first, at most limit'),
      pages: z
        .array(z.object({ path: z.string(), ...metrics, change: searchChangeSchema }))
        .optional()
        .describe('Landing pages, most clicks first, at most limit'),
    }),
    async handler(ctx, { params }) {
      return searchReport(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/seo',
    scope: 'read',
    tool: 'get_seo',
    summary: 'Rankings: each Google landing page against the previous window, most clicks lost first, diagnosed.',
    description:
      'diagnosis, by the rules in the docs over per-day rates of Search Console’s query rows (not source-scoped; anonymized queries are not in them): gained; lost_queries (queries that brought half its clicks show it no more, named); rank_drop (position worse by 2 or more, impressions at least 75%); ctr_drop (same position, ctr down a quarter or more); demand_drop (same position, impressions under 75%); fell (a loss none explains); stable (under 10 clicks, or clicks moved under 20%). candidates: the page’s title, meta description, h1, canonical, noindex, status, redirect and removal changes detected in the window or the 7 days before; searchEngineUpdates: ranking updates whose rollout overlaps the window.',
    params: z.object({
      site_id: windowParams.site_id,
      range: windowParams.range,
      from: windowParams.from,
      to: windowParams.to,
      source: reportParams.shape.source,
      limit: limitParam(1000, 100),
    }),
    response: z.object({
      source: sourceSchema.describe('The source named (default the primary one); Search Console is read whichever it is'),
      ...notConnected,
      siteUrl,
      range: rangeViewSchema.optional(),
      rule: z.record(z.string(), z.number()).optional(),
      searchEngineUpdates: z
        .array(z.object({ engine: z.string(), name: z.string(), kind: z.string(), start: day, end: day.nullable(), source: z.string() }))
        .optional(),
      pages: z
        .array(
          z.object({
            path: z.string(),
            ...metrics,
            previous: searchMetricsSchema,
            change: searchChangeSchema,
            lostClicks: count,
            diagnosis: searchDiagnosisSchema,
            lostQueries: lostQueriesSchema,
            candidates: z.array(changeEvidenceSchema),
          }),
        )
        .optional(),
    }),
    async handler(ctx, { params }) {
      return seoReport(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
