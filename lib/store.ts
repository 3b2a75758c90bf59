import type { Redis } from '@upstash/redis'
import type { ApiKeyMeta, ApiKeyRecord } from './keys'
import type { Site } from './sites'

export interface Org {
  id: string
  name: string
  plan: 'free' | 'pro' | 'business'
  createdAt: string
}

export class DomainTakenError extends Error {}

/** Redis key names, all in one place. */
const k = {
  orgs: 'orgs',
  org: (id: string) => `org:${id}`,
  orgKeys: (orgId: string) => `org:${orgId}:apikeys`,
  orgKeyUse: (orgId: string) => `org:${orgId}:keyuse`,
  orgSites: (orgId: string) => `org:${orgId}:sites`,
  orgDomains: (orgId: string) => `org:${orgId}:domains`,
  keyByHash: (hash: string) => `apikey:${hash}`,
  keyMeta: (id: string) => `apikeymeta:${id}`,
  site: (id: string) => `site:${id}`,
  snippet: (snippetId: string) => `snippet:${snippetId}`,
  siteKeys: (siteId: string) => `site:${siteId}:apikeys`,
  usage: (orgId: string, month: string) => `usage:${orgId}:${month}`,
}

/** `@upstash/redis` deserializes JSON values on read; records are always objects. */
const parse = <T>(value: unknown): T | null => (value && typeof value === 'object' ? (value as T) : null)

/**
 * The key/value store in the domain's terms: organizations, API keys, sites and counters.
 * One implementation over `@upstash/redis`, whose requester is Upstash REST on the edge,
 * TCP Redis on Node, or the embedded engine.
 */
export class Store {
  constructor(readonly redis: Redis) {}

  async createOrg(org: Org) {
    await this.redis.multi().set(k.org(org.id), JSON.stringify(org)).sadd(k.orgs, org.id).exec()
  }

  async getOrg(id: string) {
    return parse<Org>(await this.redis.get(k.org(id)))
  }

  async countOrgs() {
    return this.redis.scard(k.orgs)
  }

  async listOrgs(): Promise<Org[]> {
    const ids = await this.redis.smembers(k.orgs)
    if (!ids.length) return []
    return (await this.redis.mget<unknown[]>(...ids.map(k.org))).map((o) => parse<Org>(o)).filter((o): o is Org => o !== null)
  }

  async createApiKey(meta: ApiKeyMeta) {
    const { hash, revokedAt: _revoked, ...record } = meta
    const tx = this.redis
      .multi()
      .set(k.keyByHash(hash), JSON.stringify(record satisfies ApiKeyRecord))
      .set(k.keyMeta(meta.id), JSON.stringify(meta))
      .sadd(k.orgKeys(meta.orgId), meta.id)
    if (meta.siteId) tx.sadd(k.siteKeys(meta.siteId), meta.id)
    await tx.exec()
  }

  /** The auth lookup: one GET. */
  async getApiKeyByHash(hash: string) {
    return parse<ApiKeyRecord>(await this.redis.get(k.keyByHash(hash)))
  }

  async getApiKeyMeta(id: string) {
    return parse<ApiKeyMeta>(await this.redis.get(k.keyMeta(id)))
  }

  async listApiKeys(orgId: string): Promise<(ApiKeyMeta & { lastUsedAt: string | null })[]> {
    const [ids, uses] = await this.redis.pipeline().smembers(k.orgKeys(orgId)).hgetall<Record<string, string>>(k.orgKeyUse(orgId)).exec<[string[], Record<string, string> | null]>()
    if (!ids.length) return []
    const metas = (await this.redis.mget<unknown[]>(...ids.map(k.keyMeta))).map((m) => parse<ApiKeyMeta>(m)).filter((m): m is ApiKeyMeta => m !== null)
    return metas
      .map((m) => ({ ...m, lastUsedAt: uses?.[m.id] ?? null }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
  }

  async revokeApiKey(meta: ApiKeyMeta, at: string) {
    const tx = this.redis
      .multi()
      .del(k.keyByHash(meta.hash))
      .set(k.keyMeta(meta.id), JSON.stringify({ ...meta, revokedAt: at }))
    if (meta.siteId) tx.srem(k.siteKeys(meta.siteId), meta.id)
    await tx.exec()
  }

  async touchApiKey(orgId: string, id: string, at: string) {
    await this.redis.hset(k.orgKeyUse(orgId), { [id]: at })
  }

  async createSite(site: Site) {
    const claimed = await this.redis.hsetnx(k.orgDomains(site.orgId), site.domain, site.id)
    if (!claimed) throw new DomainTakenError(`domain: ${site.domain} is already a site of this organization`)
    await this.redis
      .multi()
      .set(k.site(site.id), JSON.stringify(site))
      .set(k.snippet(site.snippetId), site.id)
      .sadd(k.orgSites(site.orgId), site.id)
      .exec()
  }

  async getSite(id: string) {
    return parse<Site>(await this.redis.get(k.site(id)))
  }

  async getSiteIdBySnippet(snippetId: string) {
    const id = await this.redis.get(k.snippet(snippetId))
    return typeof id === 'string' ? id : null
  }

  async listSites(orgId: string): Promise<Site[]> {
    const ids = await this.redis.smembers(k.orgSites(orgId))
    if (!ids.length) return []
    const sites = (await this.redis.mget<unknown[]>(...ids.map(k.site))).map((s) => parse<Site>(s)).filter((s): s is Site => s !== null)
    return sites.sort((a, b) => a.domain.localeCompare(b.domain))
  }

  async saveSite(site: Site) {
    await this.redis.set(k.site(site.id), JSON.stringify(site))
  }

  /** Removes the site, its snippet mapping and domain claim, and revokes the keys bound to it. */
  async deleteSite(site: Site, at: string) {
    const boundKeyIds = await this.redis.smembers(k.siteKeys(site.id))
    const metas = boundKeyIds.length ? (await this.redis.mget<unknown[]>(...boundKeyIds.map(k.keyMeta))).map((m) => parse<ApiKeyMeta>(m)) : []
    const tx = this.redis
      .multi()
      .del(k.site(site.id), k.snippet(site.snippetId), k.siteKeys(site.id))
      .srem(k.orgSites(site.orgId), site.id)
      .hdel(k.orgDomains(site.orgId), site.domain)
    for (const meta of metas) {
      if (!meta) continue
      tx.del(k.keyByHash(meta.hash)).set(k.keyMeta(meta.id), JSON.stringify({ ...meta, revokedAt: meta.revokedAt ?? at }))
    }
    await tx.exec()
  }

  async addUsage(orgId: string, month: string, counts: Record<string, number>) {
    const tx = this.redis.pipeline()
    for (const [kind, n] of Object.entries(counts)) tx.hincrby(k.usage(orgId, month), kind, n)
    await tx.exec()
  }

  async getUsage(orgId: string, month: string): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall<Record<string, string>>(k.usage(orgId, month))
    return Object.fromEntries(Object.entries(raw ?? {}).map(([kind, n]) => [kind, Number(n)]))
  }
}
