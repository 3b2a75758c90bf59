import { z } from 'zod'
import { CATEGORIES, CHANGE_TYPES } from '../../lib/crawl/detect'
import { pingPage } from '../../lib/crawl/ping'
import { NEW_PAGE_DAYS, PAGE_FILTERS, PAGE_SORTS, changeDiff, changeFeed, pages } from '../../lib/crawl/reads'
import { RANGES } from '../../lib/reports/dimensions'
import { limitParam, reportParams } from '../../lib/reports/query/parse'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'
import { flagParam, uuidParam } from '../params'
import { compareParams } from '../../lib/reports/query/compare'
import { changesSchema, comparisonSchema, rangeViewSchema } from './report-schemas'

const count = z.number().int().nonnegative()
const clampLimit = (limit: number | undefined) => Math.min(1000, Math.max(1, limit ?? 100))
const offsetParam = z.coerce
  .number({ message: 'must be a number' })
  .int('must be an integer')
  .min(0)
  .max(1_000_000)
  .default(0)
  .describe('Rows to skip')
const windowParams = {
  site_id: siteRefSchema,
  range: z
    .enum(RANGES)
    .exclude(['realtime'])
    .default('30d')
    .describe('Named range, resolved in the site timezone; custom needs from and to'),
  from: z.string().optional().describe('YYYY-MM-DD, with range=custom'),
  to: z.string().optional().describe('YYYY-MM-DD, with range=custom (included)'),
  limit: limitParam(1000, 100),
  offset: offsetParam,
}

const pageSchema = z.object({
  path: z.string(),
  title: z.string(),
  status: z
    .enum(['active', 'new', 'removed'])
    .describe(`removed: answered 404 or 410, or left the sitemap; new: launched in the last ${NEW_PAGE_DAYS} days; else active`),
  httpStatus: z.number().int().describe('Status of the latest fetch; 0 when it failed (see error)'),
  finalUrl: z.string().describe('Where the latest fetch ended after redirects'),
  contentType: z.string(),
  noindex: z.boolean().describe('The robots meta tag says noindex (or none)'),
  inSitemap: z.boolean(),
  wordCount: count.describe('Words of the main text'),
  error: z.string().nullable().describe('Why the latest fetch failed (too large, timed out, refused)'),
  launchedAt: z.string().describe('The first crawl or the first pageview, whichever is earlier; ISO 8601 UTC'),
  lastCrawledAt: z.string().describe('ISO 8601 UTC'),
  visitors: count.describe('In the window'),
  pageviews: count.describe('In the window'),
  scrollDepth: z
    .number()
    .nullable()
    .describe('Mean scroll depth of the engagement reports in the window, percent 0-100; null without reports'),
  timeOnPage: z.number().nullable().describe('Mean engaged time of the engagement reports in the window, seconds; null without reports'),
  trend: z.array(count).optional().describe('trends=1: pageviews per bucket of the window (the range interval)'),
  bots: z.object({ hits: count, aiCrawlerHits: count }).optional().describe('bots=1: bot hits in the window, and those of AI crawlers'),
  comparison: z.object({ visitors: count, pageviews: count }).optional().describe('compare: in the comparison window'),
  change: changesSchema(['visitors', 'pageviews']).optional(),
})

const changeItemSchema = z.object({
  id: z.string().describe('change_id for the diff read (annotations: the annotation id)'),
  kind: z.enum(['change', 'annotation']),
  at: z.string().describe('When it was detected (annotations: placed), ISO 8601 UTC'),
  scope: z.enum(['page', 'site']).describe('site: robots.txt, the sitemap, a change on most pages at once, or an annotation'),
  path: z.string().describe('The page; empty for site changes'),
  type: z.string().describe(`One of ${CHANGE_TYPES.join(', ')}, or annotation`),
  category: z.string().describe(`One of ${CATEGORIES.join(', ')}, or annotation`),
  summary: z.string(),
  before: z.string().describe('The previous value (status, URL, title...); for text, the word count'),
  after: z.string(),
  wordsAdded: count,
  wordsRemoved: count,
  diffable: z.boolean().describe('Whether changes/diff answers for it (else 422)'),
  pages: count.describe('Pages a site change spans; 1 for a page change'),
  samplePaths: z.array(z.string()).describe('Site changes: up to 10 of the pages'),
})

