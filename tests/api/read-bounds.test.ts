import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONCURRENT_READS, memoryRateLimiter, redisRateLimiter } from '../../lib/accounts/ratelimit'
import { rawRequester } from '../../lib/storage/kv/raw'
import { StatementTimeLimitError, execute, executeCommand, inBackground, withTimeLimit } from '../../lib/storage/clickhouse/execute'
import { raw, sql } from '../../lib/storage/clickhouse/sql'
import type { ClickHouse } from '../../lib/storage/clickhouse/types'
import { type Harness, type KvKind, REDIS_URL, harness, rawRedis, testClickHouse } from '../helpers'

/**
 * Every read has a cost bound (docs/api.md, Limits): the engine stops a statement past the time
 * limit of one read, answered 400 naming it, and a key has at most CONCURRENT_READS reads of the
 * analytics store running at once; one more is 429 at once, never queued.
 */

/** Work the engine needs seconds for: a hash of each of 100 billion numbers. */
const SLOW = 'SELECT count() AS n FROM numbers(100000000000) WHERE sipHash64(number) % 7 = 1'

/** The engine of the test process with reads bounded at `limitMs`, as the Node home bounds them at QUERY_TIME_LIMIT_MS. */
function bounded(engine: ClickHouse, limitMs: number): ClickHouse {
  return {
    query: (text, params) => engine.query(withTimeLimit(text, limitMs), params),
    command: (text, params, options) => engine.command(options?.bounded ? withTimeLimit(text, limitMs) : text, params),
    insert: (table, rows, options) => engine.insert(table, rows, options),
    close: async () => {},
  }
}

describe('withTimeLimit', () => {
  it('adds the limit as a settings clause, or to the trailing one, and keeps a limit the statement sets itself', () => {
    expect(withTimeLimit('SELECT 1\n', 2500)).toBe('SELECT 1\nSETTINGS max_execution_time = 2.5')
    expect(withTimeLimit('SELECT 1 SETTINGS prefer_column_name_to_alias = 1', 10_000)).toBe(
      'SELECT 1 SETTINGS prefer_column_name_to_alias = 1, max_execution_time = 10',
    )
    // a settings clause of a subquery is not the statement's
    expect(withTimeLimit('SELECT * FROM (SELECT 1 SETTINGS group_by_use_nulls = 1)', 1000)).toBe(
      'SELECT * FROM (SELECT 1 SETTINGS group_by_use_nulls = 1)\nSETTINGS max_execution_time = 1',
    )
    expect(withTimeLimit("SELECT 1 SETTINGS priority = 10, max_execution_time = 0, x = 'a'", 1000)).toBe(
      "SELECT 1 SETTINGS priority = 10, max_execution_time = 0, x = 'a'",
    )
  })
})

describe('the time limit of one read, on the embedded engine', () => {
  let engine: ClickHouse
  beforeAll(async () => {
    engine = bounded(await testClickHouse(), 300)
  })

  it('stops a read past the limit and names the limit', async () => {
    const started = Date.now()
    const failure = await execute(engine, sql`${raw(SLOW)}`).catch((err) => err)
    expect(failure).toBeInstanceOf(StatementTimeLimitError)
    expect(failure.limitMs).toBe(300)
    // stopped by the engine near the limit, not after the seconds the work needs
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it('stops a build a read waits for, and leaves background work unbounded', async () => {
    await engine.command('CREATE TABLE IF NOT EXISTS bound_probe (n UInt64) ENGINE = Memory')
    const build = sql`INSERT INTO bound_probe ${raw(SLOW)}`
    await expect(executeCommand(engine, build, { bounded: true })).rejects.toBeInstanceOf(StatementTimeLimitError)
    // a read marked as background work (max_execution_time = 0) runs past the limit: 20 million hashes take longer than 300 ms
    const [row] = await execute<{ n: string }>(
      engine,
      inBackground(sql`SELECT count() AS n FROM numbers(20000000) WHERE sipHash64(number) % 7 = 1`),
    )
    // the count of numbers below 20 million whose hash is 1 modulo 7, about a seventh of them
    expect(Number(row.n)).toBeGreaterThan(2_800_000)
    expect(Number(row.n)).toBeLessThan(2_915_000)
  })
})

describe('a read the engine stopped, through the API and MCP', () => {
  let t: Harness
  beforeAll(async () => {
    const engine = await testClickHouse()
    // every read is replaced by work past the limit: the engine's own refusal reaches the API
    const stalled: ClickHouse = { ...bounded(engine, 200), query: () => engine.query(withTimeLimit(SLOW, 200)) }
    t = await harness({ with: { clickhouse: stalled } })
  })

  it('answers 400 naming the limit, on REST and as an MCP tool call, and the next read of the key is admitted', async () => {
    const res = await t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}&range=7d`, { key: t.a.read.key })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/time limit of one statement \(0\.2 s\)/)
    const mcp = await t.app.request('http://api.test/api/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.a.read.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_stats', arguments: { site_id: t.a.site.id, range: '7d' } },
      }),
    })
    const answer = (await mcp.json()) as { result: { isError: boolean; structuredContent: { status: number; error: string } } }
    expect(answer.result.isError).toBe(true)
    expect(answer.result.structuredContent.status).toBe(400)
    expect(answer.result.structuredContent.error).toMatch(/time limit/)
    // the refused reads gave their slots back
    for (let i = 0; i < CONCURRENT_READS.max + 1; i++) {
      const again = await t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}&range=7d`, { key: t.a.read.key })
      expect(again.status).toBe(400)
    }
  })
})

