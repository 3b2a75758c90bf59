import { ApiError } from '../errors'
import type { Olap } from '../olap/types'
import { botReadSql } from './compile/bots'
import { breakdownSql } from './compile/breakdown'
import { asRolledDays, signaturesAndBuilt } from './compile/day-rollups'
import { seriesSql } from './compile/series'
import { type Compiled, type Fragment, render } from './compile/sql'
import { statsSql } from './compile/stats'
import type { Query, Read, RolledDays } from './model'
import { mayUseRollup, plan, readsBotHits } from './plan'

/** Runs a statement; an invalid RE2 pattern from a `matches` filter is the caller's 400. */
export async function execute<Row>(olap: Olap, statement: Fragment): Promise<Row[]> {
  const compiled = render(statement)
  try {
    return await olap.query<Row>(compiled.sql, compiled.params)
  } catch (err) {
    if (/CANNOT_COMPILE_REGEXP|Code: 427\b/.test(String((err as Error).message))) throw new ApiError(400, 'filters: invalid regular expression in a matches filter')
    throw err
  }
}

/** Runs a statement that returns no rows (the rollup build). */
export async function executeCommand(olap: Olap, statement: Fragment): Promise<void> {
  const compiled = render(statement)
  await olap.command(compiled.sql, compiled.params)
}

/** The days of the query's window whose rollup rows match the day's current signature. */
export async function rolledDays(olap: Olap, query: Pick<Query, 'siteId' | 'range'>): Promise<RolledDays> {
  const rows = await execute<{ rolled: number; d: string; n: string; s: string }>(olap, signaturesAndBuilt(query.siteId, query.range))
  const built = new Set(rows.filter((r) => r.rolled).map((r) => `${r.d}|${r.n}|${r.s}`))
  return asRolledDays(rows.filter((r) => !r.rolled && built.has(`${r.d}|${r.n}|${r.s}`)).sort((a, b) => a.d.localeCompare(b.d)))
}

/**
 * The rolled-up days of a window, looked up once per resolved range and site: the reads of one
 * request (an export's every breakdown, totals and series) share the range object and the lookup.
 */
const rolledByRange = new WeakMap<object, Map<string, Promise<RolledDays>>>()
function rolledFor(olap: Olap, query: Query): Promise<RolledDays> {
  let bySite = rolledByRange.get(query.range)
  if (!bySite) rolledByRange.set(query.range, (bySite = new Map()))
  let days = bySite.get(query.siteId)
  if (!days) bySite.set(query.siteId, (days = rolledDays(olap, query)))
  return days
}

/** The statement of a read under its plan. */
function statement(query: Query, read: Read, rolled: RolledDays | undefined): Fragment {
  if (readsBotHits(query, read)) return botReadSql(query, read)
  const chosen = plan(query, read, rolled)
  if (read.kind === 'stats') return statsSql(query, chosen)
  if (read.kind === 'series') return seriesSql(query, chosen)
  return breakdownSql(query, read.property, chosen)
}

/** The SQL and parameters of a read, given the rolled days of its window (for tests and the bench). */
export const compileRead = (query: Query, read: Read, rolled?: RolledDays): Compiled => render(statement(query, read, rolled))

/** Runs one read: the rolled days where the plan may use them, then the statement of the plan. */
export async function runRead<Row = Record<string, unknown>>(olap: Olap, query: Query, read: Read): Promise<Row[]> {
  const rolled = mayUseRollup(query, read) ? await rolledFor(olap, query) : undefined
  return execute<Row>(olap, statement(query, read, rolled))
}
