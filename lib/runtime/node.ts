import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { Resolver, lookup } from 'node:dns/promises'
import type { IncomingMessage } from 'node:http'
import { dirname, join, resolve } from 'node:path'
import { ClickHouseLogLevel, createClient } from '@clickhouse/client'
import { Redis } from '@upstash/redis'
import type { EmbeddedClickHouse, EngineProfile, InsertFormat } from '../storage/clickhouse/chdb'
import { CLICKHOUSE_SETTINGS, type ClickHouseClientLike, clickhouseOverClient } from '../storage/clickhouse/client'
import type { ClickHouse } from '../storage/clickhouse/types'
import { EmbeddedRedis } from '../storage/kv/embedded'
import { type RawRedis, rawRequester } from '../storage/kv/raw'
import { prefixCommand, prefixedRaw } from '../storage/kv/prefix'
import { upstashRequester } from '../storage/kv/upstash'
import { TcpRedis } from '../storage/kv/tcp'
import { type RateLimiter, memoryRateLimiter, redisRateLimiter } from '../accounts/ratelimit'
import { NATIVE_SCRIPTS } from '../ingest/visits-repository'
import { type Repositories, openRepositories } from './repositories'
import { dbipGeo } from '../ingest/geo-node'
import { Journal } from '../ingest/journal'
import { reasonOf } from '../ingest/quarantine'
import { FileQuarantine } from '../ingest/quarantine-node'
import { collectorHealth, retryQuarantined } from '../ingest/recover'
import { Ingestor } from '../ingest/pipeline'
import { BufferedSink, directSink } from '../ingest/sink'
import { crawlerConfig } from '../crawl/config'
import { cruxConfig } from '../integrations/crux'
import { backlinkProvider } from '../backlinks/provider'
import { googleConfig } from '../integrations/google/config'
import { SEARCH_CONSOLE_MAX_BYTES, SEARCH_CONSOLE_TIMEOUT_MS, googleSearchConsoleConnector } from '../integrations/search-console/connector'
import { guardedFetch } from '../network/guarded-fetch'
import { pinnedNodeFetch } from '../network/guarded-fetch-node'
import { nodeMailer } from '../network/mail-node'
import { memoryLiveCache } from '../operations/public-live'
import { SiteDirectory } from '../sites/site-directory'
import { type Readiness, type Services, withPorts } from './services'
import { migrate } from '../storage/clickhouse/migrate'
import { loadMigrations } from '../storage/clickhouse/migrations-node'
import { type NodeConfig, deploymentPlan } from './env'
import { UserError } from '../core/errors'
import { swaggerUiAssets } from './reference-assets-node'
import { nodeMetrics } from './metrics-node'
import { rollupBuildsSettled } from '../reports/query/run'

export interface NodeEnv {
  DATA_DIR?: string
  CLICKHOUSE_URL?: string
  CLICKHOUSE_USER?: string
  CLICKHOUSE_PASSWORD?: string
  CLICKHOUSE_DATABASE?: string
  CLICKHOUSE_CLUSTER?: string
  REDIS_URL?: string
  UPSTASH_REDIS_REST_URL?: string
  UPSTASH_REDIS_REST_TOKEN?: string
  REDIS_PREFIX?: string
  /** Milliseconds one Redis call may take before it is an outage (2000 when unset). */
  KV_TIMEOUT_MS?: number
  /** Milliseconds one read may run on ClickHouse (10000 when unset). */
  QUERY_TIME_LIMIT_MS?: number
}

export const dataDir = (env: NodeEnv) => resolve(env.DATA_DIR || '.data')

/** Where a running server publishes its local-only endpoints, so CLIs reach the embedded stores through it. */
export interface LocalEndpointInfo {
  url: string
  pid: number
  clickhouse: boolean
  redis: boolean
}

export const localInfoFile = (dir: string) => join(dir, 'local-endpoints.json')

