import type { Redis } from '@upstash/redis'
import type { ClickHouse } from './clickhouse/types'

export type StoreState = 'ok' | 'unavailable'

export interface StoresHealth {
  status: 'ok' | 'degraded'
  clickhouse: StoreState
  keyValue: StoreState
  /** When each failing store was first seen failing by this instance, ISO 8601: how long the outage has lasted. */
  failingSince?: { clickhouse?: string; keyValue?: string }
}

/** Whether the engine answers a query at all. */
export async function engineAnswers(clickhouse: ClickHouse): Promise<void> {
  await clickhouse.query('SELECT 1 AS ok')
}

// per instance: a health check's view of when an outage began, forgotten once the store answers again
const failingSince = new Map<'clickhouse' | 'keyValue', string>()

/** Asks both stores at once; each answers within its own client's timeout (KV_TIMEOUT_MS for Redis). */
export async function storesHealth(stores: { clickhouse: ClickHouse; kv: Redis }, now: Date): Promise<StoresHealth> {
  const [clickhouse, keyValue] = (await Promise.allSettled([engineAnswers(stores.clickhouse), stores.kv.ping()])).map((r) =>
    r.status === 'fulfilled' ? ('ok' as const) : ('unavailable' as const),
  )
  const health: StoresHealth = { status: clickhouse === 'ok' && keyValue === 'ok' ? 'ok' : 'degraded', clickhouse, keyValue }
  for (const [store, state] of [
    ['clickhouse', clickhouse],
    ['keyValue', keyValue],
  ] as const) {
    if (state === 'ok') failingSince.delete(store)
    else if (!failingSince.has(store)) failingSince.set(store, now.toISOString())
  }
  if (failingSince.size) health.failingSince = Object.fromEntries(failingSince)
  return health
}
