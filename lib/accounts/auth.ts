import type { DomainRepositories } from '../sites/domain-services'
import { ApiError } from '../core/errors'
import type { ApiKeyRecord, Scope } from './keys'
import { sha256Hex } from '../core/crypto'
import type { SiteDirectory } from '../sites/site-directory'
import type { Site } from '../sites/sites'

/** A key as presented: `bearer` in Authorization, `header` in x-api-key, `query` in ?key=. */
export type Credential = { secret: string; via: 'bearer' | 'header' | 'query' }

/** `Authorization: Bearer`, `x-api-key`, or `?key=` (docs/api.md, Authentication and scopes). */
export function readCredential(request: Request): Credential | null {
  const authorization = request.headers.get('authorization')
  if (authorization) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
    if (!match) throw new ApiError(401, 'Authorization header must be "Bearer <API_KEY>"')
    return { secret: match[1], via: 'bearer' }
  }
  const header = request.headers.get('x-api-key')
  if (header) return { secret: header.trim(), via: 'header' }
  const query = new URL(request.url).searchParams.get('key')
  if (query) return { secret: query, via: 'query' }
  return null
}

/** The credential's hash, the only form in which keys are stored and rate-limited. 401 when there is none. */
export async function credentialHash(request: Request): Promise<{ credential: Credential; hash: string }> {
  const credential = readCredential(request)
  if (!credential) throw new ApiError(401, 'missing API key: send Authorization: Bearer <API_KEY>')
  return { credential, hash: await sha256Hex(credential.secret) }
}

/** The key stored under a credential's hash: the auth path's one lookup. Null for none (or a revoked key). */
export function keyOfHash(repositories: Pick<DomainRepositories, 'keys'>, hash: string): Promise<ApiKeyRecord | null> {
  return repositories.keys.byHash(hash)
}

/** The 401 for a credential no key answers to: a revoked key is told apart from one that never existed. */
export async function unknownKeyError(repositories: Pick<DomainRepositories, 'keys'>, hash: string): Promise<ApiError> {
  const revokedAt = await repositories.keys.revokedAt(hash)
  return new ApiError(401, revokedAt ? `API key was revoked (at ${revokedAt})` : 'invalid API key')
}

/** Records when a key was last used, as the key listing shows it. */
export function recordKeyUse(repositories: Pick<DomainRepositories, 'keys'>, key: Pick<ApiKeyRecord, 'orgId' | 'id'>, at: Date) {
  return repositories.keys.touch(key.orgId, key.id, at.toISOString())
}

/** Checks the key found for a credential: 401 when missing or invalid, 403 when its scope is too small. */
export function authorize(key: ApiKeyRecord | null, credential: Credential, needed: Scope): ApiKeyRecord {
  if (!key) throw new ApiError(401, 'invalid API key')
  if (credential.via === 'query' && !(key.scope === 'write' && key.siteId)) {
    // URLs get logged: only a write-only, site-bound ingest key may travel in one
    throw new ApiError(
      401,
      'the key query parameter is accepted only for site-bound ingest keys; send other keys in the Authorization header',
    )
  }
  if (needed === 'write' && key.scope !== 'write') throw new ApiError(403, 'this endpoint needs a write-scoped key; this key is read-only')
  return key
}

const SITE_NOT_FOUND = 'site not found'

/**
 * Looks a site up by UUID or snippet id, as the key may see it. Another organization's site,
 * or one outside a site-bound key's site, is the same 404 as a site that does not exist.
 * Lookups go through the site directory the home built over this store: as stored now, or from
 * its cache for a read (`cached`).
 */
export async function siteForKey(sites: SiteDirectory, key: ApiKeyRecord, idOrSnippet: string, cached = false): Promise<Site> {
  const site = await (cached ? sites.find(idOrSnippet) : sites.findFresh(idOrSnippet))
  if (!site || site.orgId !== key.orgId || (key.siteId && key.siteId !== site.id)) throw new ApiError(404, SITE_NOT_FOUND)
  return site
}