/** The token guarding the local-only endpoints, created once and kept in DATA_DIR. */
export function localToken(dir: string): string {
  const file = join(dir, 'local-token')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dir, { recursive: true })
  const token = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  writeFileSync(file, token, { mode: 0o600 })
  chmodSync(file, 0o600)
  return token
}

/** The running server's local endpoints, if one is up on this DATA_DIR. */
export async function findRunningServer(dir: string): Promise<LocalEndpointInfo | null> {
  const file = localInfoFile(dir)
  if (!existsSync(file)) return null
  let info: LocalEndpointInfo
  try {
    info = JSON.parse(readFileSync(file, 'utf8'))
    process.kill(info.pid, 0)
  } catch {
    return null
  }
  try {
    const res = await fetch(`${info.url}/local/ping`, {
      headers: { authorization: `Bearer ${localToken(dir)}` },
      signal: AbortSignal.timeout(2000),
    })
    return res.ok ? info : null
  } catch {
    return null
  }
}

export interface NodeStores {
  clickhouse: ClickHouse
  /** Set when this process owns the embedded engine: the local ClickHouse endpoint serves it. */
  chdb: EmbeddedClickHouse | null
  kv: Redis
  repositories: Repositories
  /** Set when this process talks raw Redis (embedded or TCP): the local Upstash endpoint serves it. */
  raw: RawRedis | null
  limiter: RateLimiter
  describe: { clickhouse: string; keyValue: string }
  close(): Promise<void>
}

/** Why a data folder cannot be made or used, in words. */
const FOLDER_FAILURES: Record<string, string> = {
  ENOTDIR: 'a part of the path is a file, not a folder',
  ENOENT: 'a folder cannot be made on that path',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  EEXIST: 'it is a file, not a folder',
}

/**
 * Makes the data folder and its missing parents one at a time: Node's recursive mkdir never
 * returns on some paths (under /proc). A path that cannot be a folder is one sentence naming DATA_DIR.
 */
function makeDataDir(dir: string) {
  const missing: string[] = []
  for (let d = dir; !existsSync(d) && dirname(d) !== d; d = dirname(d)) missing.unshift(d)
  try {
    for (const d of missing) mkdirSync(d, { mode: 0o700 })
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'EEXIST' })
    chmodSync(dir, 0o700)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? ''
    throw new UserError(`DATA_DIR ${dir} cannot be used as the data folder: ${FOLDER_FAILURES[code] ?? code}`, { cause: err })
  }
}

/** A ClickHouse URL the client takes, or one sentence naming CLICKHOUSE_URL. */
function checkClickHouseUrl(url: string) {
  let parsed: URL | null = null
  try {
    parsed = new URL(url)
  } catch {}
  if (!parsed || !/^https?:$/.test(parsed.protocol) || !parsed.hostname) {
    throw new UserError(`CLICKHOUSE_URL is ${JSON.stringify(url)}: must be an http(s) URL such as https://clickhouse.internal:8443`)
  }
}

function clickhouseOverHttp(url: string, username?: string, password?: string, database?: string, readTimeLimitMs?: number): ClickHouse {
  checkClickHouseUrl(url)
  const client = createClient({
    // its failures reach the caller, which tells them in a sentence or logs them: the client's own log would repeat them
    log: { level: ClickHouseLogLevel.OFF },
    url,
    username: username ?? 'default',
    password: password ?? '',
    database,
    clickhouse_settings: CLICKHOUSE_SETTINGS,
  })
  return clickhouseOverClient(client as unknown as ClickHouseClientLike, { readTimeLimitMs })
}

/**
 * Opens the stores the environment names. Embedded stores are opened directly, unless
 * `viaRunningServer` is set and a server already owns them: then through its local endpoints.
 */
