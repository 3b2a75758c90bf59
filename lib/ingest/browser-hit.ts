import { secretsEqual } from '../accounts/keys'
import { ApiError } from '../errors'
import type { Services } from '../services'
import type { Site } from '../sites/sites'
import { geoFromCf } from './geo'
import { missingKindField, parseHit } from './hit'
import type { IngestOutcome } from './item'

/** Why an accepted hit was not stored, or null when it was. */
export type Dropped = Extract<IngestOutcome, { status: 'dropped' }> | null

/**
 * The visitor's address: the one a customer's proxy passes on in X-Forwarded-For when it proves
 * the site's proxy secret, else the client's address as this home knows it.
 */
export function visitorAddress(services: Pick<Services, 'clientAddress'>, site: Site, request: Request, env: unknown): string {
  const proxied = site.proxySecret && secretsEqual(request.headers.get('x-proxy-secret') ?? '', site.proxySecret)
  return (proxied && request.headers.get('x-forwarded-for')?.split(',')[0].trim()) || services.clientAddress(request, env)
}

/**
 * POST /api/event: one hit of the tracking script, its JSON body as sent. The browser sends no
 * timestamp, address or user agent: they come from the request. 400 for a hit that cannot be
 * read or names no known site; a hit the site does not collect is accepted and dropped, and the
 * answer says why.
 */
export async function collectBrowserHit(services: Services, request: Request, env: unknown): Promise<Dropped> {
  const text = await request.text()
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new ApiError(400, 'body: not valid JSON')
  }
  const hit = parseHit(body, 'browser')
  if (typeof hit === 'string') throw new ApiError(400, hit)
  const missing = missingKindField(hit)
  if (missing) throw new ApiError(400, missing)
  const site = await services.sites.bySnippet(hit.site)
  if (!site) throw new ApiError(400, `site: unknown site "${hit.site}"`)
  const ip = visitorAddress(services, site, request, env)
  const cf = (request as { cf?: Record<string, unknown> }).cf
  const outcome = await services.ingestor.submit({
    hit,
    site,
    ip,
    userAgent: request.headers.get('user-agent') ?? '',
    receivedAt: services.now(),
    geo: cf ? geoFromCf(cf) : undefined,
    source: 'browser',
  })
  if (outcome.status === 'rejected') throw new ApiError(400, outcome.error)
  return outcome.status === 'dropped' ? outcome : null
}
