/** Values bound to `{name:Type}` placeholders. User input reaches SQL only this way. */
export type QueryParams = Record<string, unknown>

/** The OLAP querier: ClickHouse embedded (chdb) or over HTTP, behind one interface. */
export interface ClickHouse {
  /**
   * Runs a SELECT and returns its rows (64-bit integers come back as strings). It may run for the
   * engine's time limit of one read (`QUERY_TIME_LIMIT_MS`), unless it sets its own.
   */
  query<Row = Record<string, unknown>>(sql: string, params?: QueryParams, options?: ReadOptions): Promise<Row[]>
  /** Runs a statement that returns no rows (DDL, ALTER, INSERT ... SELECT); unbounded unless `bounded`. */
  command(sql: string, params?: QueryParams, options?: CommandOptions): Promise<void>
  /**
   * Inserts rows as JSON (JSONCompactEachRow where they share their keys). An insert that failed part-way (a view's table written, another
   * not) is retried with the same rows in the same order and the same `token`: what landed the
   * first time is not stored again (migration 0015 keeps the tables' deduplication logs).
   */
  insert(table: string, rows: readonly object[], options?: InsertOptions): Promise<void>
  close(): Promise<void>
}

export interface ReadOptions {
  /**
   * The read's rows may be those of the same statement with the same parameters asked at most this
   * long ago, when no write (insert, command) has finished on the engine since: the embedded engine,
   * the one writer of its data, keeps them. A server, written by other processes, runs every read.
   * For reads whose answer changes only with what is written (not with the clock, beyond what the
   * time allows), asked by several reads of one page.
   */
  reuseMs?: number
}

export interface CommandOptions {
  /** A build a read waits for (a filtered rollup asked for by a request): bounded as reads are. */
  bounded?: boolean
}

export interface InsertOptions {
  /** Names this insert for deduplication; unset, a fresh one (a retry without it is a new insert). */
  token?: string
  /** Background work (the journal's batches): it yields to reads (`priority`, execute.ts). */
  background?: boolean
}