export async function openNodeStores(
  env: NodeEnv,
  options: {
    viaRunningServer?: boolean
    /** How the embedded engine is set, when this process opens it: for a server's reads (the default), or for an import's inserts (chdb.ts). */
    engine?: EngineProfile
    /** How the embedded engine is sent inserted rows (chdb.ts): JSONCompactEachRow unless a benchmark compares another. */
    insertFormat?: InsertFormat
  } = {},
): Promise<NodeStores> {
  const dir = dataDir(env)
  // what the stores write (the engine's parts, the key/value log with secrets and salts) is the owner's alone
  process.umask(0o077)
  makeDataDir(dir)
  const embeddedWanted = !env.CLICKHOUSE_URL || !(env.REDIS_URL || env.UPSTASH_REDIS_REST_URL)
  const running = embeddedWanted ? await findRunningServer(dir) : null
  if (running && !options.viaRunningServer) {
    throw new UserError(`a server (pid ${running.pid}) already runs on the data folder ${dir}: stop it, or set DATA_DIR to another folder`)
  }
  const token = running ? localToken(dir) : ''

  let clickhouse: ClickHouse
  let chdb: EmbeddedClickHouse | null = null
  let clickhouseDescription: string
  if (env.CLICKHOUSE_URL) {
    clickhouse = clickhouseOverHttp(
      env.CLICKHOUSE_URL,
      env.CLICKHOUSE_USER,
      env.CLICKHOUSE_PASSWORD,
      env.CLICKHOUSE_DATABASE,
      env.QUERY_TIME_LIMIT_MS,
    )
    clickhouseDescription = `server ${new URL(env.CLICKHOUSE_URL).host}`
  } else if (running?.clickhouse) {
    clickhouse = clickhouseOverHttp(running.url, 'default', token)
    clickhouseDescription = 'embedded, through the running server'
  } else {
    // loaded only here: a server on CLICKHOUSE_URL needs no engine library for its platform
    const { EmbeddedClickHouse } = await import('../storage/clickhouse/chdb').catch((err: { code?: string }) => {
      if (err.code !== 'CHDB_PLATFORM') throw err
      throw new UserError(
        `the embedded ClickHouse has no library for ${process.platform}-${process.arch} in node_modules (the lockfile lists Linux x64's only): run \`npm install\`, which fetches the one for this platform, or set CLICKHOUSE_URL to a ClickHouse server`,
      )
    })
    try {
      chdb = new EmbeddedClickHouse(join(dir, 'clickhouse'), {
        profile: options.engine,
        readTimeLimitMs: env.QUERY_TIME_LIMIT_MS,
        insertFormat: options.insertFormat,
      })
    } catch (err) {
      // the engine locks its folder: a server or CLI on the same DATA_DIR that is starting or stopping
      throw new UserError(
        `the embedded ClickHouse in ${join(dir, 'clickhouse')} is in use by another process: wait for it or stop it, or set DATA_DIR to another folder`,
        { cause: err },
      )
    }
    clickhouse = chdb
    clickhouseDescription = `embedded (${join(dir, 'clickhouse')})`
  }

  let raw: RawRedis | null = null
  let redis: Redis
  let limiter: RateLimiter
  let keyValue: string
  if (env.UPSTASH_REDIS_REST_URL) {
    if (!env.UPSTASH_REDIS_REST_TOKEN) throw new Error('UPSTASH_REDIS_REST_URL is set but UPSTASH_REDIS_REST_TOKEN is not')
    redis = new Redis(
      nodeMetrics.timedRequester(
        upstashRequester({
          url: env.UPSTASH_REDIS_REST_URL,
          token: env.UPSTASH_REDIS_REST_TOKEN,
          rewrite: env.REDIS_PREFIX ? (command) => prefixCommand(env.REDIS_PREFIX!, command) : undefined,
          timeoutMs: env.KV_TIMEOUT_MS,
        }),
      ),
    )
    limiter = redisRateLimiter(redis)
    keyValue = `upstash ${new URL(env.UPSTASH_REDIS_REST_URL).host}`
  } else if (env.REDIS_URL) {
    const tcp = new TcpRedis(env.REDIS_URL, env.KV_TIMEOUT_MS)
    raw = env.REDIS_PREFIX ? prefixedRaw(tcp, env.REDIS_PREFIX) : tcp
    redis = new Redis(nodeMetrics.timedRequester(rawRequester(raw)))
    limiter = redisRateLimiter(redis)
    keyValue = `redis ${new URL(env.REDIS_URL).host}`
  } else if (running?.redis) {
    redis = new Redis({ url: `${running.url}/redis`, token, enableTelemetry: false })
    limiter = memoryRateLimiter()
    keyValue = 'embedded, through the running server'
  } else {
    const embedded = new EmbeddedRedis({ dir: join(dir, 'kv') })
    for (const [lua, native] of NATIVE_SCRIPTS) embedded.defineNativeScript(lua, native)
    raw = embedded
    redis = new Redis(nodeMetrics.timedRequester(rawRequester(raw)))
    limiter = memoryRateLimiter()
    keyValue = `embedded (${join(dir, 'kv')})`
  }

  return {
    clickhouse,
    chdb,
    kv: redis,
    repositories: openRepositories(redis),
    raw,
    limiter,
    describe: { clickhouse: clickhouseDescription, keyValue },
    async close() {
      // a filter's rollup build started after an answer finishes first
      await rollupBuildsSettled()
      await clickhouse.close()
      await raw?.close()
    },
  }
}

