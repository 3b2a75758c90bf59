import { z } from 'zod'
import { RANGES } from '../../lib/dimensions'
import { limitParam, reportParams } from '../../lib/query/parse'
import { siteRefSchema } from '../../lib/sites'
import { ANNOTATION_KINDS } from '../../lib/store'
import { anomalies } from '../../lib/why/anomalies'
import { decay } from '../../lib/why/decay'
import { launches } from '../../lib/why/launches'
import { markers } from '../../lib/why/markers'
import { attachSpikeSource, spikes } from '../../lib/why/spikes'
import { defineEndpoint } from '../endpoint'
import { rangeViewSchema } from './answers'

/** Why traffic changed: markers, page movers, spikes, fading pages and launches (docs/traffic-changes.md). */

const count = z.number().int().nonnegative()
const fraction = z.number().nullable()
const available = z.boolean().describe('false for a site without the standalone source: these reads count the collector’s own events')
const windowParams = {
  site_id: siteRefSchema,
  range: z.enum(RANGES).default('30d').describe('Named range, resolved in the site timezone; custom needs from and to'),
  from: z.string().optional().describe('YYYY-MM-DD, with range=custom'),
  to: z.string().optional().describe('YYYY-MM-DD, with range=custom (included)'),
}
const day = z.string().describe('YYYY-MM-DD, site-local')
const localTime = z.string().describe('ISO 8601 with the site offset')

const spikeSourceSchema = z
  .object({
    dimension: z.enum(['utm_campaign', 'source', 'channel']).describe('What the value is: a UTM campaign, a referring source (as the source filter names it) or a channel'),
    value: z.string(),
    referrerUrl: z.string().nullable().describe('dimension source: its most frequent full referrer in the spike'),
    visitors: count.describe('Its visitors in the spike, summed over the spike’s buckets'),
    expected: z.number().describe('Its mean visitors in the baseline buckets, summed over the spike’s buckets'),
    excess: z.number(),
    share: z.number().describe('Its excess over the spike’s excess, 0 to 1: the confidence that it caused the spike'),
  })
  .nullable()

const anomalyParams = reportParams.extend({ range: z.enum(RANGES).default('7d').describe('Named range, resolved in the site timezone (default 7d); custom needs from and to') })

