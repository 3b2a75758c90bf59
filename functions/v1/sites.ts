import { z } from 'zod'
import { ApiError } from '../../lib/errors'
import { deleteSiteData } from '../../lib/olap/site-data'
import { flagParam, rangeParam, siteIdParam } from '../../lib/params'
import type { Olap } from '../../lib/olap/types'
import { rangeView, resolveRange } from '../../lib/query/range'
import { ZERO_TOTALS, series, totals } from '../../lib/query/report'
import { Reply, defineEndpoint } from '../../lib/registry'
import { applySitePatch, newSite, siteCreateSchema, sitePatchSchema, siteView } from '../../lib/sites'

/** When each site last received an event, in one query. */
async function lastEventBySite(olap: Olap, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map()
  const rows = await olap.query<{ site: string; last: string }>(
    "SELECT toString(site_id) AS site, toString(max(timestamp)) AS last FROM events WHERE site_id IN {ids:Array(UUID)} GROUP BY site_id",
    { ids },
  )
  return new Map(rows.map((r) => [r.site, `${r.last.replace(' ', 'T')}Z`]))
}

export const siteEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites',
    scope: 'read',
    tool: 'list_sites',
    summary: 'Every site the key can reach, with its settings and install state.',
    description:
      'Lists sites. Each has id (UUID) and snippetId (the public data-site value); either works as site_id in other tools. With stats (the default) each row adds totals for range (default 7d), the same for the previous window of equal length, a visitors sparkline and install state. stats=0 returns rows only.',
    params: z.object({ range: rangeParam.exclude(['custom']).default('7d'), stats: flagParam.default(true) }),
    async handler({ services, key, baseUrl }, { params }) {
      const sites = (await services.store.listSites(key.orgId)).filter((s) => !key.siteId || s.id === key.siteId)
      if (!params.stats) return { sites: sites.map((s) => siteView(s, baseUrl)) }
      const lastEvents = await lastEventBySite(services.olap, sites.map((s) => s.id))
      const rows = await Promise.all(
        sites.map(async (site) => {
          const range = resolveRange({ range: params.range }, site.timezone, services.now(), { firstEventAt: null })
          const length = range.from.until(range.to)
          const previous = { ...range, from: range.from.subtract(length), to: range.from }
          const query = { siteId: site.id, range, filters: [], goals: [], limit: 100 }
          const reads = site.sources.includes('standalone')
          const [current, before, spark] = reads
            ? await Promise.all([totals(services.olap, query), totals(services.olap, { ...query, range: previous }), series(services.olap, query)])
            : [ZERO_TOTALS, ZERO_TOTALS, await series(null, query)]
          const last = lastEvents.get(site.id) ?? null
          return {
            ...siteView(site, baseUrl),
            install: { ...site.install, installed: site.install.installed || last !== null, lastEventAt: last ?? site.install.lastEventAt },
            stats: { range: rangeView(range), ...current, previous: { range: rangeView(previous), ...before }, sparkline: spark.map((b) => b.visitors) },
          }
        }),
      )
      return { sites: rows }
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
      'Adds a site. domain is a bare hostname (example.com). sources ⊆ ["standalone","ga4"], default ["standalone"]; primarySource must be one of them; timezone is an IANA zone, default UTC, and decides how relative ranges resolve.',
    body: siteCreateSchema,
    async handler({ services, key, baseUrl }, { body }) {
      const site = newSite(body, key.orgId, services.now())
      await services.store.createSite(site)
      return new Reply(201, siteView(site, baseUrl))
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
    params: z.object({ site_id: siteIdParam }),
    async handler({ site, baseUrl }, { params }) {
      return siteView(await site(params.site_id), baseUrl)
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/sites/{site_id}',
    scope: 'write',
    tool: 'update_site_settings',
    summary: 'Changes site settings, flat by field name; returns the updated site.',
    description:
      'Send only the fields to change, flat by name: any field of tracking, changeDetection, sharing or appearance (for example includeBots, excludedPaths, isPublic, shareLevel, publicCounts, publicCountsDial, theme), plus standaloneEnabled, primarySource, sources and timezone. An unknown field or a wrong type is rejected and nothing changes.',
    params: z.object({ site_id: siteIdParam }),
    body: sitePatchSchema,
    async handler({ services, site, baseUrl }, { params, body }) {
      const current = await site(params.site_id)
      const next = applySitePatch(current, body)
      await services.sites.save(next)
      return siteView(next, baseUrl)
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/sites/{site_id}',
    scope: 'write',
    orgWide: true,
    tool: 'delete_site',
    summary: 'Deletes a site and all its data, irreversibly. confirm must repeat the domain.',
    params: z.object({ site_id: siteIdParam, confirm: z.string({ message: 'required: repeat the site domain to confirm' }) }),
    async handler({ services, site }, { params }) {
      const current = await site(params.site_id)
      if (params.confirm.trim().toLowerCase() !== current.domain) {
        throw new ApiError(400, `confirm: must repeat the site's domain (${current.domain})`)
      }
      await deleteSiteData(services.olap, current.id)
      await services.sites.remove(current, services.now().toISOString())
      return { deleted: true, id: current.id }
    },
  }),
]
