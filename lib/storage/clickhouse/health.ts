import type { ClickHouse } from './types'

/** Whether the engine answers a query at all. */
export async function engineAnswers(clickhouse: ClickHouse): Promise<void> {
  await clickhouse.query('SELECT 1 AS ok')
}
