import { z } from 'zod'
import { LINK_TYPES } from '../../lib/backlinks/links'
import { backlinks } from '../../lib/backlinks/reads'
import { limitParam } from '../../lib/reports/query/parse'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

const count = z.number().int().nonnegative()
const day = z.string().describe('YYYY-MM-DD (UTC)')
const foundBy = z.enum(['discovered', 'provider', 'both'])
const linkType = z.enum(LINK_TYPES)
const counts = {
  links: count,
  referringDomains: count,
  dofollow: count,
  nofollow: count,
  ugc: count,
  sponsored: count,
}
const eventSchema = z.object({
  day,
  reason: z.string().nullable().describe('lost: page_gone, link_removed, not_listed (the provider dropped it), or the new rel'),
  from: z.string(),
  to: z.string(),
  domain: z.string(),
  anchor: z.string(),
  rel: linkType,
  foundBy: z.string(),
  newDomain: z.boolean(),
  visits: count.describe('Visits the page sent in the last 30 days'),
})

export const backlinkEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/backlinks',
    scope: 'read',
    tool: 'get_backlinks',
    summary: 'Backlinks: counts, 30-day movement, referring domains, links, new/lost/regained events, authority, distributions.',
    description:
      'Not source-scoped. From the latest daily snapshot of links found by our crawler from referrers (discovered) and by the provider. type, tld, domain, search (anchor) filter the lists, filtered and distributions; limit caps each list; offset pages topDomains and topLinks. Visits are of the last 30 days.',
    params: z.object({
      site_id: siteRefSchema,
      type: linkType.optional().describe('dofollow, nofollow, ugc or sponsored'),
      tld: z.string().max(63).optional().describe('Top-level domain of the referring domain'),
      domain: z.string().max(253).optional().describe('A referring domain'),
      search: z.string().max(200).optional().describe('Text in the anchor'),
      limit: limitParam(1000, 10),
      offset: z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(0).max(1_000_000).default(0),
    }),
    response: z.object({
      snapshotDay: day.nullable().describe('The latest snapshot; null before the first'),
      sources: z.object({ discovered: z.boolean(), provider: z.string().nullable() }),
      counts: z.object({
        ...counts,
        trafficOnlyDomains: count.describe('Domains that sent visits from their origin only, no link confirmed'),
      }),
      movement: z.object({
        days: count,
        since: day.nullable(),
        links: z.number().int().nullable(),
        referringDomains: z.number().int().nullable(),
        dofollow: z.number().int().nullable(),
        new: count,
        lost: count,
        regained: count,
      }),
      filters: z.object({
        type: z.string().nullable(),
        tld: z.string().nullable(),
        domain: z.string().nullable(),
        search: z.string().nullable(),
      }),
      filtered: z.object({ ...counts, imageLinks: count }),
      topDomains: z.array(
        z.object({
          domain: z.string(),
          tld: z.string(),
          links: count,
          dofollow: count,
          firstSeen: day,
          lastSeen: day,
          visits: count,
          authority: z.number().nullable(),
          foundBy,
        }),
      ),
      trafficOnlyDomains: z.array(z.object({ domain: z.string(), visits: count })),
      topLinks: z.array(
        z.object({
          from: z.string(),
          to: z.string(),
          domain: z.string(),
          anchor: z.string(),
          rel: linkType,
          image: z.boolean(),
          title: z.string(),
          firstSeen: day,
          lastSeen: day,
          visits: count,
          foundBy,
        }),
      ),
      events: z.object({ new: z.array(eventSchema), lost: z.array(eventSchema), regained: z.array(eventSchema) }),
      authority: z.union([
        z.object({
          available: z.literal(true),
          provider: z.string(),
          current: z.number().nullable(),
          trend: z.array(z.object({ day, value: z.number() })),
        }),
        z.object({ available: z.literal(false), reason: z.string() }),
      ]),
      distributions: z.object({
        anchors: z.array(z.object({ anchor: z.string(), links: count })),
        types: z.array(z.object({ type: linkType, links: count })),
        tlds: z.array(z.object({ tld: z.string(), links: count, domains: count })),
      }),
      paging: z.object({ limit: count, offset: count }),
    }),
    async handler(ctx, { params }) {
      const limit = Math.min(1000, Math.max(1, params.limit ?? 10))
      return backlinks(ctx.services, await ctx.site(params.site_id), { ...params, limit })
    },
  }),
]
