import { spawn } from 'node:child_process'
import { mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { serve } from '@hono/node-server'
import autocannon from 'autocannon'
import { Command } from 'commander'
import { Hono } from 'hono'
import { createApp } from '../functions/app'
import { batchedLines } from '../functions/request-log'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { openNodeStores } from '../lib/runtime/node'
import { demoHits } from '../lib/ingest/demo-traffic'
import { importHits } from '../lib/ingest/import'
import { Ingestor } from '../lib/ingest/pipeline'
import { directSink } from '../lib/ingest/sink'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { memoryLiveCache } from '../lib/operations/public-live'
import { memoryRateLimiter } from '../lib/accounts/ratelimit'
import { SiteDirectory } from '../lib/sites/site-directory'
import { newSite } from '../lib/sites/sites'

/** The public live count: cached throughput against a bare route, and engine queries under 1000 polling clients. */
async function benchServer() {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-public-'))
  // the driver stops this process when it is done: its data goes with it
  process.on('SIGTERM', () => {
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  })
  const stores = await openNodeStores({ DATA_DIR: dataDir })
  await migrate(stores.clickhouse, loadMigrations())
  const now = () => new Date()
  const org = await createOrg(stores.repositories, 'Bench', now())
  const site = newSite({ domain: 'public.bench.test' }, org.id, now())
  site.sharing = { ...site.sharing, publicCounts: true, publicCountsDial: 'all' }
  await stores.repositories.sites.create(site)
  const { key } = await createApiKey(stores.repositories, { orgId: org.id, name: 'bench', scope: 'read' }, now())
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
  const discarded = openSync('/dev/null', 'w')
  const app = createApp(
    {
      clickhouse: stores.clickhouse,
      kv: stores.kv,
      repositories: stores.repositories,
      sites,
      // the keyed read is measured, not limited
      limiter: memoryRateLimiter(Date.now, { default: { max: 1e9, windowMs: 60_000 } }),
      now,
      fetch,
      ingestor,
      clientAddress: () => '127.0.0.1',
      sharedProcess: true,
      liveCache: memoryLiveCache(),
    },
    // as the Node server runs it: a request line each (batched, written synchronously as to a pipe), compression on
    { level: 'info', write: batchedLines({ write: (chunk: string) => writeSync(discarded, chunk) }).write },
    { compress: true },
  )
  // the app served as the Node server serves it (its own fetch), and the bare route by a Hono app
  // of its own, in the same process: each request meets one router, its own app's
  const bare = new Hono()
  bare.get('/bare', (c) => c.json({ ok: true }))
  bare.get('/bench/engine-queries', (c) => c.json({ engineQueries }))
  const listen = async (fetch: typeof app.fetch) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => server.once('listening', r))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }
  const base = await listen(app.fetch)
  const bareBase = await listen(bare.fetch)
  process.stdout.write(`${JSON.stringify({ base, bareBase, snippet: site.snippetId, key })}\n`)
}

/** A path asked with headers. */
interface Target {
  path: string
  headers: Record<string, string>
}

