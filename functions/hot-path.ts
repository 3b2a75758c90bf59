import type { Hono } from 'hono'
import { getPathNoStrict } from 'hono/utils/url'
import type { ApiKeyRecord } from '../lib/accounts/keys'
import { ApiError } from '../lib/core/errors'
import type { Services } from '../lib/runtime/services'
import { type Endpoint, SerializedAnswer, isJsonAnswer } from './endpoint'
import { bodyCap, honoPath } from './http'
import { CallContext, type CallHost, asApiError } from './invoke'
import { REQUEST_ID_HEADER, type RequestTracer } from './request-log'

/** What a page's script may read of the collector's answer: why its hit was dropped. */
export const EVENT_EXPOSE_HEADERS = 'X-Dropped, x-plausible-dropped'

const NO_INPUT = { params: {}, body: undefined } as never

export const STARTING_MESSAGE = 'the service is starting (applying its migrations); retry in 2 s'

/** One hot route: a plain function from the request (and the path its URL names) to its answer. */
type HotRoute = (request: Request, env: unknown, host: CallHost | undefined, path: string) => Response | Promise<Response>

/**
 * The transport of the endpoints every page view calls (the collector, the public count).
 * `app.fetch` looks their path and method up in a Map before anything else and calls their route,
 * a plain function from the request to its answer: no router, no middleware chain and no Context
 * object are on their path (a Hono app pays for those on every request, even one a route answers
 * at once). The route does what that middleware would do for them, and no more: the request's id
 * and log line, the request metric, the CORS headers, the 503 while the migrations are applied and
 * the body cap are the same; the answer's headers are one plain object, which the Node adapter
 * writes as they are, in one write. An answer the handler has at once (a cached public count) is
 * returned at once, with no promise: the Node adapter then writes it in the turn the request came
 * in. Their answers are never compressed: they are empty or a few hundred bytes.
 */
export function mountHotPaths(app: Hono, endpoints: Endpoint[], services: Services, tracer: RequestTracer) {
  if (!endpoints.length) return
  /** Each hot route by its path, then its method; a GET route answers HEAD too, as in every Hono app */
  const routes = new Map<string, Map<string, HotRoute>>()
  for (const endpoint of endpoints) {
    if (endpoint.scope !== 'public' || !endpoint.validatesOwnInput)
      throw new Error(`${endpoint.method} ${endpoint.path}: a hot path is public and validates its own input`)
    const path = honoPath(endpoint.path)
    if (path.includes(':')) throw new Error(`${endpoint.path}: a hot path has no path parameters`)
    const route = hotRoute(endpoint, path, services, tracer)
    let methods = routes.get(path)
    if (!methods) routes.set(path, (methods = new Map()))
    methods.set(endpoint.method, route)
    if (endpoint.method === 'GET') methods.set('HEAD', (...args) => withoutBody(route(...args)))
    // in the app's router too, first: what reaches the app by its routes (an app mounting it) gets the same
    app.on(endpoint.method, path, (c) => route(c.req.raw, c.env, c, c.req.path))
  }
  const general = app.fetch
  app.fetch = (request, env, executionCtx) => {
    // a trailing slash names the same route, as in the app's router (strict: false); looked up by
    // the path as it is, then the method: a string made of the two would be one more per request
    const path = getPathNoStrict(request)
    const route = routes.get(path)?.get(request.method)
    if (route === undefined) return general(request, env, executionCtx)
    return route(request, env, executionCtx ? { executionCtx } : undefined, path)
  }
}

/** A HEAD answer: the GET answer's status and headers, without its body (as Hono answers HEAD). */
function withoutBody(answer: Response | Promise<Response>): Response | Promise<Response> {
  return answer instanceof Promise ? answer.then(withoutBody) : new Response(null, answer)
}

function hotRoute(endpoint: Endpoint, path: string, services: Services, tracer: RequestTracer): HotRoute {
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

  /** A failure answered as the app answers it (see failureAnswer), with the headers the middleware would have set. */
  const failed = (request: Request, err: unknown, id: string): Response => {
    // an unknown failure is logged under the request's id (asApiError reads it from the trace)
    tracer.keep(request, id)
    const failure = asApiError(err, request)
    const headers: Record<string, string> = { [REQUEST_ID_HEADER]: id, 'Access-Control-Allow-Origin': '*' }
    if (exposed) headers['Access-Control-Expose-Headers'] = exposed
    Object.assign(headers, failure.headers)
    headers['Content-Type'] = 'application/json'
    return new Response(JSON.stringify({ error: failure.message }), { status: failure.status, headers })
  }

  /** Logs and counts a request's answer, as the middleware does. */
  const done = (request: Request, requestPath: string, answer: Response, started: number, id: string, label: string) => {
    if (tracer.logRequests) tracer.line(request.method, request.url, requestPath, answer.status, started, id)
    services.metrics?.request(label, request.method, answer.status, (performance.now() - started) / 1000)
    return answer
  }
  // public endpoints never read the key; a hot path validates its own input (see invoke)
  const handle = (request: Request, env: unknown, host: CallHost | undefined) =>
    endpoint.handler(new CallContext(services, null as unknown as ApiKeyRecord, request, env, host), NO_INPUT)
  const settle = async (request: Request, requestPath: string, pending: Promise<unknown>, started: number, id: string) => {
    let answer: Response
    try {
      answer = answerOf(await pending, id)
    } catch (err) {
      answer = failed(request, err, id)
    }
    return done(request, requestPath, answer, started, id, path)
  }

  // no function is made per request: under tsx each named one is also given its name, a measurable cost here
  return (request, env, host, requestPath) => {
    const started = performance.now()
    // the trace is registered when a failure is answered (failed), not for every request
    const id = tracer.idOf(request, request.headers.get(REQUEST_ID_HEADER))
    let answer: Response
    try {
      // the middleware records what it answers before routing (while migrating) as `unmatched`
      if (services.readiness?.().phase === 'migrating')
        return done(
          request,
          requestPath,
          failed(request, new ApiError(503, STARTING_MESSAGE, { 'Retry-After': '2' }), id),
          started,
          id,
          'unmatched',
        )
      // after the body cap, which may read the body into a request of its own
      const read = capped ? capped(request) : request
      const result = read instanceof Promise ? read.then((counted) => handle(counted, env, host)) : handle(read, env, host)
      if (result instanceof Promise) return settle(request, requestPath, result, started, id)
      answer = answerOf(result, id)
    } catch (err) {
      answer = failed(request, err, id)
    }
    return done(request, requestPath, answer, started, id, path)
  }
}
