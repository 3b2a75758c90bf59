import type { Redis } from '@upstash/redis'
import type { ApiKeyMeta, ApiKeyRecord } from './keys'
import { ApiError } from './errors'
import type { Goal } from './goals'
import type { Site } from './sites'

export interface Org {
  id: string
  name: string
  plan: 'free' | 'pro' | 'business'
  createdAt: string
}

/** A domain already claimed in the organization: 409. */
export class DomainTakenError extends ApiError {
  constructor(message: string) {
    super(409, message)
  }
}

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
  siteGoals: (siteId: string) => `site:${siteId}:goals`,
  usage: (orgId: string, month: string) => `usage:${orgId}:${month}`,
  salt: (siteId: string, day: string) => `salt:${siteId}:${day}`,
  liveWindows: (siteId: string, minute: number) => `live:${siteId}:${minute}`,
  session: (siteId: string, visitorId: string) => `sess:${siteId}:${visitorId}`,
}

/**
 * Sessions are `id|start|last|attrs` strings. The caller sends runs of a visitor's hits, each
 * within the gap of the one before (time-sorted, so a run's later hits surely join its first
 * one's visit): the script extends or replaces each visitor's session in order, atomically,
 * with the run's first and last times, and answers one line `id|start|attrs` a run. attrs are
 * sent back only for visits that began before this call: the caller knows the rest. One string
 * keeps the client's JSON deserialization to one attempt, and the ':' in front keeps it from
 * parsing 64-bit ids.
 */
const ASSIGN_SESSIONS = `
local gap = tonumber(ARGV[1])
local ttl = ARGV[2]
local out = {}
local created = {}
for i, key in ipairs(KEYS) do
  local ts = ARGV[i * 4 - 1]
  local until_ts = ARGV[i * 4]
  local candidate = ARGV[i * 4 + 1]
  local current = redis.call('GET', key)
  local joined = false
  if current then
    local a = string.find(current, '|', 1, true)
    local b = string.find(current, '|', a + 1, true)
    local c = string.find(current, '|', b + 1, true)
    local id = string.sub(current, 1, a - 1)
    local start = string.sub(current, a + 1, b - 1)
    local last = string.sub(current, b + 1, c - 1)
    local t = tonumber(ts)
    if t - tonumber(last) <= gap and t >= tonumber(start) - gap then
      if tonumber(until_ts) > tonumber(last) then last = until_ts end
      local rest = string.sub(current, c + 1)
      redis.call('SET', key, id .. '|' .. start .. '|' .. last .. '|' .. rest, 'PX', ttl)
      if created[id] then rest = '' end
      out[i] = id .. '|' .. start .. '|' .. rest
      joined = true
    end
  end
  if not joined then
    redis.call('SET', key, candidate .. '|' .. ts .. '|' .. until_ts .. '|' .. ARGV[i * 4 + 2], 'PX', ttl)
    created[candidate] = true
    out[i] = candidate .. '|' .. ts .. '|'
  end
end
return ':' .. table.concat(out, '\\n')
`

/**
 * The same algorithm for the embedded store, which runs it natively instead of interpreting the
 * Lua (the contract suite checks both give the same answers). `call` runs one Redis command.
 */
export function assignSessionsNative(keys: string[], args: string[], call: (command: string[]) => unknown): string {
  const gap = Number(args[0])
  const ttl = args[1]
  const created = new Set<string>()
  const out: string[] = []
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]
    const ts = args[index * 4 + 2]
    const until = args[index * 4 + 3]
    const current = call(['GET', key]) as string | null
    if (current) {
      const a = current.indexOf('|')
      const b = current.indexOf('|', a + 1)
      const c = current.indexOf('|', b + 1)
      const id = current.slice(0, a)
      const start = current.slice(a + 1, b)
      let last = current.slice(b + 1, c)
      const t = Number(ts)
      if (t - Number(last) <= gap && t >= Number(start) - gap) {
        if (Number(until) > Number(last)) last = until
        const rest = current.slice(c + 1)
        call(['SET', key, `${id}|${start}|${last}|${rest}`, 'PX', ttl])
        out.push(`${id}|${start}|${created.has(id) ? '' : rest}`)
        continue
      }
    }
    const candidate = args[index * 4 + 4]
    call(['SET', key, `${candidate}|${ts}|${until}|${args[index * 4 + 5]}`, 'PX', ttl])
    created.add(candidate)
    out.push(`${candidate}|${ts}|`)
  }
  return `:${out.join('\n')}`
}

