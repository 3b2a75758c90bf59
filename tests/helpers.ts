import { cpSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { Redis } from '@upstash/redis'
import { expect } from 'vitest'
import { z } from 'zod'
import { createApp } from '../functions/app'
import { isJsonAnswer } from '../functions/endpoint'
import { endpoints } from '../functions/registry'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { EmbeddedRedis } from '../lib/storage/kv/embedded'
import { type RawRedis, rawRequester } from '../lib/storage/kv/raw'
import { prefixedRaw } from '../lib/storage/kv/prefix'
import { TcpRedis } from '../lib/storage/kv/tcp'
import { EmbeddedClickHouse } from '../lib/storage/clickhouse/chdb'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { guardedFetch } from '../lib/network/guarded-fetch'
import { LIMITS, type Limits, type RateLimiter, memoryRateLimiter, redisRateLimiter } from '../lib/accounts/ratelimit'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { nodeServices } from '../lib/runtime/node'
import { type Services, withPorts } from '../lib/runtime/services'
import { type Site, newSite } from '../lib/sites/sites'
import { openRepositories } from '../lib/runtime/repositories'
import { parseImportLine } from '../lib/ingest/import'

export const REDIS_URL = process.env.REDIS_URL
// CI runs every test: a Redis-backed test must not skip there for want of REDIS_URL
if (process.env.CI && !REDIS_URL) throw new Error('CI is set but REDIS_URL is not: the Redis-backed tests would be skipped')

/** A fresh folder inside the run's own, which tests/global-setup.ts removes when the run ends. */
export const tempDir = (name: string) => mkdtempSync(join(process.env.TEST_TMP_DIR ?? tmpdir(), `wa-${name}-`))

let engine: Promise<EmbeddedClickHouse> | null = null
/**
 * One embedded ClickHouse per test process (chdb allows one): a copy of the run's migrated folder
 * (tests/global-setup.ts), so that migrating it applies nothing; migrated here when there is none.
 */
export function testClickHouse(): Promise<EmbeddedClickHouse> {
  engine ??= (async () => {
    const dir = join(tempDir('chdb'), 'clickhouse')
    const template = process.env.TEST_ENGINE_TEMPLATE
    if (template) cpSync(template, dir, { recursive: true, verbatimSymlinks: true })
    const clickhouse = new EmbeddedClickHouse(dir, { readTimeLimitMs: Number(process.env.QUERY_TIME_LIMIT_MS ?? 60_000) })
    await migrate(clickhouse, loadMigrations())
    return clickhouse
  })()
  return engine
}

export type KvKind = 'embedded' | 'redis'

export function rawRedis(kind: KvKind, own?: boolean): RawRedis {
  if (kind === 'redis') {
    if (!REDIS_URL) throw new Error('REDIS_URL is not set')
    // every key under the run's prefix, removed when the run ends; with `own`, under a prefix of
    // its own inside it, for state that is global to a store (the crawl queue) and that test files
    // running at once must not share
    const prefix = `${process.env.REDIS_PREFIX ?? 'wa-test:'}${own ? `${crypto.randomUUID()}:` : ''}`
    return prefixedRaw(new TcpRedis(REDIS_URL), prefix)
  }
  return new EmbeddedRedis()
}

/** The environment of the Node home in tests: no crawler unless a test builds one, no CrUX key. */
const TEST_ENV = parseEnv(nodeEnvSchema, { PUBLIC_URL: 'https://api.test', OUTBOUND_ALLOW_PRIVATE: '1', CRAWLER: '0' })

/** Budgets under which imports from Google are not paced: for tests of what they import, not of how fast they may ask. */
export const UNPACED_IMPORTS: Partial<Limits> = {
  searchConsoleSite: { max: 1_000_000, windowMs: 60_000 },
  searchConsoleUser: { max: 1_000_000, windowMs: 60_000 },
}

/** The Node home's services (lib/runtime/node.ts) on real stores: embedded ClickHouse, and the embedded store or a real Redis. */
export async function testServices(
  options: { kv?: KvKind; ownKeys?: boolean; now?: () => Date; limiter?: RateLimiter; limits?: Partial<Limits>; siteCacheMs?: number } = {},
): Promise<Services & { raw: RawRedis }> {
  const raw = rawRedis(options.kv ?? 'embedded', options.ownKeys)
  const redis = new Redis(rawRequester(raw))
  const now = options.now ?? (() => new Date())
  const clickhouse = await testClickHouse()
  const repositories = openRepositories(redis)
  const limits = { ...LIMITS, ...options.limits }
  const limiter =
    options.limiter ?? (options.kv === 'redis' ? redisRateLimiter(redis, limits) : memoryRateLimiter(() => now().getTime(), limits))
  // no sink: hits are inserted before the answer, so a test reads what it sent; the site cache is
  // off unless asked for, so settings written to the store directly apply at once
  const services = nodeServices(TEST_ENV, {
    stores: { clickhouse, kv: redis, repositories, limiter },
    now,
    siteCacheMs: options.siteCacheMs ?? 0,
  })
  return {
    ...services,
    // the caller is whom X-Forwarded-For names; nothing reaches this machine's resolver, a mail server or the reference page's files
    clientAddress: (request) => request.headers.get('x-forwarded-for') ?? '127.0.0.1',
    fetch: guardedFetch({ allowPrivate: true }),
    dns: undefined,
    mailer: undefined,
    referenceAssets: undefined,
    raw,
  }
}

export type TestServices = Awaited<ReturnType<typeof testServices>>

/**
 * A test's app in one line: services on real stores (`kv`, the clock `now`, ...), with `with`
 * replacing some of them; two seeded organizations (`a`, `b`, `ingest`, see `seed`); the app whose
 * answers are checked against their schemas; and a request client.
 */
export async function harness(options: Parameters<typeof testServices>[0] & { with?: Partial<Services> } = {}) {
  // the ports are built over the services as given: rebuilt over the replaced ones
  const services = withPorts({ ...(await testServices(options)), ...options.with }) as TestServices
  const seeded = await seed(services)
  return {
    services,
    repositories: services.repositories,
    kv: services.kv,
    clickhouse: services.clickhouse,
    app: checkedApp(services),
    call: client(services),
    ...seeded,
  }
}

export type Harness = Awaited<ReturnType<typeof harness>>

/** An organization holding the given sites, and its read key, created at `now`. */
export async function orgWithSites(services: Services, name: string, sites: Parameters<typeof newSite>[0][], now = services.now()) {
  const org = await createOrg(services.repositories, name, now)
  const read = await createApiKey(services.repositories, { orgId: org.id, name: 'read', scope: 'read' }, now)
  const created: Site[] = []
  for (const input of sites) {
    const site = newSite(input, org.id, now)
    await services.repositories.sites.create(site)
    created.push(site)
  }
  return { org, read, key: read.key, sites: created }
}

/** Two organizations, each with a site, read and write keys, and the first with a site-bound ingest key. */
export async function seed(services: Services) {
  const now = services.now()
  const make = async (name: string, domain: string, timezone = 'UTC') => {
    const {
      org,
      read,
      sites: [site],
    } = await orgWithSites(services, name, [{ domain, timezone }], now)
    const write = await createApiKey(services.repositories, { orgId: org.id, name: 'write', scope: 'write' }, now)
    return { org, site, read, write }
  }
  const a = await make('Org A', `a-${crypto.randomUUID().slice(0, 8)}.example.com`, 'Europe/Berlin')
  const b = await make('Org B', `b-${crypto.randomUUID().slice(0, 8)}.example.org`)
  const ingest = await createApiKey(services.repositories, { orgId: a.org.id, name: 'ingest', scope: 'write', siteId: a.site.id }, now)
  return { a, b, ingest }
}

const routes = endpoints.map((endpoint) => ({
  endpoint,
  pattern: new RegExp(`^${endpoint.path.replace(/\./g, '\\.').replace(/\{\w+\}/g, '[^/]+')}$`),
}))

/**
 * Holds a success answer to the schema its endpoint declares: the declared status, every field
 * valid, and no field the schema leaves out (parsing drops those, so the parsed answer differs).
 */
export function checkAnswer(method: string, url: string, status: number, json: unknown) {
  const path = new URL(url).pathname
  const route = routes.find((r) => r.endpoint.method === method && r.pattern.test(path))
  if (!route || status >= 300 || status === 0) return
  const { endpoint } = route
  // a raw answer (a script, MCP's JSON-RPC) has the statuses of its own protocol
  if (!isJsonAnswer(endpoint.response)) return
  if (status !== (endpoint.status ?? 200)) throw new Error(`${method} ${path} answered ${status}; it declares ${endpoint.status ?? 200}`)
  const parsed = endpoint.response.safeParse(json)
  if (!parsed.success) throw new Error(`the answer of ${method} ${path} does not match its schema:\n${z.prettifyError(parsed.error)}`)
  if (!isDeepStrictEqual(parsed.data, json))
    throw new Error(`the answer of ${method} ${path} has fields its schema does not declare: ${JSON.stringify(json).slice(0, 500)}`)
}

/** The app, with every success answer checked against its declared schema. */
export function checkedApp(services: Services) {
  const app = createApp(services)
  return {
    async request(url: string, init: RequestInit = {}) {
      const res = await app.request(url, init)
      const type = res.headers.get('content-type') ?? ''
      if (type.includes('application/json')) checkAnswer(init.method ?? 'GET', url, res.status, await res.clone().json())
      else checkAnswer(init.method ?? 'GET', url, res.status, undefined)
      return res
    },
  }
}

export function client(services: Services) {
  const app = checkedApp(services)
  return async (
    method: string,
    path: string,
    options: { key?: string; via?: 'bearer' | 'header' | 'query'; body?: unknown; rawBody?: string } = {},
  ) => {
    const headers: Record<string, string> = {}
    let url = `http://api.test${path}`
    if (options.key) {
      if ((options.via ?? 'bearer') === 'bearer') headers.authorization = `Bearer ${options.key}`
      else if (options.via === 'header') headers['x-api-key'] = options.key
      else url += `${path.includes('?') ? '&' : '?'}key=${encodeURIComponent(options.key)}`
    }
    let body: string | undefined
    if (options.rawBody !== undefined) body = options.rawBody
    else if (options.body !== undefined) body = JSON.stringify(options.body)
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await app.request(url, { method, headers, body })
    const text = await res.text()
    let json: any = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      json = text
    }
    if (res.status >= 500) throw new Error(`server error ${res.status} on ${method} ${path}: ${text}`)
    return { status: res.status, headers: res.headers, json }
  }
}

/** GETs `path` as `key` through `call`: the answer must be a 200 (the body names the failure otherwise); returns its body. */
export async function getOk(call: ReturnType<typeof client>, path: string, key: string) {
  const res = await call('GET', path, { key })
  expect(res.status, JSON.stringify(res.json)).toBe(200)
  return res.json
}

/**
 * Stores import-format lines (each with its own timestamp) as live collection does: usage counts
 * them, where imported history never counts (docs/import.md).
 */
export async function collectLines(lines: Iterable<string>, ingestor: Services['ingestor']) {
  const items = [...lines].map(parseImportLine).filter((item) => typeof item !== 'string')
  const sites = await ingestor.sites.bySnippets(items.map((item) => item.hit.site))
  const outcomes = await ingestor.ingest(items.map((item) => ({ ...item, source: 'browser' as const, site: sites.get(item.hit.site)! })))
  return { imported: outcomes.filter((o) => o.status === 'stored').length }
}
