import { z } from 'zod'
import { CONTRIBUTORS, FORM_FACTORS, VITAL_NAMES, VITAL_PERCENTILES, VITAL_TABLES } from '../../lib/reports/query/compile/vitals'
import { reportParams } from '../../lib/reports/query/parse'
import { vitalsWithFieldData } from '../../lib/insights/vitals'
import { defineEndpoint } from '../endpoint'
import { compareParams } from '../../lib/reports/query/compare'
import { changesSchema, comparisonSchema, rangeViewSchema, sourceSchema } from './report-schemas'

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

const formFactor = z.enum(Object.keys(FORM_FACTORS) as [keyof typeof FORM_FACTORS])

const cruxMetricSchema = z
  .object({
    p75: z.number().nullable().describe('The 75th percentile of page loads: milliseconds, CLS unitless'),
    good: share.describe('Share of page loads in the good bin (the same thresholds as ours)'),
    needsImprovement: share,
    poor: share,
  })
  .nullable()
  .describe('null when the dataset has no data for this metric')

const cruxOrigin = {
  origin: z.string().describe("The origin asked: https:// and the site's domain"),
  formFactor: formFactor.nullable().describe("form_factor as asked (the dataset's PHONE or DESKTOP); null for every form factor"),
}

export const cruxSchema = z
  .discriminatedUnion('available', [
    z.object({
      available: z.literal(true),
      ...cruxOrigin,
      collectionPeriod: z
        .object({ firstDate: z.string(), lastDate: z.string() })
        .describe('The days the dataset collected over, YYYY-MM-DD (28 days)'),
      metrics: z.object(
        Object.fromEntries(VITAL_NAMES.map((n) => [n, cruxMetricSchema])) as Record<(typeof VITAL_NAMES)[number], typeof cruxMetricSchema>,
      ),
    }),
    z.object({
      available: z.literal(false),
      ...cruxOrigin,
      reason: z
        .string()
        .describe(
          'Why there is no field data: no API key on this server, no data for this origin, the key refused, rate limited, or the service did not answer',
        ),
    }),
  ])
  .describe("crux=1: Chrome UX Report field data of the site's origin (Chrome users, last 28 days), cached 12 hours")

const tableNames = Object.keys(VITAL_TABLES) as (keyof typeof VITAL_TABLES)[]
const contributorKinds = Object.keys(CONTRIBUTORS) as (keyof typeof CONTRIBUTORS)[]

export const vitalEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/vitals',
    scope: 'read',
    tool: 'get_vitals',
    summary:
      'Real-user Core Web Vitals (LCP, INP, CLS, FCP, TTFB) at a percentile, with web.dev bands, an experience score, a daily trend and tables.',
    description:
      "metrics: each metric at the percentile (default 75; exact, linear between ranks) with its samples and the shares that are good, need improvement or are poor by the web.dev thresholds (LCP 2500/4000 ms, INP 200/500 ms, CLS 0.1/0.25, FCP 1800/3000 ms, TTFB 800/1800 ms). summary.score: the experience score, 0-100 (per metric 100 for a good sample and 50 for one that needs improvement, averaged; weighted LCP 30%, INP 30%, CLS 25%, FCP 10%, TTFB 5% over the metrics with samples). trend: per site-local day. tables: per page, country, device, browser and OS, most samples first, at most limit. form_factor=phone|desktop keeps mobile or desktop devices. attribution=1 adds contributors from the sampled attribution build: largest-paint elements, layout-shift sources, blocking scripts and slow interaction targets, each with its share and effect. crux=1 adds crux: the Chrome UX Report field data of the site's origin (p75 and the shares of page loads per band for each metric, over its last 28 days), or available: false with the reason (no API key on this server, no data for the origin, ...); the rest of the answer does not depend on it. Shares are fractions from 0 to 1. compare=previous_period|year_over_year|custom adds comparison: the summary of the comparison window and its change (docs: Comparisons). A site that reads only ga4 answers available: false.",
    params: reportParams.extend(compareParams).extend({
      percentile: z
        .enum(Object.keys(VITAL_PERCENTILES) as [keyof typeof VITAL_PERCENTILES])
        .default('75')
        .describe('50, 75, 90 or 99'),
      form_factor: z
        .enum(Object.keys(FORM_FACTORS) as [keyof typeof FORM_FACTORS])
        .optional()
        .describe('phone or desktop'),
      attribution: z.enum(['0', '1']).optional().describe('1: add the contributors behind the metrics'),
      crux: z.enum(['0', '1']).optional().describe("1: add field data of the site's origin from the Chrome UX Report"),
    }),
    response: z.object({
      source: sourceSchema,
      available: z.boolean().describe('false for a site that reads only ga4: the collector alone records vitals'),
      range: rangeViewSchema.optional(),
      percentile: z.number().int(),
      formFactor: formFactor.nullable(),
      summary: vitalRow.describe('The window: samples, visitors, experience score and each metric'),
      comparison: comparisonSchema
        .extend({ summary: vitalRow, change: changesSchema(['samples', 'visitors', 'score', ...VITAL_NAMES]) })
        .optional(),
      metrics: z.object(
        Object.fromEntries(VITAL_NAMES.map((n) => [n, metricSchema])) as Record<(typeof VITAL_NAMES)[number], typeof metricSchema>,
      ),
      trend: z
        .array(vitalRow.extend({ date: z.string().describe('Site-local day, YYYY-MM-DD') }))
        .describe('Every day of the window, oldest first'),
      tables: z.object(
        Object.fromEntries(tableNames.map((t) => [t, z.array(tableRow)])) as Record<
          (typeof tableNames)[number],
          z.ZodArray<typeof tableRow>
        >,
      ),
      contributors: z
        .object(
          Object.fromEntries(contributorKinds.map((k) => [k, z.array(contributorSchema)])) as Record<
            (typeof contributorKinds)[number],
            z.ZodArray<typeof contributorSchema>
          >,
        )
        .optional()
        .describe('attribution=1: most samples first, at most limit each'),
      crux: cruxSchema.optional(),
    }),
    async handler(ctx, { params }) {
      return vitalsWithFieldData(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
