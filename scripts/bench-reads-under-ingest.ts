import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import autocannon from 'autocannon'
import { Command } from 'commander'

/**
 * Read latencies under ingest: one Node server on the embedded home with the demo's two months of
 * history, a loop of reads (stats, timeseries, a breakdown, realtime, the public live count), run
 * first alone and then beside `bench:collector`'s load on /api/event (autocannon). Reports each
 * read loop's median and p99, and the events/s the load sustained. Noisy on a shared machine:
 * compare runs made back to back.
 */
async function startServer(dataDir: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: '',
      CLICKHOUSE_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      DEMO_LIVE_TRAFFIC: '0',
      LOG_LEVEL: 'error',
      METRICS_TOKEN: TOKEN,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let banner = ''
  child.stdout!.on('data', (d) => (banner += d))
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)))
    const lines = createInterface({ input: child.stderr! }).on('line', (line) => {
      const match = /analytics API on (\S+)/.exec(line)
      if (!match) return
      lines.close()
      child.stderr!.resume()
      resolve(match[1])
    })
  })
  for (let i = 0; i < 50 && !/export KEY=/.test(banner); i++) await new Promise((r) => setTimeout(r, 100))
  const key = /export KEY=(\S+)/.exec(banner)?.[1]
  const site = /SITE=(\S+)/.exec(banner)?.[1]
  const snippet = /snippet (\w+)\)/.exec(banner)?.[1]
  if (!key || !site || !snippet) throw new Error(`no demo keys in the first-start banner:\n${banner}`)
  return { child, url, key, site, snippet }
}

const TOKEN = `bench-${crypto.randomUUID()}`

/** Seconds the engine spent on the app's reads, and on the sink's inserts, with their counts (GET /metrics). */
async function engineTime(url: string) {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
  const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0)
  return {
    querySeconds: value('clickhouse_query_duration_seconds_sum{kind="query"}'),
    queries: value('clickhouse_query_duration_seconds_count{kind="query"}'),
    insertSeconds: value('clickhouse_insert_duration_seconds_sum{table="events"}'),
    inserts: value('clickhouse_insert_duration_seconds_count{table="events"}'),
  }
}

/** Per phase: the mean engine time of a read query and of an insert. */
function engineMeans(before: Awaited<ReturnType<typeof engineTime>>, after: Awaited<ReturnType<typeof engineTime>>) {
  const ms = (seconds: number, n: number) => (n ? +((seconds / n) * 1000).toFixed(1) : null)
  return {
    meanQueryMs: ms(after.querySeconds - before.querySeconds, after.queries - before.queries),
    meanInsertMs: ms(after.insertSeconds - before.insertSeconds, after.inserts - before.inserts),
    inserts: after.inserts - before.inserts,
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]

/**
 * A read begins at most every READ_EVERY_MS: a key may make 600 requests a minute, and the reads,
 * faster now than that, were refused (429) past it, which the loop counted as failures.
 */
const READ_EVERY_MS = 110

/** Reads one after another until `until`, at most one every READ_EVERY_MS; their latencies in ms, sorted, and how many failed. */
async function readLoop(server: Awaited<ReturnType<typeof startServer>>, until: () => boolean) {
  const paths = [
    `/api/v1/stats?site_id=${server.site}&range=30d`,
    `/api/v1/timeseries?site_id=${server.site}&range=7d`,
    `/api/v1/breakdown?site_id=${server.site}&range=30d&property=path`,
    `/api/v1/stats?site_id=${server.site}&range=today`,
    `/api/v1/realtime?site_id=${server.site}`,
  ]
  const ms: number[] = []
  let failed = 0
  for (let i = 0; !until(); i++) {
    const started = performance.now()
    const res = await fetch(`${server.url}${paths[i % paths.length]}`, { headers: { authorization: `Bearer ${server.key}` } })
    await res.arrayBuffer()
    if (res.ok) ms.push(performance.now() - started)
    else failed++
    const wait = started + READ_EVERY_MS - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
  }
  ms.sort((a, b) => a - b)
  return { reads: ms.length, failed, medianMs: +quantile(ms, 0.5).toFixed(1), p99Ms: +quantile(ms, 0.99).toFixed(1) }
}

async function run(seconds: number, connections: number, rate?: number) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-reads-'))
  const server = await startServer(dataDir)
  try {
    // warm the caches and the rollups of finished days once, as a server that has served a while has
    await readLoop(
      server,
      (() => {
        const end = Date.now() + 3000
        return () => Date.now() > end
      })(),
    )
    const quietEnd = Date.now() + seconds * 1000
    const t0 = await engineTime(server.url)
    const quiet = await readLoop(server, () => Date.now() > quietEnd)
    const t1 = await engineTime(server.url)

    const agents = Array.from({ length: 50 }, (_, i) => `Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.${i}`)
    const requests = agents.map((ua, i) => ({
      method: 'POST' as const,
      path: '/api/event',
      headers: { 'content-type': 'text/plain', 'user-agent': ua },
      body: JSON.stringify({
        site: server.snippet,
        name: i % 5 ? 'pageview' : 'Signup',
        url: `https://demo.example.com/page/${i}?utm_source=bench`,
        referrer: 'https://www.google.com/',
        screenWidth: 1440,
      }),
    }))
    let loading = true
    const load = autocannon({ url: server.url, connections, duration: seconds, requests, ...(rate ? { overallRate: rate } : {}) })
    const underLoad = readLoop(server, () => !loading)
    const result = await load
    loading = false
    const underIngest = await underLoad
    const t2 = await engineTime(server.url)
    return {
      quiet: { ...quiet, engine: engineMeans(t0, t1) },
      underIngest: { ...underIngest, engine: engineMeans(t1, t2) },
      ingest: { eventsPerSecond: Math.round(result.requests.average), p99Ms: result.latency.p99, errors: result.errors + result.non2xx },
    }
  } finally {
    server.child.kill('SIGTERM')
    await new Promise((r) => server.child.once('exit', r))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const program = new Command('bench-reads-under-ingest')
  .description(
    "Read latencies (median, p99) alone and beside bench:collector's load on /api/event, on the embedded home with demo history.",
  )
  .option('--seconds <s>', 'seconds of each read loop (alone, then under load)', '20')
  .option('--connections <n>', 'concurrent connections of the event load', '50')
  .option('--runs <n>', 'runs, each on a fresh DATA_DIR', '1')
  .option('--rate <n>', 'events a second the load sends (all of them) instead of as many as it can, e.g. 500')
  .action(async (opts: { seconds: string; connections: string; runs: string; rate?: string }) => {
    const runs = []
    for (let i = 0; i < Number(opts.runs); i++)
      runs.push(await run(Number(opts.seconds), Number(opts.connections), opts.rate ? Number(opts.rate) : undefined))
    process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`)
  })
await program.parseAsync(process.argv)
