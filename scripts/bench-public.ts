import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { serve } from '@hono/node-server'
import autocannon from 'autocannon'
import { Command } from 'commander'
import { Hono } from 'hono'
import { createApp } from '../functions/app'
import { createOrg } from '../lib/accounts/admin'
import { openNodeStores } from '../lib/runtime/node'
import { demoHits } from '../lib/ingest/demo-traffic'
import { importHits } from '../lib/ingest/import'
import { Ingestor } from '../lib/ingest/pipeline'
import { directSink } from '../lib/ingest/sink'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { memoryLiveCache } from '../lib/sites/public-live'
import { memoryRateLimiter } from '../lib/accounts/ratelimit'
import { SiteDirectory } from '../lib/sites/site-directory'
import { newSite } from '../lib/sites/sites'

/** The public live count: cached throughput against a bare route, and engine queries under 1000 polling clients. */
async function benchServer() {
  const stores = await openNodeStores({ DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-public-')) })
  await migrate(stores.clickhouse, loadMigrations())
  const now = () => new Date()
  const org = await createOrg(stores.repositories, 'Bench', now())
  const site = newSite({ domain: 'public.bench.test' }, org.id, now())
  site.sharing = { ...site.sharing, publicCounts: true, publicCountsDial: 'all' }
  await stores.repositories.sites.create(site)
  const sites = new SiteDirectory(stores.repositories.sites)
  const ingestor = new Ingestor({
    sites,
    repositories: stores.repositories,
    sink: directSink(stores.clickhouse, stores.repositories),
    now,
    coalesce: true,
  })
  const hits = demoHits({ site: site.snippetId, domain: site.domain, days: 7, visitorsPerDay: 300, end: now() })
  await importHits(
    (function* () {
      for (const h of hits) yield JSON.stringify(h)
    })(),
    ingestor,
  )
  let engineQueries = 0
  const query = stores.clickhouse.query.bind(stores.clickhouse)
  stores.clickhouse.query = (async (sql: string, params?: Record<string, unknown>) => {
    engineQueries++
    return query(sql, params)
  }) as typeof stores.clickhouse.query
  const app = createApp({
    clickhouse: stores.clickhouse,
    kv: stores.kv,
    repositories: stores.repositories,
    sites,
    limiter: memoryRateLimiter(),
    now,
    fetch,
    ingestor,
    clientAddress: () => '127.0.0.1',
    sharedProcess: true,
    liveCache: memoryLiveCache(),
  })
  const outer = new Hono()
  outer.get('/bare', (c) => c.json({ ok: true }))
  outer.get('/bench/engine-queries', (c) => c.json({ engineQueries }))
  // the server's own CPU (user + system, microseconds): CPU per request is less at the mercy of other load than requests/s
  outer.get('/bench/cpu', (c) => {
    const { user, system } = process.cpuUsage()
    return c.json({ micros: user + system })
  })
  outer.route('/', app)
  const server = serve({ fetch: outer.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise((r) => server.once('listening', r))
  process.stdout.write(
    `${JSON.stringify({ base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, snippet: site.snippetId })}\n`,
  )
}

async function drive(opts: { duration: string }) {
  const child = spawn(process.execPath, ['--import', 'tsx', process.argv[1], 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] })
  const { base, snippet } = JSON.parse(
    await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve)),
  )
  const duration = Number(opts.duration)
  const cpu = async () => ((await (await fetch(`${base}/bench/cpu`)).json()) as { micros: number }).micros
  const run = async (path: string, connections: number) => {
    const before = await cpu()
    const result = await autocannon({ url: base + path, connections, duration })
    return { ...result, cpuMicrosPerRequest: ((await cpu()) - before) / result.requests.total }
  }
  const live = `/api/public/live?site=${snippet}`
  const period = `/api/public/live?site=${snippet}&range=7d`
  await fetch(base + live)
  await fetch(base + period)
  const bare = await run('/bare', 10)
  const cachedLive = await run(live, 10)
  const cachedPeriod = await run(period, 10)
  const before = ((await (await fetch(`${base}/bench/engine-queries`)).json()) as { engineQueries: number }).engineQueries
  const polling = await run(live, 1000)
  const after = ((await (await fetch(`${base}/bench/engine-queries`)).json()) as { engineQueries: number }).engineQueries
  child.kill()
  process.stdout.write(
    `${JSON.stringify(
      {
        rps: {
          bare: Math.round(bare.requests.average),
          cachedLive: Math.round(cachedLive.requests.average),
          cachedPeriod: Math.round(cachedPeriod.requests.average),
        },
        ratioToBare: {
          live: +(cachedLive.requests.average / bare.requests.average).toFixed(2),
          period: +(cachedPeriod.requests.average / bare.requests.average).toFixed(2),
        },
        // the server process's CPU per answered request, and the bare route's as a share of it
        cpuMicrosPerRequest: {
          bare: +bare.cpuMicrosPerRequest.toFixed(1),
          cachedLive: +cachedLive.cpuMicrosPerRequest.toFixed(1),
          cachedPeriod: +cachedPeriod.cpuMicrosPerRequest.toFixed(1),
        },
        cpuRatioToBare: {
          live: +(bare.cpuMicrosPerRequest / cachedLive.cpuMicrosPerRequest).toFixed(2),
          period: +(bare.cpuMicrosPerRequest / cachedPeriod.cpuMicrosPerRequest).toFixed(2),
        },
        thousandClients: {
          seconds: duration,
          requests: polling.requests.total,
          non2xx: polling.non2xx,
          engineQueries: after - before,
          // a live answer takes two queries (5 minutes and halfHour); its TTL is 10 s
          computations: (after - before) / 2,
          // a run of d seconds overlaps at most floor(d / 10) + 1 ten-second TTL periods
          ttlPeriodsOverlapped: Math.floor(duration / 10) + 1,
        },
      },
      null,
      2,
    )}\n`,
  )
}

const program = new Command('bench-public').description(
  'Throughput of cached public counts against a bare route, and engine queries while 1000 clients poll.',
)
program.command('run', { isDefault: true }).option('--duration <s>', 'seconds per run', '10').action(drive)
program.command('serve').description('(internal) the server side').action(benchServer)
await program.parseAsync(process.argv)
