import { type Credential, authorize, keyOfHash, recordKeyUse, siteForKey, unknownKeyError } from '../lib/accounts/auth'
import { ApiError, describeZodError } from '../lib/core/errors'
import { InvalidPatternError, StatementTimeLimitError } from '../lib/storage/clickhouse/execute'
import type { ApiKeyRecord } from '../lib/accounts/keys'
import { CONCURRENT_READS, LIMITS, type LimitResult } from '../lib/accounts/ratelimit'
import type { Services } from '../lib/runtime/services'
import { ConflictError, storeOutageIn } from '../lib/storage/errors'
import { type Endpoint, type EndpointContext, type Group, pathParamNames } from './endpoint'
import { unknownParameterMessage } from './params'
import { traceOf } from './request-log'

/**
 * The two halves of every call, shared by REST and MCP: admitting the caller (key, scope, one
 * request against the key's budget) and invoking the endpoint (validate, handle).
 */

/** A credential and its hash: keys are stored and rate-limited only under their hash. */
export interface Presented {
  credential: Credential
  hash: string
}

export interface Admitted {
  key: ApiKeyRecord
  /** RateLimit-* headers of the answer. */
  headers: Record<string, string>
  /** Ends the call: gives back the key's concurrent-read slot a read holds while it runs. */
  done(): void
}

function rateLimitHeaders(result: LimitResult, now: number) {
  return {
    'RateLimit-Limit': String(result.limit),
    'RateLimit-Remaining': String(result.remaining),
    'RateLimit-Reset': String(Math.max(0, Math.ceil((result.reset - now) / 1000))),
  }
}

const LAST_USED_EVERY_MS = 60_000

/** The sections whose reads run on the analytics store: each holds one of its key's concurrent-read slots while it runs. */
const STORE_READS: ReadonlySet<Group | undefined> = new Set<Group>(['reports', 'behaviour', 'pages', 'why'])
const holdsReadSlot = (endpoint: Endpoint) => endpoint.scope === 'read' && STORE_READS.has(endpoint.group)

/** Per set of services: when each key's use was last recorded. */
const lastUseWritten = new WeakMap<Services, Map<string, number>>()
function lastUseOf(services: Services) {
  let written = lastUseWritten.get(services)
  if (!written) lastUseWritten.set(services, (written = new Map()))
  return written
}

/** The key a credential names, checked as every call checks it first: 401 for no such key. */
export async function identify(services: Services, presented: Presented): Promise<ApiKeyRecord> {
  const record = await keyOfHash(services.repositories, presented.hash)
  if (!record) throw await unknownKeyError(services.repositories, presented.hash)
  return authorize(record, presented.credential, 'read')
}

/**
 * Admits a caller of a keyed endpoint: 401 for a missing or unknown key, 403 for a scope too
 * small, 429 past the key's budget or, for a read of the analytics store, while the key has its
 * most such reads running (the caller ends the call with `done`). `known` is the key already looked up for this credential
 * (an MCP request's tool calls): the budget is still counted, once per call.
 */
export async function admit(
  services: Services,
  endpoint: Endpoint,
  presented: Presented,
  call: Pick<EndpointContext, 'background'>,
  known?: ApiKeyRecord,
): Promise<Admitted> {
  const limitClass = endpoint.limit ?? 'default'
  // the budget is per key, counted under the key's hash, so lookup, count and a read's slot go out together
  const [record, result, slot] = await Promise.all([
    known ?? keyOfHash(services.repositories, presented.hash),
    services.limiter.limit(limitClass, presented.hash),
    holdsReadSlot(endpoint) ? services.limiter.enter(presented.hash) : undefined,
  ])
  const done = () => {
    if (slot) call.background(slot())
  }
  try {
    if (presented.credential.via === 'query' && !endpoint.keyInUrl) {
      throw new ApiError(
        401,
        'the key query parameter is accepted only by the ingestion endpoints (collect, proxy-config), with a site-bound ingest key; send keys in the Authorization header',
      )
    }
    if (!record) throw await unknownKeyError(services.repositories, presented.hash)
    const key = authorize(record, presented.credential, endpoint.scope === 'write' ? 'write' : 'read')
    if (endpoint.orgWide && key.siteId)
      throw new ApiError(403, 'this endpoint needs an organization-wide key; this key is bound to one site')
    const now = services.now().getTime()
    const headers = rateLimitHeaders(result, now)
    if (!result.success) {
      // when a request will be admitted again, rounded up: a client that waits this long succeeds
      const retryAfter = String(Math.max(1, Math.ceil((result.retryAfterMs ?? result.reset - now) / 1000)))
      throw new ApiError(429, `rate limit exceeded: ${LIMITS[limitClass].max} requests per minute for this key`, {
        ...headers,
        'RateLimit-Reset': retryAfter,
        'Retry-After': retryAfter,
      })
    }
    if (slot === null) {
      throw new ApiError(
        429,
        `too many reads at once: this key has ${CONCURRENT_READS.max} running, the most one key may; send the next when one has answered`,
        { ...headers, 'Retry-After': '1' },
      )
    }
    const lastUsedWritten = lastUseOf(services)
    if ((lastUsedWritten.get(key.id) ?? 0) < now - LAST_USED_EVERY_MS) {
      lastUsedWritten.set(key.id, now)
      call.background(recordKeyUse(services.repositories, key, new Date(now)))
    }
    return { key, headers, done }
  } catch (err) {
    done()
    throw err
  }
}

/**
 * The site by UUID or snippet id as `key` may see it: another organization's is the same 404 as
 * none. A read (`cached`) may take it from the site directory's cache; a write starts from the stored site.
 */
