import type { SourceRepositories } from '../integrations/source-services'
import type { ApiKeyRecord } from '../accounts/keys'
import { siteForKey } from '../accounts/auth'
import { ApiError } from '../core/errors'
import type { SiteDirectory } from '../sites/site-directory'
import type { Site } from '../sites/sites'

/**
 * The site a Stats API v2 query names: its UUID or snippet id, or its domain as Plausible clients
 * send it. Another organization's site, or one outside a site-bound key's site, is the same 404 as
 * a domain no site has.
 */
export async function siteOfQuery(
  services: { sites: SiteDirectory; repositories: Pick<SourceRepositories, 'sites'> },
  key: ApiKeyRecord,
  ref: string,
): Promise<Site> {
  if (ref.length <= 64) {
    try {
      return await siteForKey(services.sites, key, ref)
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err
    }
  }
  const domain = ref.trim().toLowerCase()
  const site = (await services.repositories.sites.list(key.orgId)).find((s) => s.domain.toLowerCase() === domain)
  if (!site || (key.siteId && key.siteId !== site.id)) throw new ApiError(404, 'site not found')
  return site
}
