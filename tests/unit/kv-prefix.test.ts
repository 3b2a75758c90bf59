import { Redis } from '@upstash/redis'
import { describe, expect, it } from 'vitest'
import { prefixCommand } from '../../lib/storage/kv/prefix'
import { upstashRequester } from '../../lib/storage/kv/upstash'
import { rawRequester } from '../../lib/storage/kv/raw'
import { EmbeddedRedis } from '../../lib/storage/kv/embedded'
import { runUpstashRequest } from '../../lib/storage/kv/raw'
import { TcpRedis } from '../../lib/storage/kv/tcp'
import { REDIS_URL, rawRedis } from '../helpers'

describe('REDIS_PREFIX', () => {
  it('prefixes the keys of a command and nothing else, script keys included', () => {
    expect(prefixCommand('p:', ['MGET', 'a', 'b'])).toEqual(['MGET', 'p:a', 'p:b'])
    expect(prefixCommand('p:', ['SET', 'k', 'v', 'PX', 10])).toEqual(['SET', 'p:k', 'v', 'PX', 10])
    expect(prefixCommand('p:', ['HSET', 'h', 'field', 'value'])).toEqual(['HSET', 'p:h', 'field', 'value'])
    expect(prefixCommand('p:', ['EVALSHA', 'sha', 2, 'k1', 'k2', 'arg'])).toEqual(['EVALSHA', 'sha', 2, 'p:k1', 'p:k2', 'arg'])
    expect(prefixCommand('p:', ['SCRIPT', 'LOAD', 'return 1'])).toEqual(['SCRIPT', 'LOAD', 'return 1'])
  })

  it('the Upstash requester sends every key under the prefix', async () => {
    const raw = new EmbeddedRedis()
    const upstash = (async (url: string, init: RequestInit) => {
      const path = new URL(url).pathname.split('/').filter(Boolean)
      return Response.json(await runUpstashRequest(raw, path, JSON.parse(String(init.body))))
    }) as typeof fetch
    const redis = new Redis(
      upstashRequester({ url: 'http://upstash.test', token: 't', rewrite: (c) => prefixCommand('p:', c), fetch: upstash }),
    )
    await redis.set('a', '1')
    await redis.pipeline().set('b', '2').incr('c').exec()
    expect(await redis.mget('a', 'b', 'c')).toEqual([1, 2, 1])
    const plain = new Redis(rawRequester(raw))
    expect(await plain.mget('p:a', 'p:b', 'p:c', 'a')).toEqual([1, 2, 1, null])
    await raw.close()
  })

  it.runIf(!!REDIS_URL)('over TCP, keys land under the prefix', async () => {
    const prefixed = rawRedis('redis')
    const plain = new TcpRedis(REDIS_URL!)
    const key = `prefix-check-${crypto.randomUUID()}`
    await prefixed.exec(['SET', key, 'x'])
    expect(await plain.exec(['GET', `${process.env.REDIS_PREFIX}${key}`])).toBe('x')
    expect(await plain.exec(['EXISTS', key])).toBe(0)
    await Promise.all([prefixed.close(), plain.close()])
  })
})
