import { type Context, Hono } from 'hono'
import { getPathNoStrict } from 'hono/utils/url'
import type { ApiKeyRecord } from '../lib/accounts/keys'
import { ApiError } from '../lib/errors'
import type { Services } from '../lib/services'
import { type Endpoint, SerializedAnswer, isJsonAnswer } from './endpoint'
import { bodyCap, failureAnswer, honoPath } from './http'
import { CallContext } from './invoke'
import { REQUEST_ID_HEADER, type RequestTracer } from './request-log'

/** What a page's script may read of the collector's answer: why its hit was dropped. */
export const EVENT_EXPOSE_HEADERS = 'X-Dropped, x-plausible-dropped'

const NO_INPUT = { params: {}, body: undefined } as never

export const STARTING_MESSAGE = 'the service is starting (applying its migrations); retry in 2 s'

/**
 * The transport of the endpoints every page view calls (the collector, the public count). They are
 * served by an app of their own, which `app.fetch` hands their requests to before its router: the
 * app's router and middleware chain (matched and composed for every request, even those a route
 * answers before any middleware runs) are not on their path. The transport does what that
 * middleware would do for them, and no more: the request's id and log line, the request metric,
 * the CORS headers, the 503 while the migrations are applied and the body cap are the same; the
 * answer's headers are one plain object, which the Node adapter writes as they are, in one write.
 * An answer the handler has at once (a cached public count) is returned at once, with no promise:
 * the Node adapter then writes it in the turn the request came in. Their answers are never
 * compressed: they are empty or a few hundred bytes.
 */
export function mountHotPaths(app: Hono, endpoints: Endpoint[], services: Services, tracer: RequestTracer) {
  if (!endpoints.length) return
  const hot = new Hono({ strict: false })
  hot.onError(failureAnswer)
  /** `METHOD /path` of each hot route; a GET route answers HEAD too, as in every Hono app */
  const routes = new Set<string>()
  for (const endpoint of endpoints) {
    if (endpoint.scope !== 'public' || !endpoint.validatesOwnInput)
      throw new Error(`${endpoint.method} ${endpoint.path}: a hot path is public and validates its own input`)
    const route = honoPath(endpoint.path)
    if (route.includes(':')) throw new Error(`${endpoint.path}: a hot path has no path parameters`)
    routes.add(`${endpoint.method} ${route}`)
    if (endpoint.method === 'GET') routes.add(`HEAD ${route}`)
    const capped = bodyCap(endpoint)
    const status = endpoint.status ?? 200
    const emptyAnswer = !isJsonAnswer(endpoint.response) && endpoint.response.mediaType === null
    const exposed = endpoint.path === '/api/event' ? EVENT_EXPOSE_HEADERS : undefined

    /** The handler's result as the answer, with the headers every /api answer has. */
    const answerOf = (result: unknown, id: string): Response => {
      const headers: Record<string, string> = { [REQUEST_ID_HEADER]: id, 'Access-Control-Allow-Origin': '*' }
      if (exposed) headers['Access-Control-Expose-Headers'] = exposed
      if (emptyAnswer) {
        // a Response here carries headers only (the collector's X-Dropped); an explicit empty
        // length: no chunked encoding, so one write a response
        if (result instanceof Response) for (const [name, value] of result.headers) headers[name] = value
        headers['content-length'] = '0'
        return new Response(null, { status, headers })
      }
      // added to the one object, not spread into a new one: an object spread of two objects was
      // about 4 µs of a cached count's 25 (the object it makes is slow to build and to write)
      if (result instanceof SerializedAnswer) return new Response(result.text, { status, headers: Object.assign(headers, result.headers) })
      if (result instanceof Response) {
        for (const [name, value] of result.headers) headers[name] = value
        return new Response(result.body, { status: result.status, headers })
      }
      headers['Content-Type'] = 'application/json'
      return new Response(JSON.stringify(result), { status, headers })
    }

    /** Logs and counts a request's answer, as the middleware does. */
    const done = (c: Context, answer: Response, started: number, id: string, label: string) => {
      if (tracer.logRequests) tracer.line(c.req, answer.status, started, id)
      services.metrics?.request(label, c.req.method, answer.status, (performance.now() - started) / 1000)
      return answer
    }
    const settle = async (c: Context, pending: Promise<unknown>, started: number, id: string) => {
      let answer: Response
      try {
        answer = answerOf(await pending, id)
      } catch (err) {
        answer = failed(c, err, id, exposed, tracer)
      }
      return done(c, answer, started, id, route)
    }
    // public endpoints never read the key; a hot path validates its own input (see invoke)
    const handle = (c: Context) =>
      endpoint.handler(new CallContext(services, null as unknown as ApiKeyRecord, c.req.raw, c.env, c), NO_INPUT)

    // no function is made per request: under tsx each named one is also given its name, a measurable cost here
    const serve = (c: Context) => {
      const started = performance.now()
      // the trace is registered when a failure is answered (failed), not for every request
      const id = tracer.idOf(c.req.raw, c.req.header(REQUEST_ID_HEADER))
      let answer: Response
      try {
        // the middleware records what it answers before routing (while migrating) as `unmatched`
        if (services.readiness?.().phase === 'migrating')
          return done(
            c,
            failed(c, new ApiError(503, STARTING_MESSAGE, { 'Retry-After': '2' }), id, exposed, tracer),
            started,
            id,
            'unmatched',
          )
        // after the body cap, which may swap the request for one reading a counted stream
        const result = capped ? capped(c).then(() => handle(c)) : handle(c)
        if (result instanceof Promise) return settle(c, result, started, id)
        answer = answerOf(result, id)
      } catch (err) {
        answer = failed(c, err, id, exposed, tracer)
      }
      return done(c, answer, started, id, route)
    }
    hot.on(endpoint.method, route, serve)
    // in the app's router too, first: what reaches the app by its routes (an app mounting it) gets the same
    app.on(endpoint.method, route, serve)
  }
  const general = app.fetch
  app.fetch = (request, env, executionCtx) => {
    if (routes.has(`${request.method} ${getPathNoStrict(request)}`)) return hot.fetch(request, env, executionCtx)
    return general(request, env, executionCtx)
  }
}

/** A failure answered as the app answers it, with the headers the middleware would have set. */
function failed(c: Context, err: unknown, id: string, exposed: string | undefined, tracer: RequestTracer) {
  // an unknown failure is logged under the request's id (asApiError reads it from the trace)
  tracer.keep(c.req.raw, id)
  c.header(REQUEST_ID_HEADER, id)
  c.header('Access-Control-Allow-Origin', '*')
  if (exposed) c.header('Access-Control-Expose-Headers', exposed)
  return failureAnswer(err, c)
}
