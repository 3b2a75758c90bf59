import { Hono } from 'hono'
import { ApiError } from '../lib/errors'
import { mountEndpoints } from '../lib/registry'
import type { Services } from '../lib/services'
import { mountCollector } from './collector'
import { mountMcp } from './mcp'
import { mountPublic } from './public'
import { endpoints } from './v1/index'

const CORS_EXPOSE_HEADERS = 'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After'
const CORS_ALLOW_HEADERS = 'Authorization, x-api-key, Content-Type, mcp-protocol-version, mcp-session-id'

/** Builds the whole HTTP app from its services. Handlers never know which home they run in. */
export function createApp(services: Services) {
  const app = new Hono()

  // Every /api response, errors and preflight included, is readable from any origin. Written with
  // c.header() before the handler runs: hono/cors touches c.res first, which makes the Node adapter
  // build every response twice (a third of the CPU of a keyed request).
  app.use('/api/*', async (c, next) => {
    c.header('Access-Control-Allow-Origin', '*')
    if (c.req.method !== 'OPTIONS') {
      // the rate-limit headers exist on keyed answers only
      if (c.req.path.startsWith('/api/v1')) c.header('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS)
      return next()
    }
    c.header('Access-Control-Allow-Methods', 'GET, POST, PATCH, DELETE, OPTIONS')
    c.header('Access-Control-Allow-Headers', c.req.header('access-control-request-headers') ?? CORS_ALLOW_HEADERS)
    c.header('Access-Control-Max-Age', '86400')
    c.header('Vary', 'Access-Control-Request-Headers')
    return c.body(null, 204)
  })

  app.get('/health', async (c) => {
    const checks = await Promise.allSettled([services.olap.query('SELECT 1 AS ok'), services.store.countOrgs()])
    const [olap, kv] = checks.map((r) => (r.status === 'fulfilled' ? 'ok' : 'unavailable'))
    const healthy = olap === 'ok' && kv === 'ok'
    return c.json({ status: healthy ? 'ok' : 'degraded', clickhouse: olap, keyValue: kv }, healthy ? 200 : 503)
  })

  mountEndpoints(app, endpoints, services)
  mountMcp(app, endpoints, services)
  mountCollector(app, services)
  mountPublic(app, services)

  app.notFound((c) => c.json({ error: `no endpoint ${c.req.method} ${new URL(c.req.url).pathname}` }, 404))

  app.onError((err, c) => {
    if (err instanceof ApiError) {
      for (const [name, value] of Object.entries(err.headers)) c.header(name, value)
      return c.json({ error: err.message }, err.status)
    }
    const requestId = crypto.randomUUID()
    console.error(JSON.stringify({ level: 'error', requestId, method: c.req.method, path: new URL(c.req.url).pathname, error: String((err as Error)?.stack ?? err) }))
    return c.json({ error: `internal error (request ${requestId})` }, 500)
  })

  return app
}
