import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Redis } from '@upstash/redis'
import { Lease } from '../../lib/storage/kv/lease'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { EmbeddedRedis } from '../../lib/storage/kv/embedded'
import { type RawRedis, rawRequester } from '../../lib/storage/kv/raw'
import { localEndpointsApp } from '../../functions/local-endpoints'
import { newSite } from '../../lib/sites/sites'
import { NATIVE_SCRIPTS } from '../../lib/ingest/visits-repository'
import { openRepositories } from '../../lib/runtime/repositories'
import { REDIS_URL, rawRedis } from '../helpers'

type Backend = { name: string; open(): Promise<{ raw?: RawRedis; redis: Redis; close(): Promise<void> }> }

const backends: Backend[] = [
  {
    name: 'embedded',
    async open() {
      const raw = new EmbeddedRedis()
      return { raw, redis: new Redis(rawRequester(raw)), close: () => raw.close() }
    },
  },
  {
    name: 'embedded over the local Upstash REST endpoint',
    async open() {
      const raw = new EmbeddedRedis()
      const server = serve({ fetch: localEndpointsApp({ token: 't0ken', chdb: null, raw }).fetch, port: 0, hostname: '127.0.0.1' })
      await new Promise((r) => server.once('listening', r))
      const { port } = server.address() as AddressInfo
      const redis = new Redis({ url: `http://127.0.0.1:${port}/redis`, token: 't0ken', enableTelemetry: false })
      return { raw, redis, close: async () => void server.close() }
    },
  },
]
backends.splice(1, 0, {
  name: 'embedded, running its hot scripts natively',
  async open() {
    const raw = new EmbeddedRedis()
    for (const [lua, native] of NATIVE_SCRIPTS) raw.defineNativeScript(lua, native)
    return { raw, redis: new Redis(rawRequester(raw)), close: () => raw.close() }
  },
})

const redisUrl = REDIS_URL
if (redisUrl) {
  backends.push({
    name: 'Redis over TCP',
    async open() {
      // under the run's REDIS_PREFIX, as every test's keys are
      const raw = rawRedis('redis')
      return { raw, redis: new Redis(rawRequester(raw)), close: () => raw.close() }
    },
  })
}

