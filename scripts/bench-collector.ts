import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import autocannon from 'autocannon'
import { serve } from '@hono/node-server'
import { Command } from 'commander'
import { Hono } from 'hono'
import { localInfoFile, openNodeStores } from '../lib/runtime/node'
import { demoHits } from '../lib/ingest/demo-traffic'
import { dbipGeo } from '../lib/ingest/geo-node'
import { runImport } from '../lib/ingest/import'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'

/**
 * The collector's targets: /api/event on one Node process on the embedded home under autocannon
 * (events/s sustained, p99), as a ratio to a bare Hono route answering 202 to the same requests in
 * a process of its own, run just before it under the same load; and the raw-hit import (hits/s),
 * each on a fresh DATA_DIR. CPU per event is the server process's CPU time (every thread, from
 * /proc) over the events it answered, which the machine's load moves less than the rate.
 *
 * With --engine-elsewhere, the collector is a production start whose stores are in another
 * process, as with a ClickHouse server (`CLICKHOUSE_URL`): a second Node server holds the embedded
 * engine and key-value store and serves them over the ClickHouse HTTP and Upstash REST protocols on
 * loopback. The API process's CPU per event is then reported apart from the stores process's.
 */
async function startServer(env: Record<string, string>, profile?: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', ...(profile ? cpuProfile(profile) : []), 'functions/node.ts'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', REDIS_URL: '', CLICKHOUSE_URL: '', UPSTASH_REDIS_REST_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  // the first-start banner (with the demo site's snippet) is on stdout, the log on stderr
  let banner = ''
  child.stdout!.on('data', (d) => (banner += d))
  let log = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the server stopped (${code}):\n${log}`)))
    const lines = createInterface({ input: child.stderr! }).on('line', (line) => {
      log += `${line}\n`
      const match = /analytics API on (\S+)/.exec(line)
      if (!match) return
      // the request log is drained unread: parsing it here would take CPU from the server under test
      lines.close()
      child.stderr!.resume()
      resolve(match[1])
    })
  })
  return { child, url, banner: () => banner, log: () => log }
}

async function benchEvents(duration: number, connections: number, payload: 'ours' | 'plausible', rounds: number, elsewhere: boolean) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-event-'))
  // no demo history and no live trickle: the events stored are the load's alone
  const first = await startServer(
    { DATA_DIR: dataDir, SKIP_DEMO_TRAFFIC: '1', DEMO_LIVE_TRAFFIC: '0' },
    elsewhere ? undefined : 'collector',
  )
  for (let i = 0; i < 50 && !/snippet \w+\)/.test(first.banner()); i++) await new Promise((r) => setTimeout(r, 100))
  const snippet = /snippet (\w+)\)/.exec(first.banner())?.[1]
  if (!snippet) throw new Error(`no demo site in the first-start banner:\n${first.banner()}${first.log()}`)
  // the stores process, when the engine is elsewhere: the first server; the collector is a second one reaching it
  let stores: ChildProcess | null = null
  let serverDir: string | null = null
  let { child, url } = first
  if (elsewhere) {
    stores = first.child
    const local = JSON.parse(readFileSync(localInfoFile(dataDir), 'utf8')) as { url: string }
    const token = readFileSync(join(dataDir, 'local-token'), 'utf8')
    serverDir = mkdtempSync(join(tmpdir(), 'bench-event-api-'))
    ;({ child, url } = await startServer(
      {
        DATA_DIR: serverDir,
        CLICKHOUSE_URL: local.url,
        CLICKHOUSE_PASSWORD: token,
        UPSTASH_REDIS_REST_URL: `${local.url}/redis`,
        UPSTASH_REDIS_REST_TOKEN: token,
        REDIS_PREFIX: '',
      },
      'collector',
    ))
  }
  const agents = Array.from({ length: 50 }, (_, i) => `Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.${i}`)
  const requests = agents.map((ua, i) => ({
    method: 'POST' as const,
    path: '/api/event',
    headers: { 'content-type': 'text/plain', 'user-agent': ua },
    // Plausible's payload names the site by its domain: the same hit, found through the domain index
    body: JSON.stringify(
      payload === 'ours'
        ? {
            site: snippet,
            name: i % 5 ? 'pageview' : 'Signup',
            url: `https://demo.example.com/page/${i}?utm_source=bench`,
            referrer: 'https://www.google.com/',
            screenWidth: 1440,
          }
        : {
            n: i % 5 ? 'pageview' : 'Signup',
            u: `https://demo.example.com/page/${i}?utm_source=bench`,
            d: 'demo.example.com',
            r: 'https://www.google.com/',
            w: 1440,
          },
    ),
  }))

  // the bare route in a process of its own, with the same requests and connections; the two take
  // turns in short slices (in alternating order), so that both meet the same load of the machine
  const bareChild = spawn(process.execPath, ['--import', 'tsx', process.argv[1], '--bare'], { stdio: ['ignore', 'pipe', 'inherit'] })
  const bareUrl = await new Promise<string>((resolve) => createInterface({ input: bareChild.stdout! }).once('line', resolve))
  const slice = { connections, duration: Math.max(1, Math.round(duration / rounds)), requests }
  const slices = { bare: [] as Slice[], collector: [] as Slice[] }
  const loads: string[] = []
  for (let round = 0; round < rounds; round++) {
    for (const target of round % 2 ? (['collector', 'bare'] as const) : (['bare', 'collector'] as const)) {
      slices[target].push(target === 'bare' ? await load(bareUrl, bareChild.pid!, slice) : await load(url, child.pid!, slice, stores?.pid))
    }
    loads.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
  }
  bareChild.kill('SIGTERM')
  await new Promise((r) => bareChild.once('exit', r))
  // what was acknowledged was stored: the events the engine holds once the last flush is done,
  // counted through the engine's own HTTP door (the first server's, which holds it in both setups)
  const local = JSON.parse(readFileSync(localInfoFile(dataDir), 'utf8')) as { url: string }
  const token = readFileSync(join(dataDir, 'local-token'), 'utf8')
  const count = async () =>
    Number(
      await (await fetch(local.url, { method: 'POST', headers: { 'x-clickhouse-key': token }, body: 'SELECT count() FROM events' })).text(),
    )
  let stored = await count()
  for (let i = 0; i < 20 && stored < summary(slices.collector).accepted; i++) {
    await new Promise((r) => setTimeout(r, 500))
    stored = await count()
  }
  for (const server of [child, stores]) {
    if (!server) continue
    const exited = new Promise((r) => server.once('exit', r))
    server.kill('SIGTERM')
    await exited
  }
  for (const dir of [dataDir, serverDir]) if (dir) rmSync(dir, { recursive: true, force: true })
  const bare = summary(slices.bare)
  const collector = summary(slices.collector)
  return {
    bare,
    collector,
    ratio: +(collector.eventsPerSecond / bare.eventsPerSecond).toFixed(2),
    // the events the engine holds after the load: the collector's accepted requests, and those in
    // flight when each slice stopped (one a connection), which autocannon does not count
    stored,
    acceptedAndInFlight: collector.accepted + connections * rounds,
    // the 1-minute load average after each round
    loadAverages: loads,
  }
}

