import { type Fragment, raw, render, sql } from './sql'
import type { ClickHouse, CommandOptions, ReadOptions } from './types'

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

/**
 * A read that ran past the engine's time limit for one statement (`QUERY_TIME_LIMIT_MS`): the API
 * answers it as the caller's 400, naming the limit, for a narrower question to be asked.
 */
export class StatementTimeLimitError extends Error {
  constructor(
    readonly limitMs: number,
    cause: unknown,
  ) {
    super(`the read ran past the time limit of one statement (${limitMs} ms)`, { cause })
    this.name = 'StatementTimeLimitError'
  }
}

/** How long one read may run on the engine unless the deployment sets `QUERY_TIME_LIMIT_MS`. */
export const DEFAULT_READ_TIME_LIMIT_MS = 10_000

/** A trailing settings clause of a statement: `SETTINGS name = value, ...` and nothing after it. */
const TRAILING_SETTINGS = /\bSETTINGS\s+\w+\s*=\s*[\w.']+(\s*,\s*\w+\s*=\s*[\w.']+)*\s*$/i

/**
 * A read with the engine's time limit on it, for a home that cannot pass settings beside the
 * statement (the embedded engine): added to its trailing settings clause, or as one. A statement
 * that sets its own limit (background work: 0, none) keeps it.
 */
export function withTimeLimit(sql: string, limitMs: number): string {
  const text = sql.trimEnd()
  const clause = TRAILING_SETTINGS.exec(text)
  const limit = `max_execution_time = ${limitMs / 1000}`
  if (!clause) return `${text}\nSETTINGS ${limit}`
  return /\bmax_execution_time\b/i.test(clause[0]) ? text : `${text}, ${limit}`
}

/** The engine's own limit, as it words it in its error: "Timeout exceeded: elapsed 1001 ms, maximum: 1000 ms". */
function timeLimitOf(err: unknown): number | null {
  const error = err as { code?: unknown; message?: unknown }
  const text = String(error?.message ?? '')
  if (String(error?.code) !== '159' && !/TIMEOUT_EXCEEDED|Code: 159\b/.test(text)) return null
  const maximum = /maximum: ([\d.]+) (ms|sec|s)\b/.exec(text)
  return maximum ? Math.round(Number(maximum[1]) * (maximum[2] === 'ms' ? 1 : 1000)) : 0
}

async function withPatternErrors<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    if (/CANNOT_COMPILE_REGEXP|Code: 427\b/.test(String((err as Error).message))) throw new InvalidPatternError(err)
    const limitMs = timeLimitOf(err)
    if (limitMs !== null) throw new StatementTimeLimitError(limitMs, err)
    throw err
  }
}

/** Runs a statement and returns its rows. */
export async function execute<Row>(clickhouse: ClickHouse, statement: Fragment, options?: ReadOptions): Promise<Row[]> {
  const compiled = render(statement)
  return withPatternErrors(clickhouse.query<Row>(compiled.sql, compiled.params, options))
}

/**
 * How much a statement yields to others (ClickHouse's `priority`: 1 is the highest, 0 none). Reads
 * run at 1 on the embedded engine (chdb.ts); background work (the rollup job's builds, the
 * journal's inserts) at BACKGROUND, so the engine pauses it while a read runs.
 */
export const BACKGROUND_PRIORITY = 10

/**
 * The settings of background work: it yields to reads, and runs as long as it needs (reads are
 * bounded by the engine's time limit; a rollup build over a large site's history may take longer).
 */
export const BACKGROUND_SETTINGS = `priority = ${BACKGROUND_PRIORITY}, max_execution_time = 0`

/** An INSERT ... SELECT of background work: it yields to reads. */
export const inBackground = (statement: Fragment): Fragment => sql`${statement} SETTINGS ${raw(BACKGROUND_SETTINGS)}`

/** Runs a statement that returns no rows (a rollup build); `bounded` when a read waits for it. */
export async function executeCommand(clickhouse: ClickHouse, statement: Fragment, options?: CommandOptions): Promise<void> {
  const compiled = render(statement)
  await withPatternErrors(clickhouse.command(compiled.sql, compiled.params, options))
}
