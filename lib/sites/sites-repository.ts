import type { Redis } from '@upstash/redis'
import { ConflictError } from '../storage/errors'
import { asRecord, asString } from '../storage/kv/records'
import type { Site } from './sites'

const sitesKey = {
  site: (id: string) => `site:${id}`,
  /** The site of a public snippet id. */
  snippet: (snippetId: string) => `snippet:${snippetId}`,
  ofOrg: (orgId: string) => `org:${orgId}:sites`,
  /** domain -> site id: a domain is one site of an organization at most. */
  orgDomains: (orgId: string) => `org:${orgId}:domains`,
  /** Every site, of any organization, whose domain or custom domain is this (without `www.`): Plausible's payload names its site so. */
  domainSites: (domain: string) => `domain-sites:${domain}`,
  /** Set once every site stored before the domain index existed has been added to it. */
  domainIndexed: 'domain-sites:indexed',
}

/** The names a site answers to in the domain index: its domain and its custom domain, lower case and without `www.`. */
export const indexedDomain = (domain: string) => domain.toLowerCase().replace(/^www\./, '')
const domainsOf = (site: Site) => [...new Set([site.domain, site.tracking.customDomain].filter((d): d is string => !!d).map(indexedDomain))]

/** Compare-and-set of one string value. */
const SWAP = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1`

/** Sites with their settings (one JSON record each), their snippet ids and their organization's domains. */
export class SitesRepository {
  private swapScript?: ReturnType<Redis['createScript']>

  constructor(private readonly kv: Redis) {}

  /** Stores a new site; a ConflictError when the organization has a site of that domain already. */
  async create(site: Site) {
    const claimed = await this.kv.hsetnx(sitesKey.orgDomains(site.orgId), site.domain, site.id)
    if (!claimed) throw new ConflictError(`domain: ${site.domain} is already a site of this organization`)
    await this.kv
      .multi()
      .set(sitesKey.site(site.id), JSON.stringify(site))
      .set(sitesKey.snippet(site.snippetId), site.id)
      .sadd(sitesKey.ofOrg(site.orgId), site.id)
      .exec()
    await this.indexDomains(site)
  }

  /** Ids of the sites indexed under this domain (see indexedDomain); some may be gone or renamed since. */
  async idsByDomain(domain: string): Promise<string[]> {
    return (await this.kv.smembers(sitesKey.domainSites(indexedDomain(domain)))).map(String)
  }

  /** Whether every site stored before the domain index existed has been indexed (indexAllDomains). */
  async domainsIndexed(): Promise<boolean> {
    return (await this.kv.exists(sitesKey.domainIndexed)) === 1
  }

  /** Adds these sites to the domain index and records that the index is complete. */
  async indexAllDomains(sites: Site[]) {
    for (const site of sites) await this.indexDomains(site)
    await this.kv.set(sitesKey.domainIndexed, '1')
  }

  private async indexDomains(site: Site, before?: Site) {
    const now = domainsOf(site)
    const gone = before ? domainsOf(before).filter((d) => !now.includes(d)) : []
    await Promise.all([
      ...now.map((d) => this.kv.sadd(sitesKey.domainSites(d), site.id)),
      ...gone.map((d) => this.kv.srem(sitesKey.domainSites(d), site.id)),
    ])
  }

  async get(id: string) {
    return asRecord<Site>(await this.kv.get(sitesKey.site(id)))
  }

  async idBySnippet(snippetId: string) {
    return asString(await this.kv.get(sitesKey.snippet(snippetId)))
  }

  /** An organization's sites, by domain. */
  async list(orgId: string): Promise<Site[]> {
    const ids = await this.kv.smembers(sitesKey.ofOrg(orgId))
    if (!ids.length) return []
    const sites = (await this.kv.mget<unknown[]>(...ids.map(sitesKey.site)))
      .map((s) => asRecord<Site>(s))
      .filter((s): s is Site => s !== null)
    return sites.sort((a, b) => a.domain.localeCompare(b.domain))
  }

  /**
   * Replaces the site record with `after` only if it still is `before` as read (the record is
   * stored as JSON.stringify of the site, and a read parses it back unchanged). False when
   * another write came in between or the site is gone.
   */
  async swap(before: Site, after: Site): Promise<boolean> {
    this.swapScript ??= this.kv.createScript(SWAP)
    const swapped = Number(await this.swapScript.exec([sitesKey.site(before.id)], [JSON.stringify(before), JSON.stringify(after)])) === 1
    if (swapped && (before.domain !== after.domain || before.tracking.customDomain !== after.tracking.customDomain))
      await this.indexDomains(after, before)
    return swapped
  }

  /** Removes the site record, its snippet mapping and its domain claim. */
  async delete(site: Site) {
    await this.kv
      .multi()
      .del(sitesKey.site(site.id), sitesKey.snippet(site.snippetId))
      .srem(sitesKey.ofOrg(site.orgId), site.id)
      .hdel(sitesKey.orgDomains(site.orgId), site.domain)
      .exec()
    await Promise.all(domainsOf(site).map((d) => this.kv.srem(sitesKey.domainSites(d), site.id)))
  }
}
