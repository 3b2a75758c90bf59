import { describe, expect, it } from 'vitest'
import { memoryRateLimiter, retryAfterMs } from '../../lib/accounts/ratelimit'

describe('in-process sliding-window limiter', () => {
  it('admits 600 requests a minute per key and refuses the 601st', async () => {
    let now = Date.UTC(2026, 10, 22, 10, 0, 0)
    const limiter = memoryRateLimiter(() => now)
    for (let i = 0; i < 600; i++) expect((await limiter.limit('default', 'key-a')).success).toBe(true)
    const refused = await limiter.limit('default', 'key-a')
    expect(refused).toEqual({ success: false, limit: 600, remaining: 0, reset: now + 60_000, retryAfterMs: 60_001 })
    // another key and another class have their own budgets
    expect((await limiter.limit('default', 'key-b')).success).toBe(true)
    expect((await limiter.limit('collect', 'key-a')).success).toBe(true)
    now += 30_000
    expect((await limiter.limit('default', 'key-a')).success).toBe(false)
    now += 60_000
    // half of the previous window still overlaps: 300 of its 600 count, so 300 more fit
    let admitted = 0
    while ((await limiter.limit('default', 'key-a')).success) admitted++
    expect(admitted).toBe(300)
  })

  it('weighs the previous window by how much of it still overlaps', async () => {
    let now = Date.UTC(2026, 10, 22, 10, 0, 0)
    const limiter = memoryRateLimiter(() => now)
    for (let i = 0; i < 60; i++) await limiter.limit('ping', 'k')
    now += 60_000 + 45_000 // 3/4 into the next window: a quarter of 60 = 15 still counts
    let admitted = 0
    while ((await limiter.limit('ping', 'k')).success) admitted++
    expect(admitted).toBe(45)
  })

  it('says when a refused key will be admitted again, to the millisecond', async () => {
    const start = Date.UTC(2026, 10, 22, 10, 0, 0)
    let now = start + 20_000
    const limiter = memoryRateLimiter(() => now)
    for (let i = 0; i < 40; i++) await limiter.limit('ping', 'k')
    now = start + 60_000 + 10_000 // 1/6 into the next window: floor(40 * 5/6) = 33 count, so 27 more fit
    let admitted = 0
    while ((await limiter.limit('ping', 'k')).success) admitted++
    expect(admitted).toBe(27)
    const refused = await limiter.limit('ping', 'k')
    // by hand: the next admission needs floor((1 - x/60000) * 40) + 27 < 60, so (1 - x/60000) * 40 < 33, x > 10,500 ms
    // into the window; it is 10,000 now, and 10,500 itself is not enough
    expect(refused.retryAfterMs).toBe(501)
    now += 500
    expect((await limiter.limit('ping', 'k')).success).toBe(false)
    now += 1
    expect((await limiter.limit('ping', 'k')).success).toBe(true)
  })

  it('a full window waits for the next one', () => {
    // 60 admitted in this window, none before: at the boundary 60 still weigh 60; a millisecond later 59
    expect(retryAfterMs(60, 60_000, Date.UTC(2026, 0, 1, 0, 0, 45), 0, 60)).toBe(15_001)
    // 30 before and 30 now: admitted when (1 - x/W) * 30 < 30, from the next millisecond
    expect(retryAfterMs(60, 60_000, Date.UTC(2026, 0, 1, 0, 0, 45), 30, 30)).toBe(1)
  })
})
