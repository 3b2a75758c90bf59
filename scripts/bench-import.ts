import { spawn } from 'node:child_process'
import { createWriteStream, readFileSync } from 'node:fs'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { createOrg } from '../lib/accounts/admin'
import { demoHits } from '../lib/ingest/demo-traffic'
import { openNodeStores } from '../lib/runtime/node'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { newSite } from '../lib/sites/sites'

/**
 * The import command's peak memory, rate and CPU at a few file sizes: for each size, a file of demo
 * hits is imported by the command `npm run import` runs (package.json: its node options and
 * environment) into a fresh data folder, under `/usr/bin/time -v` (Linux), `--runs` times (each on
 * a copy of the same fresh folder). Each run prints the maximum resident set size, its split at the
 * peak (anonymous memory: the heaps of node and the engine; and file-mapped: the engine's library
 * and node's code), sampled every 100 ms, the time taken, the hits a second, the process's CPU
 * time (user and system, the engine's threads and the import's workers included) per hit, and what
 * was stored (events, visitors, visits, pageviews), to compare two versions of the import on the same file; with
 * several runs, a last line gives the medians. The file is the same for a size all day (the demo
 * hits are seeded and end at today's midnight, UTC). `--cpu-prof DIR` writes a V8 CPU profile of
 * each run's main thread (and of its workers) under DIR. `--via-server` starts the server on each
 * run's folder first (without the demo), so that the command stores through it, as it does when a
 * server owns the folder: the command then holds neither the engine nor the store, and the line
 * gives the server's resident set before and at its peak beside the command's.
 *
 *   npx tsx scripts/bench-import.ts 20000 200000 2000000
 *   npx tsx scripts/bench-import.ts --runs 5 2000000
 *   npx tsx scripts/bench-import.ts --via-server 2000000
 *   npx tsx scripts/bench-import.ts --threads 2 2000000   (the import's worker threads; its default otherwise)
 */
const args = process.argv.slice(2)
const option = (name: string) => {
  const i = args.indexOf(name)
  if (i < 0) return undefined
  const [, value] = args.splice(i, 2)
  return value
}
const runs = Number(option('--runs') ?? 1)
const cpuProf = option('--cpu-prof')
const threads = option('--threads')
const viaServerAt = args.indexOf('--via-server')
const viaServer = viaServerAt >= 0
if (viaServer) args.splice(viaServerAt, 1)
const sizes = args.map(Number)
const badThreads = threads !== undefined && !/^\d+$/.test(threads)
if (!sizes.length || sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(runs) || runs < 1 || badThreads) {
  process.stderr.write('usage: tsx scripts/bench-import.ts [--runs N] [--threads N] [--cpu-prof DIR] [--via-server] LINES [LINES...]\n')
  process.exit(1)
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}
const timeField = (stderr: string, name: string) => Number(new RegExp(`${name}: ([\\d.]+)`).exec(stderr)?.[1] ?? 0)

/** A process's resident set (MB) from /proc: all of it, its anonymous memory and what is mapped from files. */
function residentSet(pid: number) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const mb = (name: string) => Math.round(Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024)
    return { rss: mb('VmRSS'), anon: mb('RssAnon'), file: mb('RssFile') }
  } catch {
    return null
  }
}

/** The import's process under /usr/bin/time: its only child. */
function childOf(pid: number) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0]) || null
  } catch {
    return null
  }
}

/**
 * What `npm run import` runs (package.json): its environment and node's options, so that the bench
 * measures the command as it is run. The script is `[NAME=value ...] node [option ...] scripts/import.ts`.
 */
function importCommand() {
  const script: string = JSON.parse(readFileSync('package.json', 'utf8')).scripts.import
  const words = script.trim().split(/\s+/)
  const node = words.indexOf('node')
  if (node < 0) throw new Error(`the import script is not a node command: ${script}`)
  const env = Object.fromEntries(words.slice(0, node).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]))
  return { env, args: words.slice(node + 1) }
}

/**
 * Runs a command under `/usr/bin/time -v` and samples its resident set every 100 ms, for the split
 * at the peak (anonymous memory, the heaps of the JS and the engine, against file-mapped code).
 */
async function measured(command: string[], env: NodeJS.ProcessEnv) {
  const child = spawn('/usr/bin/time', ['-v', ...command], { env })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => {
    stdout += d
  })
  child.stderr.on('data', (d) => {
    stderr += d
  })
  const peak = { rss: 0, anon: 0, file: 0, anonMax: 0, fileMax: 0 }
  const sampler = setInterval(() => {
    const pid = childOf(child.pid!)
    const now = pid && residentSet(pid)
    if (!now) return
    if (now.rss > peak.rss) Object.assign(peak, { rss: now.rss, anon: now.anon, file: now.file })
    peak.anonMax = Math.max(peak.anonMax, now.anon)
    peak.fileMax = Math.max(peak.fileMax, now.file)
  }, 100)
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve))
  clearInterval(sampler)
  return { status, stdout, stderr, peak }
}

