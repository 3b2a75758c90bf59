import { ApiError } from '../errors'
import { addOwner } from './members'
import { type ApiKeyMeta, type Scope, newKeySecret, sha256Hex } from './keys'
import type { Org, Store } from '../storage/store'

/** The account area's operations, used by the admin CLI and the first-start demo. Never by the API. */
export async function createOrg(store: Store, name: string, now: Date, ownerEmail?: string): Promise<Org> {
  const org: Org = { id: crypto.randomUUID(), name, plan: 'free', createdAt: now.toISOString() }
  await store.createOrg(org)
  // the creator owns the organization
  if (ownerEmail) await addOwner(store, org.id, ownerEmail, now)
  return org
}

/** Revokes a key (of `orgId`, when given); revoking a revoked key is a no-op. 404 for a key not found. */
export async function revokeApiKey(store: Store, id: string, now: Date, orgId?: string): Promise<{ revoked: true; id: string }> {
  const meta = await store.getApiKeyMeta(id)
  if (!meta || (orgId && meta.orgId !== orgId)) throw new ApiError(404, 'api key not found')
  if (!meta.revokedAt) await store.revokeApiKey(meta, now.toISOString())
  return { revoked: true, id: meta.id }
}

export async function createApiKey(
  store: Store,
  input: { orgId: string; name: string; scope: Scope; siteId?: string | null },
  now: Date,
): Promise<{ key: string; prefix: string; scope: Scope; id: string; siteId: string | null }> {
  if (!(await store.getOrg(input.orgId))) throw new ApiError(404, `organization ${input.orgId} not found`)
  let siteId: string | null = null
  if (input.siteId) {
    const id = (await store.getSite(input.siteId)) ? input.siteId : await store.getSiteIdBySnippet(input.siteId)
    const site = id ? await store.getSite(id) : null
    if (!site || site.orgId !== input.orgId) throw new ApiError(404, `site ${input.siteId} not found in organization ${input.orgId}`)
    siteId = site.id
  }
  const { secret, prefix } = newKeySecret()
  const meta: ApiKeyMeta = {
    id: crypto.randomUUID(),
    orgId: input.orgId,
    name: input.name,
    prefix,
    scope: input.scope,
    siteId,
    createdAt: now.toISOString(),
    hash: await sha256Hex(secret),
    revokedAt: null,
  }
  await store.createApiKey(meta)
  return { key: secret, prefix, scope: meta.scope, id: meta.id, siteId }
}
