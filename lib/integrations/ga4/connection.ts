import { ApiError } from '../../errors'
import type { Services } from '../../services'
import type { Site } from '../../sites/sites'
import { GOOGLE_NOT_CONFIGURED, type GoogleConfig } from '../google/config'
import type { GoogleConnection, PendingConnect } from '../google/google-connections-repository'
import { GA4_SCOPE, GoogleError, authorizationUrl, exchangeCode, revokeToken } from '../google/oauth'
import { decryptSecret, encryptSecret, signPayload, verifyPayload } from '../google/secrets'
import { GoogleSession } from '../google/session'
import { type Ga4Property, readableProperties } from './client'
import type { Ga4ImportRun } from './ga4-imports-repository'
import { historyDays, importSite, queueGa4Import, runProgress, stopImports } from './import'

/**
 * The verbs of a site's GA4 connection: what it is (GET), the browser's round trip through
 * Google (the connect URL and its callback), binding a property (PATCH) and disconnecting
 * (DELETE). The connection itself is the site's Google connection, which Search Console shares.
 */

/** A state is good for this long after the connect URL was made. */
export const STATE_SECONDS = 15 * 60
export const CALLBACK_PATH = '/oauth/google/callback'

type Deps = Services & { google: GoogleConfig }
const configured = (services: Services): Deps | null => (services.google ? { ...services, google: services.google } : null)

const redirectUri = (baseUrl: string) => `${baseUrl}${CALLBACK_PATH}`

interface SignedState {
  /** The nonce, consumed once. */
  n: string
  o: string
  s: string
  /** Expiry, epoch milliseconds. */
  e: number
  /** 'app' where the connect was started in the web application: even a stale state sends the browser back there. */
  r?: 'app'
}

/**
 * A connect URL for the site: a signed state, bound to the organization and site, single-use, good
 * for 15 minutes. `scope` is GA4's, or GA4's and Search Console's for Search Console's read.
 */
async function connectUrl(deps: Deps, site: Site, baseUrl: string, scope = GA4_SCOPE, returnTo?: 'app'): Promise<string> {
  const nonce = crypto.randomUUID()
  const expires = deps.now().getTime() + STATE_SECONDS * 1000
  await deps.repositories.google.rememberState(
    nonce,
    { orgId: site.orgId, siteId: site.id, ...(returnTo ? { returnTo } : {}) },
    STATE_SECONDS,
  )
  const state = await signPayload(deps.google.serverSecret, {
    n: nonce,
    o: site.orgId,
    s: site.id,
    e: expires,
    ...(returnTo ? { r: returnTo } : {}),
  } satisfies SignedState)
  return authorizationUrl(deps.google, redirectUri(baseUrl), state, scope)
}

/**
 * The connect URL of the site's Google connection asking for `scope` (space-separated scopes); null
 * without a Google client. With `returnTo: 'app'` the callback sends the browser back to the site's
 * page in the web application instead of answering a page of its own.
 */
export async function googleConnectUrl(
  services: Services,
  site: Site,
  baseUrl: string,
  scope: string,
  returnTo?: 'app',
): Promise<string | null> {
  const deps = configured(services)
  return deps ? connectUrl(deps, site, baseUrl, scope, returnTo) : null
}

const importView = (run: Ga4ImportRun) => ({
  id: run.id,
  trigger: run.trigger,
  state: run.state,
  reason: run.reason,
  from: run.from,
  to: run.to,
  rows: run.rows,
  progress: runProgress(run),
  retryAt: run.retryAt,
  startedAt: run.startedAt,
  finishedAt: run.finishedAt,
})

/** The newest run of a site, as the ga4 read shows it. */
async function latestImport(services: Services, siteId: string) {
  const runs = await services.repositories.ga4Imports.list(siteId)
  const run = runs.at(-1)
  return run ? importView(run) : null
}