/** The server on a data folder, without the demo, on ports of its own; resolves once it answers /ready. */
async function startServer(env: NodeJS.ProcessEnv) {
  const port = 18700 + Math.floor(Math.random() * 200) * 2
  const server = spawn(process.execPath, ['--import', 'tsx', 'functions/node.ts'], {
    env: { ...env, PORT: String(port), LOCAL_PORT: String(port + 1), HOST: '127.0.0.1', DEMO: '0', SKIP_DEMO_TRAFFIC: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let out = ''
  server.stderr.on('data', (d) => {
    out += d
  })
  for (let waited = 0; ; waited += 200) {
    if ((await fetch(`http://127.0.0.1:${port}/ready`).catch(() => null))?.ok) break
    if (server.exitCode !== null || waited > 120_000) throw new Error(`the server did not start: ${out.slice(-500)}`)
    await new Promise((r) => setTimeout(r, 200))
  }
  const peak = { before: residentSet(server.pid!)?.rss ?? 0, max: 0 }
  const sampler = setInterval(() => {
    peak.max = Math.max(peak.max, residentSet(server.pid!)?.rss ?? 0)
  }, 100)
  return {
    peak,
    async stop() {
      clearInterval(sampler)
      server.kill('SIGTERM')
      await once(server, 'close')
    },
  }
}

for (const lines of sizes) {
  const dir = await mkdtemp(join(tmpdir(), 'bench-import-'))
  try {
    const fresh = join(dir, 'fresh')
    const stores = await openNodeStores({ ...process.env, DATA_DIR: fresh })
    await migrate(stores.clickhouse, loadMigrations())
    const org = await createOrg(stores.repositories, 'Bench', new Date())
    const site = newSite({ domain: 'bench.example.com', timezone: 'UTC' }, org.id, new Date())
    await stores.repositories.sites.create(site)
    await stores.close()

    const file = join(dir, 'hits.ndjson')
    const out = createWriteStream(file)
    let written = 0
    const days = 90
    const hits = demoHits({
      site: site.snippetId,
      domain: site.domain,
      days,
      visitorsPerDay: Math.ceil(lines / days / 3),
      end: new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`),
    })
    for (const hit of hits) {
      if (written++ >= lines) break
      if (!out.write(`${JSON.stringify(hit)}\n`)) await once(out, 'drain')
    }
    out.end()
    await once(out, 'finish')
    const count = Math.min(written, lines)

    const results: { maxRssMB: number; seconds: number; hitsPerSecond: number | null; cpuMicrosecondsPerHit: number }[] = []
    for (let i = 0; i < runs; i++) {
      const data = join(dir, `data-${i}`)
      await cp(fresh, data, { recursive: true })
      const env = { ...process.env, DATA_DIR: data }
      const profile = cpuProf ? ['--cpu-prof', '--cpu-prof-dir', join(cpuProf, `${count}-${i}`)] : []
      const command = importCommand()
      const server = viaServer ? await startServer(env) : null
      const run = await measured(
        [process.execPath, ...profile, ...command.args, '--file', file, ...(threads === undefined ? [] : ['--threads', threads])],
        { ...env, ...command.env },
      )
      const maxKb = timeField(run.stderr, 'Maximum resident set size \\(kbytes\\)')
      // h:mm:ss.ss or m:ss.ss
      const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)/.exec(run.stderr)?.[1] ?? ''
      const seconds = wall.split(':').reduce((total, part) => total * 60 + Number(part), 0)
      const cpuSeconds = timeField(run.stderr, 'User time \\(seconds\\)') + timeField(run.stderr, 'System time \\(seconds\\)')
      await server?.stop()
      if (run.status !== 0) process.stderr.write(run.stderr.slice(-2000))
      const check = await openNodeStores(env)
      const [stored] = await check.clickhouse.query<Record<string, string>>(
        `SELECT count() AS events, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits,
          countIf(name = 'pageview') AS pageviews FROM events`,
        {},
      )
      await check.close()
      if (!process.env.BENCH_KEEP) await rm(data, { recursive: true, force: true })
      const result = {
        lines: count,
        ...(server ? { viaServer: true, serverRssMB: server.peak } : {}),
        result: run.stdout.trim(),
        maxRssMB: Math.round(maxKb / 1024),
        // sampled every 100 ms: the split at the sampled peak, and each part's own peak
        sampledPeakMB: run.peak,
        seconds,
        hitsPerSecond: seconds ? Math.round(count / seconds) : null,
        cpuSeconds: +cpuSeconds.toFixed(2),
        cpuMicrosecondsPerHit: Math.round((cpuSeconds * 1e6) / count),
        stored: Object.fromEntries(Object.entries(stored).map(([k, v]) => [k, Number(v)])),
      }
      results.push(result)
      process.stdout.write(`${JSON.stringify(result)}\n`)
    }
    if (runs > 1) {
      const of = (key: 'maxRssMB' | 'seconds' | 'hitsPerSecond' | 'cpuMicrosecondsPerHit') => median(results.map((r) => r[key] ?? 0))
      process.stdout.write(
        `${JSON.stringify({
          lines: count,
          runs,
          median: {
            maxRssMB: of('maxRssMB'),
            seconds: of('seconds'),
            hitsPerSecond: of('hitsPerSecond'),
            cpuMicrosecondsPerHit: of('cpuMicrosecondsPerHit'),
          },
        })}\n`,
      )
    }
  } finally {
    if (process.env.BENCH_KEEP) process.stdout.write(`kept ${dir}\n`)
    else await rm(dir, { recursive: true, force: true })
  }
}
