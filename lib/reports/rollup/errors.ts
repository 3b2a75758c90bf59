import type { ClickHouse } from '../../storage/clickhouse/types'
import { errorRollupInsertSql, errorStaleDaysSql } from '../query/compile/errors'
import type { ResolvedRange } from '../query/range'
import { buildStaleDays } from './outdated'

/**
 * Builds the errors rollup (compile/errors.ts, errorRollupInsertSql) of every finished day of the
 * window that has none at its current signature, then drops the error rows of earlier builds of
 * those days. Returns the number of days built.
 */
export const refreshErrorRollups = (clickhouse: ClickHouse, siteId: string, window: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>) =>
  buildStaleDays(clickhouse, 'error_rollups', siteId, window.timezone, errorStaleDaysSql(siteId, window), (spans, days) =>
    errorRollupInsertSql(siteId, window.timezone, spans, days),
  )