interface Slice {
  seconds: number
  accepted: number
  errors: number
  p50Ms: number
  p99Ms: number
  cpu: number
  main: number
  /** The stores process's CPU, when the engine is elsewhere. */
  stores: number
}

/** The slices of one target together: events/s over all of them, the worst p99, CPU per event. */
function summary(slices: Slice[]) {
  const sum = (f: (s: Slice) => number) => slices.reduce((n, s) => n + f(s), 0)
  const accepted = sum((s) => s.accepted)
  return {
    eventsPerSecond: Math.round(accepted / sum((s) => s.seconds)),
    p50Ms: slices.map((s) => s.p50Ms),
    p99Ms: slices.map((s) => s.p99Ms),
    accepted,
    errors: sum((s) => s.errors),
    cpuSeconds: +sum((s) => s.cpu).toFixed(2),
    cpuMicrosecondsPerEvent: accepted ? Math.round((sum((s) => s.cpu) / accepted) * 1e6) : null,
    // the JavaScript thread alone: the engine's insert threads and the thread pool are the rest
    mainThreadCpuMicrosecondsPerEvent: accepted ? Math.round((sum((s) => s.main) / accepted) * 1e6) : null,
    // with --engine-elsewhere: the process holding the engine and the key-value store, serving them over HTTP
    ...(sum((s) => s.stores) > 0
      ? { storesCpuMicrosecondsPerEvent: accepted ? Math.round((sum((s) => s.stores) / accepted) * 1e6) : null }
      : {}),
  }
}

