import type { Hono } from 'hono'
import { ApiError } from '../lib/errors'
import { geoFromCf } from '../lib/ingest/geo'
import { missingKindField, parseHit } from '../lib/ingest/hit'
import type { Services } from '../lib/services'
import { TRACKER_FILES } from '../lib/tracker/bundle.generated'

const MAX_EVENT_BYTES = 64 * 1024

const javascript = (code: string, cacheControl: string, etag: string) =>
  new Response(code, {
    headers: { 'Content-Type': 'application/javascript; charset=utf-8', 'Cache-Control': cacheControl, ETag: `"${etag}"`, 'Access-Control-Allow-Origin': '*' },
  })

/** The keyless collector: the tracking script and the event endpoint. */
export function mountCollector(app: Hono, services: Services) {
  const files = new Map<string, { path: string; code: string }>(Object.values(TRACKER_FILES).map((f) => [f.path, f]))
  const scriptEtag = TRACKER_FILES.script.path.split('.')[1]

  // the snippet's fixed URL revalidates hourly; the content-hashed copies never change
  app.get('/js/script.js', (c) => {
    if (c.req.header('if-none-match') === `"${scriptEtag}"`) return c.body(null, 304)
    return javascript(TRACKER_FILES.script.code, 'public, max-age=3600, stale-while-revalidate=86400', scriptEtag)
  })
  app.get('/js/:file{[a-z-]+\\.[0-9a-f]{12}\\.js}', (c) => {
    const file = files.get(`/js/${c.req.param('file')}`)
    if (!file) return c.json({ error: 'no such script' }, 404)
    return javascript(file.code, 'public, max-age=31536000, immutable', file.path.split('.')[1])
  })

  app.post('/api/event', async (c) => {
    const text = await c.req.text()
    if (text.length > MAX_EVENT_BYTES) throw new ApiError(413, `body: larger than ${MAX_EVENT_BYTES} bytes`)
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      throw new ApiError(400, 'body: not valid JSON')
    }
    // the browser sends no timestamp, ip or userAgent: they come from the request
    const hit = parseHit(body, 'browser')
    if (typeof hit === 'string') throw new ApiError(400, hit)
    const missing = missingKindField(hit)
    if (missing) throw new ApiError(400, missing)
    const site = await services.sites.bySnippet(hit.site)
    if (!site) throw new ApiError(400, `site: unknown site "${hit.site}"`)
    // a customer's proxy that proves the site's secret may pass the visitor's address on
    const proxied = site.proxySecret && c.req.header('x-proxy-secret') === site.proxySecret
    const ip = (proxied && c.req.header('x-forwarded-for')?.split(',')[0].trim()) || services.clientAddress(c)
    const cf = (c.req.raw as { cf?: Record<string, unknown> }).cf
    const outcome = await services.ingestor.submit({
      hit, site, ip, userAgent: c.req.header('user-agent') ?? '', receivedAt: services.now(), geo: cf ? geoFromCf(cf) : undefined, source: 'browser',
    })
    if (outcome.status === 'rejected') throw new ApiError(400, outcome.error)
    // an explicit empty length: no chunked encoding, so one write a response
    return c.body(null, 202, { 'content-length': '0' })
  })
}
