import { z } from 'zod'
import { CRAWLER_PURPOSES } from '../../lib/ingest/ai-assistants'
import { CRAWLER_SELECTIONS } from '../../lib/reports/ai/compile'
import { aiVisibility } from '../../lib/reports/ai/visibility'
import { reportParams } from '../../lib/reports/query/parse'
import { defineEndpoint } from '../endpoint'
import { rangeViewSchema, sourceSchema } from './report-schemas'

const count = z.number().int().nonnegative()
const ratio = z.number().nullable().describe('crawls / visits, 2 decimals; null without visits')
const purposes = z.object({ training: count, search: count, user: count }).describe('Crawls by purpose')
const page = z.object({ path: z.string(), crawls: count, verifiedCrawls: count, purposes, visits: count, ratio })

export const aiEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/ai',
    scope: 'read',
    tool: 'get_ai_visibility',
    summary: 'Per AI company: crawler hits by purpose, assistant visits, crawls per visit; by page and day.',
    description:
      'Crawls are bot hits of AI crawlers (training, search, user: fetched for one person’s question), verifiedCrawls those whose address passed reverse DNS; crawlers=verified|claimed counts only one kind. Visits are the AI assistants channel, each on the first page it viewed. ratio = crawls per visit. filters: path, hostname, country only. company: one company, by id (openai, anthropic, perplexity, google, ...: docs/ai-visibility.md) or other.',
    params: reportParams.extend({
      company: z.string().optional(),
      crawlers: z.enum(CRAWLER_SELECTIONS, { message: 'must be all, verified or claimed' }).optional(),
    }),
    response: z.object({
      source: sourceSchema,
      available: z.boolean().describe('false for a site that reads only ga4'),
      range: rangeViewSchema.optional(),
      totals: z.object({ crawls: count, verifiedCrawls: count, purposes, visits: count, ratio }).optional(),
      companies: z.array(
        z.object({
          id: z.string(),
          name: z.string(),
          assistants: z.array(z.string()),
          crawls: count,
          verifiedCrawls: count,
          purposes,
          crawlers: z.array(z.object({ name: z.string(), purpose: z.enum(CRAWLER_PURPOSES), crawls: count, verifiedCrawls: count })),
          visits: count,
          ratio,
        }),
      ),
      series: z.array(z.object({ timestamp: z.string(), crawls: count, verifiedCrawls: count, visits: count, ratio })),
      pages: z.object({
        crawled: z.array(page).describe('Most crawls first'),
        crawledNotVisited: z.array(page).describe('Crawled, no assistant visit; most crawls first'),
        mostVisited: z.array(page).describe('Most assistant visits first'),
      }),
    }),
    async handler(ctx, { params }) {
      return aiVisibility(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
