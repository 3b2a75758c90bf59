import type { ClickHouse } from '../../storage/clickhouse/types'
import { outdatedRows } from '../query/compile/day-rollups'
import { type RolledDays, asRolledDays } from '../query/model'
import { type DaySpan, daySpans } from '../query/range'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { type Fragment, raw, sql } from '../../storage/clickhouse/sql'

type RollupTable = 'day_rollups' | 'flow_rollups' | 'click_rollups' | 'ai_rollups' | 'error_rollups'

/** Days built by one build of a rollup with its own day marker: bounds its groups, and how long a read can wait behind it. */
const MARKED_DAYS_PER_BUILD = 7

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
  for (let i = 0; i < rows.length; i += MARKED_DAYS_PER_BUILD) {
    const days = asRolledDays(rows.slice(i, i + MARKED_DAYS_PER_BUILD))
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
