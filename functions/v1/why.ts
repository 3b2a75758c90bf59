import { z } from 'zod'
import { RANGES, SPIKE_DIMENSIONS } from '../../lib/reports/dimensions'
import { limitParam, reportParams } from '../../lib/reports/query/parse'
import { siteRefSchema } from '../../lib/sites/sites'
import { ANNOTATION_KINDS } from '../../lib/sites/definition-records'
import { anomalies } from '../../lib/insights/why/anomalies'
import { decay } from '../../lib/insights/why/decay'
import { launches } from '../../lib/insights/why/launches'
import { markers } from '../../lib/insights/why/markers'
import { pageDetail } from '../../lib/insights/why/page-detail'
import { attachSpikeSource, spikes } from '../../lib/insights/why/spikes'
import { defineEndpoint } from '../endpoint'
import { notAvailableSchema, rangeViewSchema, sourceSchema } from './report-schemas'
import { errorGroupSchema, errorSummarySchema } from './behaviour'
import { contributorSchema, metricSchema } from './vitals'
import { searchChangeSchema, searchDiagnosisSchema, searchEvidenceSchema, searchMetricsSchema } from './search-schemas'

/** Why traffic changed: markers, page movers, spikes, fading pages and launches (docs/traffic-changes.md). */

const count = z.number().int().nonnegative()
const fraction = z.number().nullable()
const available = z.boolean().describe('true: the read counts the source it names')
/** The source parameter of a source-aware read: the site's primary source by default. */
const sourceParam = reportParams.shape.source
/** The common filters, on reads that otherwise read their own windows (a goal keeps the visits that converted). */
const filtersParam = reportParams.shape.filters
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
    dimension: z
      .enum(SPIKE_DIMENSIONS.map((d) => d.name) as [string, ...string[]])
      .describe('What the value is: a UTM campaign, a referring source (as the source filter names it) or a channel'),
    value: z.string(),
    referrerUrl: z.string().nullable().describe('dimension source: its most frequent full referrer in the spike'),
    visitors: count.describe('Its visitors in the spike, summed over the spike’s buckets'),
    expected: z.number().describe('Its mean visitors in the baseline buckets, summed over the spike’s buckets'),
    excess: z.number(),
    share: z.number().describe('Its excess over the spike’s excess, 0 to 1: the confidence that it caused the spike'),
  })
  .nullable()

const anomalyParams = reportParams.extend({
  range: z.enum(RANGES).default('7d').describe('Named range, resolved in the site timezone (default 7d); custom needs from and to'),
  vitals: z.enum(['0', '1']).optional().describe('1: vitals regressions of each page against the preceding window instead of page movers'),
})

/** A link lost or gained (lib/reports/why/backlink-causes.ts). */
const backlinkEvidenceSchema = z.object({
  kind: z.enum(['backlink_lost', 'backlink_gained']),
  day: z.string().describe('The snapshot day (UTC) the event was found'),
  event: z.enum(['new', 'lost', 'regained']),
  reason: z.string().nullable(),
  from: z.string(),
  to: z.string(),
  domain: z.string(),
  anchor: z.string(),
  rel: z.string(),
  visits: count.describe('Visits the linking page sent in the 30 days before'),
  foundBy: z.string(),
})

export const changeEvidenceSchema = z.object({
  kind: z.enum(['page_change', 'site_change']),
  changeId: z.uuid(),
  detectedAt: z.string().describe('ISO 8601, UTC'),
  type: z.string().describe('The change type of GET /api/v1/changes'),
  category: z.string(),
  path: z.string().nullable().describe('null for a site change'),
  before: z.string(),
  after: z.string(),
  wordsAdded: count,
  wordsRemoved: count,
  pages: count.describe('Pages a site change spans; 1 for a page change'),
})

