import type { Redis } from '@upstash/redis'
import { asRecord, asString } from '../storage/kv/records'
import type { ApiKeyMeta, ApiKeyRecord } from './keys'

const keysKey = {
  /** What the auth path reads: the key's record under the hash of its secret. */
  byHash: (hash: string) => `apikey:${hash}`,
  /** When the key of a hash was revoked: a revoked key's caller is told so, not that the key is unknown. */
  revokedByHash: (hash: string) => `apikey-revoked:${hash}`,
  meta: (id: string) => `apikeymeta:${id}`,
  ofOrg: (orgId: string) => `org:${orgId}:apikeys`,
  /** key id -> when it was last used. */
  lastUse: (orgId: string) => `org:${orgId}:keyuse`,
  boundToSite: (siteId: string) => `site:${siteId}:apikeys`,
}

/**
 * How long this process answers the auth lookup from memory. A key revoked here is refused at
 * once; one revoked by another process (another instance, the admin CLI) within this time.
 */
export const KEY_CACHE_MS = 5_000

/** API keys: the auth record by hash, the listing's metadata by id, and each key's last use. */
export class KeysRepository {
  /** Found records by hash, for KEY_CACHE_MS: every keyed request looks its key up. Unknown hashes are never kept. */
  private readonly found = new Map<string, { record: ApiKeyRecord; until: number }>()
  private readonly cacheMs: number
  private readonly clock: () => number

  constructor(
    private readonly kv: Redis,
    options: { cacheMs?: number; clock?: () => number } = {},
  ) {
    this.cacheMs = options.cacheMs ?? KEY_CACHE_MS
    this.clock = options.clock ?? Date.now
  }

  async create(meta: ApiKeyMeta) {
    const { hash, revokedAt: _revoked, ...record } = meta
    const tx = this.kv
      .multi()
      .set(keysKey.byHash(hash), JSON.stringify(record satisfies ApiKeyRecord))
      .set(keysKey.meta(meta.id), JSON.stringify(meta))
      .sadd(keysKey.ofOrg(meta.orgId), meta.id)
    if (meta.siteId) tx.sadd(keysKey.boundToSite(meta.siteId), meta.id)
    await tx.exec()
  }

  /** Forgets every kept record: the store was changed around this process (the admin CLI through the server's local endpoint). */
  forget() {
    this.found.clear()
  }

  /** The auth lookup: one GET, or none while this process has the record from the last `cacheMs`. */
  async byHash(hash: string) {
    const now = this.clock()
    const kept = this.found.get(hash)
    if (kept && kept.until > now) return kept.record
    const record = asRecord<ApiKeyRecord>(await this.kv.get(keysKey.byHash(hash)))
    if (!record) this.found.delete(hash)
    else if (this.cacheMs > 0) {
      if (this.found.size >= 10_000) this.found.clear()
      this.found.set(hash, { record, until: now + this.cacheMs })
    }
    return record
  }

  /** When the key of this hash was revoked; null for a hash no key ever had. */
  async revokedAt(hash: string) {
    return asString(await this.kv.get(keysKey.revokedByHash(hash)))
  }

  async meta(id: string) {
    return asRecord<ApiKeyMeta>(await this.kv.get(keysKey.meta(id)))
  }

  async list(orgId: string): Promise<(ApiKeyMeta & { lastUsedAt: string | null })[]> {
    const [ids, uses] = await this.kv
      .pipeline()
      .smembers(keysKey.ofOrg(orgId))
      .hgetall<Record<string, string>>(keysKey.lastUse(orgId))
      .exec<[string[], Record<string, string> | null]>()
    if (!ids.length) return []
    const metas = (await this.kv.mget<unknown[]>(...ids.map(keysKey.meta)))
      .map((m) => asRecord<ApiKeyMeta>(m))
      .filter((m): m is ApiKeyMeta => m !== null)
    return metas
      .map((m) => ({ ...m, lastUsedAt: uses?.[m.id] ?? null }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
  }

  /** The keys bound to a site that are not revoked (revoking drops a key from the set). */
  async boundTo(siteId: string): Promise<ApiKeyMeta[]> {
    const ids = await this.kv.smembers(keysKey.boundToSite(siteId))
    if (!ids.length) return []
    return (await this.kv.mget<unknown[]>(...ids.map(keysKey.meta)))
      .map((m) => asRecord<ApiKeyMeta>(m))
      .filter((m): m is ApiKeyMeta => m !== null && !m.revokedAt)
  }

  async revoke(meta: ApiKeyMeta, at: string) {
    this.found.delete(meta.hash)
    const tx = this.kv
      .multi()
      .del(keysKey.byHash(meta.hash))
      .set(keysKey.revokedByHash(meta.hash), meta.revokedAt ?? at)
      .set(keysKey.meta(meta.id), JSON.stringify({ ...meta, revokedAt: meta.revokedAt ?? at }))
    if (meta.siteId) tx.srem(keysKey.boundToSite(meta.siteId), meta.id)
    await tx.exec()
    // again: a lookup answered while the revocation was on its way would have kept the record
    this.found.delete(meta.hash)
  }

  /** Revokes every key bound to a site (a deleted one), keeping their metadata for the listing. */
  async revokeBoundTo(siteId: string, at: string) {
    const ids = await this.kv.smembers(keysKey.boundToSite(siteId))
    const metas = ids.length ? (await this.kv.mget<unknown[]>(...ids.map(keysKey.meta))).map((m) => asRecord<ApiKeyMeta>(m)) : []
    const tx = this.kv.multi().del(keysKey.boundToSite(siteId))
    for (const meta of metas) {
      if (!meta) continue
      this.found.delete(meta.hash)
      tx.del(keysKey.byHash(meta.hash))
        .set(keysKey.revokedByHash(meta.hash), meta.revokedAt ?? at)
        .set(keysKey.meta(meta.id), JSON.stringify({ ...meta, revokedAt: meta.revokedAt ?? at }))
    }
    await tx.exec()
    for (const meta of metas) if (meta) this.found.delete(meta.hash)
  }

  async touch(orgId: string, id: string, at: string) {
    await this.kv.hset(keysKey.lastUse(orgId), { [id]: at })
  }
}