describe.each(backends)('key/value contract: $name', (backend) => {
  let redis: Redis
  let close: () => Promise<void>
  const ns = `contract:${crypto.randomUUID()}:`

  beforeAll(async () => {
    ;({ redis, close } = await backend.open())
  })
  afterAll(() => close())

  it('a lease has one owner at a time: taken, renewed and released only by its owner, atomically', async () => {
    const lease = new Lease(redis)
    const key = `${ns}lease`
    expect(await lease.take(key, 'a', 60)).toBe(true)
    // another owner can neither take nor free it
    expect(await lease.take(key, 'b', 60)).toBe(false)
    expect(await lease.release(key, 'b')).toBe(false)
    expect(await redis.ttl(key)).toBeGreaterThan(50)
    // its owner renews it: the expiry moves out
    expect(await redis.expire(key, 5)).toBe(1)
    expect(await lease.take(key, 'a', 120)).toBe(true)
    expect(await redis.ttl(key)).toBeGreaterThan(100)
    expect(await lease.release(key, 'a')).toBe(true)
    expect(await lease.release(key, 'a')).toBe(false)
    // free again: the next owner takes it
    expect(await lease.take(key, 'b', 60)).toBe(true)
    // twenty takers at once: exactly one holds it
    const raced = `${ns}lease-raced`
    const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => lease.take(raced, `worker-${i}`, 60)))
    expect(taken.filter(Boolean)).toHaveLength(1)
    // an expired lease is free, and its old owner cannot free its successor's
    const short = `${ns}lease-short`
    expect(await lease.take(short, 'old', 1)).toBe(true)
    await redis.del(short) // as if it expired
    expect(await lease.take(short, 'new', 60)).toBe(true)
    expect(await lease.release(short, 'old')).toBe(false)
    expect(await lease.take(short, 'old', 60)).toBe(false)
  })

  it('strings, counters and expiry behave like Redis', async () => {
    expect(await redis.set(`${ns}s`, 'hello')).toBe('OK')
    expect(await redis.get(`${ns}s`)).toBe('hello')
    expect(await redis.set(`${ns}s`, 'again', { nx: true })).toBeNull()
    expect(await redis.get(`${ns}missing`)).toBeNull()
    expect(await redis.incr(`${ns}n`)).toBe(1)
    expect(await redis.incrby(`${ns}n`, 41)).toBe(42)
    expect(await redis.mget(`${ns}n`, `${ns}missing`, `${ns}s`)).toEqual([42, null, 'hello'])
    expect(await redis.ttl(`${ns}n`)).toBe(-1)
    expect(await redis.expire(`${ns}n`, 100)).toBe(1)
    const ttl = await redis.ttl(`${ns}n`)
    expect(ttl).toBeGreaterThan(95)
    expect(ttl).toBeLessThanOrEqual(100)
    expect(await redis.ttl(`${ns}missing`)).toBe(-2)
    expect(await redis.set(`${ns}short`, 'x', { px: 30 })).toBe('OK')
    await new Promise((r) => setTimeout(r, 80))
    expect(await redis.get(`${ns}short`)).toBeNull()
    expect(await redis.del(`${ns}s`, `${ns}missing`)).toBe(1)
    expect(await redis.exists(`${ns}s`, `${ns}n`)).toBe(1)
  })

  it('hashes and sets behave like Redis', async () => {
    expect(await redis.hset(`${ns}h`, { a: '1', b: 'two' })).toBe(2)
    expect(await redis.hsetnx(`${ns}h`, 'a', '9')).toBe(0)
    expect(await redis.hincrby(`${ns}h`, 'a', 5)).toBe(6)
    expect(await redis.hget(`${ns}h`, 'b')).toBe('two')
    expect(await redis.hgetall(`${ns}h`)).toEqual({ a: 6, b: 'two' })
    expect(await redis.hgetall(`${ns}none`)).toBeNull()
    expect(await redis.hdel(`${ns}h`, 'a', 'zz')).toBe(1)
    expect(await redis.sadd(`${ns}set`, 'x', 'y', 'x')).toBe(2)
    expect((await redis.smembers(`${ns}set`)).sort()).toEqual(['x', 'y'])
    expect(await redis.sismember(`${ns}set`, 'y')).toBe(1)
    expect(await redis.srem(`${ns}set`, 'y')).toBe(1)
    expect(await redis.scard(`${ns}set`)).toBe(1)
    await expect(redis.incr(`${ns}h`)).rejects.toThrow(/WRONGTYPE/)
  })

  it('pipelines and transactions return every reply in order, errors in place', async () => {
    const replies = await redis.pipeline().set(`${ns}p`, 'v').get(`${ns}p`).incr(`${ns}p`).get(`${ns}p`).exec({ keepErrors: true })
    expect(replies.map((r) => r.result)).toEqual(['OK', 'v', undefined, 'v'])
    expect(String(replies[2].error)).toMatch(/not an integer/)
    const tx = await redis.multi().incr(`${ns}t`).incr(`${ns}t`).exec()
    expect(tx).toEqual([1, 2])
  })

  it('runs the domain repositories: orgs, keys, sites, usage', async () => {
    const repositories = openRepositories(redis)
    const now = new Date('2026-11-01T00:00:00Z')
    const org = await createOrg(repositories, 'Contract Org', now)
    expect(await repositories.orgs.get(org.id)).toEqual(org)
    const site = newSite({ domain: `c-${crypto.randomUUID().slice(0, 6)}.example.com`, timezone: 'Asia/Tokyo' }, org.id, now)
    await repositories.sites.create(site)
    await expect(repositories.sites.create({ ...site, id: crypto.randomUUID() })).rejects.toMatchObject({
      name: 'ConflictError',
      message: `domain: ${site.domain} is already a site of this organization`,
    })
    expect(await repositories.sites.get(site.id)).toEqual(site)
    expect(await repositories.sites.idBySnippet(site.snippetId)).toBe(site.id)
    expect((await repositories.sites.list(org.id)).map((s) => s.id)).toEqual([site.id])
    // a swap takes only the record as read: a second swap from the same read is refused
    const read = (await repositories.sites.get(site.id))!
    expect(await repositories.sites.swap(read, { ...read, timezone: 'Europe/Paris' })).toBe(true)
    expect(await repositories.sites.swap(read, { ...read, timezone: 'Europe/Rome' })).toBe(false)
    expect((await repositories.sites.get(site.id))!.timezone).toBe('Europe/Paris')
    expect(await repositories.sites.swap((await repositories.sites.get(site.id))!, site)).toBe(true)

    const key = await createApiKey(repositories, { orgId: org.id, name: 'k', scope: 'write', siteId: site.snippetId }, now)
    expect(key.siteId).toBe(site.id)
    const { sha256Hex } = await import('../../lib/core/crypto')
    expect(await repositories.keys.byHash(await sha256Hex(key.key))).toMatchObject({ id: key.id, scope: 'write', siteId: site.id })
    await repositories.keys.touch(org.id, key.id, '2026-11-02T00:00:00.000Z')
    expect(await repositories.keys.list(org.id)).toEqual([
      expect.objectContaining({ id: key.id, lastUsedAt: '2026-11-02T00:00:00.000Z', revokedAt: null }),
    ])

    await repositories.usage.add(org.id, '2026-11', { [site.id]: { pageview: 3, custom: 1 } })
    await repositories.usage.add(org.id, '2026-11', { [site.id]: { pageview: 2 }, other: { pageview: 1 } })
    expect(await repositories.usage.get(org.id, '2026-11')).toEqual({ pageview: 6, custom: 1 })
    expect(await repositories.usage.bySite(org.id, '2026-11')).toEqual({ [site.id]: { pageview: 5, custom: 1 }, other: { pageview: 1 } })

    // deleting the site frees the domain, forgets the snippet and revokes its bound key
    await repositories.keys.revokeBoundTo(site.id, '2026-11-03T00:00:00.000Z')
    await repositories.sites.delete(site)
    expect(await repositories.sites.get(site.id)).toBeNull()
    expect(await repositories.sites.idBySnippet(site.snippetId)).toBeNull()
    expect(await repositories.sites.list(org.id)).toEqual([])
    expect(await repositories.keys.byHash(await sha256Hex(key.key))).toBeNull()
    expect((await repositories.keys.meta(key.id))!.revokedAt).toBe('2026-11-03T00:00:00.000Z')
    await repositories.sites.create({ ...site, id: crypto.randomUUID() })
  })

  it('assigns visits atomically: runs join within the gap, start anew after it, per visitor', async () => {
    const { visits } = openRepositories(redis)
    const site = crypto.randomUUID()
    const gap = 30 * 60_000
    const t0 = Date.UTC(2026, 10, 1, 10)
    const first = await visits.assignRuns(
      [
        { siteId: site, visitorId: '1', at: t0, until: t0 + 10, candidateId: '11', attrs: '{"src":"a"}' },
        { siteId: site, visitorId: '2', at: t0 + 5, until: t0 + 5, candidateId: '21', attrs: '{"src":"b"}' },
        // the run's last hit, not its first, sets where the gap is measured from
        { siteId: site, visitorId: '1', at: t0 + 10 + gap, until: t0 + 10 + gap + 7, candidateId: '12', attrs: '{"src":"x"}' },
        { siteId: site, visitorId: '1', at: t0 + 10 + 2 * gap + 8, until: t0 + 10 + 2 * gap + 8, candidateId: '13', attrs: '{"src":"c"}' },
      ],
      gap,
    )
    // visits begun in this call come back without attributes: the caller has them
    expect(first).toEqual([
      { id: '11', start: t0, attrs: null },
      { id: '21', start: t0 + 5, attrs: null },
      { id: '11', start: t0, attrs: null },
      { id: '13', start: t0 + 10 + 2 * gap + 8, attrs: null },
    ])
    const later = await visits.assignRuns(
      [
        { siteId: site, visitorId: '2', at: t0 + gap, until: t0 + gap, candidateId: '22', attrs: '{"src":"d"}' },
        { siteId: site, visitorId: '1', at: t0 + 10 + 2 * gap + 100, until: t0 + 10 + 3 * gap, candidateId: '14', attrs: '{"src":"e"}' },
        { siteId: site, visitorId: '3', at: t0, until: t0, candidateId: '18446744073709551615', attrs: '{"src":"f"}' },
        // an hour after that run's last hit: a new visit
        { siteId: site, visitorId: '1', at: t0 + 10 + 4 * gap + 1, until: t0 + 10 + 4 * gap + 1, candidateId: '15', attrs: '{"src":"g"}' },
      ],
      gap,
    )
    expect(later).toEqual([
      { id: '21', start: t0 + 5, attrs: '{"src":"b"}' },
      { id: '13', start: t0 + 10 + 2 * gap + 8, attrs: '{"src":"c"}' },
      { id: '18446744073709551615', start: t0, attrs: null },
      { id: '15', start: t0 + 10 + 4 * gap + 1, attrs: null },
    ])
  })

  it('forgets visits whose last hit is before a time, and keeps those extended since', async () => {
    const { visits } = openRepositories(redis)
    const site = crypto.randomUUID()
    const gap = 30 * 60_000
    const t0 = Date.UTC(2026, 10, 1, 10)
    const run = (visitorId: string, at: number, until: number, candidateId: string) => ({
      siteId: site,
      visitorId,
      at,
      until,
      candidateId,
      attrs: '{}',
    })
    await visits.assignRuns([run('1', t0, t0 + 100, '11'), run('2', t0, t0 + 5000, '21'), run('3', t0, t0, '31')], gap)
    // before t0 + 5000: visitor 1 (last hit t0 + 100) and 3 (t0); not 2 (t0 + 5000, not before it); 4 has none
    expect(
      await visits.forget(
        [
          { siteId: site, visitorId: '1' },
          { siteId: site, visitorId: '2' },
          { siteId: site, visitorId: '4' },
        ],
        t0 + 5000,
      ),
    ).toBe(1)
    expect(await visits.forget([{ siteId: site, visitorId: '3' }], t0 + 1)).toBe(1)
    // forgotten: a hit within the gap starts a new visit; kept: it joins
    expect(await visits.assignRuns([run('1', t0 + 200, t0 + 200, '12'), run('2', t0 + 6000, t0 + 6000, '22')], gap)).toEqual([
      { id: '12', start: t0 + 200, attrs: null },
      { id: '21', start: t0, attrs: '{}' },
    ])
  })

  it('runs scripts: EVAL, EVALSHA and redis.call, as @upstash/ratelimit sends them', async () => {
    const script = `#!lua flags=allow-key-locking
      local n = redis.call("INCRBY", KEYS[1], tonumber(ARGV[1]))
      if n == tonumber(ARGV[1]) then redis.call("PEXPIRE", KEYS[1], 60000) end
      return {n, redis.call("GET", KEYS[2]), 2.7}`
    expect(await redis.eval(script, [`${ns}e`, `${ns}nothing`], ['5'])).toEqual([5, null, 2])
    const sha = await redis.scriptLoad(script.replace(/^#![^\n]*\n/, ''))
    expect(await redis.evalsha(sha, [`${ns}e`, `${ns}nothing`], ['5'])).toEqual([10, null, 2])
    await expect(redis.evalsha('0'.repeat(40), [], [])).rejects.toThrow(/NOSCRIPT/)
    await expect(redis.eval('return redis.call("NOSUCHCMD")', [], [])).rejects.toThrow(/unknown (redis )?command/i)
  })

  it('carries @upstash/ratelimit: the 61st ping-class request in a window is refused', async () => {
    const { redisRateLimiter } = await import('../../lib/accounts/ratelimit')
    const limiter = redisRateLimiter(redis)
    const id = `${ns}ratelimit`
    // a sliding window weighs in the previous minute: start just after a boundary so it is empty
    const intoWindow = Date.now() % 60_000
    if (intoWindow > 50_000) await new Promise((r) => setTimeout(r, 60_000 - intoWindow + 50))
    const results = []
    for (let i = 0; i < 60; i++) results.push(await limiter.limit('ping', id))
    expect(results.every((r) => r.success)).toBe(true)
    expect(results[59].remaining).toBe(0)
    const refused = await limiter.limit('ping', id)
    expect(refused).toMatchObject({ success: false, limit: 60, remaining: 0 })
    expect(refused.reset).toBeGreaterThan(Date.now())
  })
})