/** Scripts the embedded store may run natively, by their Lua source. */
export const NATIVE_SCRIPTS: [string, typeof assignSessionsNative][] = [[ASSIGN_SESSIONS, assignSessionsNative]]

/** A run of one visitor's hits, each within the visit gap of the one before. */
export interface SessionRequest {
  siteId: string
  visitorId: string
  /** Time of the run's first hit, epoch milliseconds. */
  at: number
  /** Time of its last hit (`at` for a run of one). */
  until: number
  /** The id to use if the run starts a visit; unique per call. */
  candidateId: string
  /** Visit-scoped attributes of the run's first hit, kept if it starts the visit. */
  attrs: string
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
      .del(k.site(site.id), k.snippet(site.snippetId), k.siteKeys(site.id), k.siteGoals(site.id))
      .srem(k.orgSites(site.orgId), site.id)
      .hdel(k.orgDomains(site.orgId), site.domain)
    for (const meta of metas) {
      if (!meta) continue
      tx.del(k.keyByHash(meta.hash)).set(k.keyMeta(meta.id), JSON.stringify({ ...meta, revokedAt: meta.revokedAt ?? at }))
    }
    await tx.exec()
  }

  /** The site's salt for a site-local day: created once, shared by every instance, gone after 48 hours. */
  async dailySalt(siteId: string, day: string, candidate: string): Promise<string> {
    const [, salt] = await this.redis
      .pipeline()
      .set(k.salt(siteId, day), candidate, { nx: true, ex: 48 * 3600 })
      .get<string>(k.salt(siteId, day))
      .exec<[unknown, string]>()
    return String(salt)
  }

  /**
   * Assigns each run of hits to a visit, in order, in one script call: a run whose first hit is
   * within `gapMs` of the visitor's last one joins that visit, otherwise it starts a new one with
   * its candidate id.
   */
  async assignSessions(requests: SessionRequest[], gapMs: number): Promise<{ id: string; start: number; attrs: string | null }[]> {
    if (!requests.length) return []
    const args = [String(gapMs), String(gapMs * 4)]
    for (const r of requests) args.push(String(r.at), String(r.until), r.candidateId, r.attrs)
    this.sessionScript ??= this.redis.createScript<string>(ASSIGN_SESSIONS)
    const out = String(await this.sessionScript.exec(requests.map((r) => k.session(r.siteId, r.visitorId)), args))
    return out
      .slice(1)
      .split('\n')
      .map((line) => {
        const a = line.indexOf('|')
        const b = line.indexOf('|', a + 1)
        const attrs = line.slice(b + 1)
        return { id: line.slice(0, a), start: Number(line.slice(a + 1, b)), attrs: attrs || null }
      })
  }

  private sessionScript: ReturnType<Redis['createScript']> | undefined

  /** Counts one more uncached public-count window asked of the site this minute; the new count. */
  async countLiveWindow(siteId: string, minute: number): Promise<number> {
    const [count] = await this.redis.pipeline().incr(k.liveWindows(siteId, minute)).expire(k.liveWindows(siteId, minute), 120).exec<[number, number]>()
    return count
  }

  async listGoals(siteId: string): Promise<Goal[]> {
    const all = await this.redis.hgetall<Record<string, Goal>>(k.siteGoals(siteId))
    return Object.values(all ?? {}).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name))
  }

  async saveGoal(siteId: string, goal: Goal) {
    await this.redis.hset(k.siteGoals(siteId), { [goal.id]: JSON.stringify(goal) })
  }

  async deleteGoal(siteId: string, goalId: string): Promise<boolean> {
    return (await this.redis.hdel(k.siteGoals(siteId), goalId)) === 1
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
