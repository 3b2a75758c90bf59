import { describe, expect, it } from 'vitest'
import { memoryRateLimiter } from '../../lib/ratelimit'

describe('in-process sliding-window limiter', () => {
  it('admits 600 requests a minute per key and refuses the 601st', async () => {
    let now = Date.UTC(2026, 10, 22, 10, 0, 0)
    const limiter = memoryRateLimiter(() => now)
    for (let i = 0; i < 600; i++) expect((await limiter.limit('default', 'key-a')).success).toBe(true)
    const refused = await limiter.limit('default', 'key-a')
    expect(refused).toEqual({ success: false, limit: 600, remaining: 0, reset: now + 60_000 })
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
})
