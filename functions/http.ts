import type { Context, Hono } from 'hono'
import { credentialHash } from '../lib/accounts/auth'
import { ApiError } from '../lib/core/errors'
import type { ApiKeyRecord } from '../lib/accounts/keys'
import type { Services } from '../lib/runtime/services'
import { DEFAULT_MAX_BODY_BYTES, type Endpoint, SerializedAnswer, isJsonAnswer } from './endpoint'
import { CallContext, admit, asApiError, invoke } from './invoke'
import { KEY_PREFIX_VAR, keepTrace } from './request-log'

export const honoPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1')

async function readJsonBody(request: Request): Promise<unknown> {
  const text = await request.text()
  if (!text.trim()) return undefined
  try {
    return JSON.parse(text)
  } catch {
    throw new ApiError(400, 'body: not valid JSON')
  }
}

/** The REST transport: every declared endpoint as a route, admitted and invoked like an MCP tool call. */
export function mountEndpoints(app: Hono, endpoints: Endpoint[], services: Services) {
  for (const endpoint of endpoints) {
    // keyed endpoints get every query parameter, so one they do not take is refused by name
    const hasParams = (endpoint.params !== undefined || endpoint.scope !== 'public') && !endpoint.validatesOwnInput
    const capped = bodyCap(endpoint)
    const emptyAnswer = !isJsonAnswer(endpoint.response) && endpoint.response.mediaType === null
    app.on(endpoint.method, honoPath(endpoint.path), async (c) => {
      if (capped) c.req.raw = await capped(c.req.raw)
      // public endpoints never read the key
      let ctx = new CallContext(services, null as unknown as ApiKeyRecord, c.req.raw, c.env, c)
      let done: (() => void) | undefined
      let result: unknown
      try {
        if (endpoint.scope !== 'public') {
          const admitted = await admit(services, endpoint, await credentialHash(c.req.raw), ctx)
          done = admitted.done
          ctx = ctx.withKey(admitted.key)
          c.set(KEY_PREFIX_VAR as never, admitted.key.prefix as never)
          for (const [name, value] of Object.entries(admitted.headers)) c.header(name, value)
        }
        const params = hasParams ? { ...withoutKey(c.req.query()), ...c.req.param() } : {}
        const body = endpoint.body && !endpoint.validatesOwnInput ? await readJsonBody(c.req.raw) : undefined
        result = await invoke(endpoint, ctx, { params, body })
      } finally {
        done?.()
      }
      // an empty answer has an explicit empty length: no chunked encoding, so one write a response
      if (emptyAnswer) {
        // a Response here carries headers only (the collector's X-Dropped)
        const headers = result instanceof Response ? Object.fromEntries(result.headers) : {}
        return c.body(null, (endpoint.status ?? 200) as 200, { ...headers, 'content-length': '0' })
      }
      // a string body: the Node adapter writes it with its length in one go, not as a stream
      if (result instanceof SerializedAnswer) return c.body(result.text, (endpoint.status ?? 200) as 200, result.headers)
      // through c.body, so the headers set before the handler (CORS, rate limits) are kept
      if (result instanceof Response) return c.body(result.body as never, result.status as 200, Object.fromEntries(result.headers))
      return c.json(result as object, endpoint.status ?? 200)
    })
  }
}

/**
 * The cap of an endpoint that takes a body, or null: a larger body is refused (413). It holds while
 * the body is read: by Content-Length when the request has one (read here from the header alone,
 * so the Node adapter keeps its fast body path), else by counted bytes. It gives the request to
 * read the body from: the same one, or (counted) one holding the body read.
 */
export function bodyCap(endpoint: Endpoint): ((request: Request) => Request | Promise<Request>) | null {
  if (endpoint.method === 'GET') return null
  const maxSize = endpoint.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const tooLarge = (): never => {
    throw new ApiError(413, `body: larger than ${maxSize} bytes`)
  }
  return (request) => {
    const length = request.headers.get('content-length')
    if (length === null || request.headers.has('transfer-encoding')) return countedBody(request, maxSize, tooLarge)
    if (Number(length) > maxSize) tooLarge()
    return request
  }
}

/** The body read up to `maxSize` bytes (as hono/body-limit reads it), into a request that keeps the trace of the one it replaces. */
async function countedBody(request: Request, maxSize: number, tooLarge: () => never): Promise<Request> {
  if (!request.body) return request
  let size = 0
  let buffer = new Uint8Array(0)
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    const offset = size
    size += value.length
    if (size > maxSize) tooLarge()
    if (size > buffer.length) {
      const grown = new Uint8Array(Math.min(maxSize, Math.max(size, buffer.length * 2)))
      grown.set(buffer.subarray(0, offset))
      buffer = grown
    }
    buffer.set(value, offset)
  }
  const counted = new Request(request, { body: buffer.subarray(0, size) })
  keepTrace(request, counted)
  return counted
}

/** Any failure as its JSON answer (see asApiError), with the headers set before it was thrown. */
export function failureAnswer(err: unknown, c: Context) {
  const failure = asApiError(err, c.req.raw)
  for (const [name, value] of Object.entries(failure.headers)) c.header(name, value)
  return c.json({ error: failure.message }, failure.status)
}

/** `?key=` is a credential, never a parameter. */
function withoutKey(query: Record<string, string>) {
  if (!('key' in query)) return query
  const { key: _key, ...rest } = query
  return rest
}

/** The methods each declared path answers, to tell a wrong method (405 with Allow) from an unknown path. */
export function allowedMethods(endpoints: Endpoint[]) {
  const paths = new Map<string, { pattern: RegExp; methods: string[] }>()
  for (const e of endpoints) {
    let entry = paths.get(e.path)
    if (!entry) {
      const pattern = new RegExp(`^${e.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}$`)
      paths.set(e.path, (entry = { pattern, methods: [] }))
    }
    entry.methods.push(e.method)
  }
  const all = [...paths.values()]
  return (pathname: string) => all.find((p) => p.pattern.test(pathname))?.methods ?? null
}
