import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

const REDIS_SERVER = spawnSync('redis-server', ['--version']).status === 0 ? 'redis-server' : null
if (process.env.CI && !REDIS_SERVER) throw new Error('CI is set but redis-server is not installed: the store outage tests would be skipped')

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

describe.skipIf(!REDIS_SERVER)('a Redis that stalls or goes away (a server of its own, paused with SIGSTOP, then killed)', () => {
  let redis: ChildProcess
  let server: RunningServer
  let key = ''
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const started = Date.now()
    const res = await fetch(`${server.url}${path}`, { headers })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), json: await res.json(), ms: Date.now() - started }
  }

  beforeAll(async () => {
    const port = await freePort()
    redis = spawn(REDIS_SERVER!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    for (let i = 0; i < 50; i++) {
      if (
        spawnSync('redis-cli', ['-p', String(port), 'ping'])
          .stdout?.toString()
          .includes('PONG')
      )
        break
      await new Promise((r) => setTimeout(r, 100))
    }
    server = await startServer({
      DATA_DIR: tempDir('outage'),
      REDIS_URL: `redis://127.0.0.1:${port}`,
      KV_TIMEOUT_MS: '1000',
      DEMO: '1',
      SKIP_DEMO_TRAFFIC: '1',
      LOG_LEVEL: 'error',
    })
    key = demoKeys(server.output()).readKey
  })
  afterAll(async () => {
    await server?.stop()
    redis?.kill('SIGKILL')
  })

  it('answers 503 with Retry-After while Redis is paused, /health names it, and all heals when Redis resumes', async () => {
    const auth = { authorization: `Bearer ${key}` }
    expect((await get('/api/v1/me', auth)).status).toBe(200)
    redis.kill('SIGSTOP')
    try {
      const stalled = await get('/api/v1/me', auth)
      expect(stalled.status).toBe(503)
      expect(stalled.retryAfter).toMatch(/^\d+$/)
      expect(stalled.json.error).toMatch(/key\/value store is unavailable; retry in \d+ s/)
      const health = await get('/health')
      expect(health.status).toBe(503)
      expect(health.json).toMatchObject({ status: 'degraded', clickhouse: 'ok', keyValue: 'unavailable' })
      // and since when: the first check that saw it fail, kept by later ones
      const since = health.json.failingSince.keyValue
      expect(new Date(since).getTime()).toBeGreaterThan(Date.now() - 60_000)
      expect((await get('/health')).json.failingSince).toEqual({ keyValue: since })
    } finally {
      redis.kill('SIGCONT')
    }
    // it heals by itself
    let healed = 0
    for (let i = 0; i < 50 && healed !== 200; i++) {
      healed = (await get('/api/v1/me', auth)).status
      if (healed !== 200) await new Promise((r) => setTimeout(r, 200))
    }
    expect(healed).toBe(200)
    const recovered = await get('/health')
    expect(recovered.status).toBe(200)
    expect(recovered.json).toEqual({ status: 'ok', clickhouse: 'ok', keyValue: 'ok' })
  })

  it('answers 503, never 500, once Redis refuses connections', async () => {
    redis.kill('SIGKILL')
    await new Promise((r) => redis.once('exit', r))
    const gone = await get('/api/v1/me', { authorization: `Bearer ${key}` })
    expect(gone.status).toBe(503)
    expect(gone.json.error).toMatch(/key\/value store is unavailable/)
    expect((await get('/health')).status).toBe(503)
  })
})
