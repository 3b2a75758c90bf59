import { organizationsOf } from '../accounts/members'
import type { DomainRepositories } from './domain-services'
import type { ApiKeyRecord } from '../accounts/keys'
import type { OrgsRepository } from '../accounts/orgs-repository'
import type { Site } from './sites'
import type { SitesRepository } from './sites-repository'

/** The sites a key can reach: its organization's, or the one it is bound to. */
export async function sitesOfKey(repositories: { sites: SitesRepository }, key: Pick<ApiKeyRecord, 'orgId' | 'siteId'>): Promise<Site[]> {
  return (await repositories.sites.list(key.orgId)).filter((s) => !key.siteId || s.id === key.siteId)
}

/** Every site of every organization: what the scheduled deliveries go through, site by site. */
export async function listAllSites(repositories: { orgs: OrgsRepository; sites: SitesRepository }): Promise<Site[]> {
  const sites: Site[] = []
  for (const org of await repositories.orgs.list()) sites.push(...(await repositories.sites.list(org.id)))
  return sites
}

/** Every site of the organizations a member belongs to. */
export async function sitesOfMember(repositories: Pick<DomainRepositories, 'orgs' | 'team' | 'sites'>, email: string): Promise<Site[]> {
  const memberships = await organizationsOf(repositories, email)
  return (await Promise.all(memberships.map(({ org }) => repositories.sites.list(org.id)))).flat()
}
