import type { OperationServices } from './operation-services'
import type { z } from 'zod'
import { checkLimit, planFor } from '../accounts/plans'
import { forgetCrawls, queueFirstCrawl } from '../crawl/crawl'
import { queueFirstBacklinks } from '../backlinks/onboarding'
import { ApiError } from '../core/errors'
import { deleteSiteData } from '../storage/clickhouse/site-data'
import { rollupBuildsSettled } from '../reports/query/run'
import { assertEngineKnowsTimezone } from '../storage/clickhouse/timezones'
import { type Site, newSite, type siteCreateSchema } from '../sites/sites'
import { forgetGoogleConnection } from '../integrations/ga4/connection'

/**
 * Adds a site to an organization and queues its first crawl. 409 when the organization has a site
 * of that domain; 403 when its plan allows no more sites.
 */
export async function createSite(services: OperationServices, orgId: string, input: z.infer<typeof siteCreateSchema>): Promise<Site> {
  if (input.timezone) await assertEngineKnowsTimezone(services.clickhouse, input.timezone)
  const [org, sites] = await Promise.all([services.repositories.orgs.get(orgId), services.repositories.sites.list(orgId)])
  checkLimit(planFor(org, services.plan), 'sites', sites.length)
  const site = newSite(input, orgId, services.now())
  await services.repositories.sites.create(site)
  await queueFirstCrawl(services, site)
  await queueFirstBacklinks(services, site)
  return site
}

/**
 * Deletes a site and everything of it, irreversibly: its record, the keys bound to it (revoked,
 * still listed), its definitions, checks, import runs, crawl state and its rows. `confirm` must
 * repeat the domain. The rows (ClickHouse mutations, seconds even for a small site) are deleted
 * by `background` after the answer: Workers keep the task alive with waitUntil, Node's process
 * runs it on. The steps are not one transaction, so their order keeps each moment safe.
 */
export async function deleteSite(services: OperationServices, site: Site, confirm: string, background: (task: Promise<unknown>) => void) {
  if (confirm.trim().toLowerCase() !== site.domain) throw new ApiError(400, `confirm: must repeat the site's domain (${site.domain})`)
  const { repositories } = services
  // the record first: from here every read and every hit finds no site, whatever is left behind
  await services.sites.remove(site)
  // then the keys bound to it, which could reach nothing now anyway
  await repositories.keys.revokeBoundTo(site.id, services.now().toISOString())
  await Promise.all([
    repositories.goals.deleteAll(site.id),
    repositories.funnels.deleteAll(site.id),
    repositories.segments.deleteAll(site.id),
    repositories.annotations.deleteAll(site.id),
    repositories.importRuns.deleteAll(site.id),
    repositories.siteChecks.deleteAll(site.id),
    repositories.searchConsoleImports.delete(site.id),
    forgetGoogleConnection(services, site.id),
  ])
  await forgetCrawls(services, site.id)
  await services.repositories.backlinks.forget(site.id)
  // after the rollup builds a read of it left running, which would write its rows again
  background(Promise.resolve(rollupBuildsSettled(site.id)).then(() => deleteSiteData(services.clickhouse, site.id)))
}
