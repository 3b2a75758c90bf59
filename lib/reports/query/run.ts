import { type Compiled, render, sql } from '../../storage/clickhouse/sql'
import { execute, executeCommand, inBackground } from '../../storage/clickhouse/execute'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { signaturesAndBuilt, signaturesAndBuiltOfKeys } from './compile/day-rollups'
import { importedReadSql, readSql } from './compile/read'
import { filteredRollupInsertSql } from './compile/rollup-build'
import type { Query, Read, RolledDays } from './model'
import { scaleCounts } from './sampling'
import {
  type ImportOrigins,
  type ImportedPlan,
  type ReadPlan,
  type RollupBuild,
  type RolledDaysLookup,
  type SignatureRow,
  completePlan,
  plan,
  planImported,
  planRead,
  rolledDaysOf,
} from './plan'

/**
 * Runs what the planner decided: the lookup a plan names, the rollups it builds first, then the
 * read's statement.
 */

/**
 * How long a rolled-days lookup may be answered again without a write in between (ReadOptions):
 * the reads of a dashboard and of its panels, asked together, each look up the same window. Its
 * answer changes only with what is written, and with the two hours a partial rollup is fresh for
 * (far longer than this; its rows are kept an hour beyond).
 */
const LOOKUP_REUSE_MS = 10_000

/** The rows of a rolled-days lookup. */
const lookUp = (clickhouse: ClickHouse, query: Pick<Query, 'siteId' | 'range'>, lookup: RolledDaysLookup) =>
  execute<SignatureRow>(clickhouse, signaturesAndBuilt(query.siteId, query.range, lookup.key, lookup.partial), {
    reuseMs: LOOKUP_REUSE_MS,
  })

/**
 * The unfiltered rolled-days lookup, run once per resolved range and site (with or without the
 * partial rollup): the reads of one request (an export's every breakdown, totals and series) share
 * the range object and the lookup.
 */
const lookedUpByRange = new WeakMap<object, Map<string, Promise<SignatureRow[]>>>()
function lookUpOnce(clickhouse: ClickHouse, query: Pick<Query, 'siteId' | 'range'>, lookup: RolledDaysLookup): Promise<SignatureRow[]> {
  if (lookup.key) return lookUp(clickhouse, query, lookup)
  let bySite = lookedUpByRange.get(query.range)
  if (!bySite) lookedUpByRange.set(query.range, (bySite = new Map()))
  const key = `${query.siteId}|${lookup.partial}`
  // the lookup with the partial rollup holds the one without: its rows 0 and 1
  const wider = lookup.partial ? undefined : bySite.get(`${query.siteId}|true`)
  let rows = bySite.get(key) ?? wider?.then((all) => all.filter((r) => Number(r.rolled) <= 1))
  if (!rows) rows = lookUp(clickhouse, query, lookup)
  bySite.set(key, rows)
  return rows
}

/** The rolled days of a window (unfiltered), with the newest partial rollup of its last day unless `withPartial` is false. */
export async function rolledDays(clickhouse: ClickHouse, query: Pick<Query, 'siteId' | 'range'>, withPartial = true): Promise<RolledDays> {
  return rolledDaysOf(query, await lookUp(clickhouse, query, { key: '', partial: withPartial }))
}

/** A read's complete plan: the planner's, after the lookup it names. */
export async function planOf(clickhouse: ClickHouse, query: Query, read: Read): Promise<ReadPlan> {
  const step = await planRead(query, read)
  if (!step.lookup) return step.plan
  return completePlan(query, read, step.lookup, await lookUpOnce(clickhouse, query, step.lookup))
}

/**
 * The complete plans of several reads of one query (an export's breakdowns): as planOf gives each,
 * the lookups of the rollups built on demand (each its own key, without the partial rollup) run as
 * one statement rather than one each.
 */
export async function plansOf(clickhouse: ClickHouse, query: Query, reads: readonly Read[]): Promise<ReadPlan[]> {
  const steps = await Promise.all(reads.map((read) => planRead(query, read)))
  const keys = [...new Set(steps.flatMap((step) => (step.lookup?.key && !step.lookup.partial ? [step.lookup.key] : [])))]
  const byKey =
    keys.length > 1
      ? await execute<SignatureRow & { k: string }>(clickhouse, signaturesAndBuiltOfKeys(query.siteId, query.range, keys), {
          reuseMs: LOOKUP_REUSE_MS,
        })
      : null
  const rowsOf = (key: string) => byKey?.filter((r) => Number(r.rolled) === 0 || r.k === key) ?? []
  return Promise.all(
    steps.map((step, i) => {
      if (!step.lookup) return step.plan
      if (byKey && step.lookup.key && !step.lookup.partial) return completePlan(query, reads[i], step.lookup, rowsOf(step.lookup.key))
      return planOf(clickhouse, query, reads[i])
    }),
  )
}

/** The SQL and parameters of a read, given the rolled days of its window (for tests and the bench). */
export const compileRead = (query: Query, read: Read, rolled?: RolledDays): Compiled =>
  render(readSql(query, read, plan(query, read, rolled)))

