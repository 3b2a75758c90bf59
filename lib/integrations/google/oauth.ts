import { OAuth2RequestResult, TokenRequestResult } from '@oslojs/oauth2'
import { OutboundError } from '../../network/guarded-fetch'
import type { GoogleConfig } from './config'
import { fromBase64Url } from './secrets'

/**
 * Google's OAuth 2.0 authorization code flow for a web server application: the authorization
 * URL (offline access, consent asked every time so a refresh token comes back), the token
 * endpoint's two grants and revocation. Requests are form-encoded and sent through the guarded
 * fetch; answers are read with @oslojs/oauth2. No message ever carries a token or the secret.
 */

export const GA4_SCOPE = 'https://www.googleapis.com/auth/analytics.readonly'
/** The scopes of Google's ID token with the account's e-mail address: what a connection shows before it is stored. */
export const IDENTITY_SCOPES = 'openid email'

/** A refusal or failure of Google's, told without tokens. `code` is OAuth's error code or the API's status (RESOURCE_EXHAUSTED). */
export class GoogleError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null = null,
    /** How long Google asked to wait before asking again (its Retry-After), when it said so. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message)
    this.name = 'GoogleError'
  }
  /** The grant is gone (revoked, expired, the user removed access): only connecting again helps. */
  get grantRevoked() {
    return this.code === 'invalid_grant'
  }
  /** Worth trying again later: a quota (429) or Google's own failure (5xx), or no answer at all (status 0). */
  get transient() {
    return this.status === 429 || this.status >= 500 || this.status === 0
  }
}

export function authorizationUrl(config: GoogleConfig, redirectUri: string, state: string, scope = GA4_SCOPE): string {
  const url = new URL(config.authUrl)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', config.clientId)
  url.searchParams.set('redirect_uri', redirectUri)
  url.searchParams.set('scope', scope)
  url.searchParams.set('state', state)
  url.searchParams.set('access_type', 'offline')
  url.searchParams.set('prompt', 'consent')
  url.searchParams.set('include_granted_scopes', 'true')
  return url.href
}

/** POSTs a form and reads the JSON answer; a network failure is a GoogleError of status 0. */
async function postForm(fetcher: typeof fetch, url: string, form: Record<string, string>, what: string) {
  let res: Response
  try {
    res = await fetcher(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString(),
    })
  } catch (err) {
    const reason = err instanceof OutboundError ? err.message : (err as Error).name === 'TimeoutError' ? 'no answer in time' : 'unreachable'
    throw new GoogleError(`Google's ${what} could not be reached (${reason})`, 0)
  }
  const body: unknown = await res.json().catch(() => null)
  return { res, body: body && typeof body === 'object' ? body : {} }
}

function oauthFailure(what: string, status: number, body: object): GoogleError {
  const result = new OAuth2RequestResult(body)
  const code = result.hasErrorCode() ? result.errorCode() : null
  const description = result.hasErrorDescription() ? `: ${result.errorDescription().slice(0, 200)}` : ''
  return new GoogleError(`Google's ${what} answered ${status}${code ? ` ${code}` : ''}${description}`, status, code)
}

export interface Tokens {
  accessToken: string
  expiresInSeconds: number
  /** Google sends one on the first consent (prompt=consent makes every consent a first one). */
  refreshToken: string | null
  scopes: string[]
  /** The e-mail address of the Google account that consented, from the ID token; null without one. */
  account: string | null
}

/**
 * The e-mail address an ID token names. Its signature is not checked: the token came straight
 * from Google's token endpoint over TLS, which OpenID Connect allows in place of the signature.
 */
function accountOf(idToken: unknown): string | null {
  if (typeof idToken !== 'string') return null
  try {
    const claims = JSON.parse(new TextDecoder().decode(fromBase64Url(idToken.split('.')[1] ?? '')))
    return typeof claims.email === 'string' && claims.email_verified !== false ? claims.email : null
  } catch {
    return null
  }
}

function readTokens(body: object): Tokens {
  const result = new TokenRequestResult(body)
  return {
    accessToken: result.accessToken(),
    expiresInSeconds: result.accessTokenExpiresInSeconds(),
    refreshToken: result.hasRefreshToken() ? result.refreshToken() : null,
    scopes: result.hasScopes() ? result.scopes() : [],
    account: accountOf((body as { id_token?: unknown }).id_token),
  }
}

async function tokenRequest(fetcher: typeof fetch, config: GoogleConfig, form: Record<string, string>): Promise<Tokens> {
  const { res, body } = await postForm(
    fetcher,
    config.tokenUrl,
    { ...form, client_id: config.clientId, client_secret: config.clientSecret },
    'token endpoint',
  )
  if (!res.ok || new OAuth2RequestResult(body).hasErrorCode()) throw oauthFailure('token endpoint', res.status, body)
  try {
    return readTokens(body)
  } catch {
    throw new GoogleError("Google's token endpoint answered something that is not a token", 502)
  }
}

/** The authorization code of the callback for tokens. */
export const exchangeCode = (fetcher: typeof fetch, config: GoogleConfig, code: string, redirectUri: string) =>
  tokenRequest(fetcher, config, { grant_type: 'authorization_code', code, redirect_uri: redirectUri })

/** A fresh access token for a refresh token; a GoogleError with grantRevoked when the grant is gone. */
export const refreshAccessToken = (fetcher: typeof fetch, config: GoogleConfig, refreshToken: string) =>
  tokenRequest(fetcher, config, { grant_type: 'refresh_token', refresh_token: refreshToken })

/** Revokes a token (the refresh token revokes the whole grant). A token Google no longer knows counts as revoked. */
export async function revokeToken(fetcher: typeof fetch, config: GoogleConfig, token: string): Promise<void> {
  const { res, body } = await postForm(fetcher, config.revokeUrl, { token }, 'revocation endpoint')
  if (res.ok) return
  const failure = oauthFailure('revocation endpoint', res.status, body)
  if (res.status === 400 && (failure.code === 'invalid_token' || failure.code === 'invalid_grant')) return
  throw failure
}
