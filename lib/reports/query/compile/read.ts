import type { Fragment } from '../../../storage/clickhouse/sql'
import type { Query, Read } from '../model'
import type { Plan } from '../plan'
import { botReadSql } from './bots'
import { breakdownSql } from './breakdown'
import { seriesSql } from './series'
import { statsSql } from './stats'

/** The statement of a read under its plan. */
export function readSql(query: Query, read: Read, plan: Plan): Fragment {
  if (plan.table === 'bots') return botReadSql(query, read)
  if (read.kind === 'stats') return statsSql(query, plan)
  if (read.kind === 'series') return seriesSql(query, plan)
  return breakdownSql(query, read.property, plan, read.reports)
}