/** GET /sites/{id}/ga4: the connection, the properties it can read, the bound one, the connect URL when one is needed, the latest import. */
export async function ga4Connection(services: Services, site: Site, baseUrl: string) {
  const empty = {
    connected: false,
    account: null,
    propertyId: null,
    propertyName: null,
    properties: [] as Ga4Property[],
    import: await latestImport(services, site.id),
  }
  const deps = configured(services)
  if (!deps) return { ...empty, status: 'not_configured' as const, reason: GOOGLE_NOT_CONFIGURED, connectUrl: null }
  const connection = await deps.repositories.google.get(site.id)
  const bound = connection?.ga4 ?? null
  const binding = {
    account: bound ? { id: bound.accountId, name: bound.accountName } : null,
    propertyId: bound?.propertyId ?? null,
    propertyName: bound?.propertyName ?? null,
  }
  if (!connection) return { ...empty, status: 'not_connected' as const, reason: null, connectUrl: await connectUrl(deps, site, baseUrl) }
  if (connection.status === 'connected') {
    const session = new GoogleSession(deps, connection)
    try {
      const properties = await readableProperties(session, deps.google.adminUrl)
      return { ...empty, ...binding, connected: true, status: 'connected' as const, reason: null, properties, connectUrl: null }
    } catch (err) {
      if (!(err instanceof GoogleError)) throw err
      if (session.current.status === 'connected')
        return {
          ...empty,
          ...binding,
          connected: true,
          status: 'connected' as const,
          reason: `the readable properties could not be listed: ${err.message}`,
          connectUrl: null,
        }
    }
  }
  const now = (await deps.repositories.google.get(site.id)) ?? connection
  return {
    ...empty,
    ...binding,
    status: 'needs_reconnect' as const,
    reason: now.reason,
    connectUrl: await connectUrl(deps, site, baseUrl),
  }
}

/** What the callback page says: the site connected and what Google granted, and where the browser goes back to. */
export interface ConnectedPage {
  domain: string
  siteId: string
  scopes: string[]
  returnTo: 'app' | null
}

/** Why a connect request started in the web application failed after its state was checked: the browser goes back with it. */
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
 * GET /oauth/google/callback: checks the state (signature, expiry, single use, organization and
 * site), exchanges the code at the token endpoint and keeps the refresh token sealed. A bad or
 * reused state is a 400 that stores nothing.
 */
export async function completeGoogleConnect(
  services: Services,
  query: { state?: string; code?: string; error?: string },
  baseUrl: string,
): Promise<ConnectedPage> {
  const deps = configured(services)
  if (!deps) throw new ApiError(404, GOOGLE_NOT_CONFIGURED)
  if (!query.state) throw new ApiError(400, 'state: required')
  const signed = await verifyPayload<SignedState>(deps.google.serverSecret, query.state)
  if (!signed || typeof signed.n !== 'string' || typeof signed.e !== 'number')
    throw new ApiError(400, 'state: not a state this server signed')
  // a state this server signed for the web application goes back there even when it is stale
  const stale = (message: string) => {
    const err = new ApiError(400, message)
    return signed.r === 'app' && typeof signed.s === 'string' ? new GoogleConnectFailed(err, signed.s, 'expired') : err
  }
  if (signed.e <= deps.now().getTime()) throw stale('state: expired (a connect URL is good for 15 minutes): ask for a new one')
  const pending = await deps.repositories.google.consumeState(signed.n)
  if (!pending) throw stale('state: already used or expired: ask for a new connect URL')
  if (pending.orgId !== signed.o || pending.siteId !== signed.s) throw new ApiError(400, 'state: does not match the connect request')
  try {
    return await exchangeAndKeep(deps, pending, query, baseUrl)
  } catch (err) {
    if (!(err instanceof ApiError) || pending.returnTo !== 'app') throw err
    const reason = query.error ? 'denied' : err.message.startsWith('Google sent no refresh token') ? 'no_refresh_token' : 'failed'
    throw new GoogleConnectFailed(err, pending.siteId, reason)
  }
}

/** The second half of the callback, once the state is good: the code exchanged, the tokens kept sealed. */
async function exchangeAndKeep(
  deps: Deps,
  pending: PendingConnect,
  query: { code?: string; error?: string },
  baseUrl: string,
): Promise<ConnectedPage> {
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
  const previous = await deps.repositories.google.get(site.id)
  const now = deps.now()
  const connection: GoogleConnection = {
    siteId: site.id,
    orgId: site.orgId,
    status: 'connected',
    reason: null,
    refreshToken: await encryptSecret(deps.google.serverSecret, tokens.refreshToken, site.id),
    accessToken: await encryptSecret(deps.google.serverSecret, tokens.accessToken, site.id),
    accessTokenExpiresAt: new Date(now.getTime() + tokens.expiresInSeconds * 1000).toISOString(),
    scopes: tokens.scopes,
    connectedAt: now.toISOString(),
    // connecting again keeps the property bound: its imports go on
    ga4: previous?.ga4 ?? null,
  }
  await deps.repositories.google.save(connection)
  await deps.sites.update(site.id, (fresh) => ({
    ...fresh,
    integrations: { ...fresh.integrations, ga4: { ...fresh.integrations.ga4, connected: true, status: 'connected', reason: null } },
  }))
  return { domain: site.domain, siteId: site.id, scopes: tokens.scopes, returnTo: pending.returnTo ?? null }
}

