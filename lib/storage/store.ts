import type { Redis } from '@upstash/redis'
import type { ApiKeyMeta, ApiKeyRecord } from '../accounts/keys'
import { ApiError } from '../errors'
import type { Goal } from '../sites/goals'
import type { Invitation, Member } from '../accounts/team'
import type { InstallCheck } from '../sites/install-check-result'
import type { Filter } from '../reports/query/model'
import type { Site } from '../sites/sites'

export interface Org {
  id: string
  name: string
  plan: 'free' | 'pro' | 'business'
  createdAt: string
  /** Set by the account area's billing; absent for an organization that never subscribed. */
  subscriptionStatus?: 'active' | 'past_due' | 'canceled'
  /** The end of a paid plan's trial, when it has one. */
  trialEndsAt?: string | null
}

/** Compare-and-set of one string value. */
const SWAP = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`

/** The Redis key of each kind of record, all in one place (the visit script's own key is in ingest/visits.ts). */
const redisKey = {
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
  // settings: report deliveries, team, install checks, custom domains
  delivery: (id: string) => `delivery:${id}`,
  orgMembers: (orgId: string) => `org:${orgId}:members`,
  orgInvitations: (orgId: string) => `org:${orgId}:invitations`,
  /** Each address of the team once: `member:<id>` or `invitation:<id>`. */
  orgTeamEmails: (orgId: string) => `org:${orgId}:team-emails`,
  invitationOrg: (invitationId: string) => `invitation:${invitationId}`,
  siteInstallCheck: (siteId: string) => `site:${siteId}:install-check`,
  siteCustomDomain: (siteId: string) => `site:${siteId}:custom-domain`,
  // settings: annotations, funnels, segments, import runs, usage per site
  siteAnnotations: (siteId: string) => `site:${siteId}:annotations`,
  annotationSite: (id: string) => `annotation:${id}:site`,
  siteFunnels: (siteId: string) => `site:${siteId}:funnels`,
  siteSegments: (siteId: string) => `site:${siteId}:segments`,
  siteImports: (siteId: string) => `site:${siteId}:imports`,
  usageBySite: (orgId: string, month: string) => `usage:${orgId}:${month}:sites`,
  // answers of outside services, kept for a while
  cruxAnswer: (origin: string, formFactor: string) => `crux:${formFactor}:${origin}`,
}

/** A sent report's record outlives its period (a month) and the next due day. */
const DELIVERY_RECORD_SECONDS = 400 * 86_400

/** The keys holding what belongs to one site alone, removed with it. */
const siteOwnedKeys = (siteId: string) => [redisKey.siteAnnotations(siteId), redisKey.siteFunnels(siteId), redisKey.siteSegments(siteId), redisKey.siteImports(siteId)]

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
    await this.redis.multi().set(redisKey.org(org.id), JSON.stringify(org)).sadd(redisKey.orgs, org.id).exec()
  }

  async getOrg(id: string) {
    return parse<Org>(await this.redis.get(redisKey.org(id)))
  }

  async countOrgs() {
    return this.redis.scard(redisKey.orgs)
  }

  async listOrgs(): Promise<Org[]> {
    const ids = await this.redis.smembers(redisKey.orgs)
    if (!ids.length) return []
    return (await this.redis.mget<unknown[]>(...ids.map(redisKey.org))).map((o) => parse<Org>(o)).filter((o): o is Org => o !== null)
  }

  async createApiKey(meta: ApiKeyMeta) {
    const { hash, revokedAt: _revoked, ...record } = meta
    const tx = this.redis
      .multi()
      .set(redisKey.keyByHash(hash), JSON.stringify(record satisfies ApiKeyRecord))
      .set(redisKey.keyMeta(meta.id), JSON.stringify(meta))
      .sadd(redisKey.orgKeys(meta.orgId), meta.id)
    if (meta.siteId) tx.sadd(redisKey.siteKeys(meta.siteId), meta.id)
    await tx.exec()
  }

  /** The auth lookup: one GET. */
  async getApiKeyByHash(hash: string) {
    return parse<ApiKeyRecord>(await this.redis.get(redisKey.keyByHash(hash)))
  }

  async getApiKeyMeta(id: string) {
    return parse<ApiKeyMeta>(await this.redis.get(redisKey.keyMeta(id)))
  }

  async listApiKeys(orgId: string): Promise<(ApiKeyMeta & { lastUsedAt: string | null })[]> {
    const [ids, uses] = await this.redis.pipeline().smembers(redisKey.orgKeys(orgId)).hgetall<Record<string, string>>(redisKey.orgKeyUse(orgId)).exec<[string[], Record<string, string> | null]>()
    if (!ids.length) return []
    const metas = (await this.redis.mget<unknown[]>(...ids.map(redisKey.keyMeta))).map((m) => parse<ApiKeyMeta>(m)).filter((m): m is ApiKeyMeta => m !== null)
    return metas
      .map((m) => ({ ...m, lastUsedAt: uses?.[m.id] ?? null }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
  }

  async revokeApiKey(meta: ApiKeyMeta, at: string) {
    const tx = this.redis
      .multi()
      .del(redisKey.keyByHash(meta.hash))
      .set(redisKey.keyMeta(meta.id), JSON.stringify({ ...meta, revokedAt: at }))
    if (meta.siteId) tx.srem(redisKey.siteKeys(meta.siteId), meta.id)
    await tx.exec()
  }

  async touchApiKey(orgId: string, id: string, at: string) {
    await this.redis.hset(redisKey.orgKeyUse(orgId), { [id]: at })
  }

  async createSite(site: Site) {
    const claimed = await this.redis.hsetnx(redisKey.orgDomains(site.orgId), site.domain, site.id)
    if (!claimed) throw new ApiError(409, `domain: ${site.domain} is already a site of this organization`)
    await this.redis
      .multi()
      .set(redisKey.site(site.id), JSON.stringify(site))
      .set(redisKey.snippet(site.snippetId), site.id)
      .sadd(redisKey.orgSites(site.orgId), site.id)
      .exec()
  }

  async getSite(id: string) {
    return parse<Site>(await this.redis.get(redisKey.site(id)))
  }

  async getSiteIdBySnippet(snippetId: string) {
    const id = await this.redis.get(redisKey.snippet(snippetId))
    return typeof id === 'string' ? id : null
  }

  async listSites(orgId: string): Promise<Site[]> {
    const ids = await this.redis.smembers(redisKey.orgSites(orgId))
    if (!ids.length) return []
    const sites = (await this.redis.mget<unknown[]>(...ids.map(redisKey.site))).map((s) => parse<Site>(s)).filter((s): s is Site => s !== null)
    return sites.sort((a, b) => a.domain.localeCompare(b.domain))
  }

  /** Every site of every organization: what the scheduled deliveries go through, site by site. */
  async listAllSites(): Promise<Site[]> {
    const sites: Site[] = []
    for (const org of await this.listOrgs()) sites.push(...(await this.listSites(org.id)))
    return sites
  }

  /**
   * Replaces the site record with `after` only if it still is `before` as read (the record is
   * stored as JSON.stringify of the site, and a read parses it back unchanged). False when
   * another write came in between or the site is gone.
   */
  async swapSite(before: Site, after: Site): Promise<boolean> {
    return Number(await this.runScript(SWAP, [redisKey.site(before.id)], [JSON.stringify(before), JSON.stringify(after)])) === 1
  }

  /** Removes the site, its snippet mapping and domain claim, and revokes the keys bound to it. */
  async deleteSite(site: Site, at: string) {
    const boundKeyIds = await this.redis.smembers(redisKey.siteKeys(site.id))
    const metas = boundKeyIds.length ? (await this.redis.mget<unknown[]>(...boundKeyIds.map(redisKey.keyMeta))).map((m) => parse<ApiKeyMeta>(m)) : []
    const tx = this.redis
      .multi()
      .del(redisKey.site(site.id), redisKey.snippet(site.snippetId), redisKey.siteKeys(site.id), redisKey.siteGoals(site.id), ...siteOwnedKeys(site.id))
      .srem(redisKey.orgSites(site.orgId), site.id)
      .hdel(redisKey.orgDomains(site.orgId), site.domain)
    for (const meta of metas) {
      if (!meta) continue
      tx.del(redisKey.keyByHash(meta.hash)).set(redisKey.keyMeta(meta.id), JSON.stringify({ ...meta, revokedAt: meta.revokedAt ?? at }))
    }
    await tx.exec()
  }

  /** The site's salt for a site-local day: created once, shared by every instance, gone after 48 hours. */
  async dailySalt(siteId: string, day: string, candidate: string): Promise<string> {
    const [, salt] = await this.redis
      .pipeline()
      .set(redisKey.salt(siteId, day), candidate, { nx: true, ex: 48 * 3600 })
      .get<string>(redisKey.salt(siteId, day))
      .exec<[unknown, string]>()
    return String(salt)
  }

  /**
   * Runs a Lua script atomically, sent by its SHA after the first call. The embedded store may
   * run a script natively instead (see NATIVE_SCRIPTS in ingest/visits.ts).
   */
  async runScript(lua: string, keys: string[], args: string[]): Promise<unknown> {
    let script = this.scripts.get(lua)
    if (!script) this.scripts.set(lua, (script = this.redis.createScript(lua)))
    return script.exec(keys, args)
  }

  private readonly scripts = new Map<string, ReturnType<Redis['createScript']>>()

  /** Counts one more uncached public-count window asked of the site this minute; the new count. */
  async countLiveWindow(siteId: string, minute: number): Promise<number> {
    const [count] = await this.redis.pipeline().incr(redisKey.liveWindows(siteId, minute)).expire(redisKey.liveWindows(siteId, minute), 120).exec<[number, number]>()
    return count
  }

  /** A site's named records (goals, funnels, segments): one hash by id, listed oldest first. */
  private async listNamed<T extends { createdAt: string; name: string }>(key: string): Promise<T[]> {
    const all = await this.redis.hgetall<Record<string, T>>(key)
    return Object.values(all ?? {}).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name))
  }

  private async saveNamed(key: string, record: { id: string }) {
    await this.redis.hset(key, { [record.id]: JSON.stringify(record) })
  }

  private async deleteNamed(key: string, id: string): Promise<boolean> {
    return (await this.redis.hdel(key, id)) === 1
  }

  listGoals(siteId: string): Promise<Goal[]> {
    return this.listNamed<Goal>(redisKey.siteGoals(siteId))
  }

  saveGoal(siteId: string, goal: Goal) {
    return this.saveNamed(redisKey.siteGoals(siteId), goal)
  }

  deleteGoal(siteId: string, goalId: string): Promise<boolean> {
    return this.deleteNamed(redisKey.siteGoals(siteId), goalId)
  }

  /** Counts stored rows, by site and kind, in the organization's usage of a month: one round trip. */
  async addUsage(orgId: string, month: string, bySite: Record<string, Record<string, number>>) {
    const tx = this.redis.pipeline()
    for (const [siteId, counts] of Object.entries(bySite)) {
      for (const [kind, n] of Object.entries(counts)) {
        tx.hincrby(redisKey.usage(orgId, month), kind, n)
        tx.hincrby(redisKey.usageBySite(orgId, month), `${siteId}:${kind}`, n)
      }
    }
    await tx.exec()
  }

  async getUsage(orgId: string, month: string): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall<Record<string, string>>(redisKey.usage(orgId, month))
    return Object.fromEntries(Object.entries(raw ?? {}).map(([kind, n]) => [kind, Number(n)]))
  }

  // ---- settings: report deliveries, team, install checks, custom domains ----

  /** Claims one delivery for `leaseSeconds`: true for the one caller that may send it, false once claimed or sent. */
  async claimDelivery(id: string, leaseSeconds: number): Promise<boolean> {
    return (await this.redis.set(redisKey.delivery(id), 'sending', { nx: true, ex: leaseSeconds })) === 'OK'
  }

  /** Records a delivery as sent, for long enough that its period is never due again. */
  async markDelivered(id: string) {
    await this.redis.set(redisKey.delivery(id), 'sent', { ex: DELIVERY_RECORD_SECONDS })
  }

  /** Gives a failed delivery's claim back, so the next run retries it. */
  async releaseDelivery(id: string) {
    await this.redis.del(redisKey.delivery(id))
  }

  async listTeam(orgId: string): Promise<{ members: Member[]; invitations: Invitation[] }> {
    const [members, invitations] = await this.redis
      .pipeline()
      .hgetall<Record<string, Member>>(redisKey.orgMembers(orgId))
      .hgetall<Record<string, Invitation>>(redisKey.orgInvitations(orgId))
      .exec<[Record<string, Member> | null, Record<string, Invitation> | null]>()
    return { members: Object.values(members ?? {}), invitations: Object.values(invitations ?? {}) }
  }

  /** Adds a member unless the address is already on the team; false then. */
  async addMember(orgId: string, member: Member): Promise<boolean> {
    if (!(await this.redis.hsetnx(redisKey.orgTeamEmails(orgId), member.email, `member:${member.id}`))) return false
    await this.saveMember(orgId, member)
    return true
  }

  async saveMember(orgId: string, member: Member) {
    await this.redis.hset(redisKey.orgMembers(orgId), { [member.id]: JSON.stringify(member) })
  }

  async removeMember(orgId: string, member: Member) {
    await this.redis.multi().hdel(redisKey.orgMembers(orgId), member.id).hdel(redisKey.orgTeamEmails(orgId), member.email).exec()
  }

  /** Records an invitation unless the address is already on the team; false then. */
  async createInvitation(orgId: string, invitation: Invitation): Promise<boolean> {
    if (!(await this.redis.hsetnx(redisKey.orgTeamEmails(orgId), invitation.email, `invitation:${invitation.id}`))) return false
    await this.redis
      .multi()
      .hset(redisKey.orgInvitations(orgId), { [invitation.id]: JSON.stringify(invitation) })
      .set(redisKey.invitationOrg(invitation.id), orgId)
      .exec()
    return true
  }

  async getInvitationOrg(invitationId: string): Promise<string | null> {
    const orgId = await this.redis.get(redisKey.invitationOrg(invitationId))
    return typeof orgId === 'string' ? orgId : null
  }

  async removeInvitation(orgId: string, invitation: Invitation) {
    await this.redis
      .multi()
      .hdel(redisKey.orgInvitations(orgId), invitation.id)
      .hdel(redisKey.orgTeamEmails(orgId), invitation.email)
      .del(redisKey.invitationOrg(invitation.id))
      .exec()
  }

  async acceptInvitation(orgId: string, invitation: Invitation, member: Member) {
    await this.redis
      .multi()
      .hdel(redisKey.orgInvitations(orgId), invitation.id)
      .del(redisKey.invitationOrg(invitation.id))
      .hset(redisKey.orgMembers(orgId), { [member.id]: JSON.stringify(member) })
      .hset(redisKey.orgTeamEmails(orgId), { [member.email]: `member:${member.id}` })
      .exec()
  }

  async getInstallCheck(siteId: string): Promise<InstallCheck | null> {
    return parse<InstallCheck>(await this.redis.get(redisKey.siteInstallCheck(siteId)))
  }

  async saveInstallCheck(siteId: string, check: InstallCheck) {
    await this.redis.set(redisKey.siteInstallCheck(siteId), JSON.stringify(check))
  }

  async getCustomDomain(siteId: string): Promise<CustomDomainRecord | null> {
    return parse<CustomDomainRecord>(await this.redis.get(redisKey.siteCustomDomain(siteId)))
  }

  async saveCustomDomain(siteId: string, record: CustomDomainRecord) {
    await this.redis.set(redisKey.siteCustomDomain(siteId), JSON.stringify(record))
  }

  async deleteCustomDomain(siteId: string) {
    await this.redis.del(redisKey.siteCustomDomain(siteId))
  }

  /** Drops what a deleted site's install checks and custom domain left behind. */
  async deleteSiteChecks(siteId: string) {
    await this.redis.del(redisKey.siteInstallCheck(siteId), redisKey.siteCustomDomain(siteId))
  }

  // --- settings: annotations, funnels, segments, import runs, usage per site ---

  /** The month's usage per site and kind. */
  async getUsageBySite(orgId: string, month: string): Promise<Record<string, Record<string, number>>> {
    const raw = await this.redis.hgetall<Record<string, string>>(redisKey.usageBySite(orgId, month))
    const bySite: Record<string, Record<string, number>> = {}
    for (const [field, n] of Object.entries(raw ?? {})) {
      const at = field.lastIndexOf(':')
      const siteId = field.slice(0, at)
      bySite[siteId] ??= {}
      bySite[siteId][field.slice(at + 1)] = Number(n)
    }
    return bySite
  }

  async listAnnotations(siteId: string): Promise<Annotation[]> {
    return Object.values((await this.redis.hgetall<Record<string, Annotation>>(redisKey.siteAnnotations(siteId))) ?? {})
  }

  async saveAnnotation(annotation: Annotation) {
    await this.redis
      .multi()
      .hset(redisKey.siteAnnotations(annotation.siteId), { [annotation.id]: JSON.stringify(annotation) })
      .set(redisKey.annotationSite(annotation.id), annotation.siteId)
      .exec()
  }

  /** The site an annotation belongs to, so a delete by id alone can check who may delete it. */
  async getAnnotationSite(id: string): Promise<string | null> {
    const siteId = await this.redis.get(redisKey.annotationSite(id))
    return typeof siteId === 'string' ? siteId : null
  }

  async deleteAnnotation(siteId: string, id: string): Promise<boolean> {
    const [removed] = await this.redis.multi().hdel(redisKey.siteAnnotations(siteId), id).del(redisKey.annotationSite(id)).exec<[number, number]>()
    return removed === 1
  }

  listFunnels(siteId: string): Promise<Funnel[]> {
    return this.listNamed<Funnel>(redisKey.siteFunnels(siteId))
  }

  saveFunnel(siteId: string, funnel: Funnel) {
    return this.saveNamed(redisKey.siteFunnels(siteId), funnel)
  }

  deleteFunnel(siteId: string, funnelId: string): Promise<boolean> {
    return this.deleteNamed(redisKey.siteFunnels(siteId), funnelId)
  }

  listSegments(siteId: string): Promise<Segment[]> {
    return this.listNamed<Segment>(redisKey.siteSegments(siteId))
  }

  saveSegment(siteId: string, segment: Segment) {
    return this.saveNamed(redisKey.siteSegments(siteId), segment)
  }

  deleteSegment(siteId: string, segmentId: string): Promise<boolean> {
    return this.deleteNamed(redisKey.siteSegments(siteId), segmentId)
  }

  async listImportRuns(siteId: string): Promise<ImportRun[]> {
    const all = await this.redis.hgetall<Record<string, ImportRun>>(redisKey.siteImports(siteId))
    return Object.values(all ?? {})
  }

  async saveImportRun(siteId: string, run: ImportRun) {
    await this.redis.hset(redisKey.siteImports(siteId), { [run.id]: JSON.stringify(run) })
  }

  // --- answers of outside services ---

  /** The CrUX answer kept for an origin and form factor (lib/integrations/crux.ts), until it expires. */
  async getCruxAnswer<T extends object>(origin: string, formFactor: string): Promise<T | null> {
    return parse<T>(await this.redis.get(redisKey.cruxAnswer(origin, formFactor)))
  }

  async saveCruxAnswer(origin: string, formFactor: string, answer: object, seconds: number) {
    await this.redis.set(redisKey.cruxAnswer(origin, formFactor), JSON.stringify(answer), { ex: seconds })
  }
}

/** A site's custom tracking domain, as attached (lib/sites/custom-domain.ts). */
export interface CustomDomainRecord {
  domain: string
  addedAt: string
  verifiedAt: string | null
}

// --- settings records: annotations, funnels, segments, import runs ---

export const ANNOTATION_KINDS = ['deploy', 'campaign', 'email', 'content', 'note', 'spike_source', 'other'] as const

/** A marker on the traffic chart. */
export interface Annotation {
  id: string
  siteId: string
  title: string
  at: string
  kind: (typeof ANNOTATION_KINDS)[number]
  body: string | null
  url: string | null
  createdAt: string
}

export const FUNNEL_STEP_TYPES = ['page', 'event', 'goal'] as const

export interface FunnelStep {
  type: (typeof FUNNEL_STEP_TYPES)[number]
  /** A path where `*` matches anything (page), an event name (event), or a goal id of the site (goal). */
  value: string
  label: string | null
}

export interface Funnel {
  id: string
  name: string
  steps: FunnelStep[]
  createdAt: string
  updatedAt: string
}

/** A saved set of filters, usable as one `segment` filter in every report. */
export interface Segment {
  id: string
  name: string
  filters: Filter[]
  createdAt: string
}

/** One run of a data import into a site: what it loaded and the period its rows cover. */
export interface ImportRun {
  id: string
  kind: 'raw_hits'
  state: 'completed' | 'failed'
  startedAt: string
  finishedAt: string
  rows: number
  rejected: number
  /** The first and last timestamp of the rows it stored; null when it stored none. */
  from: string | null
  to: string | null
  error: string | null
}
