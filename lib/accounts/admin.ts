import type { DomainRepositories } from '../sites/domain-services'
import { ApiError } from '../core/errors'
import { type KeyActor, addOwner, managesKey } from './members'
import { type ApiKeyMeta, type KeyMaker, type Scope, newKeySecret } from './keys'
import { sha256Hex } from '../core/crypto'
import { type Org, orgNameSchema } from './org-record'

/** The account area's operations on organizations and keys: the admin CLI, the first-start demo and the key endpoints. */
export async function createOrg(
  repositories: Pick<DomainRepositories, 'orgs' | 'team'>,
  name: string,
  now: Date,
  ownerEmail?: string,
): Promise<Org> {
  const checked = orgNameSchema.safeParse(name)
  if (!checked.success) throw new ApiError(400, `name: ${checked.error.issues[0].message}`)
  const org: Org = { id: crypto.randomUUID(), name: checked.data, plan: 'free', createdAt: now.toISOString() }
  await repositories.orgs.create(org)
  // the creator owns the organization
  if (ownerEmail) await addOwner(repositories, org.id, ownerEmail, now)
  return org
}

/**
 * Revokes a key (of `orgId`, when given) as `actor` (a plain member revokes only the keys they
 * made; none given: the organization, as the admin CLI); revoking a revoked key is a no-op. 404
 * for a key not found.
 */
export async function revokeApiKey(
  repositories: Pick<DomainRepositories, 'keys'>,
  id: string,
  now: Date,
  orgId?: string,
  actor: KeyActor = null,
): Promise<{ revoked: true; id: string }> {
  const meta = await repositories.keys.meta(id)
  if (!meta || (orgId && meta.orgId !== orgId)) throw new ApiError(404, 'api key not found')
  if (!managesKey(actor, meta)) throw new ApiError(403, 'members who are not admins revoke only the keys they made')
  if (!meta.revokedAt) await repositories.keys.revoke(meta, now.toISOString())
  return { revoked: true, id: meta.id }
}

export async function createApiKey(
  repositories: Pick<DomainRepositories, 'orgs' | 'sites' | 'keys'>,
  /** `madeBy`: the member making it (the web application); none for the admin CLI. */
  input: { orgId: string; name: string; scope: Scope; siteId?: string | null; madeBy?: KeyMaker | null },
  now: Date,
): Promise<{ key: string; prefix: string; scope: Scope; id: string; siteId: string | null }> {
  if (!(await repositories.orgs.get(input.orgId))) throw new ApiError(404, `organization ${input.orgId} not found`)
  let siteId: string | null = null
  if (input.siteId) {
    const id = (await repositories.sites.get(input.siteId)) ? input.siteId : await repositories.sites.idBySnippet(input.siteId)
    const site = id ? await repositories.sites.get(id) : null
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
    madeBy: input.madeBy ?? null,
    hash: await sha256Hex(secret),
    revokedAt: null,
  }
  await repositories.keys.create(meta)
  return { key: secret, prefix, scope: meta.scope, id: meta.id, siteId }
}

/** Every organization, for the admin CLI and the first start's hints. */
export function listOrgs(repositories: Pick<DomainRepositories, 'orgs'>) {
  return repositories.orgs.list()
}

/** How many organizations there are: none on a first start. Also the health check's key/value probe. */
export function countOrgs(repositories: Pick<DomainRepositories, 'orgs'>) {
  return repositories.orgs.count()
}

/** An organization's keys with their last use, for the admin CLI and GET /org/keys; with `actor`, the keys they see (managesKey). */
export async function listApiKeys(repositories: Pick<DomainRepositories, 'keys'>, orgId: string, actor: KeyActor = null) {
  return (await repositories.keys.list(orgId)).filter((k) => managesKey(actor, k))
}

/** Who made a key, as the key lists show it: the member, `admin_cli` (no member made it) or `unknown` (made before makers were recorded). */
export const keyMakerOf = (key: Pick<ApiKeyMeta, 'madeBy'>) =>
  key.madeBy ?? (key.madeBy === null ? ('admin_cli' as const) : ('unknown' as const))
