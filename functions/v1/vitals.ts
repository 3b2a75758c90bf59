import { z } from 'zod'
import { CONTRIBUTORS, FORM_FACTORS, VITAL_NAMES, VITAL_PERCENTILES, VITAL_TABLES } from '../../lib/query/compile/vitals'
import { reportParams } from '../../lib/query/parse'
import { vitals } from '../../lib/query/vitals'
import { defineEndpoint } from '../endpoint'
import { rangeViewSchema } from './answers'

const count = z.number().int().nonnegative()
const share = z.number().min(0).max(1)
const metricValue = z.number().nullable().describe('The percentile: milliseconds, CLS unitless; null without samples')
const score = z.number().min(0).max(100).nullable().describe('Experience score, 0 to 100; null without samples')

const vitalRow = z.object({
  samples: count.describe('Vital samples (one per metric per page load)'),
  visitors: count,
  score,
  ...(Object.fromEntries(VITAL_NAMES.map((n) => [n, metricValue])) as Record<(typeof VITAL_NAMES)[number], typeof metricValue>),
})

const tableRow = vitalRow.extend({ value: z.string() })

export const metricSchema = z.object({
  value: metricValue,
  samples: count,
  good: share.describe('Share of samples at or under the good threshold'),
  needsImprovement: share,
  poor: share.describe('Share of samples over the poor threshold'),
  thresholds: z.object({ good: z.number(), poor: z.number() }),
})

export const contributorSchema = z.object({
  target: z.string().describe('The element selector, or the script URL'),
  samples: count,
  share: share.describe("Of the metric's samples that name a contributor of this kind"),
  value: z.number().describe('The metric at the percentile over these samples'),
  effect: z.number().describe("value minus the metric's percentile over all samples of the window: above 0 is worse than typical"),
})

const tableNames = Object.keys(VITAL_TABLES) as (keyof typeof VITAL_TABLES)[]
const contributorKinds = Object.keys(CONTRIBUTORS) as (keyof typeof CONTRIBUTORS)[]

export const vitalEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/vitals',
    scope: 'read',
    tool: 'get_vitals',
    summary: 'Real-user Core Web Vitals (LCP, INP, CLS, FCP, TTFB) at a percentile, with web.dev bands, an experience score, a daily trend and tables.',
    description:
      'metrics: each metric at the percentile (default 75; exact, linear between ranks) with its samples and the shares that are good, need improvement or are poor by the web.dev thresholds (LCP 2500/4000 ms, INP 200/500 ms, CLS 0.1/0.25, FCP 1800/3000 ms, TTFB 800/1800 ms). summary.score: the experience score, 0-100 (per metric 100 for a good sample and 50 for one that needs improvement, averaged; weighted LCP 30%, INP 30%, CLS 25%, FCP 10%, TTFB 5% over the metrics with samples). trend: per site-local day. tables: per page, country, device, browser and OS, most samples first, at most limit. form_factor=phone|desktop keeps mobile or desktop devices. attribution=1 adds contributors from the sampled attribution build: largest-paint elements, layout-shift sources, blocking scripts and slow interaction targets, each with its share and effect. Shares are fractions from 0 to 1. A site that reads only ga4 answers available: false.',
    params: reportParams.extend({
      percentile: z.enum(Object.keys(VITAL_PERCENTILES) as [keyof typeof VITAL_PERCENTILES]).default('75').describe('50, 75, 90 or 99'),
      form_factor: z.enum(Object.keys(FORM_FACTORS) as [keyof typeof FORM_FACTORS]).optional().describe('phone or desktop'),
      attribution: z.enum(['0', '1']).optional().describe('1: add the contributors behind the metrics'),
    }),
    response: z.object({
      available: z.boolean().describe('false for a site that reads only ga4: the collector alone records vitals'),
      range: rangeViewSchema.optional(),
      percentile: z.number().int(),
      formFactor: z.enum(Object.keys(FORM_FACTORS) as [keyof typeof FORM_FACTORS]).nullable(),
      summary: vitalRow.describe('The window: samples, visitors, experience score and each metric'),
      metrics: z.object(Object.fromEntries(VITAL_NAMES.map((n) => [n, metricSchema])) as Record<(typeof VITAL_NAMES)[number], typeof metricSchema>),
      trend: z.array(vitalRow.extend({ date: z.string().describe('Site-local day, YYYY-MM-DD') })).describe('Every day of the window, oldest first'),
      tables: z.object(Object.fromEntries(tableNames.map((t) => [t, z.array(tableRow)])) as Record<(typeof tableNames)[number], z.ZodArray<typeof tableRow>>),
      contributors: z
        .object(Object.fromEntries(contributorKinds.map((k) => [k, z.array(contributorSchema)])) as Record<(typeof contributorKinds)[number], z.ZodArray<typeof contributorSchema>>)
        .optional()
        .describe('attribution=1: most samples first, at most limit each'),
    }),
    async handler(ctx, { params }) {
      return vitals(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