/** The id of a property as given: `123` or `properties/123`. */
const propertyIdOf = (given: string) => given.trim().replace(/^properties\//, '')

/**
 * PATCH /sites/{id}/ga4: binds a property the connection can read (else a 400 naming it), adds ga4
 * to the site's sources and starts the import of its history in the background.
 */
export async function bindGa4Property(
  services: Services,
  site: Site,
  givenPropertyId: string,
  baseUrl: string,
  background: (task: Promise<unknown>) => void,
) {
  const deps = configured(services)
  if (!deps) throw new ApiError(409, GOOGLE_NOT_CONFIGURED)
  const connection = await deps.repositories.google.get(site.id)
  if (!connection) throw new ApiError(409, 'the site is not connected to Google: open connectUrl of GET /sites/{site_id}/ga4 first')
  if (connection.status !== 'connected') throw new ApiError(409, connection.reason ?? 'the Google connection needs connecting again')
  const session = new GoogleSession(deps, connection)
  let properties: Ga4Property[]
  try {
    properties = await readableProperties(session, deps.google.adminUrl)
  } catch (err) {
    if (!(err instanceof GoogleError)) throw err
    throw new ApiError(session.current.status === 'connected' ? 503 : 409, err.message)
  }
  const propertyId = propertyIdOf(givenPropertyId)
  const property = properties.find((p) => p.propertyId === propertyId)
  if (!property)
    throw new ApiError(
      400,
      `propertyId: "${givenPropertyId}" is not a GA4 property this connection can read${properties.length ? ` (it reads ${properties.map((p) => p.propertyId).join(', ')})` : ' (it reads none)'}`,
    )
  const current = session.current
  if (current.ga4 && current.ga4.propertyId !== property.propertyId)
    await stopImports(deps, site.id, `the site was bound to property ${property.propertyId}`)
  await deps.repositories.google.save({
    ...current,
    ga4: {
      propertyId: property.propertyId,
      propertyName: property.displayName,
      accountId: property.accountId,
      accountName: property.accountName,
      boundAt: deps.now().toISOString(),
    },
  })
  const updated = await deps.sites.update(site.id, (fresh) => ({
    ...fresh,
    sources: fresh.sources.includes('ga4') ? fresh.sources : [...fresh.sources, 'ga4'],
    integrations: { ...fresh.integrations, ga4: { ...fresh.integrations.ga4, connected: true, propertyId: property.propertyId } },
  }))
  const runs = await deps.repositories.ga4Imports.list(site.id)
  const pending = runs.find(
    (r) => r.trigger === 'bind' && r.propertyId === property.propertyId && (r.state === 'queued' || r.state === 'running'),
  )
  if (!pending) await queueGa4Import(deps, updated, property.propertyId, 'bind', historyDays(updated, deps.now()))
  background(importSite(deps, site.id))
  return ga4Connection(services, updated, baseUrl)
}

/**
 * DELETE /sites/{id}/ga4: revokes the grant at Google, forgets the tokens and stops the imports.
 * The imported rows stay until the site drops ga4 from its sources.
 */
export async function disconnectGa4(services: Services, site: Site) {
  const connection = await services.repositories.google.get(site.id)
  let revoked = false
  let reason: string | null = connection ? null : 'the site was not connected'
  if (connection && services.google) {
    const token = await decryptSecret(services.google.serverSecret, connection.refreshToken, site.id)
    try {
      if (token) {
        await revokeToken(services.fetch, services.google, token)
        revoked = true
      } else reason = 'the stored token cannot be read with this SERVER_SECRET; remove the access in your Google account'
    } catch (err) {
      if (!(err instanceof GoogleError)) throw err
      reason = `${err.message}; the token is forgotten here, remove the access in your Google account`
    }
  }
  await services.repositories.google.delete(site.id)
  await stopImports(services, site.id, 'the site was disconnected from Google')
  await services.sites.update(site.id, (fresh) => ({
    ...fresh,
    integrations: {
      ...fresh.integrations,
      ga4: { ...fresh.integrations.ga4, connected: false, propertyId: null, status: 'not_connected', reason: null },
    },
  }))
  return { disconnected: true as const, revoked, reason }
}

/** Forgets a deleted site's connection and runs (the grant stays at Google: nothing is asked of it for a deleted site). */
export async function forgetGoogleConnection(services: Pick<Services, 'repositories'>, siteId: string) {
  await Promise.all([services.repositories.google.delete(siteId), services.repositories.ga4Imports.deleteAll(siteId)])
}