/**
 * The rollup builds started after an answer (a filter's first read, plan.ts; a filtered flow's,
 * rollup/flow.ts), by site, timezone and key: a read that finds its key's build under way starts
 * none. They run as background work; the request's host keeps them alive past the answer
 * (functions/app.ts).
 */
const buildsAfter = new Map<string, { siteId: string; task: Promise<void> }>()

/** Starts a rollup build of a site once a read has answered, unless the same one (`key`: timezone and rollup) is under way. */
export function buildAfterAnswer(siteId: string, key: string, build: () => Promise<unknown>) {
  const id = `${siteId}|${key}`
  if (buildsAfter.has(id)) return
  const task = build()
    .then(() => undefined)
    .catch((err) => console.error('filtered rollup build failed', err))
    .finally(() => buildsAfter.delete(id))
  buildsAfter.set(id, { siteId, task })
}

function buildAfter(clickhouse: ClickHouse, query: Query, build: RollupBuild) {
  buildAfterAnswer(query.siteId, `${query.range.timezone}|${build.key}`, () =>
    executeCommand(clickhouse, inBackground(filteredRollupInsertSql(query, build))),
  )
}

/**
 * Settles once no rollup build started after an answer is under way (of one site, or of any);
 * null when none is. A site's deletion waits for its builds, which would otherwise write rows of
 * it after its rows were deleted.
 */
export function rollupBuildsSettled(siteId?: string): Promise<void> | null {
  const tasks = [...buildsAfter.values()].filter((b) => siteId === undefined || b.siteId === siteId).map((b) => b.task)
  if (!tasks.length) return null
  return Promise.all(tasks).then(() => rollupBuildsSettled(siteId) ?? undefined)
}

/** The rows of a read, and whether they were read from the query's sample (their counts scaled). */
export interface ReadAnswer<Row> {
  rows: Row[]
  sampled: boolean
}

/**
 * Runs one read: its plan's lookup and rollup builds (a filtered read's), then its statement,
 * then the builds its plan leaves for after the answer. A read of a sample has its counts scaled,
 * and says so; a read the plan takes from the rollups is exact.
 */
export async function runSampledRead<Row = Record<string, unknown>>(
  clickhouse: ClickHouse,
  query: Query,
  read: Read,
): Promise<ReadAnswer<Row>> {
  return plannedRead<Row>(clickhouse, query, read, await planOf(clickhouse, query, read))
}

/** Runs one read (runSampledRead) for its rows. */
export async function runRead<Row = Record<string, unknown>>(clickhouse: ClickHouse, query: Query, read: Read): Promise<Row[]> {
  return (await runSampledRead<Row>(clickhouse, query, read)).rows
}

/** runRead under a plan planOf gave for the same query and read (a caller that planned several reads at once). */
export async function runPlanned<Row = Record<string, unknown>>(
  clickhouse: ClickHouse,
  query: Query,
  read: Read,
  plan: ReadPlan,
): Promise<Row[]> {
  return (await plannedRead<Row>(clickhouse, query, read, plan)).rows
}

async function plannedRead<Row>(
  clickhouse: ClickHouse,
  query: Query,
  read: Read,
  { builds, plan, after = [] }: ReadPlan,
): Promise<ReadAnswer<Row>> {
  for (const build of builds) await executeCommand(clickhouse, filteredRollupInsertSql(query, build), { bounded: true })
  const rows = await execute<Row>(clickhouse, readSql(query, read, plan))
  for (const build of after) buildAfter(clickhouse, query, build)
  if (plan.table !== 'events' || !plan.sample || !query.sample) return { rows, sampled: false }
  return { rows: scaleCounts(rows, plan.sample), sampled: true }
}

/** The most rows a read can be asked for (its LIMIT is a UInt32): all of them. */
const EVERY_ROW = 4_294_967_295

/**
 * How many rows a read answers with no limit (a breakdown's, Stats API v2 total_rows): its plan's
 * builds first, as runRead, then its statement counted by the engine, the rows never sent.
 */
export async function countRows(clickhouse: ClickHouse, query: Query, read: Read): Promise<number> {
  const { builds, plan } = await planOf(clickhouse, query, read)
  for (const build of builds) await executeCommand(clickhouse, filteredRollupInsertSql(query, build), { bounded: true })
  const [row] = await execute<{ n: string }>(
    clickhouse,
    sql`SELECT count() AS n FROM (${readSql({ ...query, limit: EVERY_ROW }, read, plan)})`,
  )
  return Number(row?.n ?? 0)
}

/** Runs one read of imported aggregates (GA4's, or every product's): its dataset (planImported), then its statement. */
export async function runImportedRead<Row = Record<string, unknown>>(
  clickhouse: ClickHouse,
  query: Query,
  read: Read,
  origins: ImportOrigins = 'ga4',
): Promise<{ plan: ImportedPlan; rows: Row[] }> {
  const plan: ImportedPlan = { ...planImported(query, read, origins), origins }
  return { plan, rows: await execute<Row>(clickhouse, importedReadSql(query, read, plan)) }
}
