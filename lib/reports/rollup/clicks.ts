import type { ClickHouse } from '../../storage/clickhouse/types'
import { clickRollupInsertSql, clickStaleDaysSql } from '../query/compile/clicks'
import type { ResolvedRange } from '../query/range'
import { buildStaleDays } from './outdated'

/**
 * Builds the clicks rollup (compile/clicks.ts, clickRollupInsertSql) of every finished day of the
 * window that has none at its current signature, then drops the click rows of earlier builds of
 * those days. Returns the number of days built.
 */
export const refreshClickRollups = (clickhouse: ClickHouse, siteId: string, window: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>) =>
  buildStaleDays(clickhouse, 'click_rollups', siteId, window.timezone, clickStaleDaysSql(siteId, window), (spans, days) =>
    clickRollupInsertSql(siteId, window.timezone, spans, days),
  )
