import { createClient } from '@clickhouse/client-web'
import { Redis } from '@upstash/redis/cloudflare'
import { z } from 'zod'
import { CLICKHOUSE_SETTINGS, type ClickHouseClientLike, clickhouseClientOlap } from '../lib/olap/client'
import { guardedFetch } from '../lib/outbound'
import { Ingestor } from '../lib/ingest/pipeline'
import { directSink } from '../lib/ingest/sink'
import { dohResolver } from '../lib/ingest/dns'
import type { LiveAnswer, LiveCache } from '../lib/public-live'

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
      await cache().put(url(key), new Response(JSON.stringify(answer), { headers: { 'Cache-Control': `public, max-age=${answer.ttl}`, 'Content-Type': 'application/json' } }))
    },
  }
}
import { redisRateLimiter } from '../lib/ratelimit'
import type { Services } from '../lib/services'
import { SiteDirectory } from '../lib/site-directory'
import { ROLLUP_ALL_DAYS, ROLLUP_RECENT_DAYS, refreshRollups } from '../lib/query/rollup'
import { Store } from '../lib/store'
import { createApp } from './app'

const envSchema = z.object({
  CLICKHOUSE_URL: z.url({ message: 'CLICKHOUSE_URL must be the URL of a ClickHouse HTTP endpoint' }),
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  CLICKHOUSE_DATABASE: z.string().optional(),
  UPSTASH_REDIS_REST_URL: z.url({ message: 'UPSTASH_REDIS_REST_URL must be set to an Upstash REST URL' }),
  UPSTASH_REDIS_REST_TOKEN: z.string({ message: 'UPSTASH_REDIS_REST_TOKEN must be set' }).min(1),
  PUBLIC_URL: z.url().optional(),
  OUTBOUND_ALLOW_PRIVATE: z.enum(['0', '1']).default('0'),
})
type WorkerEnv = z.input<typeof envSchema>

/** The daily trigger in wrangler.toml; the other one runs every ten minutes. */
const DAILY_CRON = '17 3 * * *'

let cached: { raw: WorkerEnv; app: ReturnType<typeof createApp>; services: Services } | null = null

/** Builds the app once per isolate; a missing or malformed binding fails loudly, naming it. */
function appFor(rawEnv: WorkerEnv) {
  if (cached?.raw === rawEnv) return cached
  const parsed = envSchema.safeParse(rawEnv)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new Error(`worker environment: ${issue.path.join('.')}: ${issue.message}`)
  }
  const env = parsed.data
  const redis = new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, enableTelemetry: false })
  const client = createClient({
    url: env.CLICKHOUSE_URL,
    username: env.CLICKHOUSE_USER,
    password: env.CLICKHOUSE_PASSWORD,
    database: env.CLICKHOUSE_DATABASE,
    clickhouse_settings: CLICKHOUSE_SETTINGS,
  })
  const outbound = guardedFetch({ allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1' })
  const olap = clickhouseClientOlap(client as unknown as ClickHouseClientLike)
  const store = new Store(redis)
  const sites = new SiteDirectory(store)
  const now = () => new Date()
  const services: Services = {
    olap,
    store,
    sites,
    limiter: redisRateLimiter(redis),
    now,
    // nothing outlives a request on Workers: hits are inserted (async inserts) before the 202; geo comes from request.cf
    ingestor: new Ingestor({ sites, store, sink: directSink(olap, store), now }),
    liveCache: cacheApiLiveCache(),
    clientAddress: (c) => c.req.header('cf-connecting-ip') ?? '',
    fetch: outbound,
    dns: dohResolver(outbound),
    publicUrl: env.PUBLIC_URL?.replace(/\/$/, ''),
  }
  cached = { raw: rawEnv, app: createApp(services), services }
  return cached
}

export default {
  fetch(request: Request, env: WorkerEnv, ctx: Parameters<ReturnType<typeof createApp>['fetch']>[2]) {
    return appFor(env).app.fetch(request, env, ctx)
  },
  // the daily rollup (lib/query/rollup.ts): recent finished days every ten minutes, every day once a day
  scheduled(controller: { cron: string }, env: WorkerEnv, ctx: { waitUntil(p: Promise<unknown>): void }) {
    const { services } = appFor(env)
    const lookback = controller.cron === DAILY_CRON ? ROLLUP_ALL_DAYS : ROLLUP_RECENT_DAYS
    ctx.waitUntil(refreshRollups(services.olap, services.store, services.now(), lookback))
  },
}
