import { z } from 'zod'
import {
  FLOW_DEFAULT_DEPTH,
  FLOW_DEFAULT_LIMIT,
  FLOW_MAX_LIMIT,
  JOURNEY_EVENTS,
  activity,
  flow,
  journeys,
} from '../../lib/reports/query/journeys'
import { limitParam, reportParams } from '../../lib/reports/query/parse'
import { defineEndpoint } from '../endpoint'
import { uint64Param } from '../params'
import { rangeViewSchema, sourceSchema } from './report-schemas'

const count = z.number().int().nonnegative()
const available = z.boolean().describe('false for a site that reads only ga4: the collector alone records this')
/** Absent when not available. */
const range = rangeViewSchema.optional()
const note = z
  .string()
  .describe('What a visitor id is: salted afresh every site-local day and per site, so it cannot be joined across days or sites')

const pathParam = (what: string) =>
  z.string().min(1, 'must not be empty').max(2000, 'must be at most 2000 characters').optional().describe(what)

const flowNodeSchema = z.object({
  id: z.string().describe('"<step>:<path>", e.g. "1:/pricing"; a step\'s folded node is "<step>:(other)"'),
  step: z.number().int().describe('0 is the landing, start or focus page; negative steps come before a focus page'),
  path: z.string().describe('The page, or "(other)" for the folded node'),
  other: z.boolean().describe('The rarer pages of this step, folded into one node'),
  visits: count.describe('Visits at this page at this step'),
  folded: count.describe('Distinct pages folded into this node (0 for a page of its own)'),
})

const actionSchema = z.object({
  timestamp: z.string().describe('ISO 8601 UTC'),
  kind: z.string().describe('pageview, click, outbound, download, affiliate, custom, engagement, error, vital or form'),
  name: z.string().describe('The event name (pageview, a custom event name, or the kind)'),
  path: z.string(),
  element: z
    .object({
      selector: z.string(),
      text: z.string(),
      tag: z.string(),
      url: z.string(),
      dead: z.boolean().describe('A click that changed nothing on the page'),
    })
    .optional()
    .describe('Clicks and form submissions: the element (url: the link followed or the form action)'),
  error: z.object({ name: z.string(), message: z.string() }).optional().describe('Errors'),
  engagement: z
    .object({ ms: count.describe('Engaged time on the page, milliseconds'), scroll: count.describe('Deepest scroll, percent') })
    .optional()
    .describe('Leave-time engagement reports'),
  vital: z.object({ name: z.string(), value: z.number() }).optional().describe('Web vitals'),
  props: z.record(z.string(), z.string()).optional().describe('Custom properties (and a vital’s attribution), when any'),
})

const journeySchema = z.object({
  visitor: z.string().describe('The visitor id (decimal): pass it as visitor= for this journey’s events'),
  day: z.string().describe('The site-local day, YYYY-MM-DD'),
  firstSeen: z.string().describe('First event, ISO 8601 UTC'),
  lastSeen: z.string().describe('Last event, ISO 8601 UTC'),
  landingPage: z.string().describe('First page of the day’s first visit with a pageview'),
  exitPage: z.string().describe('Last page of the day’s last visit with a pageview'),
  duration: count.describe('Seconds: the sum over the day’s visits of first to last event, engagement reports included'),
  visits: count,
  pageviews: count,
  events: count.describe('Custom events'),
  source: z.string().describe('Referrer source of the day’s first visit with a pageview, empty for direct'),
  referrer: z.string().describe('Its referrer URL, empty for direct'),
  country: z.string(),
  device: z.string(),
  browser: z.string(),
})

