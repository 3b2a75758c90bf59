import { type Fragment, raw, render, sql } from './sql'
import type { ClickHouse } from './types'

/**
 * A `matches` pattern the engine's RE2 could not compile. Parsing checks patterns with the
 * JavaScript engine, which accepts some RE2 does not; the API answers this as the caller's 400.
 */
export class InvalidPatternError extends Error {
  constructor(cause: unknown) {
    super('the engine could not compile a regular expression', { cause })
    this.name = 'InvalidPatternError'
  }
}

async function withPatternErrors<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    if (/CANNOT_COMPILE_REGEXP|Code: 427\b/.test(String((err as Error).message))) throw new InvalidPatternError(err)
    throw err
  }
}

/** Runs a statement and returns its rows. */
export async function execute<Row>(clickhouse: ClickHouse, statement: Fragment): Promise<Row[]> {
  const compiled = render(statement)
  return withPatternErrors(clickhouse.query<Row>(compiled.sql, compiled.params))
}

/**
 * How much a statement yields to others (ClickHouse's `priority`: 1 is the highest, 0 none). Reads
 * run at 1 on the embedded engine (chdb.ts); background work (the rollup job's builds, the
 * journal's inserts) at BACKGROUND, so the engine pauses it while a read runs.
 */
export const BACKGROUND_PRIORITY = 10

/** An INSERT ... SELECT of background work: it yields to reads. */
export const inBackground = (statement: Fragment): Fragment => sql`${statement} SETTINGS priority = ${raw(String(BACKGROUND_PRIORITY))}`

/** Runs a statement that returns no rows (a rollup build). */
export async function executeCommand(clickhouse: ClickHouse, statement: Fragment): Promise<void> {
  const compiled = render(statement)
  await withPatternErrors(clickhouse.command(compiled.sql, compiled.params))
}
