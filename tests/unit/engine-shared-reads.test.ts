import { describe, expect, it, vi } from 'vitest'
import type { EmbeddedClickHouse } from '../../lib/storage/clickhouse/chdb'
import type { QueryParams } from '../../lib/storage/clickhouse/types'
import { testClickHouse } from '../helpers'

/** The engine's one door to chdb for its own statements (private), watched to count what it runs. */
const watchRuns = (clickhouse: EmbeddedClickHouse) =>
  vi.spyOn(clickhouse as unknown as { run(sql: string, params: QueryParams, format: string): Promise<Uint8Array> }, 'run')

/**
 * The embedded engine runs statements with parameters one at a time: a read asked while the same
 * statement with the same parameters runs takes its answer (the dashboard's panels look up the
 * same rolled days at once). Each caller gets rows of its own.
 */
describe('reads of the embedded engine asked at once', () => {
  it('run one statement for the same SQL and parameters, one each for others, and hand each caller its own rows', async () => {
    const clickhouse = await testClickHouse()
    const raw = watchRuns(clickhouse)
    const sql = 'SELECT number AS n, {p:UInt32} AS p FROM system.numbers LIMIT 3'
    const [a, b, c] = await Promise.all([
      clickhouse.query<{ n: string; p: number }>(sql, { p: 1 }),
      clickhouse.query<{ n: string; p: number }>(sql, { p: 1 }),
      clickhouse.query<{ n: string; p: number }>(sql, { p: 2 }),
    ])
    expect(raw).toHaveBeenCalledTimes(2)
    expect(a).toEqual(b)
    expect(a).not.toBe(b)
    expect(a[0]).not.toBe(b[0])
    expect(a.map((r) => r.p)).toEqual([1, 1, 1])
    expect(c.map((r) => r.p)).toEqual([2, 2, 2])
    // once answered, the same read runs again: nothing is kept after it
    await clickhouse.query(sql, { p: 1 })
    expect(raw).toHaveBeenCalledTimes(3)
    // a read asked after a write has finished never takes the answer of one begun before it: the
    // first read is held until the second is asked, so that it is still running then
    const run = raw.getMockImplementation() ?? (clickhouse as unknown as { run: typeof raw }).run.bind(clickhouse)
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    raw.mockImplementationOnce(async (...args) => {
      await held
      return run(...args)
    })
    const first = clickhouse.query<{ p: number }>(sql, { p: 4 })
    // a write (one refused, for want of its table, counts as well: the engine may have applied part of it)
    await clickhouse.insert('wa_shared_reads', [{ x: 1 }]).catch(() => undefined)
    const second = clickhouse.query<{ p: number }>(sql, { p: 4 })
    expect(raw).toHaveBeenCalledTimes(5)
    // and a read asked with nothing written since the second takes the second's answer
    const third = clickhouse.query<{ p: number }>(sql, { p: 4 })
    expect(raw).toHaveBeenCalledTimes(5)
    release()
    for (const rows of await Promise.all([first, second, third])) expect(rows.map((r) => r.p)).toEqual([4, 4, 4])
    // the engine is the worker's, shared with the unit tier's other files: left open, unwatched
    raw.mockRestore()
  })
})

/**
 * A read asked with `reuseMs` (the rolled-days lookup: every read of a dashboard and its panels
 * asks it) is answered again from the same read asked that recently, while nothing has been
 * written since; any write, a failure and the time allowed end that.
 */
describe('reads of the embedded engine kept for reuse', () => {
  it('answer again only with nothing written since and within the time allowed; failures are not kept', async () => {
    const clickhouse = await testClickHouse()
    const table = `wa_reuse_${crypto.randomUUID().replaceAll('-', '')}`
    await clickhouse.command(`CREATE TABLE ${table} (x UInt32) ENGINE = MergeTree ORDER BY x`)
    const runs = watchRuns(clickhouse)
    try {
      const sql = `SELECT count() AS n, sum(x) AS s FROM ${table} WHERE x >= {min:UInt32}`
      const read = (reuseMs?: number, min = 0) => clickhouse.query<{ n: string; s: string }>(sql, { min }, { reuseMs })
      expect(await read(60_000)).toEqual([{ n: '0', s: '0' }])
      expect(await read(60_000)).toEqual([{ n: '0', s: '0' }])
      expect(runs).toHaveBeenCalledTimes(1)
      // other parameters are another read; a read without reuseMs always runs
      await read(60_000, 1)
      await read()
      expect(runs).toHaveBeenCalledTimes(3)
      // an insert ends it: the next read runs and sees the row
      await clickhouse.insert(table, [{ x: 5 }])
      const afterInsert = runs.mock.calls.length
      expect(await read(60_000)).toEqual([{ n: '1', s: '5' }])
      expect(runs).toHaveBeenCalledTimes(afterInsert + 1)
      // so does a command, and a statement through the HTTP door (raw), which may write
      await clickhouse.command(`INSERT INTO ${table} VALUES (7)`)
      expect(await read(60_000)).toEqual([{ n: '2', s: '12' }])
      await clickhouse.raw(`INSERT INTO ${table} VALUES (9)`)
      expect(await read(60_000)).toEqual([{ n: '3', s: '21' }])
      const settled = runs.mock.calls.length
      expect(await read(60_000)).toEqual([{ n: '3', s: '21' }])
      expect(runs).toHaveBeenCalledTimes(settled)
      // past the time allowed, it runs again
      await new Promise((r) => setTimeout(r, 20))
      await read(10)
      expect(runs).toHaveBeenCalledTimes(settled + 1)
      // a failed read is not kept: asked again, it runs again
      const bad = `SELECT throwIf(number = 0, 'refused on purpose') AS t FROM system.numbers WHERE number < {k:UInt8} LIMIT 1`
      await expect(clickhouse.query(bad, { k: 1 }, { reuseMs: 60_000 })).rejects.toThrow(/refused on purpose/)
      await expect(clickhouse.query(bad, { k: 1 }, { reuseMs: 60_000 })).rejects.toThrow(/refused on purpose/)
      expect(runs).toHaveBeenCalledTimes(settled + 3)
    } finally {
      runs.mockRestore()
      await clickhouse.command(`DROP TABLE ${table}`)
    }
  })
})
