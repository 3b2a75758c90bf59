import type { DomainServices } from './domain-services'
import { createApiKey } from '../accounts/admin'
import type { KeyMaker } from '../accounts/keys'
import type { Site } from './sites'

/**
 * Whether the site has a server-side ingest key (a write key bound to it that works, whether
 * rotated here or made with the admin CLI), with its prefix (never the secret): the one rotated
 * here when it still works, else the newest.
 */
export async function ingestKeyOf(services: Pick<DomainServices, 'repositories'>, site: Site) {
  const working = (await services.repositories.keys.boundTo(site.id)).filter((k) => k.scope === 'write')
  const meta =
    working.find((k) => k.id === site.ingestKeyId) ??
    working.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id))[0]
  if (!meta) return { exists: false }
  return { exists: true, id: meta.id, prefix: meta.prefix, createdAt: meta.createdAt }
}

/**
 * Mints a write key bound to the site for server-side ingestion, and revokes every earlier one: the
 * secret is in the answer only. The new key is made by whoever made the calling key (`madeBy`).
 */
export async function rotateIngestKey(
  services: Pick<DomainServices, 'repositories' | 'sites' | 'now'>,
  site: Site,
  madeBy: KeyMaker | null | undefined,
) {
  const { repositories } = services
  const now = services.now()
  // rotating revokes every earlier key bound to the site, the ones made in the account area included
  const previous = (await repositories.keys.list(site.orgId)).filter((k) => k.siteId === site.id && !k.revokedAt)
  const created = await createApiKey(
    repositories,
    { orgId: site.orgId, name: `ingest key for ${site.domain}`, scope: 'write', siteId: site.id, madeBy },
    now,
  )
  await services.sites.update(site.id, (fresh) => ({ ...fresh, ingestKeyId: created.id }))
  await Promise.all(previous.map((meta) => repositories.keys.revoke(meta, now.toISOString())))
  return {
    key: created.key,
    id: created.id,
    prefix: created.prefix,
    scope: 'write' as const,
    siteId: site.id,
    rotated: previous.length > 0,
  }
}
