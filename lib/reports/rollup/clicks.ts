import type { ClickHouse } from '../../storage/clickhouse/types'
import { clickRollupInsertSql, clickStaleDaysSql } from '../query/compile/clicks'
import { asRolledDays } from '../query/model'
import { type ResolvedRange, daySpans } from '../query/range'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { dropOutdatedRows } from './outdated'

/** Days built by one statement of the clicks rollup: bounds its groups, and how long a read can wait behind it. */
const CLICK_DAYS_PER_STATEMENT = 7

/**
 * Builds the clicks rollup (compile/clicks.ts, clickRollupInsertSql) of every finished day of the
 * window that has none at its current signature, then drops the click rows of earlier builds of
 * those days. Returns the number of days built.
 */
export async function refreshClickRollups(
  clickhouse: ClickHouse,
  siteId: string,
  window: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>,
): Promise<number> {
  // the signatures are read before the clicks: a hit landing in between makes the rows mismatch, never stale
  const stale = await execute<{ d: string; n: string; s: string }>(clickhouse, clickStaleDaysSql(siteId, window))
  for (let i = 0; i < stale.length; i += CLICK_DAYS_PER_STATEMENT) {
    const days = asRolledDays(stale.slice(i, i + CLICK_DAYS_PER_STATEMENT))
    for (const statement of clickRollupInsertSql(siteId, window.timezone, daySpans(days.days, window.timezone), days))
      await executeCommand(clickhouse, statement)
    await dropOutdatedRows(clickhouse, 'click_rollups', siteId, window.timezone, days)
  }
  return stale.length
}
