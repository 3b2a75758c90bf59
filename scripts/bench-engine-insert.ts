import { readFileSync, rmSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { createOrg } from '../lib/accounts/admin'
import { demoHits } from '../lib/ingest/demo-traffic'
import { importHits } from '../lib/ingest/import'
import { Ingestor } from '../lib/ingest/pipeline'
import type { EventRow } from '../lib/ingest/rows'
import { EVENTS_INPUT } from '../lib/ingest/sink'
import { openNodeStores } from '../lib/runtime/node'
import { SiteDirectory } from '../lib/sites/site-directory'
import { newSite } from '../lib/sites/sites'
import type { InsertFormat } from '../lib/storage/clickhouse/chdb'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'

/**
 * What the embedded engine itself costs per stored event: the process's CPU (every thread, from
 * /proc) to insert the same event rows into `events_input` in batches, as the collector's sink and
 * the import insert them, until the merges they start have finished, in four setups, each in a
 * fresh data folder:
 *
 * - `stored`: as the migrations leave it (events, its projection, and the views on it);
 * - `no-views`: events and its projection, the views on events dropped;
 * - `table`: events alone, its projection dropped too;
 * - `stored-unparsed`: as `stored`, the rows inserted from an in-memory table (INSERT SELECT):
 *   what the engine spends beyond parsing the rows' JSON.
 *
 * The first three are measured once for each format rows are sent in (`--format`, a list:
 * JSONCompactEachRow, the default, JSONEachRow, and the binary Native and RowBinary), each
 * beside the others in the same run. The CPU counted includes writing the rows in their format,
 * as the sink's flush does.
 *
 * The rows are made once, by the import's enrichment and sessionization, from the demo traffic.
 * It tells what a hit of the collector or the import cannot cost less than, whatever the
 * JavaScript does, while the engine runs in the same process.
 *
 *   npm run -s bench:engine-insert -- [--visitors-per-day 4000] [--days 20] [--batch 5000] [--runs 3]
 *     [--format JSONCompactEachRow,Native] [--setups stored,no-views,table,stored-unparsed]
 */

const VIEWS_ON_EVENTS = ['sessions_mv', 'quarters_mv', 'visit_pages_mv', 'recent_events_mv', 'page_first_views_mv']
const SETUPS = ['stored', 'no-views', 'table', 'stored-unparsed'] as const
type Setup = (typeof SETUPS)[number]
const FORMATS: InsertFormat[] = ['Native', 'RowBinary', 'JSONCompactEachRow', 'JSONEachRow']

/** This process's CPU seconds (user and system, every thread): fields 14 and 15 of /proc/self/stat, in clock ticks. */
function cpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** The demo traffic's event rows, as the import makes them (nothing is stored). */
async function eventRows(visitorsPerDay: number, days: number): Promise<EventRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-engine-rows-'))
  const stores = await openNodeStores({ DATA_DIR: dir })
  try {
    await migrate(stores.clickhouse, loadMigrations())
    const now = new Date()
    const org = await createOrg(stores.repositories, 'Bench', now)
    const site = newSite({ domain: 'engine.bench.test' }, org.id, now)
    await stores.repositories.sites.create(site)
    const rows: EventRow[] = []
    const ingestor = new Ingestor({
      sites: new SiteDirectory(stores.repositories.sites),
      repositories: stores.repositories,
      sink: {
        write: async (batch) => {
          for (const row of batch.events) rows.push(row)
        },
        flush: async () => {},
      },
      now: () => now,
    })
    const hits = demoHits({ site: site.snippetId, domain: site.domain, days, visitorsPerDay, end: now })
    await importHits(
      (function* () {
        for (const hit of hits) yield JSON.stringify(hit)
      })(),
      ingestor,
    )
    return rows
  } finally {
    await stores.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** One setup's CPU per row, in a fresh data folder. */
async function measure(setup: Setup, format: InsertFormat, rows: EventRow[], batch: number): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-engine-'))
  const stores = await openNodeStores({ DATA_DIR: dir }, { insertFormat: format })
  const engine = stores.clickhouse
  try {
    await migrate(engine, loadMigrations())
    if (setup === 'no-views' || setup === 'table') for (const view of VIEWS_ON_EVENTS) await engine.command(`DROP VIEW IF EXISTS ${view}`)
    if (setup === 'table') await engine.command('ALTER TABLE events DROP PROJECTION IF EXISTS events_by_path')
    if (setup === 'stored-unparsed') {
      await engine.command(`CREATE TABLE bench_rows AS ${EVENTS_INPUT} ENGINE = Memory`)
      for (let i = 0; i < rows.length; i += 50_000) await engine.insert('bench_rows', rows.slice(i, i + 50_000))
    }
    const merging = async () => Number((await engine.query<{ n: string }>('SELECT count() AS n FROM system.merges'))[0].n) > 0
    while (await merging()) await new Promise((r) => setTimeout(r, 100))
    const before = cpuSeconds()
    for (let i = 0; i < rows.length; i += batch) {
      if (setup === 'stored-unparsed')
        await engine.command(`INSERT INTO ${EVENTS_INPUT} SELECT * FROM bench_rows LIMIT {n:UInt64} OFFSET {at:UInt64}`, {
          n: batch,
          at: i,
        })
      else await engine.insert(EVENTS_INPUT, rows.slice(i, i + batch), { background: true })
    }
    // the merges the inserts started are part of their cost
    await new Promise((r) => setTimeout(r, 1000))
    while (await merging()) await new Promise((r) => setTimeout(r, 100))
    const stored = Number((await engine.query<{ n: string }>('SELECT count() AS n FROM events'))[0].n)
    if (stored !== rows.length) throw new Error(`${setup}: ${stored} events stored of ${rows.length}`)
    // the second of waiting for merges costs next to nothing when there are none
    return ((cpuSeconds() - before) * 1e6) / rows.length
  } finally {
    await stores.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A list option's values, each one of `allowed`. */
function listOf<T extends string>(value: string, allowed: readonly T[], option: string): T[] {
  const values = value.split(',').map((v) => v.trim())
  for (const v of values) if (!allowed.includes(v as T)) throw new Error(`${option}: ${v} is not one of ${allowed.join(', ')}`)
  return values as T[]
}

const program = new Command('bench-engine-insert')
  .description("The embedded engine's CPU per event row inserted, with and without the views on events, in each format")
  .option('--visitors-per-day <n>', 'demo visitors a day', '4000')
  .option('--days <n>', 'days of demo traffic', '20')
  .option('--batch <n>', 'rows per insert', '5000')
  .option('--runs <n>', 'runs of each setup, alternating; the median is reported', '3')
  .option('--format <list>', `formats the rows are sent in, measured alternating (${FORMATS.join(', ')})`, 'JSONCompactEachRow,Native')
  .option('--setups <list>', `setups measured (${SETUPS.join(', ')})`, SETUPS.join(','))
  .action(async (opts: { visitorsPerDay: string; days: string; batch: string; runs: string; format: string; setups: string }) => {
    const [visitorsPerDay, days, batch, runs] = [opts.visitorsPerDay, opts.days, opts.batch, opts.runs].map(Number)
    if (![visitorsPerDay, days, batch, runs].every((n) => Number.isInteger(n) && n > 0))
      throw new Error('every option is a whole number above 0')
    const formats = listOf(opts.format, FORMATS, '--format')
    const setups = listOf(opts.setups, SETUPS, '--setups')
    // rows read from an in-memory table are sent in no format: measured once
    const cases = setups.flatMap((setup): { setup: Setup; format: InsertFormat; name: string }[] =>
      setup === 'stored-unparsed'
        ? [{ setup, format: formats[0], name: setup }]
        : formats.map((format) => ({ setup, format, name: `${setup} ${format}` })),
    )
    const rows = await eventRows(visitorsPerDay, days)
    process.stderr.write(`${rows.length} event rows, ${batch} an insert\n`)
    const results = new Map<string, number[]>(cases.map((c) => [c.name, []]))
    const loads: string[] = []
    for (let run = 0; run < runs; run++) {
      for (const { setup, format, name } of cases) {
        const micros = await measure(setup, format, rows, batch)
        results.get(name)!.push(micros)
        const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0]
        loads.push(load)
        process.stderr.write(`run ${run + 1} ${name}: ${micros.toFixed(1)} µs a row (load ${load})\n`)
      }
    }
    const medians = Object.fromEntries([...results].map(([name, values]) => [name, Math.round(median(values) * 10) / 10]))
    const runsOf = Object.fromEntries([...results].map(([name, values]) => [name, values.map((v) => Math.round(v * 10) / 10)]))
    process.stdout.write(
      `${JSON.stringify({ rows: rows.length, batch, runs, cpuMicrosecondsPerRow: medians, eachRun: runsOf, loadAverages: loads }, null, 2)}\n`,
    )
  })

await program.parseAsync()
process.exit(0)
