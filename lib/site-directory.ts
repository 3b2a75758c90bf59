import { SNIPPET_ID_PATTERN, type Site, UUID_PATTERN } from './sites'
import type { Store } from './store'

const directories = new WeakMap<Store, SiteDirectory>()

/**
 * Sites by UUID or snippet id, cached for `cacheMs` (10 s unless told): every hit and every
 * keyed request looks its site up. Settings saved through here are seen by this process at once;
 * other processes see them within the cache time.
 */
export class SiteDirectory {
  private readonly cached = new Map<string, { site: Site | null; at: number }>()
  private readonly cacheMs: number

  constructor(
    private readonly store: Store,
    options: { cacheMs?: number } = {},
  ) {
    this.cacheMs = options.cacheMs ?? 10_000
    directories.set(store, this)
  }

  /** The directory the home built over this store, or a new one with the default cache time. */
  static of(store: Store): SiteDirectory {
    return directories.get(store) ?? new SiteDirectory(store)
  }

  /** The site of a UUID or a snippet id; null when there is none or the reference is neither. */
  find(idOrSnippet: string): Promise<Site | null> {
    if (UUID_PATTERN.test(idOrSnippet)) return this.byId(idOrSnippet.toLowerCase())
    if (SNIPPET_ID_PATTERN.test(idOrSnippet)) return this.bySnippet(idOrSnippet)
    return Promise.resolve(null)
  }

  async byId(id: string): Promise<Site | null> {
    const hit = this.fresh(id)
    if (hit !== undefined) return hit
    return this.keep(id, await this.store.getSite(id))
  }

  async bySnippet(snippetId: string): Promise<Site | null> {
    const hit = this.fresh(snippetId)
    if (hit !== undefined) return hit
    const id = await this.store.getSiteIdBySnippet(snippetId)
    return this.keep(snippetId, id ? await this.store.getSite(id) : null)
  }

  /** The sites of these snippet ids, each looked up once. */
  async bySnippets(snippetIds: Iterable<string>): Promise<Map<string, Site | null>> {
    return new Map(await Promise.all([...new Set(snippetIds)].map(async (s) => [s, await this.bySnippet(s)] as const)))
  }

  /** Stores changed settings; this process reads them from the next request on. */
  async save(site: Site) {
    await this.store.saveSite(site)
    this.remember(site, site)
  }

  /** Deletes the site from the store (see Store.deleteSite) and forgets it here. */
  async remove(site: Site, at: string) {
    await this.store.deleteSite(site, at)
    this.remember(site, null)
  }

  private fresh(key: string): Site | null | undefined {
    const entry = this.cached.get(key)
    return entry && Date.now() - entry.at < this.cacheMs ? entry.site : undefined
  }

  private keep(key: string, site: Site | null): Site | null {
    if (this.cacheMs <= 0) return site
    if (this.cached.size > 100_000) this.cached.clear()
    this.cached.set(key, { site, at: Date.now() })
    return site
  }

  private remember(site: Site, value: Site | null) {
    this.keep(site.id, value)
    this.keep(site.snippetId, value)
  }
}
