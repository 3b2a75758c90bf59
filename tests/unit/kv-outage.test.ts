import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { asApiError } from '../../functions/invoke'
import { StoreUnavailableError } from '../../lib/storage/errors'
import { type RedisCommand, rawRequester } from '../../lib/storage/kv/raw'
import { TcpRedis } from '../../lib/storage/kv/tcp'
import { type OwnRedis, REDIS_SERVER, startOwnRedis } from '../own-redis'

/**
 * ioredis fails each command of a pipeline or a transaction on its own: a command that never got
 * Redis's answer must fail the call as an outage, as a single command does, and not reach
 * `@upstash/redis` as the command's reply (an UpstashError, answered 500).
 */
describe.skipIf(!REDIS_SERVER)('TcpRedis pipelines and transactions when Redis stalls or is gone', () => {
  let redis: OwnRedis
  let tcp: TcpRedis
  beforeAll(async () => {
    redis = await startOwnRedis()
    tcp = new TcpRedis(redis.url, 300)
  })
  afterAll(async () => {
    redis.resume()
    await tcp.close()
    await redis.kill()
  })

  it("keeps Redis's own refusal of one command an answer of that command", async () => {
    await tcp.exec(['SET', 'text', 'x'])
    expect(
      await tcp.pipeline([
        ['INCR', 'text'],
        ['GET', 'text'],
      ]),
    ).toEqual([{ error: 'ERR value is not an integer or out of range' }, { result: 'x' }])
    expect(
      await tcp.transaction([
        ['INCR', 'text'],
        ['GET', 'text'],
      ]),
    ).toEqual([{ error: 'ERR value is not an integer or out of range' }, { result: 'x' }])
  })

  /** A pipeline and a transaction both fail as an outage, not as per-command answers. */
  const expectPipelineAndTransactionOutages = async () => {
    const commands: RedisCommand[] = [
      ['SET', 'a', '1'],
      ['GET', 'a'],
    ]
    await expect(tcp.pipeline(commands)).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(tcp.transaction(commands)).rejects.toBeInstanceOf(StoreUnavailableError)
  }

  it('fails a pipeline and a transaction as an outage while the server is paused', async () => {
    redis.pause()
    try {
      await expectPipelineAndTransactionOutages()
    } finally {
      redis.resume()
    }
  })

  it('fails them as an outage once the server is stopped, through @upstash/redis too', async () => {
    await redis.kill()
    await expectPipelineAndTransactionOutages()
    // the daily salt's write: SET NX then GET, pipelined
    const client = new Redis(rawRequester(tcp))
    await expect(client.pipeline().set('salt', 's', { nx: true }).get('salt').exec()).rejects.toBeInstanceOf(StoreUnavailableError)
  })
})

describe('an outage wrapped by a library that called the store', () => {
  it('is answered 503 with Retry-After wherever it is in the cause chain, and a plain failure stays a 500', () => {
    const outage = new StoreUnavailableError('key/value store', 7)
    const wrapped = new Error('rate limit check failed', { cause: new Error('pipeline failed', { cause: outage }) })
    const answered = asApiError(wrapped, new Request('http://api.test/api/v1/me'))
    expect({ status: answered.status, message: answered.message, headers: answered.headers }).toEqual({
      status: 503,
      message: 'key/value store is unavailable; retry in 7 s',
      headers: { 'Retry-After': '7' },
    })
    const circular: Error & { cause?: unknown } = new Error('loop')
    circular.cause = circular
    expect(asApiError(circular, new Request('http://api.test/api/v1/me')).status).toBe(500)
  })
})
