import { Hono } from 'hono'
import type { Services } from '../lib/runtime/services'
import { compression } from './compression'
import { rollupBuildsSettled } from '../lib/reports/query/run'
import { EVENT_EXPOSE_HEADERS, STARTING_MESSAGE, mountHotPaths } from './hot-path'
import { allowedMethods, failureAnswer, mountEndpoints } from './http'
import { endpoints } from './registry'
import { type LogOptions, requestLog, requestTracer } from './request-log'
import { webApp } from './web/app'
import { sharedDashboards } from './web/share'

const CORS_EXPOSE_HEADERS = 'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After'
const CORS_ALLOW_HEADERS = 'Authorization, x-api-key, Content-Type, mcp-protocol-version, mcp-session-id'

const ANSWERED_WHILE_STARTING = new Set(['/health', '/ready', '/metrics'])

/**
 * Builds the whole HTTP app from its services. Handlers never know which home they run in.
 * `hotPaths: false` serves the hot paths through the middleware like every endpoint (what their
 * lean transport must answer the same as).
 */
export function createApp(
  services: Services,
  log: LogOptions = { level: 'error' },
  options: { compress?: boolean; hotPaths?: boolean } = {},
) {
  // a trailing slash names the same endpoint (`/api/v1/` is the index, as `/api/v1`)
  const app = new Hono({ strict: false })
  const tracer = requestTracer(log)

  // the collector and the public count, called by every page view, come first with their own lean transport
  const hot = options.hotPaths === false ? [] : endpoints.filter((e) => e.hotPath)
  mountHotPaths(app, hot, services, tracer)

  app.use(requestLog(tracer))
  // a filter's first read rolls its days up after the answer (lib/reports/query/run.ts): a Worker keeps that work alive
  app.use(async (c, next) => {
    await next()
    const builds = rollupBuildsSettled()
    if (!builds) return
    try {
      c.executionCtx.waitUntil(builds)
    } catch {
      // Node has no execution context; the builds run on their own
    }
  })
  // requests by the route they matched (its declared path), method, status and duration
  const { metrics } = services
  if (metrics) {
    app.use(async (c, next) => {
      const started = performance.now()
      await next()
      const route = c.req.routePath === '*' || c.req.routePath === '/*' ? 'unmatched' : c.req.routePath
      metrics.request(route, c.req.method, c.res.status, (performance.now() - started) / 1000)
    })
  }
  // Node compresses its own answers (JSON, scripts, the MCP tool list) of 1 KB or more when the
  // client accepts gzip or deflate; event streams never are. Cloudflare compresses the Workers'.
  if (options.compress) app.use(compression())

  // Every /api response, errors and preflight included, is readable from any origin. Written with
  // c.header() before the handler runs: hono/cors touches c.res first, which makes the Node adapter
  // build every response twice (a third of the CPU of a keyed request).
  app.use('/api/*', async (c, next) => {
    c.header('Access-Control-Allow-Origin', '*')
    if (c.req.method !== 'OPTIONS') {
      // the rate-limit headers exist on keyed answers only
      if (c.req.path.startsWith('/api/v1')) c.header('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS)
      // so a page's script can read why its hit was dropped
      else if (c.req.path === '/api/event') c.header('Access-Control-Expose-Headers', EVENT_EXPOSE_HEADERS)
      return next()
    }
    c.header('Access-Control-Allow-Methods', 'GET, POST, PATCH, DELETE, OPTIONS')
    c.header('Access-Control-Allow-Headers', c.req.header('access-control-request-headers') ?? CORS_ALLOW_HEADERS)
    c.header('Access-Control-Max-Age', '86400')
    c.header('Vary', 'Access-Control-Request-Headers')
    return c.body(null, 204)
  })

  // while the migrations are applied nothing can be read or written yet: only health, readiness and metrics answer
  if (services.readiness) {
    app.use('*', async (c, next) => {
      if (services.readiness!().phase !== 'migrating' || ANSWERED_WHILE_STARTING.has(c.req.path)) return next()
      c.header('Retry-After', '2')
      return c.json({ error: STARTING_MESSAGE }, 503)
    })
  }

  mountEndpoints(
    app,
    endpoints.filter((e) => !hot.includes(e)),
    services,
  )
  app.route('/app', webApp(services))
  app.route('/share', sharedDashboards(services))

  const methodsOf = allowedMethods(endpoints)
  app.notFound((c) => {
    const path = new URL(c.req.url).pathname
    const allowed = methodsOf(path.length > 1 ? path.replace(/\/$/, '') : path)
    if (allowed && c.req.method !== 'OPTIONS') {
      c.header('Allow', [...allowed, 'OPTIONS'].join(', '))
      return c.json({ error: `${c.req.method} is not allowed on ${path}; use ${allowed.join(' or ')}` }, 405)
    }
    return c.json({ error: `no endpoint ${c.req.method} ${path}` }, 404)
  })

  app.onError(failureAnswer)

  return app
}