/** A gate the engine's reads wait at until it opens: reads held running for as long as a test needs. */
function gated(engine: ClickHouse) {
  let open!: () => void
  let opened = new Promise<void>((resolve) => {
    open = resolve
  })
  let waiting = 0
  const clickhouse: ClickHouse = {
    ...engine,
    query: async (text, params) => {
      waiting++
      await opened
      waiting--
      return engine.query(text, params)
    },
    command: (text, params, options) => engine.command(text, params, options),
    insert: (table, rows, options) => engine.insert(table, rows, options),
  }
  return {
    clickhouse,
    waiting: () => waiting,
    open: () => open(),
    close() {
      opened = new Promise<void>((resolve) => {
        open = resolve
      })
    },
  }
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  expect(check()).toBe(true)
}

describe.each<KvKind>(['embedded', ...(REDIS_URL ? (['redis'] as const) : [])])('concurrent reads of one key (%s store)', (kv) => {
  let t: Harness
  let gate: ReturnType<typeof gated>
  beforeAll(async () => {
    gate = gated(await testClickHouse())
    t = await harness({ kv, ownKeys: true, with: { clickhouse: gate.clickhouse } })
  })
  afterAll(() => gate.open())

  const stats = (key: string, site = t.a.site.id) => t.call('GET', `/api/v1/stats?site_id=${site}&range=30d`, { key })

  it(`holds ${CONCURRENT_READS.max} at once and answers the next 429 at once, other keys and settings reads unaffected`, async () => {
    gate.close()
    const held = Array.from({ length: CONCURRENT_READS.max }, () => stats(t.a.read.key))
    await until(() => gate.waiting() >= CONCURRENT_READS.max)
    const refused = await stats(t.a.read.key)
    expect(refused.status).toBe(429)
    expect(refused.json.error).toMatch(new RegExp(`too many reads at once: this key has ${CONCURRENT_READS.max} running`))
    expect(refused.headers.get('retry-after')).toBe('1')
    // the same key's reads of its account run no analytics statement and hold no slot
    expect((await t.call('GET', '/api/v1/me', { key: t.a.read.key })).status).toBe(200)
    // another organization's key has slots of its own
    const other = stats(t.b.read.key, t.b.site.id)
    await until(() => gate.waiting() >= CONCURRENT_READS.max + 1)
    gate.open()
    for (const res of await Promise.all([...held, other])) expect(res.status).toBe(200)
    // every slot was given back: as many reads at once are admitted again
    gate.close()
    const again = Array.from({ length: CONCURRENT_READS.max }, () => stats(t.a.read.key))
    await until(() => gate.waiting() >= CONCURRENT_READS.max)
    gate.open()
    for (const res of await Promise.all(again)) expect(res.status).toBe(200)
  })

  it('counts MCP tool calls against the same slots', async () => {
    gate.close()
    const held = Array.from({ length: CONCURRENT_READS.max }, () => stats(t.a.read.key))
    await until(() => gate.waiting() >= CONCURRENT_READS.max)
    const mcp = await t.app.request('http://api.test/api/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.a.read.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'get_stats', arguments: { site_id: t.a.site.id, range: '30d' } },
      }),
    })
    const answer = (await mcp.json()) as { result: { structuredContent: { status: number; error: string } } }
    expect(answer.result.structuredContent.status).toBe(429)
    gate.open()
    for (const res of await Promise.all(held)) expect(res.status).toBe(200)
  })
})

describe('slots in the key/value store', () => {
  // Redis, and the embedded store (what a Worker reaches through Upstash's protocol in the tests and with wrangler dev)
  it.each<KvKind>(['embedded', ...(REDIS_URL ? (['redis'] as const) : [])])(
    'a slot never given back (its instance died) is free again after its lease (%s)',
    async (kind) => {
      const redis = new Redis(rawRequester(rawRedis(kind, true)))
      const limiter = redisRateLimiter(redis, undefined, { max: 2, leaseMs: 300 })
      const id = crypto.randomUUID()
      const first = await limiter.enter(id)
      expect(first).not.toBeNull()
      expect(await limiter.enter(id)).not.toBeNull()
      expect(await limiter.enter(id)).toBeNull()
      // a release called twice frees one slot, not two
      await first!()
      await first!()
      expect(await limiter.enter(id)).not.toBeNull()
      expect(await limiter.enter(id)).toBeNull()
      await new Promise((resolve) => setTimeout(resolve, 350))
      expect(await limiter.enter(id)).not.toBeNull()
      expect(await limiter.enter(id)).not.toBeNull()
      expect(await limiter.enter(id)).toBeNull()
    },
  )

  it('in process memory, a release called twice frees one slot', async () => {
    const limiter = memoryRateLimiter(Date.now, undefined, { max: 1, leaseMs: 60_000 })
    const release = await limiter.enter('k')
    expect(await limiter.enter('k')).toBeNull()
    await release!()
    await release!()
    const next = await limiter.enter('k')
    expect(next).not.toBeNull()
    expect(await limiter.enter('k')).toBeNull()
  })
})
