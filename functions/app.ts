import { Hono } from 'hono'
import { cors } from 'hono/cors'
import { ApiError } from '../lib/errors'
import { mountEndpoints } from '../lib/registry'
import type { Services } from '../lib/services'
import { endpoints } from './v1/index'

/** Builds the whole HTTP app from its services. Handlers never know which home they run in. */
export function createApp(services: Services) {
  const app = new Hono()

  app.use(
    '/api/*',
    cors({
      origin: '*',
      allowMethods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
      allowHeaders: ['Authorization', 'x-api-key', 'Content-Type', 'mcp-protocol-version', 'mcp-session-id'],
      exposeHeaders: ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'],
      maxAge: 86400,
    }),
  )

  app.get('/health', async (c) => {
    const checks = await Promise.allSettled([services.olap.query('SELECT 1 AS ok'), services.store.countOrgs()])
    const [olap, kv] = checks.map((r) => (r.status === 'fulfilled' ? 'ok' : 'unavailable'))
    const healthy = olap === 'ok' && kv === 'ok'
    return c.json({ status: healthy ? 'ok' : 'degraded', clickhouse: olap, keyValue: kv }, healthy ? 200 : 503)
  })

  mountEndpoints(app, endpoints, services)

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