export const whyEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/markers',
    scope: 'read',
    tool: 'get_markers',
    summary: 'Everything flagged on the traffic chart in the window, grouped by kind: annotations and announced search-engine ranking updates.',
    description:
      'Honours range; not source-scoped. annotations are the site’s chart markers placed in the window, oldest first (at most 500). algorithmUpdates are ranking updates announced by major search engines whose rollout overlaps the window, each with the page that announced it; end is null while a rollout is under way.',
    params: z.object(windowParams),
    response: z.object({
      range: rangeViewSchema,
      counts: z.object({ annotations: count, algorithmUpdates: count }),
      markers: z.object({
        annotations: z.array(z.object({ id: z.uuid(), at: z.string().describe('ISO 8601, UTC'), kind: z.enum(ANNOTATION_KINDS), title: z.string(), body: z.string().nullable(), url: z.string().nullable() })),
        algorithmUpdates: z.array(z.object({ engine: z.string(), name: z.string(), kind: z.string(), start: z.string().describe('YYYY-MM-DD'), end: z.string().nullable().describe('YYYY-MM-DD'), source: z.string() })),
      }),
    }),
    async handler(ctx, { params }) {
      return markers(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/anomalies',
    scope: 'read',
    tool: 'get_anomalies',
    summary: 'Pages whose visits rose, fell, appeared or went quiet against the preceding period of the same length, largest move first.',
    description:
      'Default range 7d; filters honoured. A page counts its visits with a pageview of it. Listed only with at least 20 visits in one of the two periods and a move of at least 10 visits and 25% (appeared and went_quiet are 100%). change is current minus previous; relativeChange is change over previous (null when it appeared); impact is change over the site’s previous visits (how far this page alone moved the site’s total). Most moved first, at most limit.',
    params: anomalyParams,
    response: z.object({
      available,
      range: rangeViewSchema,
      previousRange: rangeViewSchema,
      rule: z.object({ minVisits: count, minChange: count, minRelativeChange: z.number() }),
      site: z.object({ current: count, previous: count, change: z.number().int(), relativeChange: fraction }),
      pages: z.array(
        z.object({
          path: z.string(),
          status: z.enum(['rose', 'fell', 'appeared', 'went_quiet']),
          current: count,
          previous: count,
          change: z.number().int(),
          relativeChange: fraction,
          impact: fraction,
        }),
      ),
    }),
    async handler(ctx, { params }) {
      return anomalies(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/spikes',
    scope: 'read',
    tool: 'get_spikes',
    summary: 'Hours (or days) whose visitors were far above the site’s usual for that hour of the week, with the source that brought the excess.',
    description:
      'Baseline: the same site-local hour (interval=day: day) in each of the 8 weeks before; a spike is at least 5 robust deviations (1.4826 × median absolute deviation, at least √median and 1) and at least 10 visitors (30 a day) over the median. Consecutive spiking buckets are one spike; newest first, at most limit. id is stable (site and start). source is the UTM campaign, referring source or channel with the largest excess over its baseline mean, the most specific one that holds at least half of the spike’s excess; attached is a source named by hand with POST.',
    params: z.object({ ...windowParams, interval: z.enum(['hour', 'day']).default('hour').describe('Bucket size: hour (default) or day'), limit: limitParam(1000, 100) }),
    response: z.object({
      available,
      range: rangeViewSchema,
      rule: z.object({ interval: z.enum(['hour', 'day']), baselineWeeks: count, k: z.number(), minExcess: count }),
      spikes: z.array(
        z.object({
          id: z.string(),
          start: localTime,
          end: localTime.describe('Exclusive end, ISO 8601 with the site offset'),
          visitors: count.describe('Summed over the spike’s buckets'),
          expected: z.number().describe('The baseline medians, summed over the spike’s buckets'),
          excess: z.number(),
          peak: z.object({ start: localTime, visitors: count, expected: z.number() }),
          source: spikeSourceSchema,
          attached: z.object({ annotationId: z.uuid(), title: z.string(), url: z.string().nullable() }).nullable(),
        }),
      ),
    }),
    async handler(ctx, { params }) {
      return spikes(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/spikes',
    scope: 'write',
    tool: 'attach_spike_source',
    summary: 'Names the source of a spike by hand; kept as a spike_source annotation at the spike’s start.',
    description: 'spike_id is an id from GET /api/v1/spikes of this site; a spike that is not found is 404. title (at most 200 characters) and url (http or https) describe the source.',
    body: z.strictObject({
      site_id: siteRefSchema,
      spike_id: z.string().min(1, 'required').max(64),
      url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2000),
      title: z.string().trim().min(1, 'required').max(200, 'at most 200 characters'),
    }),
    status: 201,
    response: z.object({
      spikeId: z.string(),
      annotation: z.object({ id: z.uuid(), siteId: z.uuid(), title: z.string(), at: z.string(), kind: z.enum(ANNOTATION_KINDS), body: z.string().nullable(), url: z.string().nullable(), createdAt: z.string() }),
    }),
    async handler(ctx, { body }) {
      return attachSpikeSource(ctx.services, await ctx.site(body.site_id), body)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/decay',
    scope: 'read',
    tool: 'get_decay',
    summary: 'Pages whose traffic is fading: their best 28 days of the last year against the last 28 days, adjusted for the whole site, with a diagnosis.',
    description:
      'The whole site’s current state; takes no range. Windows are whole site-local days: current is the 28 days ending yesterday; a page’s peak is its best 28 consecutive days in the 365 before today. Listed when the peak had at least 30 visits, the current 28 days are at most 70% of it, and at most 75% once the site’s own change over the same time is taken out (adjustedChange ≤ -0.25). diagnosis names the channel most of the lost visits came from (lost_search, lost_referral, lost_social, lost_ai, lost_email, lost_direct, lost_paid, lost_other; no_visits when none are left), its confidence is that channel’s share of the loss, and evidence lists the channels that lost most. Most visits lost first.',
    params: z.object({ site_id: siteRefSchema, limit: limitParam(1000, 100) }),
    response: z.object({
      available,
      timezone: z.string(),
      windows: z.object({ current: z.object({ from: day, to: day.describe('Included') }), lookback: z.object({ from: day, to: day }) }),
      rule: z.object({ windowDays: count, lookbackDays: count, minPeakVisits: count, minFall: z.number(), minAdjustedFall: z.number() }),
      site: z.object({ current: count, peak: count, peakFrom: day.nullable(), peakTo: day.nullable(), change: fraction }),
      pages: z.array(
        z.object({
          path: z.string(),
          peak: count,
          peakFrom: day,
          peakTo: day,
          current: count,
          change: z.number().describe('current over peak, minus 1'),
          siteChange: fraction.describe('The site’s visits now over its visits in this page’s peak window, minus 1'),
          adjustedChange: fraction.describe('The page’s change with the site’s taken out: (current/peak) / (1 + siteChange) − 1'),
          lost: count,
          diagnosis: z.object({
            kind: z.string(),
            confidence: z.number().describe('0 to 1'),
            evidence: z.array(z.object({ kind: z.literal('channel_loss'), channel: z.string(), peak: count, current: count, lost: z.number().int(), share: z.number() })),
          }),
        }),
      ),
    }),
    async handler(ctx, { params }) {
      return decay(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/pages/launches',
    scope: 'read',
    tool: 'get_page_launches',
    summary: 'Pages that went live in the window, each banded over, at or under the median of the pages launched with it, and the cohort’s traffic shape.',
    description:
      'A page goes live with its first pageview. measure=launch (default) counts each page’s visits over its first 30 site-local days (fewer while it is younger: measuredDays) and compares it with the median of the cohort’s pages at least as old over as many first days; measure=30d counts every page over the same last 30 days and compares with the cohort median. band is at within ±20% of that median. cohort.shape is the median visits on each day since launch (day 0 is the launch day) over the pages that old. Most visits first, at most limit.',
    params: z.object({ ...windowParams, measure: z.enum(['launch', '30d']).default('launch').describe('launch: first 30 days of each page; 30d: one shared window, the last 30 days'), limit: limitParam(1000, 100) }),
    response: z.object({
      available,
      range: rangeViewSchema,
      measure: z.enum(['launch', '30d']),
      rule: z.object({ days: count, band: z.number() }),
      sharedWindow: z.object({ from: day, to: day }).nullable().describe('measure=30d: the window every page is counted over'),
      cohort: z.object({
        pages: count,
        median: z.number().nullable().describe('launch: median first-30-day visits of the pages 30 days old or more (null when none is); 30d: median visits in the shared window'),
        shape: z.array(z.object({ day: count, medianVisits: z.number(), pages: count })),
      }),
      pages: z.array(
        z.object({
          path: z.string(),
          launchedAt: localTime,
          measuredDays: count,
          complete: z.boolean().describe('Its first 30 days are over'),
          visits: count,
          cohortMedian: z.number().nullable(),
          band: z.enum(['over', 'at', 'under']).nullable(),
          vsMedian: fraction.describe('visits over cohortMedian'),
        }),
      ),
    }),
    async handler(ctx, { params }) {
      return launches(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]

