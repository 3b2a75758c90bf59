import type { Context, Hono } from 'hono'
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
 * The transport of the endpoints every page view calls (the collector, the public count): mounted
 * ahead of the app's middleware, it does what that middleware would do for them, and no more. The
 * request's id and log line, the request metric, the CORS headers, the 503 while the migrations
 * are applied and the body cap are the same; the answer's headers are one plain object, which the
 * Node adapter writes as they are, in one write. Their answers are never compressed: they are
 * empty or a few hundred bytes (through the middleware, hono/compress's Vary header, set once
 * the answer was made, rebuilt it as a stream, which with the Headers objects was half of a
 * cached public count's CPU on the JS thread; functions/compression.ts no longer does).
 */
export function mountHotPaths(app: Hono, endpoints: Endpoint[], services: Services, tracer: RequestTracer) {
  for (const endpoint of endpoints) {
    if (endpoint.scope !== 'public' || !endpoint.validatesOwnInput)
      throw new Error(`${endpoint.method} ${endpoint.path}: a hot path is public and validates its own input`)
    const route = honoPath(endpoint.path)
    const capped = bodyCap(endpoint)
    const status = endpoint.status ?? 200
    const emptyAnswer = !isJsonAnswer(endpoint.response) && endpoint.response.mediaType === null
    const exposed = endpoint.path === '/api/event' ? EVENT_EXPOSE_HEADERS : undefined
    app.on(endpoint.method, route, async (c) => {
      const started = performance.now()
      const id = tracer.begin(c.req.raw, c.req.header(REQUEST_ID_HEADER))
      let answer: Response
      // the middleware records what it answers before routing (while migrating) as `unmatched`
      let label = route
      try {
        if (services.readiness?.().phase === 'migrating') {
          label = 'unmatched'
          throw new ApiError(503, STARTING_MESSAGE, { 'Retry-After': '2' })
        }
        if (capped) await capped(c)
        // public endpoints never read the key
        const ctx = new CallContext(services, null as unknown as ApiKeyRecord, c.req.raw, c.env, c)
        // a hot path validates its own input (see invoke)
        const result = await endpoint.handler(ctx, NO_INPUT)
        const headers: Record<string, string> = { [REQUEST_ID_HEADER]: id, 'Access-Control-Allow-Origin': '*' }
        if (exposed) headers['Access-Control-Expose-Headers'] = exposed
        if (emptyAnswer) {
          // a Response here carries headers only (the collector's X-Dropped); an explicit empty
          // length: no chunked encoding, so one write a response
          if (result instanceof Response) for (const [name, value] of result.headers) headers[name] = value
          headers['content-length'] = '0'
          answer = new Response(null, { status, headers })
        } else if (result instanceof SerializedAnswer)
          answer = new Response(result.text, { status, headers: { ...headers, ...result.headers } })
        else if (result instanceof Response) {
          for (const [name, value] of result.headers) headers[name] = value
          answer = new Response(result.body, { status: result.status, headers })
        } else answer = new Response(JSON.stringify(result), { status, headers: { ...headers, 'Content-Type': 'application/json' } })
      } catch (err) {
        answer = failed(c, err, id, exposed)
      }
      if (tracer.logRequests) tracer.line(c.req, answer.status, started, id)
      services.metrics?.request(label, c.req.method, answer.status, (performance.now() - started) / 1000)
      return answer
    })
  }
}

/** A failure answered as the app answers it, with the headers the middleware would have set. */
function failed(c: Context, err: unknown, id: string, exposed: string | undefined) {
  c.header(REQUEST_ID_HEADER, id)
  c.header('Access-Control-Allow-Origin', '*')
  if (exposed) c.header('Access-Control-Expose-Headers', exposed)
  return failureAnswer(err, c)
}