export const siteFor = (services: Services, key: ApiKeyRecord, idOrSnippet: string, cached = false) =>
  siteForKey(services.sites, key, idOrSnippet, cached)

/** Where work that outlives the answer is handed over: Workers' execution context; Node has none. */
export interface CallHost {
  readonly executionCtx: { waitUntil(task: Promise<unknown>): void }
}

/**
 * What a handler gets for one call. The site lookup and the background hand-over are made on
 * first use: most calls of the hot paths read neither, and a closure per request is not free.
 */
export class CallContext implements EndpointContext {
  constructor(
    readonly services: Services,
    readonly key: ApiKeyRecord,
    readonly request: Request,
    readonly env: unknown,
    private readonly host?: CallHost,
    /** The method of the endpoint called: the request's, or a tool's (an MCP call is a POST whatever it calls). */
    private readonly method = request.method,
  ) {}

  get baseUrl() {
    return this.services.publicUrl ?? new URL(this.request.url).origin
  }

  get site() {
    // a GET changes nothing: it reads the site from the directory's cache
    const cached = this.method === 'GET'
    return (idOrSnippet: string) => siteFor(this.services, this.key, idOrSnippet, cached)
  }

  get background() {
    return (task: Promise<unknown>) => {
      const settled = task.catch((err) => console.error('background task failed', err))
      try {
        this.host?.executionCtx.waitUntil(settled)
      } catch {
        // Node has no execution context; the promise runs on its own
      }
    }
  }

  /** The same call made with another key (an MCP tool call, admitted on its own). */
  withKey(key: ApiKeyRecord) {
    return new CallContext(this.services, key, this.request, this.env, this.host, this.method)
  }

  /** The same call, of an endpoint with this method. */
  calling(method: string) {
    return method === this.method ? this : new CallContext(this.services, this.key, this.request, this.env, this.host, method)
  }
}

/**
 * Any failure as the ApiError answered for it: a storage conflict is 409 with its message, a store
 * outage (however wrapped) 503 with Retry-After; unknown ones are logged with a request id and
 * answered as a generic 500.
 */
export function asApiError(err: unknown, request: Request): ApiError {
  if (err instanceof ApiError) return err
  if (err instanceof InvalidPatternError) return new ApiError(400, 'filters: invalid regular expression in a matches filter')
  if (err instanceof StatementTimeLimitError)
    return new ApiError(
      400,
      `the read ran past the time limit of one statement (${err.limitMs / 1000} s) and was stopped: ask for a shorter range, fewer dimensions or simpler filters`,
    )
  if (err instanceof ConflictError) return new ApiError(409, err.message)
  const outage = storeOutageIn(err)
  if (outage) return new ApiError(503, outage.message, { 'Retry-After': String(outage.retryAfterSeconds) })
  const { id, logError } = traceOf(request)
  logError({ requestId: id, method: request.method, path: new URL(request.url).pathname, error: String((err as Error)?.stack ?? err) })
  return new ApiError(500, `internal error (request ${id})`)
}

const knownParamsOf = new WeakMap<Endpoint, ReadonlySet<string>>()
/** The path and query parameter names an endpoint declares. */
function knownParams(endpoint: Endpoint): ReadonlySet<string> {
  let known = knownParamsOf.get(endpoint)
  if (!known)
    knownParamsOf.set(endpoint, (known = new Set([...pathParamNames(endpoint.path), ...Object.keys(endpoint.params?.shape ?? {})])))
  return known
}

/**
 * Far deeper than any body an endpoint takes (a Plausible query's filters nested as deep as they
 * may be are 24), and far below what overflows the stack of what walks a body recursively
 * (JSON.stringify, a schema of nested filters): a deeper body is refused before anything walks it.
 */
export const MAX_BODY_DEPTH = 256

/** Whether arrays and objects nest more than `max` deep in a parsed JSON value; walked without recursion. */
function nestedDeeperThan(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 1]]
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [at, depth] = next
    if (at === null || typeof at !== 'object') continue
    if (depth > max) return true
    for (const inner of Array.isArray(at) ? at : Object.values(at))
      if (inner !== null && typeof inner === 'object') pending.push([inner, depth + 1])
  }
  return false
}

/** Validates the parameters and body against the declaration, then runs the handler. */
export async function invoke(
  endpoint: Endpoint,
  ctx: EndpointContext,
  input: { params: Record<string, unknown>; body?: unknown },
): Promise<unknown> {
  if (endpoint.validatesOwnInput) return endpoint.handler(ctx, { params: {}, body: undefined } as never)
  // keyed calls name only parameters the endpoint takes; public ones (counters, the collector)
  // are called by pages and proxies that add their own, such as cache busters
  if (endpoint.scope !== 'public') {
    const unknown = unknownParameterMessage(Object.keys(input.params), knownParams(endpoint))
    if (unknown) throw new ApiError(400, unknown)
  }
  let params: unknown = {}
  if (endpoint.params) {
    const parsed = endpoint.params.safeParse(input.params)
    if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'query', input.params))
    params = parsed.data
  }
  let body: unknown
  if (endpoint.body) {
    if (input.body === undefined) throw new ApiError(400, 'body: a JSON body is required')
    if (nestedDeeperThan(input.body, MAX_BODY_DEPTH)) throw new ApiError(400, `body: nested more than ${MAX_BODY_DEPTH} deep`)
    const parsed = endpoint.body.safeParse(input.body)
    if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'body', input.body))
    body = parsed.data
  }
  // a tool call reads the site as the endpoint it calls does: a read from the directory's cache
  const call = ctx instanceof CallContext ? ctx.calling(endpoint.method) : ctx
  return endpoint.handler(call, { params, body } as never)
}