export const journeyEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/flow',
    scope: 'read',
    tool: 'get_flow',
    summary: 'Behaviour flow: the pages visits went through, step by step, as nodes and links.',
    description: `Each visit's pages in the window in time order (a page repeated right after itself counts once). Without start_path or focus_path the flow starts at each visit's landing page; start_path=<path> starts it at a visit's first view of that page; focus_path=<path> shows depth steps before and after it. depth: steps, 1-5, default ${FLOW_DEFAULT_DEPTH}. limit: pages kept per step, default ${FLOW_DEFAULT_LIMIT}, at most ${FLOW_MAX_LIMIT}; a step's rarer pages fold into one node "<step>:(other)". Node and link counts are visits. A site that reads only ga4 answers available: false.`,
    params: reportParams.extend({
      limit: limitParam(FLOW_MAX_LIMIT, FLOW_DEFAULT_LIMIT),
      start_path: pathParam('A page path: the flow forward from it'),
      focus_path: pathParam('A page path: the steps before and after it'),
      depth: z.coerce
        .number({ message: 'must be a number' })
        .int('must be an integer')
        .min(1, 'must be 1 to 5')
        .max(5, 'must be 1 to 5')
        .optional()
        .describe(`Steps, 1-5, default ${FLOW_DEFAULT_DEPTH}`),
    }),
    response: z.object({
      source: sourceSchema,
      available,
      range,
      anchor: z.enum(['entry', 'start', 'focus']).describe('What step 0 is: the landing page, start_path or focus_path'),
      path: z.string().nullable().describe('start_path or focus_path; null for the landing-page flow'),
      depth: count,
      visits: count.describe('Visits in the flow (those with the start or focus page)'),
      nodes: z.array(flowNodeSchema).describe('By step; most visits first within a step, its folded node last'),
      links: z.array(z.object({ source: z.string(), target: z.string(), visits: count })).describe('From a node to one of the next step'),
    }),
    async handler(ctx, { params }) {
      return flow(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/journeys',
    scope: 'read',
    tool: 'get_journeys',
    summary: 'Recent journeys, newest first: one row per visitor and site-local day; with visitor, that journey’s events.',
    description: `Journeys with an event in the window (with filters: a selected event), newest last event first, paged by limit and offset (total and nextOffset say what is left). visitor=<id> from a row: that journey and its events in the window, oldest first, at most ${JOURNEY_EVENTS}. A visitor id is salted afresh each site-local day and per site: it cannot be joined across days or sites. A site that reads only ga4 answers available: false.`,
    params: reportParams.extend({
      visitor: uint64Param('a visitor id from the journeys list').optional().describe('A visitor id: that journey and its events'),
      offset: z.coerce
        .number({ message: 'must be a number' })
        .int('must be an integer')
        .min(0, 'must be 0 or more')
        .max(1_000_000)
        .optional()
        .describe('Journeys to skip'),
    }),
    response: z.object({
      source: sourceSchema,
      available,
      range,
      note,
      total: count.optional().describe('List: journeys in the window'),
      offset: count.optional().describe('List: journeys skipped'),
      nextOffset: count.nullable().optional().describe('List: the offset of the next page, null on the last'),
      journeys: z.array(journeySchema).optional().describe('List: newest last event first'),
      visitor: z.string().optional().describe('visitor: the id asked for'),
      journey: journeySchema.nullable().optional().describe('visitor: the journey, null when it has no visit in the window'),
      events: z.array(actionSchema).optional().describe('visitor: its events in the window, oldest first'),
      truncated: z.boolean().optional().describe(`visitor: more than ${JOURNEY_EVENTS} events, only the first listed`),
    }),
    async handler(ctx, { params }) {
      return journeys(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/activity',
    scope: 'read',
    tool: 'get_activity',
    summary: 'The live tape: every page load, click, custom event, engagement report and error of the last 5 or 30 minutes, newest first.',
    description:
      'window=5m|30m (default 30m) instead of range. One row per action with the visitor id and source: the referrer of that visitor’s first pageview of the day, empty for direct. Filters and limit (default 100) apply. A site that reads only ga4 answers available: false.',
    params: reportParams.omit({ range: true, from: true, to: true }).extend({
      window: z.enum(['5m', '30m']).optional().describe('The last 5 or 30 minutes, default 30m'),
    }),
    response: z.object({
      source: sourceSchema,
      available,
      range,
      window: z.enum(['5m', '30m']),
      actions: z
        .array(
          actionSchema.extend({
            visitor: z.string().describe('The visitor id (decimal), salted afresh each site-local day'),
            source: z.string().describe('Referrer source of the visitor’s first pageview of the day, empty for direct'),
            referrer: z.string().describe('Its referrer URL, empty for direct'),
            country: z.string(),
            device: z.string(),
            browser: z.string(),
          }),
        )
        .describe('Newest first, at most limit'),
    }),
    async handler(ctx, { params }) {
      return activity(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
