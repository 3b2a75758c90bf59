import { createApiKey, createOrg } from './accounts/admin'
import { newSite } from './sites/sites'
import type { Store } from './storage/store'

/** The demo organization, site and keys made on an empty first start. */
export async function createDemo(store: Store, now: Date) {
  const org = await createOrg(store, 'Demo organization', now)
  const site = newSite({ domain: 'demo.example.com', timezone: 'UTC' }, org.id, now)
  await store.createSite(site)
  const read = await createApiKey(store, { orgId: org.id, name: 'demo read key', scope: 'read' }, now)
  const write = await createApiKey(store, { orgId: org.id, name: 'demo write key', scope: 'write' }, now)
  return { org, site, readKey: read.key, writeKey: write.key }
}
