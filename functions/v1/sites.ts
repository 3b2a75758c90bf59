import { z } from 'zod'
import { assertEngineKnowsTimezone } from '../../lib/storage/clickhouse/timezones'
import { siteStats } from '../../lib/reports/query/reports'
import { applySitePatch, siteRefSchema, siteCreateSchema, sitePatchSchema, siteView, siteViewSchema } from '../../lib/sites/sites'
import { assertSubdomainOf, attachCustomDomain, detachCustomDomain } from '../../lib/sites/custom-domain'
import { createSite, deleteSite } from '../../lib/operations/site-lifecycle'
import { sitesOfKey } from '../../lib/sites/listing'
import { withInstallState } from '../../lib/operations/install-state'
import { rotateShareLink } from '../../lib/sites/share-link'
import { defineEndpoint } from '../endpoint'
import { forgetImportedGa4 } from '../../lib/integrations/ga4/import'
import { flagParam, rangeParam } from '../params'
import { rangeViewSchema, sourceSchema, totalsSchema } from './report-schemas'
import { SOURCES } from '../../lib/sites/source'

const siteStatsSchema = totalsSchema.extend({
  source: sourceSchema,
  range: rangeViewSchema,
  previous: totalsSchema.extend({ range: rangeViewSchema }).describe('The window of equal length before'),
  sparkline: z.array(z.number().int()).describe('Visitors per bucket of the window'),
})

export const siteEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites',
    scope: 'read',
    tool: 'list_sites',
    summary: 'Every site the key can reach, with its settings and install state.',
    description:
      "Lists sites. Each has id (UUID) and snippetId (the public data-site value); either works as site_id in other tools. With stats (the default) each row adds totals for range (default 7d), the same for the previous window of equal length, a visitors sparkline and install state, read from source (default: each site's primary source; a ga4 site's numbers come from its imported GA4 data, where visitors over several days is the sum of the daily values). A source one of the listed sites does not have is a 400 naming it. stats=0 returns rows only.",
    params: z.object({
      range: rangeParam.exclude(['custom']).default('7d'),
      stats: flagParam.default(true),
      source: z.enum(SOURCES).optional().describe("standalone or ga4; default: each site's primary source"),
    }),
    response: z.object({ sites: z.array(siteViewSchema.extend({ stats: siteStatsSchema.optional().describe('Absent with stats=0') })) }),
    async handler({ services, key, baseUrl }, { params }) {
      const sites = await sitesOfKey(services.repositories, key)
      if (!params.stats)
        return { sites: (await withInstallState(services.clickhouse, sites, services.now())).map((s) => siteView(s, baseUrl)) }
      const rows = await siteStats(services, sites, params.range, params.source)
      return { sites: rows.map(({ site, stats }) => ({ ...siteView(site, baseUrl), stats })) }
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/sites',
    scope: 'write',
    orgWide: true,
    tool: 'create_site',
    summary: 'Adds a site and returns it with its ready-to-paste tracking snippet.',
    description:
      'Adds a site and queues its first crawl (change detection). domain is a bare hostname (example.com). sources ⊆ ["standalone","ga4"], default ["standalone"]; primarySource must be one of them; timezone is an IANA zone, default UTC, and decides how relative ranges resolve.',
    body: siteCreateSchema,
    status: 201,
    response: siteViewSchema,
    async handler({ services, key, baseUrl }, { body }) {
      return siteView(await createSite(services, key.orgId, body), baseUrl)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}',
    scope: 'read',
    tool: 'get_site',
    summary: 'Every setting and status of one site.',
    description:
      'One site: tracking, changeDetection, sharing, appearance, integrations, alerts, install state and imported periods. Field names here are the names update_site_settings takes.',
    params: z.object({ site_id: siteRefSchema }),
    response: siteViewSchema,
    async handler({ services, site, baseUrl }, { params }) {
      const [found] = await withInstallState(services.clickhouse, [await site(params.site_id)], services.now())
      return siteView(found, baseUrl)
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/sites/{site_id}',
    scope: 'write',
    tool: 'update_site_settings',
    summary: 'Changes site settings, flat by field name; returns the updated site.',
    description:
      'Send only the fields to change, flat by name: any field of tracking, changeDetection, sharing or appearance (for example includeBots, excludedPaths, shareLevel, publicCounts, publicCountsDial, theme), plus access (private, link or public: who opens the shared dashboard; isPublic and shareLevel map onto it, and fields naming two states are a 400), standaloneEnabled, primarySource, sources, timezone and customDomain (a subdomain of the site, or null; as POST and DELETE /sites/{site_id}/custom-domain). Dropping ga4 from sources deletes its imported data. An unknown field or a wrong type is rejected and nothing changes.',
    params: z.object({ site_id: siteRefSchema }),
    body: sitePatchSchema,
    response: siteViewSchema,
    async handler({ services, site, baseUrl, background }, { params, body }) {
      const current = await site(params.site_id)
      if (body.timezone) await assertEngineKnowsTimezone(services.clickhouse, body.timezone)
      const next = await services.sites.update(current.id, (fresh) => {
        const patched = applySitePatch(fresh, body)
        if (body.customDomain) assertSubdomainOf(patched, body.customDomain, 'customDomain')
        return patched
      })
      // imported GA4 data stays until the site drops the source
      if (current.sources.includes('ga4') && !next.sources.includes('ga4')) background(forgetImportedGa4(services, current.id))
      if (body.customDomain === undefined) return siteView(next, baseUrl)
      // customDomain is attached and detached as POST and DELETE /sites/{id}/custom-domain do
      const { site: final } = body.customDomain
        ? await attachCustomDomain(services, next, body.customDomain, baseUrl)
        : await detachCustomDomain(services, next, baseUrl)
      return siteView(final, baseUrl)
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/sites/{site_id}',
    scope: 'write',
    orgWide: true,
    tool: 'delete_site',
    summary: 'Deletes a site and all its data, irreversibly. confirm must repeat the domain.',
    params: z.object({ site_id: siteRefSchema, confirm: z.string({ message: 'required: repeat the site domain to confirm' }) }),
    response: z.object({ deleted: z.literal(true), id: z.uuid() }),
    async handler({ services, site, background }, { params }) {
      const current = await site(params.site_id)
      await deleteSite(services, current, params.confirm, background)
      return { deleted: true as const, id: current.id }
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/sites/{site_id}/share-link',
    scope: 'write',
    orgWide: true,
    destructive: true,
    tool: 'rotate_share_link',
    summary: 'Makes the secret link to the read-only shared dashboard, or a new one that ends the old; shown once.',
    description:
      'Needs access link or public (a private site is a 400). The link opens the dashboard signed out; every earlier link, and every browser it opened, stops working at once, as they do when the site goes private. A public dashboard opens at the link without its auth part.',
    params: z.object({ site_id: siteRefSchema }),
    status: 201,
    response: z.object({
      url: z.string().describe('The link, with its secret: shown only in this answer'),
      createdAt: z.string(),
      rotated: z.boolean().describe('An earlier link existed and no longer works'),
    }),
    async handler({ services, site, baseUrl }, { params }) {
      return rotateShareLink(services, await site(params.site_id), baseUrl)
    },
  }),
]
