import { z } from 'zod'
import { clicks, errors, properties } from '../../lib/reports/query/behaviour'
import { reportParams } from '../../lib/reports/query/parse'
import { defineEndpoint } from '../endpoint'
import { uint64Param } from '../params'
import { rangeViewSchema, sourceSchema } from './report-schemas'

const count = z.number().int().nonnegative()
const available = z.boolean().describe('false for a site that reads only ga4: the collector alone records this')
/** Absent when not available. */
const range = rangeViewSchema.optional()

const fingerprintParam = uint64Param('a fingerprint from the errors list')
  .optional()
  .describe("An error group's fingerprint: that group's detail")

export const errorSummarySchema = z.object({ errors: count, groups: count, visitors: count })
export const errorGroupSchema = z.object({
  fingerprint: z
    .string()
    .describe(
      'Decimal; the group key: kind, error name, message with numbers, ids and URLs masked, top stack frame without line and column',
    ),
  kind: z.string(),
  errorName: z.string(),
  message: z.string().describe('The most recent message of the group'),
  count: count.describe('Occurrences'),
  visitors: count,
  paths: count.describe('Distinct pages it fired on'),
  topPath: z.string(),
  topBrowser: z.string(),
  firstSeen: z.string().describe('First occurrence in the window, ISO 8601 UTC'),
  lastSeen: z.string().describe('Last occurrence in the window, ISO 8601 UTC'),
  sparkline: z.array(count).describe('Occurrences per bucket of the window (the range interval)'),
})
const countRowSchema = z.object({ value: z.string(), count: count.describe('Occurrences'), visitors: count })

/** One object for the three views (list, one group, its pages): each answers its own fields. */
const errorsSchema = z.object({
  source: sourceSchema,
  available,
  range,
  summary: errorSummarySchema.optional().describe('List: the window'),
  previous: errorSummarySchema.optional().describe('List: the window of equal length just before'),
  groups: z.array(errorGroupSchema).optional().describe('List: most occurrences first'),
  group: errorGroupSchema.nullable().optional().describe('fingerprint: the group, null when it has no occurrence in the window'),
  breakdowns: z
    .object({
      pages: z.array(countRowSchema),
      browsers: z.array(countRowSchema),
      os: z.array(countRowSchema),
      devices: z.array(countRowSchema),
      countries: z.array(countRowSchema),
    })
    .optional()
    .describe('fingerprint: occurrences by page, browser, OS, device and country'),
  recent: z
    .array(
      z.object({
        timestamp: z.string().describe('ISO 8601 UTC'),
        path: z.string(),
        message: z.string(),
        browser: z.string(),
        os: z.string(),
        device: z.string(),
        country: z.string(),
      }),
    )
    .optional()
    .describe('fingerprint: the 20 most recent occurrences, newest first'),
  fingerprint: z.string().optional().describe('pages=1: the group'),
  offset: count.optional().describe('pages=1: pages skipped'),
  total: count.optional().describe('pages=1: distinct pages'),
  pages: z.array(countRowSchema).optional().describe('pages=1: the pages it fired on, most occurrences first'),
})

const clickGroupSchema = z.object({
  selector: z.string(),
  text: z.string(),
  tag: z.string(),
  url: z.string().describe('The link followed, empty for other elements'),
  interactive: z.boolean(),
  count: count,
  visitors: count,
  deadClicks: count.describe('Clicks that changed nothing on the page'),
  topPath: z.string(),
  paths: count.describe('Distinct pages'),
})

const propertyRowSchema = { events: count, visitors: count }

export const behaviourEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/errors',
    scope: 'read',
    tool: 'get_errors',
    summary: 'JavaScript error groups with counts, affected visitors, pages and sparklines; one group in detail by fingerprint.',
    description:
      'Groups are most occurrences first, at most limit. summary and previous count errors, groups and affected visitors in the window and the one before it. fingerprint=<fp>: that group with breakdowns by page, browser, OS, device and country and its 20 most recent occurrences. fingerprint with pages=1: the pages it fired on, paged by offset and limit. A site that reads only ga4 answers available: false.',
    params: reportParams.extend({
      fingerprint: fingerprintParam,
      pages: z.enum(['0', '1']).optional().describe('1 with fingerprint: the pages the group fired on'),
      offset: z.coerce
        .number({ message: 'must be a number' })
        .int('must be an integer')
        .min(0)
        .max(1_000_000)
        .optional()
        .describe('Pages to skip, with pages=1'),
    }),
    response: errorsSchema,
    async handler(ctx, { params }) {
      return errors(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/clicks',
    scope: 'read',
    tool: 'get_clicks',
    summary: 'Clicks grouped by element (selector, text, tag) and link, with visitors and dead clicks.',
    description:
      'Autocaptured clicks and outbound, download and affiliate link clicks; most clicked first, at most limit. deadClicks counts clicks that changed nothing on the page. A site that reads only ga4 answers available: false.',
    params: reportParams,
    response: z.object({
      source: sourceSchema,
      available,
      range,
      summary: z.object({ clicks: count, visitors: count, deadClicks: count }),
      clicks: z.array(clickGroupSchema),
    }),
    async handler(ctx, { params }) {
      return clicks(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/properties',
    scope: 'read',
    tool: 'get_properties',
    summary: 'Custom property keys seen in the window with event and visitor counts; with property, that key’s values.',
    description:
      'Most events first, at most limit. property=<key> lists the values of one key. A site that reads only ga4 answers available: false.',
    params: reportParams.extend({
      property: z.string().min(1, 'must not be empty').max(200).optional().describe('A custom property key: its values'),
    }),
    response: z.object({
      source: sourceSchema,
      available,
      range,
      keys: z
        .array(z.object({ key: z.string(), ...propertyRowSchema }))
        .optional()
        .describe('Without property: custom keys, most events first'),
      property: z.string().optional().describe('The key whose values are listed'),
      values: z
        .array(z.object({ value: z.string(), ...propertyRowSchema }))
        .optional()
        .describe('With property: its values, most events first'),
    }),
    async handler(ctx, { params }) {
      return properties(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
