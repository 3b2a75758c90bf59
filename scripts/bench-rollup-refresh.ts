import { rmSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { createOrg } from '../lib/accounts/admin'
import { demoHits } from '../lib/ingest/demo-traffic'
import { importHits } from '../lib/ingest/import'
import { Ingestor } from '../lib/ingest/pipeline'
import { directSink } from '../lib/ingest/sink'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'
import { openNodeStores } from '../lib/runtime/node'
import { SiteDirectory } from '../lib/sites/site-directory'
import { newSite } from '../lib/sites/sites'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import type { ClickHouse } from '../lib/storage/clickhouse/types'

/**
 * What the full rollup refresh (the one run at start, after an import and daily) costs a site's
 * history: one site of `--days` days of demo traffic, imported, then every rollup built from
 * nothing `--runs` times (the rollup tables emptied between runs). Prints each run's time and the
 * statements it sent, by the table they wrote, and the median time.
 *
 *   npm run -s bench:rollup-refresh -- [--days 150] [--visitors-per-day 40] [--runs 3]
 */

const ROLLUP_TABLES = ['day_rollups', 'partial_rollups', 'flow_rollups', 'click_rollups', 'ai_rollups', 'error_rollups']

const program = new Command()
  .option('--days <n>', 'days of traffic', '150')
  .option('--visitors-per-day <n>', 'visitors a day', '40')
  .option('--runs <n>', 'refreshes from nothing', '3')
  .parse()
const opts = program.opts<{ days: string; visitorsPerDay: string; runs: string }>()

/** The engine, counting the writing statements it is sent by the table they name. */
function counted(clickhouse: ClickHouse) {
  const writes = new Map<string, number>()
  const command: ClickHouse['command'] = async (sql, params, options) => {
    const table = /^\s*(?:INSERT INTO|ALTER TABLE)\s+(\w+)/i.exec(sql)?.[1] ?? 'other'
    writes.set(table, (writes.get(table) ?? 0) + 1)
    return clickhouse.command(sql, params, options)
  }
  return { engine: Object.assign(Object.create(clickhouse), { command }) as ClickHouse, writes }
}

const dir = await mkdtemp(join(tmpdir(), 'bench-refresh-'))
const stores = await openNodeStores({ DATA_DIR: dir })
try {
  await migrate(stores.clickhouse, loadMigrations())
  const now = new Date()
  const org = await createOrg(stores.repositories, 'Bench', now)
  const site = newSite({ domain: 'refresh.bench.test', timezone: 'Europe/Berlin' }, org.id, now)
  await stores.repositories.sites.create(site)
  const hits = demoHits({
    site: site.snippetId,
    domain: site.domain,
    days: Number(opts.days),
    visitorsPerDay: Number(opts.visitorsPerDay),
    end: now,
  })
  const imported = await importHits(
    (function* () {
      for (const hit of hits) yield JSON.stringify(hit)
    })(),
    new Ingestor({
      sites: new SiteDirectory(stores.repositories.sites),
      repositories: stores.repositories,
      sink: directSink(stores.clickhouse, stores.repositories),
      now: () => now,
    }),
  )
  console.log(`${imported.imported} hits over ${opts.days} days imported; load average ${loadavg()[0].toFixed(2)}`)
  const times: number[] = []
  for (let run = 0; run < Number(opts.runs); run++) {
    for (const table of ROLLUP_TABLES) await stores.clickhouse.command(`TRUNCATE TABLE ${table}`)
    const { engine, writes } = counted(stores.clickhouse)
    const started = performance.now()
    const days = await refreshRollups(engine, stores.repositories, now, ROLLUP_ALL_DAYS, () => {})
    const ms = performance.now() - started
    times.push(ms)
    const statements = [...writes.values()].reduce((a, b) => a + b, 0)
    const byTable = [...writes].map(([table, n]) => `${table} ${n}`).join(', ')
    console.log(
      `run ${run + 1}: ${days} days built in ${Math.round(ms)} ms, ${statements} statements (${byTable}); load ${loadavg()[0].toFixed(2)}`,
    )
  }
  const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]
  console.log(`median ${Math.round(median)} ms`)
} finally {
  await stores.close()
  rmSync(dir, { recursive: true, force: true })
}