export const crawlEndpoints = [
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/ping',
    scope: 'write',
    tool: 'ping_page',
    limit: 'ping',
    summary: 'Publish ping: queues an immediate recrawl of one page, for a deploy or publish hook.',
    description:
      "url must be an absolute http(s) URL whose hostname is a site's domain, a subdomain of it, or its custom domain (else 400). Answers {accepted, path}: accepted is false, with the reason, when the site's change detection is off, the path is excluded, or the site's crawl budget of the day (its plan's pages a day, per UTC day) is spent, then with renewsAt, when it renews. 503 with Retry-After when the crawler is off or the site's queue of pings is full: retry then. 60 requests a minute.",
    body: z.strictObject({ url: z.string({ message: 'required: the absolute URL of the page to recrawl' }).max(4000) }),
    response: z.object({
      accepted: z.boolean().describe('Whether the page will be fetched at the next run'),
      path: z.string(),
      reason: z.string().optional().describe('Why it will not be, when accepted is false'),
      renewsAt: z.string().optional().describe("When the site's crawl budget renews (ISO 8601 UTC), when it is spent"),
    }),
    async handler(ctx, { body }) {
      return pingPage(ctx.services, ctx.key, body.url)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/pages',
    scope: 'read',
    tool: 'list_pages',
    summary: 'The page inventory from the crawler, with status, launch date and traffic per page.',
    description: `Every crawled page with its status (active, new: launched in the last ${NEW_PAGE_DAYS} days, removed: 404/410 or gone from the sitemap), launch date, and visitors, pageviews, scroll depth (percent) and time on page (seconds) in the window. filter=all|active|removed|new; q searches path and title across the whole inventory; sort=${PAGE_SORTS.join('|')} (default pageviews), dir=asc|desc; trends=1 adds pageviews per bucket; bots=1 adds bot and AI-crawler hits; compare=previous_period|year_over_year|custom adds each page's comparison and change (docs: Comparisons); limit and offset page. counts are per status after q. A site that reads only ga4 takes visitors and pageviews from its imported GA4 pages (visitors: the sum of daily totalUsers over the page's hostnames), with no scroll depth, time on page or trend.`,
    params: z.object({
      ...windowParams,
      filters: reportParams.shape.filters,
      filter: z.enum(PAGE_FILTERS).default('all').describe('all, active (not removed), removed or new'),
      sort: z.enum(PAGE_SORTS).default('pageviews').describe('The field to sort by'),
      dir: z.enum(['asc', 'desc']).optional().describe('Default: asc for path and title, desc otherwise'),
      q: z.string().max(500).optional().describe('Case-insensitive search of path and title'),
      trends: flagParam.default(false).describe('1: pageviews per bucket of the window'),
      bots: flagParam.default(false).describe('1: bot and AI-crawler hits'),
      ...compareParams,
    }),
    response: z.object({
      range: rangeViewSchema,
      comparison: comparisonSchema.optional(),
      total: count.describe('Pages matching filter and q'),
      counts: z
        .object({ all: count, active: count, removed: count, new: count })
        .describe('Pages matching q, by status (new pages are active too)'),
      offset: count,
      pages: z.array(pageSchema),
    }),
    async handler(ctx, { params }) {
      return pages(ctx.services, await ctx.site(params.site_id), { ...params, limit: clampLimit(params.limit) })
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/changes',
    scope: 'read',
    tool: 'list_changes',
    summary: 'The change feed: detected page and site changes plus annotations, newest first, with totals by type and a daily strip.',
    description:
      'Changes detected by the crawler in the window (default 30d) and the annotations placed in it, newest first. category=content|seo|technical|annotation and search (path, values, summary) narrow everything; type narrows the list and the strip but not totals; day=YYYY-MM-DD (site-local) narrows the list only. diffable changes have a word diff at changes/diff?change_id=.',
    params: z.object({
      ...windowParams,
      category: z.enum([...CATEGORIES, 'annotation']).optional(),
      type: z.enum([...CHANGE_TYPES, 'annotation']).optional(),
      search: z.string().max(500).optional().describe('Case-insensitive search of path, summary, before and after'),
      day: z
        .string()
        .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date as YYYY-MM-DD')
        .optional()
        .describe('A site-local day: only its changes are listed'),
    }),
    response: z.object({
      range: rangeViewSchema,
      total: count.describe('Items listed before limit and offset'),
      totals: z.record(z.string(), count).describe('Items by type in the window (after category and search)'),
      activity: z.array(z.object({ date: z.string(), changes: count })).describe('Items per site-local day of the window'),
      offset: count,
      changes: z.array(changeItemSchema),
    }),
    async handler(ctx, { params }) {
      return changeFeed(ctx.services, await ctx.site(params.site_id), { ...params, limit: clampLimit(params.limit) })
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/changes/diff',
    scope: 'read',
    tool: 'get_change_diff',
    summary: 'The word-level before and after of one page change, as equal, added and removed runs.',
    description:
      "change_id comes from the change feed; site_id is optional, and when given the change must be that site's (else 404). runs, read in order, spell the old text (equal and removed runs) and the new one (equal and added runs). 422 when the change is not diffable: only title, meta description, h1 and main-text changes of HTML pages whose text is under the size limit are.",
    params: z.object({
      change_id: uuidParam.describe('A change id from the change feed'),
      site_id: siteRefSchema.optional().describe("The change's site, as every read takes it: a change of another site is 404"),
    }),
    response: z.object({
      id: z.string(),
      siteId: z.string(),
      path: z.string(),
      type: z.string(),
      detectedAt: z.string(),
      before: z.object({ snapshotId: z.string(), fetchedAt: z.string(), text: z.string() }),
      after: z.object({ snapshotId: z.string(), fetchedAt: z.string(), text: z.string() }),
      wordsAdded: count,
      wordsRemoved: count,
      runs: z.array(z.object({ op: z.enum(['equal', 'added', 'removed']), text: z.string() })),
    }),
    async handler(ctx, { params }) {
      return changeDiff(ctx.services, params.change_id, ctx.site, params.site_id)
    },
  }),
]
