import type { SourceServices } from '../source-services'
import { randomString, secretsEqual, sha256Hex } from '../../core/crypto'
import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { GOOGLE_NOT_CONFIGURED, type GoogleConfig } from './config'
import type { GoogleConnection, PendingConnect } from './google-connections-repository'
import { GoogleError, IDENTITY_SCOPES, authorizationUrl, exchangeCode, revokeToken } from './oauth'
import { decryptSecret, encryptSecret, signPayload, verifyPayload } from './secrets'

/**
 * Connecting a site to Google, bound to the browser that started it. An owner or admin starts it
 * in the web application, which keeps a random secret in that browser (a cookie) and its hash
 * with the signed state; the callback takes the state from that browser only, exchanges the code
 * and holds the grant; the same person then sees the Google account and the site, and confirms.
 * A connect link or a consent page sent to someone else ends in another browser, and stores nothing.
 */

/** A state is good for this long after the connect was started; a held grant as long after the callback. */
export const STATE_SECONDS = 15 * 60
export const CALLBACK_PATH = '/oauth/google/callback'

/** The web application's page where an owner or admin starts connecting the site: what the API hands out as connectUrl. */
export const connectPagePath = (siteId: string) => `/app/sites/${siteId}/settings/google/connect`
/** Where the callback sends the browser to confirm the Google account. */
export const confirmPagePath = (siteId: string) => `/app/sites/${siteId}/settings/google/confirm`
/** The site's Google settings in the web application, saying how a connect ended (`outcome`, a word the page knows). */
export const googleSettingsPath = (siteId: string, outcome: string) => `/app/sites/${siteId}/settings/integrations?google=${outcome}#google`

export const CONNECT_NEEDS_ADMIN =
  "only an owner or admin connects Google: ask one to connect it in the web application (the site's Google settings), or read this with a write key an owner or admin made"

type Deps = SourceServices & { google: GoogleConfig }
function configured(services: SourceServices, status: 404 | 409 = 409): Deps {
  if (!services.google) throw new ApiError(status, GOOGLE_NOT_CONFIGURED)
  return { ...services, google: services.google }
}

const redirectUri = (baseUrl: string) => `${baseUrl}${CALLBACK_PATH}`

interface SignedState {
  /** The nonce, consumed once. */
  n: string
  o: string
  s: string
  /** Expiry, epoch milliseconds. */
  e: number
}

/** What a read of the connection offers where one is needed: the page to connect at, or why this caller gets none. */
export function connectOffer(baseUrl: string, site: Site, mayConnect: boolean) {
  return mayConnect
    ? { connectUrl: `${baseUrl}${connectPagePath(site.id)}`, connectNote: null }
    : { connectUrl: null, connectNote: CONNECT_NEEDS_ADMIN }
}

/**
 * Starts connecting the site for `by` (an owner or admin, signed in): Google's consent URL asking
 * for `scope` (space-separated) and the account's address, and the secret the starting browser
 * keeps, without which the callback stores nothing.
 */
export async function startGoogleConnect(services: SourceServices, site: Site, baseUrl: string, scope: string, by: string) {
  const deps = configured(services)
  const nonce = crypto.randomUUID()
  const binding = randomString(43)
  const pending: PendingConnect = { orgId: site.orgId, siteId: site.id, binding: await sha256Hex(binding), by }
  await deps.repositories.google.rememberState(nonce, pending, STATE_SECONDS)
  const state = await signPayload(deps.google.serverSecret, {
    n: nonce,
    o: site.orgId,
    s: site.id,
    e: deps.now().getTime() + STATE_SECONDS * 1000,
  } satisfies SignedState)
  return { url: authorizationUrl(deps.google, redirectUri(baseUrl), state, `${IDENTITY_SCOPES} ${scope}`), binding }
}

/** Why a connect failed once its state was checked: the browser goes back to the site's page with it. */
export class GoogleConnectFailed extends ApiError {
  constructor(
    cause: ApiError,
    readonly siteId: string,
    readonly reason: 'denied' | 'no_refresh_token' | 'expired' | 'failed',
  ) {
    super(cause.status, cause.message, cause.headers)
  }
}

/**
 * GET /oauth/google/callback, given the secret of the browser it came in (`binding`): checks the
 * state (signature, expiry, single use, organization and site, the browser that started it),
 * exchanges the code and holds the sealed grant for that browser to confirm. A bad or foreign
 * state is a 400 that exchanges and stores nothing.
 */
