import type { ClickHouse } from '../../storage/clickhouse/types'
import { type FlowAnchor, flowRolledDaysSql, flowRollupInsertSql, flowRollupProperty, flowStaleDaysSql } from '../query/compile/flow'
import { type Query, type RolledDays, asRolledDays } from '../query/model'
import { type SignatureRow, daysOnDemand, filteredRollupKey, lastDayOf } from '../query/plan'
import { type ResolvedRange, daySpans } from '../query/range'
import { execute, executeCommand, inBackground } from '../../storage/clickhouse/execute'
import { buildStaleDays } from './outdated'
import { buildAfterAnswer } from '../query/run'

/**
 * Builds the flow rollup (compile/flow.ts, flowRollupInsertSql: its cells run at background priority) of every finished day of the
 * window that has none at its current signature, then drops the flow rows of earlier builds of
 * those days. Returns the number of days built.
 */
export const refreshFlowRollups = (clickhouse: ClickHouse, siteId: string, window: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>) =>
  buildStaleDays(clickhouse, 'flow_rollups', siteId, window.timezone, flowStaleDaysSql(siteId, window), (spans, days) => {
    const [cells, built] = flowRollupInsertSql(siteId, window.timezone, spans, days)
    return [cells, inBackground(built)]
  })

/**
 * A filtered flow's rolled days over a window of whole days, as a filtered read's (plan.ts,
 * filteredPlan): its anchor's flow rolled up under the filters' key (compile/flow.ts,
 * flowRollupInsertSql). Finished days not rolled up at their current signature are built first, in
 * one statement; when none of the window's days is rolled up yet (a filter's first read), the read
 * answers from visit_pages instead and `buildAfter` builds them once it has answered: reading the
 * window once costs less than rolling it up and then reading the rollup. Later reads take the days
 * from the rollup until a day's events change (a late hit), when that day is built again. Rows of
 * another signature are never read, and expire with the others. A transient query builds nothing:
 * it takes the days rolled up already and reads the rest from visit_pages.
 */
export async function filteredFlowDays(
  clickhouse: ClickHouse,
  query: Query,
  anchor: FlowAnchor,
): Promise<{ rolled: RolledDays; buildAfter?: () => void }> {
  const key = await filteredRollupKey(query, flowRollupProperty(anchor))
  const rows = await execute<SignatureRow>(clickhouse, flowRolledDaysSql(query.siteId, query.range, key))
  const { missing, rolled, ready } = daysOnDemand(rows, lastDayOf(query.range))
  if (query.transient) return { rolled: { ...ready, filtersKey: key } }
  if (!missing.length) return { rolled: { ...rolled, filtersKey: key } }
  const days = asRolledDays(missing)
  const statements = flowRollupInsertSql(query.siteId, query.range.timezone, daySpans(days.days, query.range.timezone), days, {
    query,
    key,
    anchor,
  })
  const build = async () => {
    for (const statement of statements) await executeCommand(clickhouse, statement, { bounded: true })
  }
  if (missing.length === rolled.days.length)
    return {
      rolled: asRolledDays([]),
      buildAfter: () => buildAfterAnswer(query.siteId, `${query.range.timezone}|${key}`, build),
    }
  await build()
  return { rolled: { ...rolled, filtersKey: key } }
}