/** With BENCH_CPU_PROF=dir, the collector's server writes a V8 CPU profile there when it stops. */
function cpuProfile(name: string): string[] {
  const dir = process.env.BENCH_CPU_PROF
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []
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

async function load(
  url: string,
  pid: number,
  options: { connections: number; duration: number; requests: autocannon.Request[] },
  storesPid?: number,
): Promise<Slice> {
  const before = cpuSeconds(pid)
  const storesBefore = storesPid ? cpuSeconds(storesPid).all : 0
  const result = await autocannon({ url, ...options })
  const after = cpuSeconds(pid)
  // the stores process finishes the last slice's inserts after the load stops: its flush waits a second at most
  if (storesPid) await new Promise((r) => setTimeout(r, 1500))
  const storesAfter = storesPid ? cpuSeconds(storesPid).all : 0
  return {
    seconds: result.duration,
    accepted: result['2xx'],
    errors: result.errors + result.non2xx,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    cpu: after.all - before.all,
    main: after.main - before.main,
    stores: storesAfter - storesBefore,
  }
}

/** The bare route: a Hono app answering 202 to POST /api/event, on the Node adapter the server uses. */
async function serveBare() {
  const app = new Hono()
  app.post('/api/event', (c) => c.body(null, 202))
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise((r) => server.once('listening', r))
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`)
}

async function benchImport(hits: number) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-import-'))
  const stores = await openNodeStores({ DATA_DIR: dataDir })
  await migrate(stores.clickhouse, loadMigrations())
  const { createDemo } = await import('../lib/operations/demo')
  const demo = await createDemo(stores.repositories, new Date())
  const lines: string[] = []
  for (const hit of demoHits({
    site: demo.site.snippetId,
    domain: demo.site.domain,
    days: 60,
    visitorsPerDay: Math.ceil(hits / 60 / 4),
    end: new Date(),
  })) {
    lines.push(JSON.stringify(hit))
    if (lines.length >= hits) break
  }
  // what `npm run import` runs, from lines in memory: parse, enrich, sessionize and insert, all stored at the end
  const started = performance.now()
  const result = await runImport(lines, { clickhouse: stores.clickhouse, repositories: stores.repositories, geo: dbipGeo() })
  const seconds = (performance.now() - started) / 1000
  const [stored] = await stores.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events')
  await stores.close()
  rmSync(dataDir, { recursive: true, force: true })
  return {
    hits: lines.length,
    imported: result.imported,
    stored: Number(stored.n),
    seconds: +seconds.toFixed(2),
    hitsPerSecond: Math.round(lines.length / seconds),
  }
}

const program = new Command('bench-collector')
  .description('Events/s and p99 of POST /api/event (embedded home, autocannon on loopback), and hits/s of the raw-hit import.')
  .option('--duration <s>', 'seconds of load', '15')
  .option('--connections <n>', 'concurrent connections', '50')
  .option('--hits <n>', 'hits to import', '200000')
  .option('--import-runs <n>', 'import runs, each on a fresh DATA_DIR; the median is reported', '3')
  .option('--import-only', 'skip the /api/event run')
  .option('--rounds <n>', 'slices of load each target takes in turn (the duration is shared among them)', '3')
  .option('--bare', 'serve the bare route (the benchmark starts it itself)')
  .option('--payload <kind>', "the /api/event payload: ours (snippet id) or plausible (Plausible's, by domain)", 'ours')
  .option('--engine-elsewhere', 'the collector reaches its stores over HTTP in another process, as with CLICKHOUSE_URL')
  .action(
    async (opts: {
      duration: string
      connections: string
      hits: string
      importRuns: string
      importOnly?: boolean
      bare?: boolean
      rounds: string
      payload: string
      engineElsewhere?: boolean
    }) => {
      if (opts.payload !== 'ours' && opts.payload !== 'plausible') throw new Error('--payload: ours or plausible')
      if (opts.bare) return void (await serveBare())
      const events = opts.importOnly
        ? null
        : await benchEvents(Number(opts.duration), Number(opts.connections), opts.payload, Number(opts.rounds), !!opts.engineElsewhere)
      if (Number(opts.importRuns) === 0) return void process.stdout.write(`${JSON.stringify({ event: events }, null, 2)}\n`)
      const runs = []
      for (let i = 0; i < Number(opts.importRuns); i++) runs.push(await benchImport(Number(opts.hits)))
      const rates = runs.map((r) => r.hitsPerSecond).sort((a, b) => a - b)
      const imported = {
        hits: runs[0].hits,
        stored: runs.map((r) => r.stored),
        seconds: runs.map((r) => r.seconds),
        hitsPerSecond: rates,
        medianHitsPerSecond: rates[Math.floor(rates.length / 2)],
      }
      process.stdout.write(`${JSON.stringify({ event: events, import: imported }, null, 2)}\n`)
    },
  )
await program.parseAsync(process.argv)