export async function completeGoogleConnect(
  services: SourceServices,
  query: { state?: string; code?: string; error?: string },
  baseUrl: string,
  binding: string | null,
): Promise<{ siteId: string }> {
  const deps = configured(services, 404)
  if (!query.state) throw new ApiError(400, 'state: required')
  const signed = await verifyPayload<SignedState>(deps.google.serverSecret, query.state)
  if (!signed || typeof signed.n !== 'string' || typeof signed.s !== 'string' || typeof signed.e !== 'number')
    throw new ApiError(400, 'state: not a state this server signed')
  const stale = (message: string) => new GoogleConnectFailed(new ApiError(400, message), signed.s, 'expired')
  if (signed.e <= deps.now().getTime()) throw stale('state: expired (a connect is good for 15 minutes): connect again')
  const pending = await deps.repositories.google.consumeState(signed.n)
  if (!pending) throw stale('state: already used or expired: connect again')
  if (pending.orgId !== signed.o || pending.siteId !== signed.s) throw new ApiError(400, 'state: does not match the connect request')
  if (!binding || !secretsEqual(await sha256Hex(binding), pending.binding))
    throw new ApiError(
      400,
      "state: this connect was started in another browser, so nothing was stored: connect from the site's Google settings in the web application, in this browser",
    )
  try {
    await exchangeAndHold(deps, pending, query, baseUrl)
  } catch (err) {
    if (!(err instanceof ApiError)) throw err
    const reason = query.error ? 'denied' : err.message.startsWith('Google sent no refresh token') ? 'no_refresh_token' : 'failed'
    throw new GoogleConnectFailed(err, pending.siteId, reason)
  }
  return { siteId: pending.siteId }
}

/** The second half of the callback, once the state is good: the code exchanged, the tokens sealed and held for confirmation. */
async function exchangeAndHold(deps: Deps, pending: PendingConnect, query: { code?: string; error?: string }, baseUrl: string) {
  if (query.error) throw new ApiError(400, `Google did not authorize the connection: ${query.error.slice(0, 100)}`)
  if (!query.code) throw new ApiError(400, 'code: required')
  const site = await deps.repositories.sites.get(pending.siteId)
  if (!site || site.orgId !== pending.orgId) throw new ApiError(404, 'the site of this connect request no longer exists')
  let tokens: Awaited<ReturnType<typeof exchangeCode>>
  try {
    tokens = await exchangeCode(deps.fetch, deps.google, query.code, redirectUri(baseUrl))
  } catch (err) {
    if (err instanceof GoogleError) throw new ApiError(err.status === 0 || err.status >= 500 ? 503 : 400, err.message)
    throw err
  }
  if (!tokens.refreshToken)
    throw new ApiError(400, "Google sent no refresh token: remove this application from your Google account's access and connect again")
  const seal = (token: string) => encryptSecret(deps.google.serverSecret, token, site.id)
  await deps.repositories.google.holdGrant(
    pending.binding,
    {
      orgId: site.orgId,
      siteId: site.id,
      by: pending.by,
      account: tokens.account,
      scopes: tokens.scopes,
      refreshToken: await seal(tokens.refreshToken),
      accessToken: await seal(tokens.accessToken),
      accessTokenExpiresAt: new Date(deps.now().getTime() + tokens.expiresInSeconds * 1000).toISOString(),
    },
    STATE_SECONDS,
  )
}

/** The held grant of this browser (`binding`) for the site, if `by` started it: what the confirmation page shows. */
async function heldGrant(services: SourceServices, site: Site, binding: string | null, by: string) {
  if (!binding) return null
  const key = await sha256Hex(binding)
  const grant = await services.repositories.google.heldGrant(key)
  return grant && grant.siteId === site.id && grant.orgId === site.orgId && grant.by === by ? { key, grant } : null
}

/** The Google account and scopes waiting for `by`'s confirmation in this browser; null when none (expired, or another browser's). */
export async function pendingGoogleGrant(services: SourceServices, site: Site, binding: string | null, by: string) {
  const held = await heldGrant(services, site, binding, by)
  return held ? { account: held.grant.account, scopes: held.grant.scopes } : null
}

/**
 * Stores the held grant as the site's Google connection (replacing any, keeping the bound GA4
 * property: its imports go on). False when there is nothing to confirm.
 */
export async function confirmGoogleConnect(services: SourceServices, site: Site, binding: string | null, by: string): Promise<boolean> {
  const deps = configured(services)
  const held = await heldGrant(deps, site, binding, by)
  const grant = held && (await deps.repositories.google.takeGrant(held.key))
  if (!grant) return false
  const previous = await deps.repositories.google.get(site.id)
  const connection: GoogleConnection = {
    siteId: site.id,
    orgId: site.orgId,
    status: 'connected',
    reason: null,
    refreshToken: grant.refreshToken,
    accessToken: grant.accessToken,
    accessTokenExpiresAt: grant.accessTokenExpiresAt,
    scopes: grant.scopes,
    connectedAt: deps.now().toISOString(),
    ga4: previous?.ga4 ?? null,
    account: grant.account,
  }
  await deps.repositories.google.save(connection)
  await deps.sites.update(site.id, (fresh) => ({
    ...fresh,
    integrations: { ...fresh.integrations, ga4: { ...fresh.integrations.ga4, connected: true, status: 'connected', reason: null } },
  }))
  return true
}

/** Drops the held grant and revokes it at Google: the account was not the one meant. */
export async function cancelGoogleConnect(services: SourceServices, site: Site, binding: string | null, by: string) {
  const deps = configured(services)
  const held = await heldGrant(deps, site, binding, by)
  const grant = held && (await deps.repositories.google.takeGrant(held.key))
  const token = grant && (await decryptSecret(deps.google.serverSecret, grant.refreshToken, site.id))
  // nothing was stored either way: a grant Google keeps is the user's to remove in their account
  if (token) await revokeToken(deps.fetch, deps.google, token).catch(() => {})
}
