/** Values bound to `{name:Type}` placeholders. User input reaches SQL only this way. */
export type QueryParams = Record<string, unknown>

/** The OLAP querier: ClickHouse embedded (chdb) or over HTTP, behind one interface. */
export interface ClickHouse {
  /** Runs a SELECT and returns its rows (64-bit integers come back as strings). */
  query<Row = Record<string, unknown>>(sql: string, params?: QueryParams): Promise<Row[]>
  /** Runs a statement that returns no rows (DDL, ALTER, INSERT ... SELECT). */
  command(sql: string, params?: QueryParams): Promise<void>
  /** Inserts rows as JSONEachRow. */
  insert(table: string, rows: readonly object[]): Promise<void>
  close(): Promise<void>
}
