import type { GoogleConnection } from '../google/google-connections-repository'
import { GoogleError } from '../google/oauth'
import { type GoogleDeps, GoogleSession } from '../google/session'
import { type SearchConsoleConnection, SearchConsoleError } from './client'
import type { SearchConsoleConnector } from './import'

/**
 * Search Console through a site's Google connection: the connection's access token (refreshed
 * when Google answers 401), a guarded fetch of its own with room for a 25,000-row page, and no
 * connection at all for a site that never connected, needs connecting again, or connected
 * without the Search Console scope.
 */

export const SEARCH_CONSOLE_SCOPE = 'https://www.googleapis.com/auth/webmasters.readonly'
/** A page of 25,000 rows with long queries and URLs runs to a few megabytes: above the guarded fetch's 5 MB default. */
export const SEARCH_CONSOLE_MAX_BYTES = 32 * 1024 * 1024
/** How long one Search Console request may take (a full page is slow to compute). */
export const SEARCH_CONSOLE_TIMEOUT_MS = 60_000

/** A connection made before Search Console was asked for (GA4 only) cannot read it: connecting again grants it. */
export const lacksSearchConsoleScope = (connection: GoogleConnection) => !connection.scopes.includes(SEARCH_CONSOLE_SCOPE)

export interface SearchConsoleConnectorDeps extends GoogleDeps {
  /** The guarded fetch Search Console is called with: SEARCH_CONSOLE_MAX_BYTES and SEARCH_CONSOLE_TIMEOUT_MS. */
  searchConsoleFetch: typeof fetch
}

/** A Google failure to get a token, as the Search Console client reports failures: worth retrying unless the grant is gone. */
function asSearchConsoleError(err: unknown): never {
  if (err instanceof GoogleError)
    throw new SearchConsoleError(err.message, err.status === 0 ? 503 : err.status, err.transient, err.retryAfterMs)
  throw err
}

/** The Search Console connection of a site's Google connection. */
export function searchConsoleConnectionOf(deps: SearchConsoleConnectorDeps, connection: GoogleConnection): SearchConsoleConnection {
  const session = new GoogleSession(deps, connection)
  return {
    baseUrl: deps.google.searchConsoleUrl,
    account: connection.account ?? undefined,
    fetch: deps.searchConsoleFetch,
    timeoutMs: SEARCH_CONSOLE_TIMEOUT_MS,
    accessToken: () => session.token().catch(asSearchConsoleError),
    onUnauthorized: async () => {
      await session.token(true).catch(asSearchConsoleError)
    },
  }
}

/** What services.searchConsole is in a home with a Google client. */
export function googleSearchConsoleConnector(deps: SearchConsoleConnectorDeps): SearchConsoleConnector {
  return {
    async connectionFor(site) {
      const connection = await deps.repositories.google.get(site.id)
      if (connection?.status !== 'connected' || lacksSearchConsoleScope(connection)) return null
      return searchConsoleConnectionOf(deps, connection)
    },
  }
}
