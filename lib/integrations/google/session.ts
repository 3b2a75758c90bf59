import type { SourceRepositories } from '../source-services'
import { OutboundError } from '../../network/guarded-fetch'
import { retryAfterMs } from '../../network/retry-after'
import type { SiteDirectory } from '../../sites/site-directory'
import type { GoogleConfig } from './config'
import type { GoogleConnection } from './google-connections-repository'
import { GoogleError, refreshAccessToken } from './oauth'
import { decryptSecret, encryptSecret } from './secrets'

/** What a call to Google on a site's behalf needs. */
export interface GoogleDeps {
  fetch: typeof fetch
  repositories: Pick<SourceRepositories, 'google'>
  now(): Date
  sites: Pick<SiteDirectory, 'update'>
  google: GoogleConfig
}

/** An access token is refreshed this long before Google says it expires. */
const EXPIRY_MARGIN_MS = 60_000

/** The sentence a connection whose grant is gone carries, and every call on it answers. */
export const reconnectReason = (detail: string) => `Google refused the stored authorization (${detail}): connect the site to Google again`

/**
 * Calls Google's APIs as one site's connection: a cached access token while it is valid, a fresh
 * one from the refresh token when it expired or a call answers 401, and the connection marked
 * `needs_reconnect` with the reason when Google says the grant is gone.
 */
export class GoogleSession {
  constructor(
    private readonly deps: GoogleDeps,
    private connection: GoogleConnection,
  ) {}

  get current() {
    return this.connection
  }

  /** A current access token, for a client that calls Google itself (Search Console's); `refresh` forces a new one. */
  token(refresh = false): Promise<string> {
    return this.accessToken(refresh)
  }

  private async accessToken(forceRefresh: boolean): Promise<string> {
    const { google, now } = this.deps
    const c = this.connection
    if (c.status !== 'connected') throw new GoogleError(c.reason ?? reconnectReason('not connected'), 401, 'invalid_grant')
    if (
      !forceRefresh &&
      c.accessToken &&
      c.accessTokenExpiresAt &&
      Date.parse(c.accessTokenExpiresAt) - EXPIRY_MARGIN_MS > now().getTime()
    ) {
      const token = await decryptSecret(google.serverSecret, c.accessToken, c.siteId)
      if (token) return token
    }
    const refreshToken = await decryptSecret(google.serverSecret, c.refreshToken, c.siteId)
    if (!refreshToken) return this.needsReconnect('the stored token cannot be read with this SERVER_SECRET')
    let tokens: Awaited<ReturnType<typeof refreshAccessToken>>
    try {
      tokens = await refreshAccessToken(this.deps.fetch, google, refreshToken)
    } catch (err) {
      if (err instanceof GoogleError && (err.grantRevoked || err.code === 'unauthorized_client')) return this.needsReconnect(err.code!)
      throw err
    }
    this.connection = {
      ...c,
      accessToken: await encryptSecret(google.serverSecret, tokens.accessToken, c.siteId),
      accessTokenExpiresAt: new Date(now().getTime() + tokens.expiresInSeconds * 1000).toISOString(),
    }
    await this.deps.repositories.google.save(this.connection)
    return tokens.accessToken
  }

  private async needsReconnect(detail: string): Promise<never> {
    const reason = reconnectReason(detail)
    this.connection = { ...this.connection, status: 'needs_reconnect', reason, accessToken: null, accessTokenExpiresAt: null }
    await this.deps.repositories.google.save(this.connection)
    await this.deps.sites
      .update(this.connection.siteId, (site) => ({
        ...site,
        integrations: { ...site.integrations, ga4: { ...site.integrations.ga4, connected: false, status: 'needs_reconnect', reason } },
      }))
      .catch(() => {})
    throw new GoogleError(reason, 401, 'invalid_grant')
  }

  /** A JSON call to a Google API; a refusal is a GoogleError with Google's status (RESOURCE_EXHAUSTED, ...). */
  async call<T>(url: string, init: { method: 'GET' | 'POST'; body?: unknown }, what: string): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.accessToken(attempt > 0)
      let res: Response
      try {
        res = await this.deps.fetch(url, {
          method: init.method,
          headers: {
            authorization: `Bearer ${token}`,
            accept: 'application/json',
            ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: init.body === undefined ? undefined : JSON.stringify(init.body),
        })
      } catch (err) {
        const reason =
          err instanceof OutboundError ? err.message : (err as Error).name === 'TimeoutError' ? 'no answer in time' : 'unreachable'
        throw new GoogleError(`${what} could not be reached (${reason})`, 0)
      }
      const body = (await res.json().catch(() => null)) as { error?: { code?: number; message?: string; status?: string } } | null
      // an access token Google no longer takes (expired early, revoked): one fresh token, then the answer stands
      if (res.status === 401 && attempt === 0) continue
      if (res.ok && body && typeof body === 'object') return body as T
      const status = body?.error?.status ?? null
      const message = body?.error?.message ? `: ${body.error.message.slice(0, 300)}` : ''
      throw new GoogleError(
        `${what} answered ${res.status}${status ? ` ${status}` : ''}${message}`,
        res.ok ? 502 : res.status,
        status,
        retryAfterMs(res.headers.get('retry-after'), this.deps.now().getTime()),
      )
    }
  }
}
