import type { SourceServices } from '../source-services'
import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { GOOGLE_NOT_CONFIGURED, type GoogleConfig } from '../google/config'
import { connectOffer } from '../google/connect'
import { GoogleError, revokeToken } from '../google/oauth'
import { decryptSecret } from '../google/secrets'
import { GoogleSession } from '../google/session'
import { type Ga4Property, readableProperties } from './client'
import type { Ga4ImportRun } from './ga4-imports-repository'
import { historyDays, importSite, queueGa4Import, runProgress, stopImports } from './import'
import { handOverLater } from '../import-wakeups-repository'

/**
 * The verbs of a site's GA4 connection: what it is (GET), binding a property (PATCH) and
 * disconnecting (DELETE). The connection itself is the site's Google connection, which Search
 * Console shares; it is made in the browser (lib/integrations/google/connect.ts).
 */

type Deps = SourceServices & { google: GoogleConfig }
const configured = (services: SourceServices): Deps | null => (services.google ? { ...services, google: services.google } : null)

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
async function latestImport(services: SourceServices, siteId: string) {
  const runs = await services.repositories.ga4Imports.list(siteId)
  const run = runs.at(-1)
  return run ? importView(run) : null
}

/**
 * GET /sites/{id}/ga4: the connection, the properties it can read, the bound one, where to
 * connect when a connection is needed (for a caller that `mayConnect`, else why not), the latest import.
 */
export async function ga4Connection(services: SourceServices, site: Site, baseUrl: string, mayConnect: boolean) {
  const connected = { connectUrl: null, connectNote: null }
  const empty = {
    connected: false,
    account: null,
    propertyId: null,
    propertyName: null,
    properties: [] as Ga4Property[],
    import: await latestImport(services, site.id),
  }
  const deps = configured(services)
  if (!deps) return { ...empty, ...connected, status: 'not_configured' as const, reason: GOOGLE_NOT_CONFIGURED }
  const connection = await deps.repositories.google.get(site.id)
  const bound = connection?.ga4 ?? null
  const binding = {
    account: bound ? { id: bound.accountId, name: bound.accountName } : null,
    propertyId: bound?.propertyId ?? null,
    propertyName: bound?.propertyName ?? null,
  }
  if (!connection) return { ...empty, ...connectOffer(baseUrl, site, mayConnect), status: 'not_connected' as const, reason: null }
  if (connection.status === 'connected') {
    const session = new GoogleSession(deps, connection)
    try {
      const properties = await readableProperties(session, deps.google.adminUrl)
      return { ...empty, ...binding, ...connected, connected: true, status: 'connected' as const, reason: null, properties }
    } catch (err) {
      if (!(err instanceof GoogleError)) throw err
      if (session.current.status === 'connected')
        return {
          ...empty,
          ...binding,
          ...connected,
          connected: true,
          status: 'connected' as const,
          reason: `the readable properties could not be listed: ${err.message}`,
        }
    }
  }
  const now = (await deps.repositories.google.get(site.id)) ?? connection
  return {
    ...empty,
    ...binding,
    ...connectOffer(baseUrl, site, mayConnect),
    status: 'needs_reconnect' as const,
    reason: now.reason,
  }
}

/** The id of a property as given: `123` or `properties/123`. */
const propertyIdOf = (given: string) => given.trim().replace(/^properties\//, '')

/**
 * PATCH /sites/{id}/ga4: binds a property the connection can read (else a 400 naming it), adds ga4
 * to the site's sources and starts the import of its history in the background.
 */
export async function bindGa4Property(
  services: SourceServices,
  site: Site,
  givenPropertyId: string,
  baseUrl: string,
  background: (task: Promise<unknown>) => void,
) {
  const deps = configured(services)
  if (!deps) throw new ApiError(409, GOOGLE_NOT_CONFIGURED)
  const connection = await deps.repositories.google.get(site.id)
  if (!connection)
    throw new ApiError(
      409,
      'the site is not connected to Google: an owner or admin connects it at connectUrl of GET /sites/{site_id}/ga4 first',
    )
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
  // at once, for as long as a request's background work may last; the job of due imports goes on from the cursor
  background(importSite(deps, site.id, { shouldStop: handOverLater() }))
  return ga4Connection(services, updated, baseUrl, false)
}

/**
 * DELETE /sites/{id}/ga4: revokes the grant at Google, forgets the tokens and stops the imports.
 * The imported rows stay until the site drops ga4 from its sources.
 */
export async function disconnectGa4(services: SourceServices, site: Site) {
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
export async function forgetGoogleConnection(services: Pick<SourceServices, 'repositories'>, siteId: string) {
  await Promise.all([services.repositories.google.delete(siteId), services.repositories.ga4Imports.deleteAll(siteId)])
}
