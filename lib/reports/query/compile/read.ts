import type { Fragment } from '../../../storage/clickhouse/sql'
import type { Query, Read } from '../model'
import type { ImportedPlan, Plan } from '../plan'
import { importedBreakdownSql, importedSeriesSql, importedStatsSql } from './imported'
import { botReadSql } from './bots'
import { breakdownSql } from './breakdown'
import { seriesSql } from './series'
import { statsSql } from './stats'

/** The statement of a read under its plan. */
export function readSql(query: Query, read: Read, plan: Plan): Fragment {
  if (plan.table === 'bots') return botReadSql(query, read)
  if (read.kind === 'stats') return statsSql(query, plan)
  if (read.kind === 'series') return seriesSql(query, plan)
  return breakdownSql(query, read.property, plan, read)
}

/** The statement of a read of the ga4 source's imported aggregates under its plan. */
export function importedReadSql(query: Query, read: Read, plan: ImportedPlan): Fragment {
  if (read.kind === 'stats') return importedStatsSql(query, plan)
  if (read.kind === 'series') return importedSeriesSql(query, plan)
  return importedBreakdownSql(query, read.property, plan)
}
