import type { SourceServices, SourceRepositories } from '../source-services'
import { ApiError } from '../../core/errors'
import { GOOGLE_NOT_CONFIGURED } from '../google/config'
import { connectOffer } from '../google/connect'
import { GA4_SCOPE } from '../google/oauth'
import type { Site } from '../../sites/sites'
import type { SiteDirectory } from '../../sites/site-directory'
import { type SearchConsoleConnection, SearchConsoleError, type SearchConsoleProperty, listSearchConsoleSites } from './client'
import { lacksSearchConsoleScope, SEARCH_CONSOLE_SCOPE } from './connector'
import { type SearchConsoleImportDeps, importSearchConsole, startSearchConsoleImport } from './import'
import { handOverLater } from '../import-wakeups-repository'
import type { SearchConsoleImportState } from './search-console-imports-repository'

/**
 * The verbs of GET, PATCH and DELETE /sites/{id}/search-console: the properties the connection
 * can read, binding one (checked against that list) and starting its import, and disconnecting.
 */

/** A property as the connection's answer lists it. */
export interface PropertyView {
  siteUrl: string
  kind: 'domain' | 'url_prefix'
  permissionLevel: string
  /** An unverified property is listed but cannot be bound: Search Console gives it no data. */
  verified: boolean
}

const UNVERIFIED = 'siteUnverifiedUser'

export const propertyKind = (siteUrl: string): PropertyView['kind'] => (siteUrl.startsWith('sc-domain:') ? 'domain' : 'url_prefix')

const viewOf = (p: SearchConsoleProperty): PropertyView => ({
  siteUrl: p.siteUrl,
  kind: propertyKind(p.siteUrl),
  permissionLevel: p.permissionLevel,
  verified: p.permissionLevel !== UNVERIFIED,
})

/** A Google failure as the caller's answer: 503 naming what Google said (a refusal, its quota, its failure). */
function asApiError(err: unknown): never {
  if (err instanceof SearchConsoleError) throw new ApiError(503, err.message)
  throw err
}

/** The properties the connection can read, verified first, then by siteUrl. */
export async function searchConsoleProperties(connection: SearchConsoleConnection): Promise<PropertyView[]> {
  const list = await listSearchConsoleSites(connection).catch(asApiError)
  return list.map(viewOf).sort((a, b) => Number(b.verified) - Number(a.verified) || a.siteUrl.localeCompare(b.siteUrl))
}