/** What the Node builder is given besides the environment. */
export interface NodeServiceInputs {
  /** The stores: those `openNodeStores` opened, or a test's. */
  stores: Pick<NodeStores, 'clickhouse' | 'kv' | 'repositories' | 'limiter'>
  now?: () => Date
  /** The server's journaled sink, whose batches take the hits of concurrent requests; without it, hits are inserted before the answer. */
  sink?: BufferedSink
  /** How long a site read by its snippet id is kept (lib/sites/site-directory.ts); unset, the directory's own default. */
  siteCacheMs?: number
  log?: (line: string) => void
  /** Called when a site is added or pinged: the scheduler crawls at once. */
  wakeCrawler?: () => void
  /** Called when a job is due at a time of its own (an import Google asked to wait): the scheduler's timer runs it then. */
  wakeJob?: (job: string, atMs: number) => void
}

/** The services of the Node home, from its environment and its stores. */
export function nodeServices(env: NodeConfig, inputs: NodeServiceInputs): Services {
  const { kv, repositories, limiter } = inputs.stores
  // with metrics on, every statement of the app is timed
  const metrics = env.METRICS_TOKEN ? nodeMetrics.forApp(env.METRICS_TOKEN) : undefined
  const clickhouse = metrics ? nodeMetrics.timedClickHouse(inputs.stores.clickhouse) : inputs.stores.clickhouse
  const observe = metrics ? (outcomes: Parameters<typeof metrics.hits>[0]) => metrics.hits(outcomes) : undefined
  const now = inputs.now ?? (() => new Date())
  const log = inputs.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const sites = new SiteDirectory(repositories.sites, { cacheMs: inputs.siteCacheMs })
  const outboundRules = {
    allowPrivate: env.OUTBOUND_ALLOW_PRIVATE === '1',
    resolve: async (host: string) => (await lookup(host, { all: true })).map((a) => a.address),
    pinnedFetch: pinnedNodeFetch(),
  }
  const resolver = new Resolver({ timeout: 2000, tries: 2 })
  const outbound = guardedFetch(outboundRules)
  const google = googleConfig(env)
  return withPorts({
    clickhouse,
    kv,
    repositories,
    sites,
    limiter,
    now,
    ingestor: inputs.sink
      ? new Ingestor({ sites, repositories, sink: inputs.sink, geo: dbipGeo(), now, coalesce: true, rowsInSink: true, observe })
      : new Ingestor({ sites, repositories, sink: directSink(clickhouse, repositories), geo: dbipGeo(), now, observe }),
    metrics,
    sharedProcess: true,
    liveCache: memoryLiveCache(() => now().getTime()),
    dns: {
      reverse: (ip: string) => resolver.reverse(ip),
      lookup: async (host: string) => [
        ...(await resolver.resolve4(host).catch(() => [])),
        ...(await resolver.resolve6(host).catch(() => [])),
      ],
      // no such record or name is an empty answer; a failing resolver stays an error
      cname: (host: string) =>
        resolver
          .resolveCname(host)
          .catch((err: NodeJS.ErrnoException) => (err.code === 'ENODATA' || err.code === 'ENOTFOUND' ? [] : Promise.reject(err))),
    },
    clientAddress: (request, bindings) => {
      const forwarded = env.TRUST_PROXY === '1' ? request.headers.get('x-forwarded-for')?.split(',')[0].trim() : undefined
      const socket = (bindings as { incoming?: IncomingMessage }).incoming?.socket
      return (forwarded || socket?.remoteAddress || '').replace(/^::ffff:(?=\d+\.)/, '')
    },
    fetch: outbound,
    crawler:
      env.CRAWLER === '1'
        ? {
            ...crawlerConfig({
              guarded: (limits) => guardedFetch({ ...outboundRules, ...limits }),
              hostIntervalMs: env.CRAWL_HOST_INTERVAL_MS,
              origin: env.CRAWL_ORIGIN,
            }),
            wake: () => inputs.wakeCrawler?.(),
          }
        : undefined,
    wakeJob: inputs.wakeJob,
    crux: cruxConfig(env),
    backlinkProvider: backlinkProvider(env, (limits) => guardedFetch({ ...outboundRules, ...limits })),
    google,
    searchConsole:
      google &&
      googleSearchConsoleConnector({
        google,
        repositories,
        sites,
        now,
        fetch: outbound,
        searchConsoleFetch: guardedFetch({ ...outboundRules, maxBytes: SEARCH_CONSOLE_MAX_BYTES, timeoutMs: SEARCH_CONSOLE_TIMEOUT_MS }),
      }),
    publicUrl: env.PUBLIC_URL?.replace(/\/$/, ''),
    serverSecret: env.SERVER_SECRET,
    plan: deploymentPlan(env.PLAN),
    mailer: nodeMailer({
      smtpUrl: env.SMTP_URL,
      dataDir: dataDir(env),
      from: env.MAIL_FROM ?? `reports@${env.PUBLIC_URL ? new URL(env.PUBLIC_URL).hostname : 'localhost'}`,
      log,
    }),
    referenceAssets: swaggerUiAssets(),
  })
}

