import type { Olap } from './types'

/** Whether the engine answers a query at all. */
export async function engineAnswers(olap: Olap): Promise<void> {
  await olap.query('SELECT 1 AS ok')
}
