import { Ratelimit } from '@upstash/ratelimit'
import type { Redis } from '@upstash/redis'

/** Per-key budgets (docs/api.md, Limits). */
export const LIMITS = {
  default: { max: 600, windowMs: 60_000 },
  collect: { max: 600, windowMs: 60_000 },
  ping: { max: 60, windowMs: 60_000 },
  proxy: { max: 60, windowMs: 60_000 },
  /**
   * Sign-in links asked for from one client address (lib/accounts/signin.ts). None per e-mail
   * address: anyone could spend it and lock the owner out; an address holds one unused link instead.
   */
  signinClient: { max: 5, windowMs: 15 * 60_000 },
  /** Pages, panels and live figures of the web application and the shared dashboards, per client address (functions/web/budget.ts). */
  webClient: { max: 300, windowMs: 60_000 },
  /** Those of one shared dashboard, from every client together: what a crowd of addresses may ask of one site's reads. */
  sharedSite: { max: 600, windowMs: 60_000 },
  /** Invitations an organization sends a day (lib/accounts/members.ts): its mail goes to addresses it does not own. */
  invitationsOrg: { max: 20, windowMs: 24 * 3600_000 },
  /** Invitations one address is sent a day, by every organization together: an invite-and-cancel loop cannot flood it. */
  invitationsAddress: { max: 3, windowMs: 24 * 3600_000 },
  /**
   * Search Console queries the import asks a minute, per property and per Google account
   * (lib/integrations/search-console/import.ts). Search Console allows 1,200 of each; a sliding
   * window admits up to twice its budget within one rolling minute, so the budget is half of it.
   */
  searchConsoleSite: { max: 600, windowMs: 60_000 },
  searchConsoleUser: { max: 600, windowMs: 60_000 },
} as const
export type LimitClass = keyof typeof LIMITS

export interface LimitResult {
  success: boolean
  limit: number
  remaining: number
  /** Epoch milliseconds when the current fixed window ends. */
  reset: number
  /** On a refusal: milliseconds until one request would be admitted. */
  retryAfterMs?: number
}

/**
 * Under the sliding-window rule a request is admitted while
 * floor((1 - elapsed / window) * previous) + current < max, where previous and current are the
 * admitted counts of the previous and current fixed windows. After a refusal at `now`: the
 * milliseconds until that first holds again (the previous window's weight falls far enough, or,
 * when the current window is full, far enough into the next one).
 */
export function retryAfterMs(max: number, windowMs: number, now: number, previous: number, current: number): number {
  const start = now - (now % windowMs)
  // strictly after the instant the weighted count reaches the bound: one millisecond past it
  if (current < max) return previous > 0 ? Math.max(1, Math.floor(start + windowMs * (1 - (max - current) / previous) - now) + 1) : 1
  return Math.floor(start + windowMs + windowMs * (1 - max / current) - now) + 1
}

export type Limits = Record<LimitClass, { max: number; windowMs: number }>

/**
 * Reads one key may have running at once (docs/api.md, Limits): as many as a dashboard asks for
 * at once. One more is refused, not queued. A slot whose release never comes (its instance died)
 * is free again after `leaseMs`.
 */
export const CONCURRENT_READS = { max: 10, leaseMs: 60_000 }
export type ConcurrencyLimit = typeof CONCURRENT_READS

/** Gives a slot back; calling it again does nothing. */
export type Release = () => Promise<void>

export interface RateLimiter {
  limit(limitClass: LimitClass, identifier: string): Promise<LimitResult>
  /** Takes one of the concurrent-read slots of `identifier`: what gives it back, or null while every slot is held. */
  enter(identifier: string): Promise<Release | null>
}

/** Once-only: a release called twice (an error path and a finally) frees one slot. */
function once(release: () => Promise<unknown>): Release {
  let done = false
  return async () => {
    if (done) return
    done = true
    await release()
  }
}

