import { ApiError } from '../../errors'
import type { Olap } from '../../storage/clickhouse/types'
import { botReadSql } from './compile/bots'
import { breakdownSql } from './compile/breakdown'
import { asRolledDays, filteredRollupKey, signaturesAndBuilt } from './compile/day-rollups'
import { filteredRollupInsertSql } from './compile/rollup-build'
import { chTime, daySpans } from './range'
import { seriesSql } from './compile/series'
import { type Compiled, type Fragment, render } from './compile/sql'
import { statsSql } from './compile/stats'
import { type Query, type Read, type RolledDays, TOTALS } from './model'
import { mayUseRollup, plan, readsBotHits, readsTodayFromEvents } from './plan'

/** An invalid RE2 pattern from a `matches` filter is the caller's 400. */
async function withFilterErrors<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    if (/CANNOT_COMPILE_REGEXP|Code: 427\b/.test(String((err as Error).message))) throw new ApiError(400, 'filters: invalid regular expression in a matches filter')
    throw err
  }
}

/** Runs a statement. */
export async function execute<Row>(olap: Olap, statement: Fragment): Promise<Row[]> {
  const compiled = render(statement)
  return withFilterErrors(olap.query<Row>(compiled.sql, compiled.params))
}

/** Runs a statement that returns no rows (a rollup build, which a filtered read may run). */
export async function executeCommand(olap: Olap, statement: Fragment): Promise<void> {
  const compiled = render(statement)
  await withFilterErrors(olap.command(compiled.sql, compiled.params))
}

/** Rows of signaturesAndBuilt: rolled 0 a day's current signature, 1 a built day's, 2 the newest partial rollup's, 3 its visits' current one. */
type SignatureRow = { rolled: number; d: string; n: string; s: string; b: string }

/**
 * The days of the query's window whose rollup rows match the day's current signature, and (unless
 * `withPartial` is false) the newest partial rollup of its last day when that day is not rolled up
 * (today) and its visits' signature matches.
 */
export async function rolledDays(olap: Olap, query: Pick<Query, 'siteId' | 'range'>, withPartial = true): Promise<RolledDays> {
  const rows = await execute<SignatureRow>(olap, signaturesAndBuilt(query.siteId, query.range, '', withPartial))
  const of = (rolled: number) => rows.filter((r) => Number(r.rolled) === rolled)
  const built = new Set(of(1).map((r) => `${r.d}|${r.n}|${r.s}`))
  const days = asRolledDays(of(0).filter((r) => built.has(`${r.d}|${r.n}|${r.s}`)).sort((a, b) => a.d.localeCompare(b.d)))
  const [partial] = of(2)
  if (partial && !days.days.includes(partial.d)) {
    // the visits begun on its day before its cutoff, now: their quarters' counts summed (the session-id sum wraps at 2^64, as the engine's does)
    const before = `${partial.b.replace(' ', 'T')}Z`
    const quarters = of(3).filter((r) => `${r.d.replace(' ', 'T')}Z` < before)
    const events = quarters.reduce((n, r) => n + BigInt(r.n), 0n)
    const sum = BigInt.asUintN(64, quarters.reduce((n, r) => n + BigInt(r.s), 0n))
    if (String(events) === partial.n && String(sum) === partial.s) {
      const [span] = daySpans([partial.d], query.range.timezone)
      days.partial = { day: partial.d, from: chTime(span.from), to: chTime(span.to), before: `${partial.b}.000`, events: partial.n, sum: partial.s }
    }
  }
  return days
}

/**
 * A filtered read's rolled days. Finished days of the window (all but its last, which is today
 * for the relative ranges) that are not yet rolled up under these filters at their current
 * signature are rolled up first: the first read of a filter pays for its days once, later reads
 * (until a day's events change) read them from the rollup.
 */
async function filteredRolledDays(olap: Olap, query: Query, property: string): Promise<RolledDays> {
  const key = await filteredRollupKey(query, property)
  const rows = await execute<SignatureRow>(olap, signaturesAndBuilt(query.siteId, query.range, key))
  const signature = (r: { d: string; n: string; s: string }) => `${r.d}|${r.n}|${r.s}`
  const built = new Set(rows.filter((r) => Number(r.rolled) === 1).map(signature))
  const current = rows.filter((r) => Number(r.rolled) === 0).sort((a, b) => a.d.localeCompare(b.d))
  const lastDay = query.range.to.subtract({ days: 1 }).toPlainDate().toString()
  const missing = current.filter((r) => !built.has(signature(r)) && r.d < lastDay)
  if (missing.length) {
    const days = asRolledDays(missing)
    await executeCommand(olap, filteredRollupInsertSql(query, key, property, daySpans(days.days, query.range.timezone), days))
    for (const r of missing) built.add(signature(r))
  }
  return { ...asRolledDays(current.filter((r) => built.has(signature(r)))), filtersKey: key }
}

/** The rolled days a read may use: undefined where its plan cannot use the rollup. */
export async function rolledForRead(olap: Olap, query: Query, read: Read): Promise<RolledDays | undefined> {
  if (!mayUseRollup(query, read)) return undefined
  if (!query.filters.length) return rolledFor(olap, query, readsTodayFromEvents(read))
  return filteredRolledDays(olap, query, read.kind === 'breakdown' ? read.property : TOTALS)
}

/**
 * The rolled-up days of a window, looked up once per resolved range and site (with or without the
 * partial rollup): the reads of one request (an export's every breakdown, totals and series)
 * share the range object and the lookup.
 */
const rolledByRange = new WeakMap<object, Map<string, Promise<RolledDays>>>()
function rolledFor(olap: Olap, query: Query, withPartial: boolean): Promise<RolledDays> {
  let bySite = rolledByRange.get(query.range)
  if (!bySite) rolledByRange.set(query.range, (bySite = new Map()))
  const key = `${query.siteId}|${withPartial}`
  let days = bySite.get(key)
  if (!days) bySite.set(key, (days = rolledDays(olap, query, withPartial)))
  return days
}

/** The statement of a read under its plan. */
function statement(query: Query, read: Read, rolled: RolledDays | undefined): Fragment {
  if (readsBotHits(query, read)) return botReadSql(query, read)
  const chosen = plan(query, read, rolled)
  if (read.kind === 'stats') return statsSql(query, chosen)
  if (read.kind === 'series') return seriesSql(query, chosen)
  return breakdownSql(query, read.property, chosen, read.reports)
}

/** The SQL and parameters of a read, given the rolled days of its window (for tests and the bench). */
export const compileRead = (query: Query, read: Read, rolled?: RolledDays): Compiled => render(statement(query, read, rolled))

/** Runs one read: the rolled days where the plan may use them (rolling a filtered read's days up first), then the statement of the plan. */
export async function runRead<Row = Record<string, unknown>>(olap: Olap, query: Query, read: Read): Promise<Row[]> {
  return execute<Row>(olap, statement(query, read, await rolledForRead(olap, query, read)))
}
