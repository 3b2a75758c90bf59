import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { serve } from '@hono/node-server'
import { Redis } from '@upstash/redis'
import autocannon from 'autocannon'
import { Command } from 'commander'
import { Hono } from 'hono'
import { createApp } from '../functions/app'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { EmbeddedRedis } from '../lib/storage/kv/embedded'
import { type RawRedis, type RedisCommand, rawRequester } from '../lib/storage/kv/raw'
import { TcpRedis } from '../lib/storage/kv/tcp'
import { EmbeddedClickHouse } from '../lib/storage/clickhouse/chdb'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { LIMITS, type Limits, memoryRateLimiter, redisRateLimiter } from '../lib/accounts/ratelimit'
import { Ingestor } from '../lib/ingest/pipeline'
import { directSink } from '../lib/ingest/sink'
import { memoryLiveCache } from '../lib/operations/public-live'
import { SiteDirectory } from '../lib/sites/site-directory'
import { newSite } from '../lib/sites/sites'
import { openRepositories } from '../lib/runtime/repositories'

/** Counts what reaches the key/value store: calls (round trips) and the commands in them. */
function counting(raw: RawRedis) {
  const counts = { roundTrips: 0, commands: 0 }
  const counted: RawRedis = {
    exec: (c: RedisCommand) => (counts.roundTrips++, counts.commands++, raw.exec(c)),
    pipeline: (cs: RedisCommand[]) => (counts.roundTrips++, (counts.commands += cs.length), raw.pipeline(cs)),
    transaction: (cs: RedisCommand[]) => (counts.roundTrips++, (counts.commands += cs.length), raw.transaction(cs)),
    close: () => raw.close(),
  }
  return { counted, counts }
}

