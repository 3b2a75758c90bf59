import { ApiError } from '../core/errors'
import { SNIPPET_ID_PATTERN, type Site, UUID_PATTERN } from './sites'
import { type SitesRepository, indexedDomain } from './sites-repository'

/**
 * Sites by UUID or snippet id, cached for `cacheMs` (10 s unless told): every hit and every
 * public count looks its site up. Settings saved through here are seen by this process at once;
 * other processes see them within the cache time, or at once when they read fresh.
 */
/**
 * Whether a site proved it controls its domain: an install check found the site's own snippet
 * (its data-site id, which no other site has) on the domain's homepage; a site's stored install
 * flag follows only those checks. Events prove nothing (anyone can send them), nor does a custom
 * tracking domain (its CNAME names this service, not an organization).
 */
export const controlsItsDomain = (site: Site) => site.install.installed

export class SiteDirectory {
  private readonly cached = new Map<string, { site: Site | null; at: number }>()
  /** The same sites by id (found ones only): the keyed API's reads name sites by UUID. */
  private readonly cachedIds = new Map<string, { site: Site; at: number }>()
  private readonly cachedDomains = new Map<string, { snippetId: string | null; at: number }>()
  private readonly cacheMs: number
  private readonly clock: () => number

  constructor(
    private readonly repository: SitesRepository,
    options: { cacheMs?: number; clock?: () => number } = {},
  ) {
    this.cacheMs = options.cacheMs ?? 10_000
    this.clock = options.clock ?? Date.now
  }

  /**
   * The site of a UUID or a snippet id as stored now; null when there is none or the reference
   * is neither. For the keyed API, whose handlers change what they read: a settings write or a
   * key rotation must start from the stored site, whichever process saved it last.
   */
  findFresh(idOrSnippet: string): Promise<Site | null> {
    if (UUID_PATTERN.test(idOrSnippet)) return this.readById(idOrSnippet.toLowerCase())
    if (SNIPPET_ID_PATTERN.test(idOrSnippet)) return this.readBySnippet(idOrSnippet)
    return Promise.resolve(null)
  }

  /**
   * The site of a UUID or a snippet id, from the cache when there: for reads (the keyed API's
   * GET requests), which change nothing. A change saved through this directory is seen at once;
   * one saved by another process, within the cache time.
   */
  find(idOrSnippet: string): Promise<Site | null> {
    if (UUID_PATTERN.test(idOrSnippet)) {
      const entry = this.cachedIds.get(idOrSnippet.toLowerCase())
      if (entry && this.clock() - entry.at < this.cacheMs) return Promise.resolve(entry.site)
      return this.readById(idOrSnippet.toLowerCase())
    }
    if (SNIPPET_ID_PATTERN.test(idOrSnippet)) return this.bySnippet(idOrSnippet)
    return Promise.resolve(null)
  }

  /** Forgets every cached site: the store was changed around this process (through the server's local endpoint). */
  forget() {
    this.cached.clear()
    this.cachedIds.clear()
    this.cachedDomains.clear()
  }

  /** The site of a snippet id, from the cache when there. */
  bySnippet(snippetId: string): Promise<Site | null> {
    const site = this.cachedBySnippet(snippetId)
    return site === undefined ? this.readBySnippet(snippetId) : Promise.resolve(site)
  }

  /**
   * The site of a snippet id when the cache holds it (null: there is none), undefined when it
   * must be read: lets the public count answer a repeat without waiting on anything.
   */
  cachedBySnippet(snippetId: string): Site | null | undefined {
    const entry = this.cached.get(snippetId)
    return entry && this.clock() - entry.at < this.cacheMs ? entry.site : undefined
  }

  /** The sites of these snippet ids, each looked up once. */
  async bySnippets(snippetIds: Iterable<string>): Promise<Map<string, Site | null>> {
    return new Map(await Promise.all([...new Set(snippetIds)].map(async (s) => [s, await this.bySnippet(s)] as const)))
  }

  /**
   * The site a domain names, as Plausible's payload does: the site whose domain or custom domain it
   * is (with or without `www.`, any case). Domains are unique within an organization only: when
   * sites of several organizations claim one, only a site that proved it controls the domain
   * answers to it (the first created of those): none answers while none has. Cached like the
   * snippet's answer unless `fresh`.
   */
  async byDomain(domain: string, fresh = false): Promise<Site | null> {
    const name = indexedDomain(domain)
    const entry = this.cachedDomains.get(name)
    if (!fresh && entry && this.clock() - entry.at < this.cacheMs) return entry.snippetId ? this.bySnippet(entry.snippetId) : null
    const ids = await this.repository.idsByDomain(name)
    const named = (s: Site | null): s is Site =>
      !!s && (indexedDomain(s.domain) === name || (!!s.tracking.customDomain && indexedDomain(s.tracking.customDomain) === name))
    const sites = (await Promise.all(ids.map((id) => this.repository.get(id)))).filter(named)
    sites.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
    const contested = new Set(sites.map((s) => s.orgId)).size > 1
    const site = (contested ? sites.filter(controlsItsDomain) : sites)[0] ?? null
    if (this.cacheMs > 0) {
      if (this.cachedDomains.size > 100_000) this.cachedDomains.clear()
      this.cachedDomains.set(name, { snippetId: site?.snippetId ?? null, at: this.clock() })
    }
    if (site) this.keep(site.snippetId, site)
    return site
  }

  /**
   * Changes a site's stored record: `change` gets the record as stored now and returns the next
   * one (or the same object for no change). When another write lands in between, the change is
   * made again on the newer record, so concurrent writes of different settings all survive.
   * `change` may run more than once: it must only compute. This process reads the result from the
   * next request on. 404 when the site is gone.
   */
  async update(siteId: string, change: (current: Site) => Site | Promise<Site>): Promise<Site> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.repository.get(siteId)
      if (!current) throw new ApiError(404, 'site not found')
      const next = await change(current)
      if (next === current) return current
      if (await this.repository.swap(current, next)) {
        this.keep(next.snippetId, next)
        return next
      }
      if (attempt === 8) throw new ApiError(409, 'the site kept changing while this change was made; try again')
    }
  }

  /** Deletes the site's record (see SitesRepository.delete) and forgets it here. */
  async remove(site: Site) {
    await this.repository.delete(site)
    this.keep(site.snippetId, null)
    this.cachedIds.delete(site.id)
  }

  private async readBySnippet(snippetId: string): Promise<Site | null> {
    // a snippet id stays with its site: once known, only the site's settings need reading again
    const id = this.cached.get(snippetId)?.site?.id ?? (await this.repository.idBySnippet(snippetId))
    const site = id ? await this.repository.get(id) : null
    this.keep(snippetId, site)
    return site
  }

  private async readById(id: string): Promise<Site | null> {
    const site = await this.repository.get(id)
    if (site) this.keep(site.snippetId, site)
    return site
  }

  /** Caches by snippet id, the key hits and public counts carry. */
  private keep(snippetId: string, site: Site | null) {
    if (this.cacheMs <= 0) return
    if (this.cached.size > 100_000) this.cached.clear()
    const at = this.clock()
    this.cached.set(snippetId, { site, at })
    if (!site) return
    if (this.cachedIds.size > 100_000) this.cachedIds.clear()
    this.cachedIds.set(site.id, { site, at })
  }
}
