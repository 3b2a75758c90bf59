import { describe, expect, it } from 'vitest'
import { redisRateLimiter } from '../../lib/accounts/ratelimit'
import { client, harness, REDIS_URL } from '../helpers'

describe('per-key rate limits through the app', () => {
  it('the 601st request in a minute is 429 with Retry-After and RateLimit headers (in-process limiter)', async () => {
    let now = new Date('2026-11-22T12:00:10Z')
    const t = await harness({ now: () => now })
    for (let i = 1; i <= 600; i++) {
      const res = await t.call('GET', '/api/v1/me', { key: t.a.read.key })
      expect(res.status).toBe(200)
      if (i === 1 || i === 600) {
        expect(res.headers.get('ratelimit-limit')).toBe('600')
        expect(res.headers.get('ratelimit-remaining')).toBe(String(600 - i))
        expect(res.headers.get('ratelimit-reset')).toBe('50')
      }
    }
    const refused = await t.call('GET', `/api/v1/sites/${t.a.site.id}`, { key: t.a.read.key })
    expect(refused.status).toBe(429)
    expect(refused.json.error).toMatch(/rate limit/)
    // 600 admitted this minute weigh 600 until just after 12:01:00: admitted again 50.001 s from now
    expect(refused.headers.get('retry-after')).toBe('51')
    expect(refused.headers.get('ratelimit-limit')).toBe('600')
    expect(refused.headers.get('ratelimit-remaining')).toBe('0')
    expect(refused.headers.get('ratelimit-reset')).toBe('51')
    expect(refused.headers.get('access-control-allow-origin')).toBe('*')
    // the budget is per key
    expect((await t.call('GET', '/api/v1/me', { key: t.a.write.key })).status).toBe(200)
    // waiting what Retry-After says is enough
    now = new Date(now.getTime() + 51_000)
    expect((await t.call('GET', '/api/v1/me', { key: t.a.read.key })).status).toBe(200)
  })

  it.runIf(!!REDIS_URL)('after a 429 from the shared Redis limiter, waiting Retry-After seconds is enough', async () => {
    const t = await harness({ kv: 'redis' })
    const small = {
      default: { max: 5, windowMs: 3000 },
      collect: { max: 5, windowMs: 3000 },
      ping: { max: 5, windowMs: 3000 },
      proxy: { max: 5, windowMs: 3000 },
    }
    const call = client({ ...t.services, limiter: redisRateLimiter(t.services.kv, small) })
    for (let round = 0; round < 2; round++) {
      let refused: Awaited<ReturnType<typeof call>> | undefined
      for (let i = 0; i < 12 && !refused; i++) {
        const res = await call('GET', '/api/v1/me', { key: t.a.read.key })
        if (res.status === 429) refused = res
      }
      expect(refused?.status).toBe(429)
      const wait = Number(refused!.headers.get('retry-after'))
      expect(wait).toBeGreaterThanOrEqual(1)
      expect(wait).toBeLessThanOrEqual(6)
      await new Promise((r) => setTimeout(r, wait * 1000))
      expect((await call('GET', '/api/v1/me', { key: t.a.read.key })).status).toBe(200)
    }
  })

  it.runIf(!!REDIS_URL)('the 601st request in a minute is 429 with the Redis limiter shared across instances', async () => {
    const t = await harness({ kv: 'redis' })
    // two app instances on one Redis share the budget
    const first = client(t.services)
    const second = client({ ...t.services, limiter: redisRateLimiter(t.services.kv) })
    const intoWindow = Date.now() % 60_000
    if (intoWindow > 45_000) await new Promise((r) => setTimeout(r, 60_000 - intoWindow + 50))
    for (let i = 0; i < 600; i++) expect((await (i % 2 ? first : second)('GET', '/api/v1/me', { key: t.a.read.key })).status).toBe(200)
    const refused = await first('GET', '/api/v1/me', { key: t.a.read.key })
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(refused.headers.get('ratelimit-remaining')).toBe('0')
  })
})
