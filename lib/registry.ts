import type { Context, Hono } from 'hono'
import { z } from 'zod'
import { authorize, credentialHash, siteResolver } from './auth'
import { ApiError } from './errors'
import type { ApiKeyRecord } from './keys'
import { LIMITS, type LimitClass } from './ratelimit'
import type { Services } from './services'
import type { Site } from './sites'

export type EndpointScope = 'public' | 'read' | 'write'
export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'
type AnyObject = z.ZodObject<z.ZodRawShape>

export interface EndpointContext {
  services: Services
  /** The caller's key; public endpoints never read it. */
  key: ApiKeyRecord
  request: Request
  /** The origin clients reach this service at. */
  baseUrl: string
  /** The site by UUID or snippet id, or the same 404 for missing and foreign sites. */
  site(idOrSnippet: string): Promise<Site>
}

/** A non-200 answer. Handlers return plain JSON for 200. */
export class Reply {
  constructor(
    readonly status: 201 | 202 | 204,
    readonly body: unknown,
  ) {}
}

export interface Endpoint<P extends AnyObject = AnyObject, B extends z.ZodType = z.ZodType> {
  method: Method
  /** OpenAPI-style path: `/api/v1/sites/{site_id}`. */
  path: string
  scope: EndpointScope
  /** The MCP tool name, or null for endpoints that are not tools (the index itself). */
  tool: string | null
  summary: string
  /** What an agent needs to read the answer right: units, fractions versus percentages, key parameters. */
  description?: string
  /** Path and query parameters together. */
  params?: P
  body?: B
  limit?: LimitClass
  /** Refuses site-bound ingest keys (adding or deleting sites, revoking keys). */
  orgWide?: boolean
  handler(ctx: EndpointContext, input: { params: z.infer<P>; body: z.infer<B> }): Promise<unknown>
}

export const defineEndpoint = <P extends AnyObject = AnyObject, B extends z.ZodType = z.ZodType>(e: Endpoint<P, B>) =>
  e as unknown as Endpoint

export const honoPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1')
export const pathParamNames = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])

/** `site_id: expected a string` from the first zod issue. */
export function describeZodError(error: z.ZodError, where: 'query' | 'body'): string {
  const issue = error.issues[0]
  const path = issue.path.join('.')
  if (issue.code === 'unrecognized_keys') {
    return `${path ? `${path}: ` : ''}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
  }
  return `${path || where}: ${issue.message}`
}

async function readJsonBody(request: Request): Promise<unknown> {
  const text = await request.text()
  if (!text.trim()) throw new ApiError(400, 'body: a JSON body is required')
  try {
    return JSON.parse(text)
  } catch {
    throw new ApiError(400, 'body: not valid JSON')
  }
}

function rateLimitHeaders(result: { limit: number; remaining: number; reset: number }, now: number) {
  return {
    'RateLimit-Limit': String(result.limit),
    'RateLimit-Remaining': String(result.remaining),
    'RateLimit-Reset': String(Math.max(0, Math.ceil((result.reset - now) / 1000))),
  }
}

const LAST_USED_EVERY_MS = 60_000

function backgroundTask(c: Context, task: Promise<unknown>) {
  const settled = task.catch((err) => console.error('background task failed', err))
  try {
    c.executionCtx.waitUntil(settled)
  } catch {
    // Node has no execution context; the promise runs on its own
  }
}

/** Mounts every declared endpoint: auth, scope, rate limit, validation, then the handler. */
export function mountEndpoints(app: Hono, endpoints: Endpoint[], services: Services) {
  const resolveSite = siteResolver(services.store)
  const lastUsedWritten = new Map<string, number>()

  for (const endpoint of endpoints) {
    app.on(endpoint.method, honoPath(endpoint.path), async (c) => {
      let key = null as unknown as ApiKeyRecord
      if (endpoint.scope !== 'public') {
        const { credential, hash } = await credentialHash(c.req.raw)
        const limitClass = endpoint.limit ?? 'default'
        // the budget is per key, counted under the key's hash, so lookup and count go out together
        const [record, result] = await Promise.all([services.store.getApiKeyByHash(hash), services.limiter.limit(limitClass, hash)])
        key = authorize(record, credential, endpoint.scope)
        if (endpoint.orgWide && key.siteId) throw new ApiError(403, 'this endpoint needs an organization-wide key; this key is bound to one site')
        const now = services.now().getTime()
        const headers = rateLimitHeaders(result, now)
        for (const [name, value] of Object.entries(headers)) c.header(name, value)
        if (!result.success) {
          const retryAfter = String(Math.max(1, Number(headers['RateLimit-Reset'])))
          throw new ApiError(429, `rate limit exceeded: ${LIMITS[limitClass].max} requests per minute for this key`, { 'Retry-After': retryAfter })
        }
        if ((lastUsedWritten.get(key.id) ?? 0) < now - LAST_USED_EVERY_MS) {
          lastUsedWritten.set(key.id, now)
          backgroundTask(c, services.store.touchApiKey(key.orgId, key.id, new Date(now).toISOString()))
        }
      }

      const query = Object.fromEntries(Object.entries(c.req.query()).filter(([name]) => name !== 'key'))
      const rawParams = { ...query, ...c.req.param() }
      const params = endpoint.params ? endpoint.params.safeParse(rawParams) : { success: true as const, data: {} }
      if (!params.success) throw new ApiError(400, describeZodError(params.error, 'query'))
      let body: unknown
      if (endpoint.body) {
        const parsed = endpoint.body.safeParse(await readJsonBody(c.req.raw))
        if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'body'))
        body = parsed.data
      }

      const ctx: EndpointContext = {
        services,
        key,
        request: c.req.raw,
        baseUrl: services.publicUrl ?? new URL(c.req.url).origin,
        site: (idOrSnippet) => resolveSite(key, idOrSnippet),
      }
      const result = await endpoint.handler(ctx, { params: params.data, body })
      if (result instanceof Reply) {
        if (result.status === 204) return c.body(null, 204)
        return c.json(result.body as object, result.status)
      }
      return c.json(result as object, 200)
    })
  }
}