const sampled = z.object({ samples: count, value: z.number() })
export const vitalsRegressionSchema = z.object({
  path: z.string(),
  metric: z.enum(['LCP', 'INP', 'CLS', 'FCP', 'TTFB']),
  baseline: sampled.describe('The baseline window: samples and 75th percentile'),
  current: sampled,
  change: z.number().describe('current over baseline, minus 1'),
  band: z.enum(['needs_improvement', 'poor']).describe('The current percentile by the web.dev thresholds'),
  contributors: z
    .array(
      z.object({
        kind: z.string().describe('lcpElements, layoutShifts, blockingScripts or interactionTargets'),
        target: z.string(),
        samples: count,
        share: z.number(),
        baselineShare: z.number(),
        value: z.number(),
      }),
    )
    .describe('Attribution targets whose share of the samples grew most, likeliest cause first (at most 3)'),
})
const vitalsRuleSchema = z.object({ percentile: count, minSamples: count, minRatio: z.number(), leavesGood: z.boolean() })

export const whyEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/markers',
    scope: 'read',
    tool: 'get_markers',
    summary:
      'Everything flagged on the traffic chart in the window, by kind: annotations, ranking updates, page and site changes, vitals regressions.',
    description:
      'Honours range; not source-scoped. pageChanges and siteChanges are the crawler’s changes detected in the window; vitalsRegressions are pages whose vitals regressed against the window before (the anomalies vitals=1 rule). backlinks: new and lost links and referring domains per day. annotations are the site’s chart markers placed in the window, oldest first (at most 500). algorithmUpdates are ranking updates announced by major search engines whose rollout overlaps the window, each with the page that announced it; end is null while a rollout is under way.',
    params: z.object(windowParams),
    response: z.object({
      range: rangeViewSchema,
      counts: z.object({
        annotations: count,
        algorithmUpdates: count,
        pageChanges: count,
        siteChanges: count,
        vitalsRegressions: count,
        backlinks: count,
      }),
      markers: z.object({
        pageChanges: z
          .array(changeEvidenceSchema)
          .describe('The crawler’s page changes detected in the window, oldest first (at most 500)'),
        siteChanges: z
          .array(changeEvidenceSchema)
          .describe('Site-wide changes (robots.txt, sitemap, a change on most pages at once) in the window, oldest first'),
        vitalsRegressions: z
          .array(
            z.object({
              path: z.string(),
              metric: z.string(),
              baseline: z.number(),
              current: z.number(),
              change: z.number(),
              band: z.string(),
              contributor: z.object({ kind: z.string(), target: z.string() }).nullable(),
            }),
          )
          .describe(
            'Pages whose 75th percentile of a vital regressed against the window of equal length before (the anomalies vitals=1 rule)',
          ),
        annotations: z.array(
          z.object({
            id: z.uuid(),
            at: z.string().describe('ISO 8601, UTC'),
            kind: z.enum(ANNOTATION_KINDS),
            title: z.string(),
            body: z.string().nullable(),
            url: z.string().nullable(),
          }),
        ),
        backlinks: z
          .array(z.object({ day: z.string(), newLinks: count, lostLinks: count, newDomains: count, lostDomains: count }))
          .describe('Days (UTC) with new (or regained) and lost links and referring domains, from the daily backlink snapshots'),
        algorithmUpdates: z.array(
          z.object({
            engine: z.string(),
            name: z.string(),
            kind: z.string(),
            start: z.string().describe('YYYY-MM-DD'),
            end: z.string().nullable().describe('YYYY-MM-DD'),
            source: z.string(),
          }),
        ),
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
      'Default range 7d; filters honoured. vitals=1 lists vitals regressions instead (75th percentile against the window before, at least 20 samples in each, at least 1.2 times and no longer good, with the attribution targets behind each). A page counts its visits with a pageview of it. Listed only with at least 20 visits in one of the two periods and a move of at least 10 visits and 25% (appeared and went_quiet are 100%). change is current minus previous; relativeChange is change over previous (null when it appeared); impact is change over the site’s previous visits (how far this page alone moved the site’s total). Most moved first, at most limit. candidates: the crawler’s changes of the page detected in the window or the 7 days before, then the site-wide ones.',
    params: anomalyParams,
    response: z.object({
      source: sourceSchema,
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
          candidates: z
            .array(z.union([backlinkEvidenceSchema, changeEvidenceSchema]))
            .describe(
              'Links to this page lost (it fell) or gained (it rose) in the window or the 7 days before, most visits first; then crawler changes on this page detected then, then the site-wide ones, newest first within each',
            ),
          search: searchEvidenceSchema.describe(
            'A page that lost visits: Search Console over the same windows with the seo diagnosis; null otherwise or without Search Console',
          ),
        }),
      ),
      vitalsRule: vitalsRuleSchema.optional().describe('vitals=1: the regression rule'),
      regressions: z
        .array(vitalsRegressionSchema)
        .optional()
        .describe('vitals=1: regressions of the window against the preceding one, largest relative change first (pages is then empty)'),
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
    summary:
      'Hours (or days) whose visitors were far above the site’s usual for that hour of the week, with the source that brought the excess.',
    description:
      'Baseline: the same site-local hour (interval=day: day) in each of the 8 weeks before; a spike is at least 5 robust deviations (1.4826 × median absolute deviation, at least √median and 1) and at least 10 visitors (30 a day) over the median. Consecutive spiking buckets are one spike; newest first, at most limit. id is stable (site and start). source is the UTM campaign, referring source or channel with the largest excess over its baseline mean, the most specific one that holds at least half of the spike’s excess; attached is a source named by hand with POST.',
    params: z.object({
      ...windowParams,
      source: sourceParam,
      filters: filtersParam,
      interval: z.enum(['hour', 'day']).default('hour').describe('Bucket size: hour (default) or day'),
      limit: limitParam(1000, 100),
    }),
    response: z.object({
      source: sourceSchema,
      available,
      range: rangeViewSchema,
      notAvailable: notAvailableSchema,
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
    description:
      'spike_id is an id from GET /api/v1/spikes of this site; a spike that is not found is 404. title (at most 200 characters) and url (http or https) describe the source.',
    body: z.strictObject({
      site_id: siteRefSchema,
      spike_id: z.string().min(1, 'required').max(64),
      url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(2000),
      title: z.string().trim().min(1, 'required').max(200, 'at most 200 characters'),
    }),
    status: 201,
    response: z.object({
      spikeId: z.string(),
      annotation: z.object({
        id: z.uuid(),
        siteId: z.uuid(),
        title: z.string(),
        at: z.string(),
        kind: z.enum(ANNOTATION_KINDS),
        body: z.string().nullable(),
        url: z.string().nullable(),
        createdAt: z.string(),
      }),
    }),
    async handler(ctx, { body }) {
      return attachSpikeSource(ctx.services, await ctx.site(body.site_id), body)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/decay',
    scope: 'read',
    group: 'pages',
    tool: 'get_decay',
    summary: 'Fading pages: their best 28 days of the last year against the last 28, adjusted for the whole site, with a diagnosis.',
    description:
      'The whole site’s current state; takes no range. Windows are whole site-local days: current is the 28 days ending yesterday; a page’s peak is its best 28 consecutive days in the 365 before today. Listed when the peak had at least 30 visits, the current 28 days are at most 70% of it, and at most 75% once the site’s own change over the same time is taken out (adjustedChange ≤ -0.25). diagnosis is page_removed when the crawler last found the page removed (404 or 410), content_changed (confidence 0.6) when its title, h1 or text changed since the peak began, else names the channel most of the lost visits came from (lost_search, lost_referral, lost_social, lost_ai, lost_email, lost_direct, lost_paid, lost_other; no_visits when none are left), its confidence is that channel’s share of the loss, and evidence lists the channels that lost most. Most visits lost first.',
    params: z.object({ site_id: siteRefSchema, source: sourceParam, limit: limitParam(1000, 100) }),
    response: z.object({
      source: sourceSchema,
      available,
      notAvailable: notAvailableSchema,
      timezone: z.string(),
      windows: z.object({ current: z.object({ from: day, to: day.describe('Included') }), lookback: z.object({ from: day, to: day }) }),
      rule: z.object({
        windowDays: count,
        lookbackDays: count,
        minPeakVisits: count,
        minFall: z.number(),
        minAdjustedFall: z.number(),
        contentChangeConfidence: z.number(),
      }),
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
            evidence: z.array(
              z.object({
                kind: z.literal('channel_loss'),
                channel: z.string(),
                peak: count,
                current: count,
                lost: z.number().int(),
                share: z.number(),
              }),
            ),
          }),
          contentChanges: z
            .array(changeEvidenceSchema)
            .describe('Title, h1 and text changes the crawler detected since the peak began, oldest first'),
          refreshed: z.boolean().describe('A text change was detected after the peak’s last day'),
          search: searchEvidenceSchema.describe(
            'Search Console, peak window against the current 28 days, with the seo diagnosis: whether lost_search lost rank (rank_drop, lost_queries) or demand (demand_drop); null without Search Console data',
          ),
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
    group: 'pages',
    tool: 'get_page_launches',
    summary: 'Pages launched in the window, each banded over, at or under its launch cohort’s median, and the cohort’s traffic shape.',
    description:
      'A page goes live at the earlier of its first pageview and its first crawl. measure=launch (default) counts each page’s visits over its first 30 site-local days (fewer while it is younger: measuredDays) and compares it with the median of the cohort’s pages at least as old over as many first days; measure=30d counts every page over the same last 30 days and compares with the cohort median. band is at within ±20% of that median. cohort.shape is the median visits on each day since launch (day 0 is the launch day) over the pages that old. Most visits first, at most limit.',
    params: z.object({
      ...windowParams,
      source: sourceParam,
      filters: filtersParam,
      measure: z
        .enum(['launch', '30d'])
        .default('launch')
        .describe('launch: first 30 days of each page; 30d: one shared window, the last 30 days'),
      limit: limitParam(1000, 100),
    }),
    response: z.object({
      source: sourceSchema,
      available,
      range: rangeViewSchema,
      measure: z.enum(['launch', '30d']),
      rule: z.object({ days: count, band: z.number() }),
      sharedWindow: z.object({ from: day, to: day }).nullable().describe('measure=30d: the window every page is counted over'),
      cohort: z.object({
        pages: count,
        median: z
          .number()
          .nullable()
          .describe(
            'launch: median first-30-day visits of the pages 30 days old or more (null when none is); 30d: median visits in the shared window',
          ),
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
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/pages/detail',
    scope: 'read',
    group: 'pages',
    tool: 'get_page_detail',
    summary:
      'One page: traffic, drivers, why it last moved (ranked causes with evidence), engagement, first 30 days, changes, snapshots, errors, vitals.',
    description:
      'By path or page_id (the base64url of the path, as page.pageId gives it), not both; a page with no pageview and no crawl is 404. Honours range (default 30d). shift is the last significant shift of the daily visits (7 days before against up to 7 after, at least 30% and 10 visits); causes rank what explains it, most confident first: the page’s crawler changes detected from 7 days before to 2 days after, a source that lost or brought more than its share, a vitals regression and an error spike across the shift, Search Console’s search_rank_drop or search_demand_drop across a fall (with the queries as evidence), and site-wide changes (rules in the docs). search: the page’s ranking queries, connected: false without Search Console.',
    params: z.object({
      ...windowParams,
      source: sourceParam,
      filters: filtersParam,
      path: z.string().min(1, 'required').max(2000).optional().describe('The page’s path, starting with /'),
      page_id: z.string().min(1, 'required').max(2800).optional().describe('The page id (page.pageId): the base64url of its path'),
    }),
    response: z.object({
      source: sourceSchema,
      available,
      notAvailable: notAvailableSchema,
      range: rangeViewSchema,
      page: z.object({
        path: z.string(),
        pageId: z.string(),
        launchedAt: localTime.nullable().describe('The earlier of its first pageview and first crawl'),
        firstPageviewAt: localTime.nullable(),
        firstCrawledAt: localTime.nullable(),
      }),
      totals: z
        .object({ visits: count, visitors: count, pageviews: count })
        .describe('Summed over the days of the window (a visitor of two days counts twice)'),
      series: z.array(z.object({ date: day, visits: count, visitors: count, pageviews: count, errors: count })),
      drivers: z.object({
        sources: z.array(z.object({ value: z.string(), visits: count, share: z.number() })),
        channels: z.array(z.object({ value: z.string(), visits: count, share: z.number() })),
      }),
      shift: z
        .object({
          day: day,
          direction: z.enum(['up', 'down']),
          beforeDays: count,
          afterDays: count,
          before: z.number().describe('Mean visits a day before'),
          after: z.number(),
          change: fraction,
        })
        .nullable(),
      causes: z.array(
        z.object({
          kind: z.enum([
            'page_change',
            'site_change',
            'source_shift',
            'search_rank_drop',
            'search_demand_drop',
            'vitals_regression',
            'error_spike',
            'backlink_lost',
            'backlink_gained',
          ]),
          confidence: z.number().describe('0 to 1'),
          summary: z.string(),
          evidence: z.record(z.string(), z.unknown()),
        }),
      ),
      engagement: z.object({
        reports: count,
        scrollDepth: z.number().nullable().describe('Mean, percent'),
        timeOnPage: z.number().nullable().describe('Mean engaged seconds'),
      }),
      first30: z
        .object({
          from: day,
          days: count,
          complete: z.boolean(),
          visits: count,
          byDay: z.array(z.object({ day: count, date: day, visits: count })),
        })
        .nullable()
        .describe('Visits over the first 30 site-local days from launch'),
      changes: z.array(changeEvidenceSchema).describe('The page’s changes of the last 365 days, newest first (at most 100)'),
      snapshots: z.array(
        z.object({
          id: z.uuid(),
          fetchedAt: z.string(),
          status: count,
          title: z.string(),
          h1: z.string(),
          wordCount: count,
          contentHash: z.string(),
          removed: z.boolean(),
          error: z.string().nullable(),
        }),
      ),
      errors: z.object({ summary: errorSummarySchema, groups: z.array(errorGroupSchema) }),
      vitals: z.object({
        metrics: z.record(z.string(), metricSchema).describe('75th percentiles over the window'),
        bottlenecks: z.record(z.string(), z.array(contributorSchema)).describe('Attribution contributors by kind'),
        regressions: z.array(vitalsRegressionSchema).describe('Against the window of equal length before'),
      }),
      search: z
        .object({
          connected: z.boolean().describe('false: no Search Console property is bound; nothing else is answered'),
          siteUrl: z.string().optional(),
          totals: searchMetricsSchema.optional(),
          previous: searchMetricsSchema.optional(),
          change: searchChangeSchema.optional(),
          diagnosis: searchDiagnosisSchema.optional(),
          lostQueries: z.array(z.object({ query: z.string(), previousClicks: count })).optional(),
          queries: z
            .array(z.object({ query: z.string(), ...searchMetricsSchema.shape, change: searchChangeSchema }))
            .optional()
            .describe('Its ranking queries in the window, most clicks first (at most 50), against the previous window'),
        })
        .describe('Google Search Console for this landing page, window against the previous one (the seo diagnosis)'),
    }),
    async handler(ctx, { params }) {
      return pageDetail(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
