import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import autocannon from 'autocannon'
import { Command } from 'commander'
import { openNodeStores } from '../lib/home/node'
import { demoHits } from '../lib/ingest/demo-traffic'
import { dbipGeo } from '../lib/ingest/geo-node'
import { importHits } from '../lib/ingest/import'
import { Ingestor } from '../lib/ingest/pipeline'
import { BufferedSink } from '../lib/ingest/sink'
import { migrate } from '../lib/olap/migrate'
import { loadMigrations } from '../lib/olap/migrations-node'

/**
 * The collector's targets: /api/event on one Node process on the embedded home under autocannon
 * (events/s sustained, p99), and the raw-hit import (hits/s), each on a fresh DATA_DIR.
 */
async function benchEvents(duration: number, connections: number) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-event-'))
  const child = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', REDIS_URL: '', CLICKHOUSE_URL: '', UPSTASH_REDIS_REST_URL: '', SKIP_DEMO_TRAFFIC: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let log = ''
  const url = await new Promise<string>((resolve) => {
    createInterface({ input: child.stderr! }).on('line', (line) => {
      log += `${line}\n`
      const match = /analytics API on (\S+)/.exec(line)
      if (match) resolve(match[1])
    })
  })
  const snippet = /snippet (\w+)\)/.exec(log)![1]
  const agents = Array.from({ length: 50 }, (_, i) => `Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.${i}`)
  const requests = agents.map((ua, i) => ({
    method: 'POST' as const,
    path: '/api/event',
    headers: { 'content-type': 'text/plain', 'user-agent': ua },
    body: JSON.stringify({ site: snippet, name: i % 5 ? 'pageview' : 'Signup', url: `https://demo.example.com/page/${i}?utm_source=bench`, referrer: 'https://www.google.com/', screenWidth: 1440 }),
  }))
  const result = await autocannon({ url, connections, duration, requests })
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
  rmSync(dataDir, { recursive: true, force: true })
  return { eventsPerSecond: Math.round(result.requests.average), p50Ms: result.latency.p50, p99Ms: result.latency.p99, accepted: result['2xx'], errors: result.errors + result.non2xx }
}

async function benchImport(hits: number) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-import-'))
  const stores = await openNodeStores({ DATA_DIR: dataDir })
  await migrate(stores.olap, loadMigrations())
  const { createDemo } = await import('../lib/demo')
  const demo = await createDemo(stores.store, new Date())
  // inserts run on the engine's threads while the next chunk is parsed and enriched
  const sink = new BufferedSink(stores.olap, stores.store, { maxRows: 50_000, intervalMs: 1000 })
  const ingestor = new Ingestor({ store: stores.store, sink, geo: dbipGeo(), now: () => new Date() })
  const lines: string[] = []
  for (const hit of demoHits({ site: demo.site.snippetId, domain: demo.site.domain, days: 60, visitorsPerDay: Math.ceil(hits / 60 / 4), end: new Date() })) {
    lines.push(JSON.stringify(hit))
    if (lines.length >= hits) break
  }
  await ingestor.site(demo.site.snippetId)
  const started = performance.now()
  const result = await importHits(lines, ingestor)
  await sink.close()
  const seconds = (performance.now() - started) / 1000
  const [stored] = await stores.olap.query<{ n: string }>('SELECT count() AS n FROM events')
  await stores.close()
  rmSync(dataDir, { recursive: true, force: true })
  return { hits: lines.length, imported: result.imported, stored: Number(stored.n), seconds: +seconds.toFixed(2), hitsPerSecond: Math.round(lines.length / seconds) }
}

const program = new Command('bench-collector')
  .description('Events/s and p99 of POST /api/event (embedded home, autocannon on loopback), and hits/s of the raw-hit import.')
  .option('--duration <s>', 'seconds of load', '15')
  .option('--connections <n>', 'concurrent connections', '50')
  .option('--hits <n>', 'hits to import', '200000')
  .option('--import-only', 'skip the /api/event run')
  .action(async (opts: { duration: string; connections: string; hits: string; importOnly?: boolean }) => {
    const events = opts.importOnly ? null : await benchEvents(Number(opts.duration), Number(opts.connections))
    const imported = await benchImport(Number(opts.hits))
    process.stdout.write(`${JSON.stringify({ event: events, import: imported }, null, 2)}\n`)
  })
await program.parseAsync(process.argv)
