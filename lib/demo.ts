import { createApiKey, createOrg } from './accounts/admin'
import { newSite } from './sites/sites'
import type { Repositories } from './repositories'

export const DEMO_OWNER = 'owner@demo.example.com'

/** The demo organization, site and keys made on an empty first start. */
export async function createDemo(repositories: Repositories, now: Date) {
  // with an owner, so the team the org read counts is the one org/members lists
  const org = await createOrg(repositories, 'Demo organization', now, DEMO_OWNER)
  const site = newSite({ domain: 'demo.example.com', timezone: 'UTC' }, org.id, now)
  await repositories.sites.create(site)
  const read = await createApiKey(repositories, { orgId: org.id, name: 'demo read key', scope: 'read' }, now)
  const write = await createApiKey(repositories, { orgId: org.id, name: 'demo write key', scope: 'write' }, now)
  return { org, site, readKey: read.key, writeKey: write.key }
}
