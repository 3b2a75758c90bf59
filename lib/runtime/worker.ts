import { createClient } from '@clickhouse/client-web'
import { Redis } from '@upstash/redis'
import { z } from 'zod'
import { dohResolver } from '../ingest/dns'
import { Ingestor } from '../ingest/pipeline'
import { directSink } from '../ingest/sink'
import { CLICKHOUSE_SETTINGS, type ClickHouseClientLike, clickhouseOverClient } from '../storage/clickhouse/client'
import { crawlerConfig } from '../crawl/config'
import { cruxConfig } from '../integrations/crux'
import { backlinkProvider } from '../backlinks/provider'
import { googleConfig } from '../integrations/google/config'
import { SEARCH_CONSOLE_MAX_BYTES, SEARCH_CONSOLE_TIMEOUT_MS, googleSearchConsoleConnector } from '../integrations/search-console/connector'
import { guardedFetch } from '../network/guarded-fetch'
import type { LiveAnswer, LiveCache } from '../operations/public-live'
import { redisRateLimiter } from '../accounts/ratelimit'
import { SiteDirectory } from '../sites/site-directory'
import { type Services, withPorts } from './services'
import { openRepositories } from './repositories'
import {
  backlinksApiKey,
  backlinksApiUrl,
  cruxApiKey,
  cruxApiUrl,
  deploymentPlan,
  googleEnv,
  kvTimeoutMs,
  logLevelSchema,
  queryTimeLimitMs,
  planSetting,
} from './env'
import { upstashRequester } from '../storage/kv/upstash'

/** The Workers home: ClickHouse over HTTP, Upstash over REST, the Cache API, geo from request.cf. */

export const workerEnvSchema = z.object({
  CLICKHOUSE_URL: z.url({ message: 'CLICKHOUSE_URL must be the URL of a ClickHouse HTTP endpoint' }),
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  CLICKHOUSE_DATABASE: z.string().optional(),
  UPSTASH_REDIS_REST_URL: z.url({ message: 'UPSTASH_REDIS_REST_URL must be set to an Upstash REST URL' }),
  UPSTASH_REDIS_REST_TOKEN: z.string({ message: 'UPSTASH_REDIS_REST_TOKEN must be set' }).min(1),
  KV_TIMEOUT_MS: kvTimeoutMs,
  QUERY_TIME_LIMIT_MS: queryTimeLimitMs,
  PUBLIC_URL: z.url().optional(),
  OUTBOUND_ALLOW_PRIVATE: z.enum(['0', '1']).default('0'),
  CRAWLER: z.enum(['0', '1']).default('1'),
  CRAWL_HOST_INTERVAL_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  CRAWL_ORIGIN: z.url().optional(),
  LOG_LEVEL: logLevelSchema.default('info'),
  PLAN: planSetting,
  CRUX_API_KEY: cruxApiKey,
  CRUX_API_URL: cruxApiUrl,
  BACKLINKS_API_KEY: backlinksApiKey,
  BACKLINKS_API_URL: backlinksApiUrl,
  ...googleEnv,
})
export type WorkerEnv = z.input<typeof workerEnvSchema>

/** The Workers Cache API, keyed by the normalized question. */
function cacheApiLiveCache(): LiveCache {
  const url = (key: string) => `https://public-live.cache/${encodeURIComponent(key)}`
  const cache = () => (globalThis as unknown as { caches: { default: Cache } }).caches.default
  return {
    async get(key) {
      const hit = await cache().match(url(key))
      return hit ? ((await hit.json()) as LiveAnswer) : undefined
    },
    async put(key, answer) {
      await cache().put(
        url(key),
        new Response(JSON.stringify(answer), {
          headers: { 'Cache-Control': `public, max-age=${answer.ttl}`, 'Content-Type': 'application/json' },
        }),
      )
    },
  }
}

/** The services of a Worker; a missing or malformed binding fails loudly, naming it. */
export function workerServices(rawEnv: WorkerEnv): Services {
  const parsed = workerEnvSchema.safeParse(rawEnv)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(`worker environment: ${issue.path.join('.')}: ${issue.message}`)
  }
  const env = parsed.data
  // every call answers within KV_TIMEOUT_MS, or is an outage (503), as Redis over TCP on Node
  const redis = new Redis(
    upstashRequester({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, timeoutMs: env.KV_TIMEOUT_MS }),
  )
  const client = createClient({
    url: env.CLICKHOUSE_URL,
    username: env.CLICKHOUSE_USER,
    password: env.CLICKHOUSE_PASSWORD,
    database: env.CLICKHOUSE_DATABASE,
    clickhouse_settings: CLICKHOUSE_SETTINGS,
  })
  const outbound = guardedFetch({ allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1' })
  const clickhouse = clickhouseOverClient(client as unknown as ClickHouseClientLike, { readTimeLimitMs: env.QUERY_TIME_LIMIT_MS })
  const repositories = openRepositories(redis)
  const sites = new SiteDirectory(repositories.sites)
  const now = () => new Date()
  const google = googleConfig(env)
  return withPorts({
    clickhouse,
    kv: redis,
    repositories,
    sites,
    limiter: redisRateLimiter(redis),
    now,
    // nothing outlives a request on Workers: hits are inserted (async inserts) before the 202; geo comes from request.cf
    ingestor: new Ingestor({ sites, repositories, sink: directSink(clickhouse, repositories), now }),
    liveCache: cacheApiLiveCache(),
    clientAddress: (request) => request.headers.get('cf-connecting-ip') ?? '',
    fetch: outbound,
    dns: dohResolver(outbound),
    publicUrl: env.PUBLIC_URL?.replace(/\/$/, ''),
    serverSecret: env.SERVER_SECRET,
    plan: deploymentPlan(env.PLAN),
    // a cron run is short: a site gets two minutes a run, and the next run goes on where it stopped
    crawler:
      env.CRAWLER === '1'
        ? crawlerConfig({
            guarded: (limits) => guardedFetch({ allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1', ...limits }),
            hostIntervalMs: env.CRAWL_HOST_INTERVAL_MS,
            siteRunMs: 2 * 60_000,
            origin: env.CRAWL_ORIGIN,
          })
        : undefined,
    crux: cruxConfig(env),
    backlinkProvider: backlinkProvider(env, (limits) => guardedFetch({ allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1', ...limits })),
    google,
    searchConsole:
      google &&
      googleSearchConsoleConnector({
        google,
        repositories,
        sites,
        now,
        fetch: outbound,
        searchConsoleFetch: guardedFetch({
          allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1',
          maxBytes: SEARCH_CONSOLE_MAX_BYTES,
          timeoutMs: SEARCH_CONSOLE_TIMEOUT_MS,
        }),
      }),
  })
}