/** How often the server inserts the journal's rows: reads see a hit at most this much later. */
const FLUSH_INTERVAL_MS = 1000
/** How often the server looks for quarantined entries an operator handed back. */
const QUARANTINE_RETRY_MS = 5000

/** The Node server's home: its stores, migrated, the journal of hits, and its services. */
export interface NodeHome {
  services: Services
  stores: NodeStores
  /** Where the server's hits go: the journal, then batched inserts. */
  sink: BufferedSink
  /** Resolves once the migrations are applied: until then every request but health, readiness and metrics answers 503. */
  migrated: Promise<void>
  /** Resolves with the rows an earlier process journaled and did not insert, once they are stored. */
  replayed: Promise<number>
  /** Inserts every hit answered 202, then closes the journal and the stores. */
  close(): Promise<void>
}

/**
 * Runs `work` until it succeeds: a store that is down or a disk that is full at start keeps the
 * server up and not ready, and it goes on by itself once the store answers or space returns.
 */
async function untilDone<T>(what: string, work: () => Promise<T>, log: (line: string) => void, stopped: () => boolean): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (err) {
      if (stopped()) throw err
      const waitMs = Math.min(5_000, 250 * 2 ** Math.min(attempt, 5))
      log(`${what} failed (${(err as Error).message.split('\n')[0]}); trying again in ${Math.ceil(waitMs / 1000)} s`)
      await new Promise((r) => setTimeout(r, waitMs))
    }
  }
}

