import type { ClickHouse } from '../../storage/clickhouse/types'
import { outdatedRows } from '../query/compile/day-rollups'
import type { RolledDays } from '../query/model'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { raw, sql } from '../../storage/clickhouse/sql'

/** After a build of these days, drops a rollup table's rows of them from another signature, timezone or version (never read), when there are any. */
export async function dropOutdatedRows(
  clickhouse: ClickHouse,
  table: 'day_rollups' | 'flow_rollups' | 'click_rollups',
  siteId: string,
  timezone: string,
  days: RolledDays,
) {
  const outdated = outdatedRows(siteId, timezone, days)
  const [old] = await execute<{ n: string }>(clickhouse, sql`SELECT count() AS n FROM ${raw(table)} WHERE ${outdated}`)
  if (Number(old?.n)) await executeCommand(clickhouse, sql`ALTER TABLE ${raw(table)} DELETE WHERE ${outdated}`)
}
