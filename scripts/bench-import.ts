import { spawnSync } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
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
 * The import command's peak memory and rate at a few file sizes: for each size, a file of demo hits
 * is imported by `npm run import` into a fresh data folder, under `/usr/bin/time -v` (Linux); the
 * maximum resident set size is printed with the time taken, the hits a second, and what was stored
 * (events, visitors, visits, pageviews), to compare two versions of the import on the same file.
 * The file is the same for a size all day (the demo hits are seeded and end at today's midnight, UTC).
 *
 *   npx tsx scripts/bench-import.ts 20000 200000 2000000
 */
const sizes = process.argv.slice(2).map(Number)
if (!sizes.length || sizes.some((n) => !Number.isInteger(n) || n < 1)) {
  process.stderr.write('usage: tsx scripts/bench-import.ts LINES [LINES...]\n')
  process.exit(1)
}

for (const lines of sizes) {
  const dir = await mkdtemp(join(tmpdir(), 'bench-import-'))
  try {
    const env = { ...process.env, DATA_DIR: join(dir, 'data') }
    const stores = await openNodeStores(env)
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

    const run = spawnSync('/usr/bin/time', ['-v', process.execPath, '--import', 'tsx', 'scripts/import.ts', '--file', file], {
      env,
      encoding: 'utf8',
    })
    const maxKb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(run.stderr)?.[1] ?? 0)
    // h:mm:ss.ss or m:ss.ss
    const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)/.exec(run.stderr)?.[1] ?? ''
    const seconds = wall.split(':').reduce((total, part) => total * 60 + Number(part), 0)
    if (run.status !== 0) process.stderr.write(run.stderr.slice(-2000))
    const check = await openNodeStores(env)
    const [stored] = await check.clickhouse.query<Record<string, string>>(
      `SELECT count() AS events, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits,
        countIf(name = 'pageview') AS pageviews FROM events`,
      {},
    )
    await check.close()
    process.stdout.write(
      `${JSON.stringify({
        lines: Math.min(written, lines),
        result: run.stdout.trim(),
        maxRssMB: Math.round(maxKb / 1024),
        seconds,
        hitsPerSecond: seconds ? Math.round(Math.min(written, lines) / seconds) : null,
        stored: Object.fromEntries(Object.entries(stored).map(([k, v]) => [k, Number(v)])),
      })}\n`,
    )
  } finally {
    if (process.env.BENCH_KEEP) process.stdout.write(`kept ${dir}\n`)
    else await rm(dir, { recursive: true, force: true })
  }
}
