import { z } from 'zod'
import { SEARCH_DIAGNOSES } from '../../lib/insights/search/search'

/** Pieces of the Search Console answers: the search read, seo, and the search evidence of page detail, anomalies and decay. */

const count = z.number().int().nonnegative()
export const metrics = {
  clicks: count,
  impressions: count,
  ctr: z.number().nullable().describe('clicks / impressions, 0 to 1; null without impressions'),
  position: z.number().nullable().describe('Impression-weighted mean position (1 is the top); null without impressions'),
}
export const searchMetricsSchema = z.object(metrics)
export const searchChangeSchema = z
  .object({
    clicks: z.number().int(),
    impressions: z.number().int(),
    ctr: z.number().nullable(),
    position: z.number().nullable().describe('Positive: a worse position'),
  })
  .describe('Current minus previous')
export const searchDiagnosisSchema = z.enum(SEARCH_DIAGNOSES)
export const lostQueriesSchema = z
  .array(z.object({ query: z.string(), previousClicks: count }))
  .describe('Queries that brought clicks before and no impression now, most clicks first (at most 5)')
/** A page's search evidence beside anomalies and decay; null when the site has no Search Console data for it. */
export const searchEvidenceSchema = z
  .object({
    diagnosis: searchDiagnosisSchema,
    current: searchMetricsSchema,
    previous: searchMetricsSchema,
    change: searchChangeSchema,
    lostQueries: lostQueriesSchema,
  })
  .nullable()