/** The two shapes of a property: a domain property (sc-domain:example.com) or a URL prefix (https://example.com/). */
export function checkSiteUrlShape(siteUrl: string): void {
  if (siteUrl.startsWith('sc-domain:')) {
    if (!/^sc-domain:[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(siteUrl))
      throw new ApiError(400, `siteUrl: "${siteUrl}" is not a domain property (sc-domain:example.com)`)
    return
  }
  let url: URL
  try {
    url = new URL(siteUrl)
  } catch {
    throw new ApiError(
      400,
      `siteUrl: "${siteUrl}" is neither a domain property (sc-domain:example.com) nor a URL prefix (https://example.com/)`,
    )
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !siteUrl.endsWith('/') || url.search || url.hash)
    throw new ApiError(400, `siteUrl: "${siteUrl}" is not a URL prefix property (http or https, ending in /)`)
}

/** The property named, if the connection can read it; else a 400 naming it (unknown, or listed but unverified). */
export async function validateSiteUrl(connection: SearchConsoleConnection, siteUrl: string): Promise<PropertyView> {
  checkSiteUrlShape(siteUrl)
  const properties = await searchConsoleProperties(connection)
  const found = properties.find((p) => p.siteUrl === siteUrl)
  if (!found) throw new ApiError(400, `siteUrl: "${siteUrl}" is not a Search Console property this connection can read`)
  if (!found.verified)
    throw new ApiError(400, `siteUrl: "${siteUrl}" is not verified for this Google account; verify it in Search Console first`)
  return found
}

export interface SearchConsoleBindDeps extends SearchConsoleImportDeps {
  sites: Pick<SiteDirectory, 'update'>
  now(): Date
}

/**
 * Binds a property to the site (the PATCH): checks it, saves it in the site's
 * integrations.searchConsole, and queues its import of 16 months, which the import job then runs
 * (a caller may also start it at once, in the background, with importSearchConsole).
 */
export async function bindSearchConsole(
  deps: SearchConsoleBindDeps,
  connection: SearchConsoleConnection,
  site: Site,
  siteUrl: string,
): Promise<{ site: Site; property: PropertyView; import: SearchConsoleImportState }> {
  const property = await validateSiteUrl(connection, siteUrl)
  const updated = await deps.sites.update(site.id, (fresh) => ({
    ...fresh,
    integrations: { ...fresh.integrations, searchConsole: { connected: true, siteUrl } },
  }))
  const state = await startSearchConsoleImport(deps, updated, siteUrl, deps.now())
  return { site: updated, property, import: state }
}

/** Disconnects the site (the DELETE): the import stops; imported rows stay until the site is deleted. */
export async function unbindSearchConsole(
  deps: { sites: Pick<SiteDirectory, 'update'>; repositories: Pick<SourceRepositories, 'searchConsoleImports'> },
  site: Site,
): Promise<Site> {
  const updated = await deps.sites.update(site.id, (fresh) => ({
    ...fresh,
    integrations: { ...fresh.integrations, searchConsole: { connected: false, siteUrl: null } },
  }))
  await deps.repositories.searchConsoleImports.delete(site.id)
  return updated
}

/** The import's state as the connection's answer and the imports listing show it. */
export function importView(state: SearchConsoleImportState | null) {
  if (!state) return null
  return {
    state: state.state,
    siteUrl: state.siteUrl,
    from: state.from,
    to: state.to,
    daysDone: state.daysDone,
    daysTotal: state.daysTotal,
    progress: state.daysTotal ? Math.round((state.daysDone / state.daysTotal) * 1000) / 1000 : 1,
    rows: state.rows,
    retryAt: state.retryAt,
    error: state.error,
  }
}

/**
 * The state GET /sites/{id}/search-console answers, but for the connect URL (the Google
 * connection's): the bound property, the properties the connection can read (none without a
 * connection), and the import's progress.
 */
export async function searchConsoleState(
  deps: { repositories: Pick<SourceRepositories, 'searchConsoleImports'> },
  connection: SearchConsoleConnection | null,
  site: Site,
) {
  const bound = site.integrations.searchConsole
  const [sites, state] = await Promise.all([
    connection ? searchConsoleProperties(connection) : Promise.resolve([]),
    deps.repositories.searchConsoleImports.get(site.id),
  ])
  return { connected: bound.connected, siteUrl: bound.siteUrl, sites, import: importView(state) }
}

/** Where this server reads Search Console, connecting asks for both scopes: the site's one Google connection serves GA4 and Search Console. */
export const SEARCH_CONSOLE_CONNECT_SCOPE = `${GA4_SCOPE} ${SEARCH_CONSOLE_SCOPE}`

/**
 * Where the site's Google connection stands for Search Console, where to connect it when that is
 * needed (for a caller that `mayConnect`), and the connection to call it with when it works.
 */
async function googleLink(services: SourceServices, site: Site, baseUrl: string, mayConnect: boolean) {
  const none = { connection: null as SearchConsoleConnection | null }
  const noOffer = { connectUrl: null, connectNote: null }
  if (!services.google || !services.searchConsole)
    return { ...none, ...noOffer, google: 'not_configured' as const, reason: GOOGLE_NOT_CONFIGURED }
  const offer = connectOffer(baseUrl, site, mayConnect)
  const connection = await services.repositories.google.get(site.id)
  if (!connection)
    return {
      ...none,
      ...offer,
      google: 'not_connected' as const,
      reason: site.integrations.searchConsole.siteUrl ? 'the site has no Google connection any more: connect it again' : null,
    }
  if (connection.status !== 'connected') return { ...none, ...offer, google: 'needs_reconnect' as const, reason: connection.reason }
  if (lacksSearchConsoleScope(connection))
    return {
      ...none,
      ...offer,
      google: 'needs_reconnect' as const,
      reason: 'the Google connection was made for GA4 only and cannot read Search Console: connect again to grant it (GA4 stays connected)',
    }
  return { connection: await services.searchConsole.connectionFor(site), ...noOffer, google: 'connected' as const, reason: null }
}

/**
 * GET /sites/{id}/search-console: the bound property (`connected` once one is bound), the Google
 * connection's status (and where to connect it, where that is needed), the properties it can read
 * and the import's progress.
 */
export async function searchConsoleConnection(services: SourceServices, site: Site, baseUrl: string, mayConnect: boolean) {
  const link = await googleLink(services, site, baseUrl, mayConnect)
  const { connection: _, ...google } = link
  try {
    return { ...(await searchConsoleState(services, link.connection, site)), ...google }
  } catch (err) {
    if (!(err instanceof ApiError) || !link.connection) throw err
    // Google refused: a grant gone needs connecting again; anything else is said, and the rest answered
    const offline = await searchConsoleState(services, null, site)
    const now = await services.repositories.google.get(site.id)
    if (now && now.status !== 'connected')
      return { ...offline, ...connectOffer(baseUrl, site, mayConnect), google: 'needs_reconnect' as const, reason: now.reason }
    return { ...offline, ...google, reason: `the readable properties could not be listed: ${err.message}` }
  }
}

/** PATCH /sites/{id}/search-console: binds a property the connection can read and starts its import in the background. */
export async function bindSearchConsoleProperty(
  services: SourceServices,
  site: Site,
  siteUrl: string,
  baseUrl: string,
  background: (task: Promise<unknown>) => void,
) {
  const link = await googleLink(services, site, baseUrl, false)
  if (!link.connection)
    throw new ApiError(
      409,
      link.reason ??
        'the site is not connected to Google: an owner or admin connects it at connectUrl of GET /sites/{site_id}/search-console first',
    )
  const bound = await bindSearchConsole(services, link.connection, site, siteUrl)
  // at once, for as long as a request's background work may last; the job of due imports goes on from the cursor
  background(
    importSearchConsole({ ...services, connection: link.connection }, bound.site, services.now(), {
      log: (line) => console.error(line),
      shouldStop: handOverLater(),
    }),
  )
  return { connected: true as const, siteUrl, property: bound.property, import: importView(bound.import) }
}

/** DELETE /sites/{id}/search-console: unbinds the property; the Google grant stays (GA4 may use it; DELETE /sites/{id}/ga4 revokes it). */
export async function disconnectSearchConsole(services: SourceServices, site: Site) {
  const previous = site.integrations.searchConsole.siteUrl
  await unbindSearchConsole(services, site)
  return { disconnected: true as const, siteUrl: previous }
}
