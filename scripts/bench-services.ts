import { LIMITS, type Limits, memoryRateLimiter } from '../lib/accounts/ratelimit'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { type NodeStores, nodeServices } from '../lib/runtime/node'
import type { Services } from '../lib/runtime/services'

/**
 * The Node home's services for a benchmark that calls the app in process (`app.request`): built
 * by `nodeServices` as the server builds them, on the benchmark's stores and clock, with no budget
 * a benchmark's loop could run out of, no crawler, and every request from one local address.
 */
export function benchServices(stores: Pick<NodeStores, 'clickhouse' | 'kv' | 'repositories'>, now: () => Date): Services {
  const unlimited = Object.fromEntries(Object.keys(LIMITS).map((name) => [name, { max: 1e9, windowMs: 60_000 }])) as Limits
  const services = nodeServices(parseEnv(nodeEnvSchema, { CRAWLER: '0' }), {
    stores: { ...stores, limiter: memoryRateLimiter(Date.now, unlimited) },
    now,
  })
  return { ...services, clientAddress: () => '127.0.0.1' }
}