/** The server side: the real app plus a bare Hono route, in its own process. */
async function benchServer(redisUrl: string | undefined) {
  const { counted, counts } = counting(
    redisUrl ? new TcpRedis(redisUrl) : new EmbeddedRedis({ dir: mkdtempSync(join(tmpdir(), 'bench-kv-')) }),
  )
  const redis = new Redis(rawRequester(counted))
  // the real limiter code, with budgets high enough not to throttle the benchmark itself
  const unthrottled = Object.fromEntries(Object.entries(LIMITS).map(([k, l]) => [k, { ...l, max: 1e9 }])) as Limits
  const clickhouse = new EmbeddedClickHouse(mkdtempSync(join(tmpdir(), 'bench-ch-')))
  await migrate(clickhouse, loadMigrations())
  const repositories = openRepositories(redis)
  const now = new Date()
  const org = await createOrg(repositories, 'Bench', now)
  const site = newSite({ domain: 'bench.example.com' }, org.id, now)
  await repositories.sites.create(site)
  const key = (await createApiKey(repositories, { orgId: org.id, name: 'bench', scope: 'read' }, now)).key
  const writeKey = (await createApiKey(repositories, { orgId: org.id, name: 'bench-write', scope: 'write' }, now)).key
  const sites = new SiteDirectory(repositories.sites)
  const app = createApp({
    clickhouse,
    kv: redis,
    repositories,
    sites,
    ingestor: new Ingestor({ sites, repositories, sink: directSink(clickhouse, repositories), now: () => new Date() }),
    clientAddress: () => '127.0.0.1',
    liveCache: memoryLiveCache(),
    limiter: redisUrl ? redisRateLimiter(redis, unthrottled) : memoryRateLimiter(Date.now, unthrottled),
    now: () => new Date(),
    fetch,
  })
  const outer = new Hono()
  outer.get('/bare', (c) => c.json({ ok: true }))
  outer.get('/bench/kv-counts', (c) => c.json(counts))
  outer.post('/bench/kv-counts/reset', (c) => ((counts.roundTrips = counts.commands = 0), c.json(counts)))
  outer.route('/', app)
  const server = serve({ fetch: outer.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise((r) => server.once('listening', r))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  process.stdout.write(`${JSON.stringify({ base, key, writeKey, siteId: site.id })}\n`)
}

async function drive(opts: { duration: string; connections: string; redis?: string }) {
  const redisUrl = opts.redis ?? process.env.REDIS_URL
  const child = spawn(process.execPath, ['--import', 'tsx', process.argv[1], 'serve', ...(redisUrl ? ['--redis', redisUrl] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const line = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve))
  const { base, key, writeKey, siteId } = JSON.parse(line)
  const headers = { authorization: `Bearer ${key}` }
  const targets = { bare: '/bare', me: '/api/v1/me', site: `/api/v1/sites/${siteId}`, alerts: `/api/v1/sites/${siteId}/alerts` }
  // a settings write: the alert settings merged, as PATCH does it
  const write = {
    method: 'PATCH' as const,
    headers: { authorization: `Bearer ${writeKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ weeklyReport: true }),
  }

  const results: Record<string, { rps: number; meanMs: number; p99Ms: number; non2xx: number; medianUs: number }> = {}
  for (const [name, path, init] of [
    ...Object.entries(targets).map(([n, p]) => [n, p, { headers }] as const),
    ['alertsPatch', targets.alerts, write] as const,
  ]) {
    const load = await autocannon({ url: base + path, ...init, duration: Number(opts.duration), connections: Number(opts.connections) })
    // autocannon's percentiles are whole milliseconds: time one client in a loop for a microsecond median
    const samples: number[] = []
    for (let i = 0; i < 3000; i++) {
      const t = performance.now()
      await (await fetch(base + path, init)).arrayBuffer()
      samples.push((performance.now() - t) * 1000)
    }
    samples.sort((a, b) => a - b)
    results[name] = {
      rps: load.requests.average,
      meanMs: load.latency.average,
      p99Ms: load.latency.p99,
      non2xx: load.non2xx,
      medianUs: Math.round(samples[samples.length >> 1]),
    }
  }

  const perRequest: Record<string, { roundTrips: number; commands: number }> = {}
  for (const name of ['me', 'site'] as const) {
    await fetch(base + targets[name], { headers }) // the last-use write happens at most once a minute per key
    await fetch(`${base}/bench/kv-counts/reset`, { method: 'POST' })
    const n = 200
    for (let i = 0; i < n; i++) await (await fetch(base + targets[name], { headers })).arrayBuffer()
    const counts = (await (await fetch(`${base}/bench/kv-counts`)).json()) as { roundTrips: number; commands: number }
    perRequest[name] = { roundTrips: counts.roundTrips / n, commands: counts.commands / n }
  }
  child.kill()
  const ratio = (a: number, b: number) => +(a / b).toFixed(2)
  process.stdout.write(
    `${JSON.stringify(
      {
        keyValue: redisUrl ? 'redis over TCP' : 'embedded',
        connections: Number(opts.connections),
        durationSeconds: Number(opts.duration),
        results,
        medianLatencyRatioToBare: {
          me: ratio(results.me.medianUs, results.bare.medianUs),
          site: ratio(results.site.medianUs, results.bare.medianUs),
          alerts: ratio(results.alerts.medianUs, results.bare.medianUs),
          alertsPatch: ratio(results.alertsPatch.medianUs, results.bare.medianUs),
        },
        throughputRatioToBare: { me: ratio(results.me.rps, results.bare.rps), site: ratio(results.site.rps, results.bare.rps) },
        keyValuePerRequest: perRequest,
      },
      null,
      2,
    )}\n`,
  )
}

const program = new Command('bench-foundation').description(
  'Median latency and throughput of GET /api/v1/me and GET /api/v1/sites/{id} under autocannon on loopback, as ratios to a bare Hono route on the same server, and key/value round trips per authenticated request.',
)
program
  .command('run', { isDefault: true })
  .description('start the server in a child process and load it')
  .option('--duration <s>', 'seconds of load per route', '10')
  .option('--connections <n>', 'concurrent connections', '10')
  .option('--redis <url>', 'Redis over TCP instead of the embedded store (default: $REDIS_URL)')
  .action(drive)
program
  .command('serve')
  .description('(internal) the server side')
  .option('--redis <url>')
  .action((opts: { redis?: string }) => benchServer(opts.redis))
await program.parseAsync(process.argv)
