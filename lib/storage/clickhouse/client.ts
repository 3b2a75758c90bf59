import { StoreUnavailableError, isOutOfSpace } from '../errors'
import type { ClickHouse, CommandOptions, InsertOptions, QueryParams } from './types'
import { BACKGROUND_PRIORITY, DEFAULT_READ_TIME_LIMIT_MS } from './execute'

/** The part of `@clickhouse/client` and `@clickhouse/client-web` this service uses; both share it. */
export interface ClickHouseClientLike {
  query(args: {
    query: string
    query_params?: QueryParams
    format: 'JSONEachRow'
    clickhouse_settings?: Record<string, unknown>
  }): Promise<{ json<T>(): Promise<T[]> }>
  command(args: { query: string; query_params?: QueryParams; clickhouse_settings?: Record<string, unknown> }): Promise<unknown>
  insert(args: {
    table: string
    values: readonly object[]
    format: 'JSONEachRow' | 'JSONCompactEachRow'
    columns?: [string, ...string[]]
    clickhouse_settings?: Record<string, unknown>
  }): Promise<unknown>
  close(): Promise<void>
}

/**
 * Bound times are UTC text ('2026-11-20 10:00:00.000') with no zone of their own, which ClickHouse
 * reads in the session's time zone: the server's, or on the embedded engine the machine's (TZ).
 * Every session is UTC, so a server or laptop set to another zone reads the same instants.
 */
export const SESSION_TIMEZONE = 'UTC'

export const CLICKHOUSE_SETTINGS = { output_format_json_quote_64bit_integers: 1, session_timezone: SESSION_TIMEZONE } as const

/**
 * The deduplication token of an insert: the caller's (a retry of the same rows), else a fresh one,
 * so that two inserts of equal rows are never taken for one (as they would be by their hash).
 */
export const insertToken = (options: InsertOptions) => options.token ?? crypto.randomUUID()

/**
 * Whether a server of this version (`SELECT version()`: '26.2.1.1') deduplicates async inserts
 * under their token in the table and in every table its views write, as it does synchronous
 * ones: from 26.2, where one switch (deduplicate_insert, on by default) covers both and the views'
 * tables are deduplicated too. An unreadable version is taken as an older server.
 */
export function asyncInsertsDeduplicate(version: string): boolean {
  const match = /^(\d+)\.(\d+)\./.exec(version)
  if (!match) return false
  const [major, minor] = [Number(match[1]), Number(match[2])]
  return major > 26 || (major === 26 && minor >= 2)
}

/** Whether a row's keys are these columns, in this order (rows built from one literal share them). */
export function sameKeys(row: object, columns: string[]) {
  let i = 0
  for (const key in row) if (key !== columns[i++]) return false
  return i === columns.length
}

/**
 * A failure to reach the server (refused, reset, unreachable, timed out) rather than an answer
 * from it: ClickHouse's own errors carry its numeric code and pass through as they are.
 */
const NETWORK_FAILURE =
  /ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|EAI_AGAIN|socket hang up|fetch failed|Timeout error|network/i

async function reachable<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    const error = err as { code?: unknown; message?: unknown; cause?: { code?: unknown } }
    const text = `${error?.code ?? ''} ${error?.message ?? ''} ${error?.cause?.code ?? ''}`
    // a server out of disk (NOT_ENOUGH_SPACE) is an outage too: it clears when space returns
    if (NETWORK_FAILURE.test(text) || isOutOfSpace(err)) throw new StoreUnavailableError('ClickHouse', 5, { cause: err })
    throw err
  }
}

/**
 * ClickHouse over HTTP. Rows sharing their keys go as JSONCompactEachRow (arrays under one
 * column list): of the formats the client's insert takes, the cheapest to write and for the server
 * to parse but Parquet; other rows go as JSONEachRow. Reads carry the time limit of one read as a
 * setting beside the statement (one the statement sets itself, in its SETTINGS clause, wins).
 *
 * Inserts are async inserts that wait for the flush (an acknowledged insert is stored, and the
 * server gathers many small inserts, a Worker's one hit each, into one part), except where a
 * retry must not store rows twice and the server cannot promise it: an insert under the caller's
 * token (the batching sink's and the import's, which retry a failed insert under the same token)
 * is synchronous on a server before 26.2, whose async inserts skip the deduplication log by
 * default and, before 25.12, do not deduplicate the tables the views write (asyncInsertsDeduplicate).
 */
export function clickhouseOverClient(client: ClickHouseClientLike, options: { readTimeLimitMs?: number } = {}): ClickHouse {
  const bound = { max_execution_time: (options.readTimeLimitMs ?? DEFAULT_READ_TIME_LIMIT_MS) / 1000 }
  // asked once, on the first insert under a caller's token; asked again after a failure
  let deduplicated: Promise<boolean> | undefined
  const asyncDeduplicated = () =>
    (deduplicated ??= reachable(async () => {
      const [row] = await (await client.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' })).json<{ v: string }>()
      return asyncInsertsDeduplicate(row?.v ?? '')
    }).catch((err) => {
      deduplicated = undefined
      throw err
    }))
  return {
    query: <Row>(sql: string, params?: QueryParams) =>
      reachable(async () =>
        (await client.query({ query: sql, query_params: params, format: 'JSONEachRow', clickhouse_settings: bound })).json<Row>(),
      ),
    async command(sql: string, params?: QueryParams, options: CommandOptions = {}) {
      const settings = { mutations_sync: 1, ...(options.bounded ? bound : {}) }
      await reachable(() => client.command({ query: sql, query_params: params, clickhouse_settings: settings }))
    },
    async insert(table: string, rows: readonly object[], options: InsertOptions = {}) {
      if (!rows.length) return
      const columns = Object.keys(rows[0]) as [string, ...string[]]
      const compact = columns.length > 0 && rows.every((row) => sameKeys(row, columns))
      const asynchronous = options.token === undefined || (await asyncDeduplicated())
      await reachable(() =>
        client.insert({
          table,
          ...(compact
            ? { values: rows.map((r) => Object.values(r)), format: 'JSONCompactEachRow', columns }
            : { values: rows, format: 'JSONEachRow' }),
          clickhouse_settings: {
            ...(asynchronous ? { async_insert: 1, wait_for_async_insert: 1 } : {}),
            ...(asynchronous && options.token !== undefined ? { deduplicate_insert: 'enable' } : {}),
            insert_deduplication_token: insertToken(options),
            ...(options.background ? { priority: BACKGROUND_PRIORITY } : {}),
          },
        }),
      )
    },
    close: () => client.close(),
  }
}
