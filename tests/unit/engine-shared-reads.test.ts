import { describe, expect, it, vi } from 'vitest'
import { testClickHouse } from '../helpers'

/**
 * The embedded engine runs statements with parameters one at a time: a read asked while the same
 * statement with the same parameters runs takes its answer (the dashboard's panels look up the
 * same rolled days at once). Each caller gets rows of its own.
 */
describe('reads of the embedded engine asked at once', () => {
  it('run one statement for the same SQL and parameters, one each for others, and hand each caller its own rows', async () => {
    const clickhouse = await testClickHouse()
    const raw = vi.spyOn(clickhouse, 'raw')
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
    const run = raw.getMockImplementation() ?? clickhouse.raw.bind(clickhouse)
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