/**
 * A counting semaphore in a hash: its fields are the slots held, each with when its lease ends.
 * Expired slots go first, then a slot is taken while fewer than the most are held. A hash, not a
 * sorted set, so that the embedded store (which has no sorted sets) runs it too; it holds at most
 * `max` fields.
 */
const ENTER = `local now = tonumber(ARGV[1])
local held = redis.call('HGETALL', KEYS[1])
for i = 1, #held, 2 do
  if tonumber(held[i + 1]) <= now then redis.call('HDEL', KEYS[1], held[i]) end
end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[4], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`

/** Shared across instances: `@upstash/ratelimit` sliding windows in Redis. */
/** Budgets not given keep their defaults. */
export function redisRateLimiter(
  redis: Redis,
  given: Partial<Limits> = LIMITS,
  concurrent: ConcurrencyLimit = CONCURRENT_READS,
): RateLimiter {
  const limits: Limits = { ...LIMITS, ...given }
  const enterScript = redis.createScript<number>(ENTER)
  const limiters = Object.fromEntries(
    Object.entries(limits).map(([name, { max, windowMs }]) => [
      name,
      // no ephemeral cache: it would refuse a key until the fixed window ends, past the moment the sliding window admits it
      new Ratelimit({
        redis,
        prefix: `rl:${name}`,
        limiter: Ratelimit.slidingWindow(max, `${windowMs} ms`),
        analytics: false,
        ephemeralCache: false,
      }),
    ]),
  ) as Record<LimitClass, Ratelimit>
  return {
    async enter(identifier) {
      const key = `cr:${identifier}`
      const token = crypto.randomUUID()
      const now = Date.now()
      const args = [now, concurrent.max, now + concurrent.leaseMs, token, concurrent.leaseMs].map(String)
      if (Number(await enterScript.exec([key], args)) !== 1) return null
      return once(() => redis.hdel(key, token))
    },
    async limit(limitClass, identifier) {
      const { success, limit, remaining, reset } = await limiters[limitClass].limit(identifier)
      if (success) return { success, limit, remaining: Math.max(0, remaining), reset }
      // refusals are rare: read the two windows' counts to say when a request will be admitted
      const { max, windowMs } = limits[limitClass]
      const now = Date.now()
      const window = Math.floor(now / windowMs)
      const [current, previous] = await redis.mget<(string | number | null)[]>(
        `rl:${limitClass}:${identifier}:${window}`,
        `rl:${limitClass}:${identifier}:${window - 1}`,
      )
      return {
        success,
        limit,
        remaining: 0,
        reset,
        retryAfterMs: retryAfterMs(max, windowMs, now, Number(previous ?? 0), Number(current ?? 0)),
      }
    },
  }
}

/**
 * The embedded home's limiter: the same sliding-window rule as the Redis one (the previous
 * window's count weighted by how much of it still overlaps), in process memory.
 */
export function memoryRateLimiter(
  now: () => number = Date.now,
  given: Partial<Limits> = LIMITS,
  concurrent: ConcurrencyLimit = CONCURRENT_READS,
): RateLimiter {
  const limits: Limits = { ...LIMITS, ...given }
  const windows = new Map<string, { start: number; count: number; previous: number }>()
  let prunedAt = 0
  // one process: a slot is held until released (no lease: the process holding it is this one)
  const running = new Map<string, number>()
  return {
    async enter(identifier) {
      const held = running.get(identifier) ?? 0
      if (held >= concurrent.max) return null
      running.set(identifier, held + 1)
      return once(async () => {
        const left = (running.get(identifier) ?? 1) - 1
        if (left > 0) running.set(identifier, left)
        else running.delete(identifier)
      })
    },
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
      if (weighted + w.count >= max)
        return { success: false, limit: max, remaining: 0, reset, retryAfterMs: retryAfterMs(max, windowMs, t, w.previous, w.count) }
      w.count++
      return { success: true, limit: max, remaining: Math.max(0, max - weighted - w.count), reset }
    },
  }
}
