import type { DomainServices } from '../sites/domain-services'
import { secretsEqual } from '../core/crypto'
import { ApiError } from '../core/errors'
import type { Site } from '../sites/sites'
import { geoFromCf } from './geo'
import { wellFormedText } from './well-formed'
import { missingKindField, parseHit } from './hit'
import type { IngestItem, IngestOutcome } from './item'
import { forwardedAddress, isPlausiblePayload, parsePlausibleHit } from './plausible-hit'
import { hostnameBelongs } from './screening'

/** Why an accepted hit was not stored, or null when it was. */
export type Dropped = Extract<IngestOutcome, { status: 'dropped' }> | null

/** What became of a hit: null when stored; for Plausible's comma list of domains, the drops of the sites that did not store it. */
export interface Collected {
  dropped: Dropped
  /** Plausible's payload: the answer carries `x-plausible-dropped: 1` when any site dropped it. */
  plausible: boolean
}

/**
 * The visitor's address: the one a customer's proxy passes on in X-Forwarded-For when it proves
 * the site's proxy secret, else the client's address as this home knows it.
 */
export function visitorAddress(services: Pick<DomainServices, 'clientAddress'>, site: Site, request: Request, env: unknown): string {
  const proxied = site.proxySecret && secretsEqual(request.headers.get('x-proxy-secret') ?? '', site.proxySecret)
  return (proxied && request.headers.get('x-forwarded-for')?.split(',')[0].trim()) || services.clientAddress(request, env)
}

/**
 * POST /api/event: one hit of the tracking script, its JSON body as sent (or Plausible's payload,
 * see plausible-hit.ts). The browser sends no timestamp, address or user agent: they come from the
 * request. 400 for a hit that cannot be read or names no known site; a hit the site does not
 * collect is accepted and dropped, and the answer says why.
 */
export async function collectBrowserHit(services: DomainServices, request: Request, env: unknown): Promise<Collected> {
  const text = await request.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new ApiError(400, 'body: not valid JSON')
  }
  if (isPlausiblePayload(body)) return { dropped: await collectPlausibleHit(services, request, env, body), plausible: true }
  const hit = parseHit(body, 'browser')
  if (typeof hit === 'string') throw new ApiError(400, hit)
  const missing = missingKindField(hit)
  if (missing) throw new ApiError(400, missing)
  const site = await services.sites.bySnippet(hit.site)
  if (!site) throw new ApiError(400, `site: unknown site "${hit.site}"`)
  return { dropped: await submit(services, request, { hit, site, ip: visitorAddress(services, site, request, env) }), plausible: false }
}

/**
 * Plausible's payload: recorded for each site its domain list names, the visitor being the first
 * valid address of X-Forwarded-For (else the client's). A domain that names no site drops the hit
 * for it, as Plausible does. A page of one of the sites listed counts for all of them (Plausible's
 * rollups: `data-domain="site.com,rollup.com"`); a page of none is checked by each site's hostnames.
 * Dropped when any site dropped it, with the first reason.
 */
async function collectPlausibleHit(
  services: DomainServices,
  request: Request,
  env: unknown,
  body: Record<string, unknown>,
): Promise<Dropped> {
  const parsed = parsePlausibleHit(body)
  if (typeof parsed === 'string') throw new ApiError(400, parsed)
  const sites = await Promise.all(parsed.domains.map((d) => siteOfDomain(services, d)))
  const pageHost = new URL(parsed.hit.url).hostname
  const pageOfListedSite = parsed.domains.length > 1 && sites.some((site) => site && hostnameBelongs(pageHost, site))
  const outcomes = await Promise.all(
    sites.map(async (site, i): Promise<Dropped> => {
      if (!site) return { status: 'dropped', code: 'unknown-domain', reason: `no site has the domain ${parsed.domains[i]}` }
      const hit = { ...parsed.hit, site: site.snippetId }
      const ip = forwardedAddress(request) ?? visitorAddress(services, site, request, env)
      return submit(services, request, { hit, site, ip, plausible: { hashRouting: parsed.hashRouting, pageOfListedSite } })
    }),
  )
  return outcomes.find((o) => o !== null) ?? null
}

/** The site a Plausible domain names; sites stored before the domain index existed are indexed by the first lookup that misses. */
async function siteOfDomain(services: DomainServices, domain: string): Promise<Site | null> {
  const site = await services.sites.byDomain(domain)
  const { repositories } = services
  if (site || indexed.has(repositories)) return site
  if (await repositories.sites.domainsIndexed()) {
    indexed.add(repositories)
    return null
  }
  let pending = indexing.get(repositories)
  if (!pending) {
    pending = (async () => {
      const all: Site[] = []
      for (const org of await repositories.orgs.list()) all.push(...(await repositories.sites.list(org.id)))
      await repositories.sites.indexAllDomains(all)
    })().finally(() => indexing.delete(repositories))
    indexing.set(repositories, pending)
  }
  await pending
  return services.sites.byDomain(domain, true)
}
/** The indexing under way, per store: concurrent misses wait for one; and the stores known to be indexed. */
const indexing = new WeakMap<object, Promise<void>>()
const indexed = new WeakSet<object>()

async function submit(
  services: DomainServices,
  request: Request,
  item: Pick<IngestItem, 'hit' | 'site' | 'ip' | 'plausible'>,
): Promise<Dropped> {
  const cf = (request as { cf?: Record<string, unknown> }).cf
  // a literal rather than a spread, which costs more than a microsecond a hit
  const outcome = await services.ingestor.submit({
    hit: item.hit,
    site: item.site,
    ip: item.ip,
    plausible: item.plausible,
    // header bytes 0x80-0x9F arrive as C1 control characters
    userAgent: wellFormedText(request.headers.get('user-agent') ?? ''),
    receivedAt: services.now(),
    geo: cf ? geoFromCf(cf) : undefined,
    source: 'browser',
  })
  if (outcome.status === 'rejected') throw new ApiError(400, outcome.error)
  return outcome.status === 'dropped' ? outcome : null
}
