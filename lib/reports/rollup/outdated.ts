import type { ClickHouse } from '../../storage/clickhouse/types'
import { outdatedRows } from '../query/compile/day-rollups'
import { type RolledDays, asRolledDays } from '../query/model'
import { type DaySpan, daySpans } from '../query/range'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { type Fragment, raw, sql } from '../../storage/clickhouse/sql'

type RollupTable = 'day_rollups' | 'flow_rollups' | 'click_rollups' | 'ai_rollups' | 'error_rollups'

/**
 * How many days one build of a rollup takes: a week always (as many as a big site's statement
 * should group at once), and beyond it more days while they hold at most EVENTS_PER_BUILD events
 * together, up to a year. The events bound its groups, and on the embedded engine (one query at a
 * time) how long a read can wait behind it; a small site's history is built in a few statements
 * instead of one per week, each of which costs the engine a part and a plan whatever it holds.
 */
const DAYS_PER_BUILD = 7
const EVENTS_PER_BUILD = 100_000
const MOST_DAYS_PER_BUILD = 366

/** Stale days (in order, `n` their events) in builds of a few days each (DAYS_PER_BUILD). */
export function buildBatches<Day extends { n: string }>(days: readonly Day[]): Day[][] {
  const batches: Day[][] = []
  let batch: Day[] = []
  let events = 0
  for (const day of days) {
    const n = Number(day.n)
    const fits = batch.length < DAYS_PER_BUILD || (events + n <= EVENTS_PER_BUILD && batch.length < MOST_DAYS_PER_BUILD)
    if (!fits) {
      batches.push(batch)
      batch = []
      events = 0
    }
    batch.push(day)
    events += n
  }
  if (batch.length) batches.push(batch)
  return batches
}

/**
 * Builds a rollup table with its own day marker (flow, clicks, AI visibility, errors) for every day `stale` names (the
 * finished days of a window with no rows at their current signature), a few days a build, each
 * build's statements run in order and followed by dropping the table's rows of earlier builds of
 * its days. The signatures are read before the events: a hit landing in between makes the rows
 * mismatch, never stale. Returns the number of days built.
 */
export async function buildStaleDays(
  clickhouse: ClickHouse,
  table: RollupTable,
  siteId: string,
  timezone: string,
  stale: Fragment,
  statementsOf: (spans: DaySpan[], days: RolledDays) => Fragment[],
): Promise<number> {
  const rows = await execute<{ d: string; n: string; s: string }>(clickhouse, stale)
  for (const batch of buildBatches(rows)) {
    const days = asRolledDays(batch)
    for (const statement of statementsOf(daySpans(days.days, timezone), days)) await executeCommand(clickhouse, statement)
    await dropOutdatedRows(clickhouse, table, siteId, timezone, days)
  }
  return rows.length
}

/** After a build of these days, drops a rollup table's rows of them from another signature, timezone or version (never read), when there are any. */
export async function dropOutdatedRows(clickhouse: ClickHouse, table: RollupTable, siteId: string, timezone: string, days: RolledDays) {
  const outdated = outdatedRows(siteId, timezone, days)
  const [old] = await execute<{ n: string }>(clickhouse, sql`SELECT count() AS n FROM ${raw(table)} WHERE ${outdated}`)
  if (Number(old?.n)) await executeCommand(clickhouse, sql`ALTER TABLE ${raw(table)} DELETE WHERE ${outdated}`)
}
