import { type IncomingMessage, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openRepositories } from '../../lib/runtime/repositories'
import { StoreUnavailableError } from '../../lib/storage/errors'
import { EmbeddedRedis } from '../../lib/storage/kv/embedded'
import { runUpstashRequest } from '../../lib/storage/kv/raw'
import { upstashRequester } from '../../lib/storage/kv/upstash'
import { harness } from '../helpers'

/**
 * A local server speaking Upstash's REST protocol (POST a command, a pipeline or a transaction as
 * JSON, answered `{result}` or `{error}`) over an embedded store, that can be told to stall: it
 * then takes requests and never answers, as a Redis behind it that is paused would.
 */
describe('Upstash over REST that stalls (the Workers home, and Node with UPSTASH_REDIS_REST_URL)', () => {
  const raw = new EmbeddedRedis()
  let stalled = false
  let throttled = false
  const held: ServerResponse[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', async () => {
      if (req.headers.authorization !== 'Bearer token') return void res.writeHead(401).end('{"error":"Unauthorized"}')
      if (stalled) return void held.push(res)
      if (throttled)
        return void res.writeHead(429, { 'content-type': 'application/json' }).end('{"error":"ERR max requests limit exceeded"}')
      const path = new URL(req.url!, 'http://x').pathname.split('/').filter(Boolean)
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await runUpstashRequest(raw, path, JSON.parse(body))))
    })
  })
  let url = ''
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    for (const res of held) res.destroy()
    server.close()
    await raw.close()
  })
  const redisAt = (timeoutMs: number) => new Redis(upstashRequester({ url, token: 'token', timeoutMs }))

  it('a call past KV_TIMEOUT_MS is an outage, and the next call after the stall answers', async () => {
    const redis = redisAt(300)
    await redis.set('k', 'v')
    stalled = true
    try {
      await expect(redis.get('k')).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(redis.pipeline().get('k').incr('n').exec()).rejects.toBeInstanceOf(StoreUnavailableError)
    } finally {
      stalled = false
    }
    expect(await redis.get('k')).toBe('v')
    // Redis's own refusal stays one: no outage
    const refused = await redis.incr('k').catch((err: unknown) => err)
    expect(refused).not.toBeInstanceOf(StoreUnavailableError)
    expect(String(refused)).toMatch(/not an integer/)
  })

  it('a call Upstash throttles (429) is an outage too, a single command or a pipeline', async () => {
    const redis = redisAt(300)
    throttled = true
    try {
      await expect(redis.get('k')).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(redis.pipeline().get('k').incr('n').exec()).rejects.toBeInstanceOf(StoreUnavailableError)
    } finally {
      throttled = false
    }
    expect(await redis.get('k')).toBe('v')
  })

  it('makes a keyed request answer 503 with Retry-After while it stalls, and heals', async () => {
    const kv = redisAt(300)
    const t = await harness({ with: { kv, repositories: openRepositories(kv) } })
    // through the app itself: the test client treats any 5xx as a failure of the test
    const me = () => t.app.request('http://api.test/api/v1/me', { headers: { authorization: `Bearer ${t.a.read.key}` } })
    expect((await me()).status).toBe(200)
    stalled = true
    try {
      const res = await me()
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('5')
      expect(await res.json()).toEqual({ error: 'key/value store is unavailable; retry in 5 s' })
      const health = await t.app.request('http://api.test/health')
      expect(health.status).toBe(503)
      expect(await health.json()).toMatchObject({ status: 'degraded', keyValue: 'unavailable' })
    } finally {
      stalled = false
    }
    expect((await me()).status).toBe(200)
  })
})
