import { describe, expect, it } from 'vitest'
import { demoWanted, nodeEnvSchema, parseEnv } from '../../lib/runtime/env'
import { REDIS_URL, tempDir } from '../helpers'
import { cli, startServer } from './server-process'

describe('what a first start makes', () => {
  it('the demo only on the embedded stores, or when DEMO=1 asks for it', () => {
    const wanted = (env: Record<string, string>) => demoWanted(parseEnv(nodeEnvSchema, env))
    expect(wanted({})).toBe(true)
    expect(wanted({ CLICKHOUSE_URL: 'https://clickhouse.internal:8443' })).toBe(false)
    expect(wanted({ REDIS_URL: 'redis://redis.internal:6379' })).toBe(false)
    expect(wanted({ UPSTASH_REDIS_REST_URL: 'https://x.upstash.io', UPSTASH_REDIS_REST_TOKEN: 't' })).toBe(false)
    expect(wanted({ REDIS_URL: 'redis://redis.internal:6379', DEMO: '1' })).toBe(true)
    expect(wanted({ DEMO: '0' })).toBe(false)
  })

  it('listens on this machine only unless HOST says otherwise', () => {
    expect(parseEnv(nodeEnvSchema, {}).HOST).toBe('127.0.0.1')
    expect(parseEnv(nodeEnvSchema, { HOST: '0.0.0.0' }).HOST).toBe('0.0.0.0')
  })

  it.skipIf(!REDIS_URL)('a production start against Redis makes no demo organization, site or traffic', async () => {
    const env = { DATA_DIR: tempDir('production-start'), REDIS_URL: REDIS_URL!, REDIS_PREFIX: `wa-test:${crypto.randomUUID()}:` }
    const server = await startServer({ ...env, UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', DEMO: '' })
    try {
      expect(server.output()).toContain('no demo data was made')
      expect(server.output()).not.toMatch(/export KEY=/)
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(await cli('admin', ['org', 'list'], env)).toEqual([])
    } finally {
      await server.stop()
    }
  })
})
