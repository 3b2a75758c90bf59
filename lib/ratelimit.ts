import { Ratelimit } from '@upstash/ratelimit'
import type { Redis } from '@upstash/redis'

/** Per-key budgets of spec section 8. */
export const LIMITS = {
  default: { max: 600, windowMs: 60_000 },
  collect: { max: 600, windowMs: 60_000 },
  ping: { max: 60, windowMs: 60_000 },
  proxy: { max: 60, windowMs: 60_000 },
} as const
export type LimitClass = keyof typeof LIMITS

export interface LimitResult {
  success: boolean
  limit: number
  remaining: number
  /** Epoch milliseconds when the budget is whole again. */
  reset: number
}

export type Limits = Record<LimitClass, { max: number; windowMs: number }>

export interface RateLimiter {
  limit(limitClass: LimitClass, identifier: string): Promise<LimitResult>
}

/** Shared across instances: `@upstash/ratelimit` sliding windows in Redis. */
export function redisRateLimiter(redis: Redis, limits: Limits = LIMITS): RateLimiter {
  const limiters = Object.fromEntries(
    Object.entries(limits).map(([name, { max, windowMs }]) => [
      name,
      new Ratelimit({ redis, prefix: `rl:${name}`, limiter: Ratelimit.slidingWindow(max, `${windowMs} ms`), analytics: false }),
    ]),
  ) as Record<LimitClass, Ratelimit>
  return {
    async limit(limitClass, identifier) {
      const { success, limit, remaining, reset } = await limiters[limitClass].limit(identifier)
      return { success, limit, remaining: Math.max(0, remaining), reset }
    },
  }
}

/**
 * The embedded home's limiter: the same sliding-window rule as the Redis one (the previous
 * window's count weighted by how much of it still overlaps), in process memory.
 */
export function memoryRateLimiter(now: () => number = Date.now, limits: Limits = LIMITS): RateLimiter {
  const windows = new Map<string, { start: number; count: number; previous: number }>()
  let prunedAt = 0
  return {
    async limit(limitClass, identifier) {
      const { max, windowMs } = limits[limitClass]
      const t = now()
      const start = t - (t % windowMs)
      if (windows.size > 100_000 && prunedAt !== start) {
        prunedAt = start
        // forget identifiers idle for two windows: they no longer weigh on anything
        for (const [key, w] of windows) if (w.start < start - windowMs) windows.delete(key)
      }
      const key = `${limitClass}:${identifier}`
      let w = windows.get(key)
      if (!w || w.start !== start) {
        const previous = w && w.start === start - windowMs ? w.count : 0
        w = { start, count: 0, previous }
        windows.set(key, w)
      }
      const weighted = Math.floor((1 - (t - start) / windowMs) * w.previous)
      const reset = start + windowMs
      if (weighted + w.count >= max) return { success: false, limit: max, remaining: 0, reset }
      w.count++
      return { success: true, limit: max, remaining: Math.max(0, max - weighted - w.count), reset }
    },
  }
}