export async function openNodeHome(
  env: NodeConfig,
  options: Pick<NodeServiceInputs, 'log' | 'wakeCrawler' | 'wakeJob'>,
): Promise<NodeHome> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const stores = await openNodeStores(env)
  // a hit is acknowledged once it is in the journal on disk; what an earlier process journaled and
  // did not insert (a crash, kill -9) is stored as soon as the migrations are applied
  // what the store refuses for what it holds is set aside there, never retried in front of the rest
  const quarantine = new FileQuarantine(join(dataDir(env), 'quarantine'))
  const journal = Journal.create(join(dataDir(env), 'journal'), quarantine)
  const sink = new BufferedSink(stores.clickhouse, stores.repositories, {
    log: journal,
    quarantine,
    // hits are durable in the journal already: inserting once a second makes a fifth of the parts
    // (each insert writes one to events and to each table fed from it) and leaves the engine to reads
    intervalMs: FLUSH_INTERVAL_MS,
    observe: {
      inserted(table, rows, seconds, error) {
        nodeMetrics.insertSeconds.observe({ table }, seconds)
        if (error) nodeMetrics.insertFailures.inc({ table })
        else nodeMetrics.stored.inc({ table }, rows)
      },
      journaled: (rows, ok) => nodeMetrics.journaled.inc({ result: ok ? 'durable' : 'refused' }, rows),
      quarantined: (table, rows) => nodeMetrics.quarantined.inc({ table }, rows),
    },
  })
  nodeMetrics.watchJournal(() => ({ ...sink.backlog, replaying: journal.replaying, quarantined: quarantine.count() }))
  let phase: Readiness['phase'] = stores.chdb ? 'migrating' : journal.replaying ? 'replaying' : 'ready'
  let closing = false
  const stopped = () => closing
  const migrated = stores.chdb
    ? untilDone('applying the migrations', () => migrate(stores.chdb!, loadMigrations()), log, stopped).then(() => {})
    : Promise.resolve()
  // the replay's own failures, told by /health as a flush's are
  let replay: { since: number; error?: { at: number; message: string } } | null = null
  const replayed = migrated.then(async () => {
    if (phase === 'migrating') phase = 'replaying'
    replay = { since: Date.now() }
    const rows = await untilDone(
      'storing the journal of the previous run',
      () =>
        journal.replay(stores.clickhouse, stores.repositories).catch((err) => {
          if (replay) replay.error = { at: Date.now(), message: reasonOf(err) }
          throw err
        }),
      log,
      stopped,
    )
    replay = null
    phase = 'ready'
    return rows
  })
  // a start that is stopped before it is done is not a failure of its own
  replayed.catch(() => {})
  // what an operator hands back from the quarantine is stored by the running server, every few seconds
  let retryRunning = false
  const retrying = setInterval(() => {
    // one pass at a time: a slow pass is not joined by the next
    if (phase !== 'ready' || retryRunning) return
    retryRunning = true
    void retryQuarantined(stores.clickhouse, stores.repositories, quarantine)
      .catch((err: unknown) => log(`quarantined rows handed back could not be stored yet: ${reasonOf(err)}`))
      .finally(() => {
        retryRunning = false
      })
  }, QUARANTINE_RETRY_MS)
  retrying.unref()
  const services = nodeServices(env, { stores, sink, ...options })
  services.readiness = () => ({ ready: phase === 'ready', phase })
  services.collector = () => collectorHealth(sink, quarantine, replay, Date.now())
  return {
    services,
    stores,
    sink,
    migrated,
    replayed,
    async close() {
      closing = true
      clearInterval(retrying)
      try {
        await sink.close()
        journal.close()
      } catch (err) {
        // a store still down: the rows stay in the journal, stored at the next start
        log(`events not yet stored stay in the journal for the next start: ${(err as Error).message}`)
      }
      await stores.close()
    },
  }
}
