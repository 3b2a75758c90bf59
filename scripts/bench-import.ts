import { spawnSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
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
 * hits is imported by `npm run import` into a fresh data folder, under `/usr/bin/time -v` (Linux),
 * `--runs` times (each on a copy of the same fresh folder). Each run prints the maximum resident
 * set size, the time taken, the hits a second, the process's CPU time (user and system, the
 * engine's threads and the import's workers included) per hit, and what was stored (events,
 * visitors, visits, pageviews), to compare two versions of the import on the same file; with
 * several runs, a last line gives the medians. The file is the same for a size all day (the demo
 * hits are seeded and end at today's midnight, UTC). `--cpu-prof DIR` writes a V8 CPU profile of
 * each run's main thread (and of its workers) under DIR.
 *
 *   npx tsx scripts/bench-import.ts 20000 200000 2000000
 *   npx tsx scripts/bench-import.ts --runs 5 2000000
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
const sizes = args.map(Number)
if (!sizes.length || sizes.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(runs) || runs < 1) {
  process.stderr.write('usage: tsx scripts/bench-import.ts [--runs N] [--cpu-prof DIR] LINES [LINES...]\n')
  process.exit(1)
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}
const timeField = (stderr: string, name: string) => Number(new RegExp(`${name}: ([\\d.]+)`).exec(stderr)?.[1] ?? 0)

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
      const run = spawnSync('/usr/bin/time', ['-v', process.execPath, ...profile, '--import', 'tsx', 'scripts/import.ts', '--file', file], {
        env,
        encoding: 'utf8',
      })
      const maxKb = timeField(run.stderr, 'Maximum resident set size \\(kbytes\\)')
      // h:mm:ss.ss or m:ss.ss
      const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)/.exec(run.stderr)?.[1] ?? ''
      const seconds = wall.split(':').reduce((total, part) => total * 60 + Number(part), 0)
      const cpuSeconds = timeField(run.stderr, 'User time \\(seconds\\)') + timeField(run.stderr, 'System time \\(seconds\\)')
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
        result: run.stdout.trim(),
        maxRssMB: Math.round(maxKb / 1024),
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