async function drive(opts: { duration: string; rounds: string }) {
  // BENCH_CPU_PROF=DIR writes a CPU profile of the server process there, as bench:collector does
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', process.argv[1], 'serve'], { stdio: ['ignore', 'pipe', 'inherit'] })
  const { base, bareBase, snippet, key } = JSON.parse(
    await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve)),
  )
  const duration = Number(opts.duration)
  // the server's own CPU, read from /proc: CPU per request is less at the mercy of other load than requests/s
  const run = async (target: string | Target, connections: number, seconds: number) => {
    const { path, headers } = typeof target === 'string' ? { path: target, headers: {} } : target
    const before = cpuSeconds(child.pid!)
    const result = await autocannon({ url: (path === '/bare' ? bareBase : base) + path, connections, duration: seconds, headers })
    const after = cpuSeconds(child.pid!)
    return {
      requests: result.requests.total,
      seconds: result.duration,
      non2xx: result.non2xx,
      cpuMicros: (after.all - before.all) * 1e6,
      mainMicros: (after.main - before.main) * 1e6,
    }
  }
  const live = `/api/public/live?site=${snippet}`
  const period = `/api/public/live?site=${snippet}&range=7d`
  // a keyed read through the app's middleware (key, rate limit, compression): its answer as is and gzipped
  const keyed = (encoding: string): Target => ({
    path: `/api/v1/dimensions`,
    headers: { authorization: `Bearer ${key}`, 'accept-encoding': encoding },
  })
  await fetch(base + live)
  await fetch(base + period)
  const targets = { bare: '/bare', cachedLive: live, cachedPeriod: period, keyedRead: keyed('identity'), keyedReadGzip: keyed('gzip') }
  const names = Object.keys(targets) as (keyof typeof targets)[]
  // a second of each first, unmeasured: the code warms up and the engine merges what the set-up imported
  for (const name of names) await run(targets[name], 10, 1)
  // they take turns in short slices (in alternating order), so that each meets the same load of the machine
  const totals = Object.fromEntries(names.map((n) => [n, { requests: 0, seconds: 0, cpuMicros: 0, mainMicros: 0 }])) as Record<
    keyof typeof targets,
    { requests: number; seconds: number; cpuMicros: number; mainMicros: number }
  >
  const rounds = Number(opts.rounds)
  const loads: string[] = []
  const slice = Math.max(1, Math.round(duration / rounds))
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 ? [...names].reverse() : names) {
      const result = await run(targets[name], 10, slice)
      totals[name].requests += result.requests
      totals[name].seconds += result.seconds
      totals[name].cpuMicros += result.cpuMicros
      totals[name].mainMicros += result.mainMicros
    }
    loads.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
  }
  const rps = (name: keyof typeof targets) => totals[name].requests / totals[name].seconds
  const cpuPerRequest = (name: keyof typeof targets) => totals[name].cpuMicros / totals[name].requests
  const mainPerRequest = (name: keyof typeof targets) => totals[name].mainMicros / totals[name].requests
  const each = (value: (name: keyof typeof targets) => number) => Object.fromEntries(names.map((n) => [n, +value(n).toFixed(1)]))
  const before = ((await (await fetch(`${bareBase}/bench/engine-queries`)).json()) as { engineQueries: number }).engineQueries
  const polling = await run(live, 1000, duration)
  const after = ((await (await fetch(`${bareBase}/bench/engine-queries`)).json()) as { engineQueries: number }).engineQueries
  child.kill()
  process.stdout.write(
    `${JSON.stringify(
      {
        rps: each((n) => Math.round(rps(n))),
        ratioToBare: {
          live: +(rps('cachedLive') / rps('bare')).toFixed(2),
          period: +(rps('cachedPeriod') / rps('bare')).toFixed(2),
        },
        // the server process's CPU per answered request, and the bare route's as a share of it
        cpuMicrosPerRequest: each(cpuPerRequest),
        // the JavaScript thread alone: the engine's background merges are on other threads
        mainThreadCpuMicrosPerRequest: each(mainPerRequest),
        cpuRatioToBare: {
          live: +(cpuPerRequest('bare') / cpuPerRequest('cachedLive')).toFixed(2),
          period: +(cpuPerRequest('bare') / cpuPerRequest('cachedPeriod')).toFixed(2),
        },
        // the 1-minute load average after each round
        loadAverages: loads,
        thousandClients: {
          seconds: duration,
          requests: polling.requests,
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

/** A process's CPU time so far (user and system), in seconds: of every thread, and of its main (JavaScript) thread. */
function cpuSeconds(pid: number): { all: number; main: number } {
  // /proc/<pid>/stat: fields 14 and 15 (utime, stime) in clock ticks, after the parenthesized name
  const ticks = (file: string) => {
    const fields = readFileSync(file, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  }
  return { all: ticks(`/proc/${pid}/stat`), main: ticks(`/proc/${pid}/task/${pid}/stat`) }
}

const program = new Command('bench-public').description(
  'Throughput of cached public counts and of a keyed read against a bare route, and engine queries while 1000 clients poll.',
)
program
  .command('run', { isDefault: true })
  .option(
    '--duration <s>',
    'seconds of load for each of the bare route, the live count, the period count and the keyed read (plain and gzipped), and for the 1000 clients',
    '10',
  )
  .option('--rounds <n>', 'slices each of them takes in turn (the duration is shared among them)', '3')
  .action(drive)
program.command('serve').description('(internal) the server side').action(benchServer)
await program.parseAsync(process.argv)
