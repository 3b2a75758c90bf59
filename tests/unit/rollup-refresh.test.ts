import { describe, expect, it } from 'vitest'
import type { ClickHouse } from '../../lib/storage/clickhouse/types'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { buildBatches } from '../../lib/reports/rollup/outdated'
import type { Repositories } from '../../lib/runtime/repositories'

describe('the daily rollup refresh', () => {
  it('goes site by site: a site that fails is logged with its id and the others are still built', async () => {
    const commands: { sql: string; params?: Record<string, unknown> }[] = []
    const clickhouse = {
      async query(sql: string) {
        if (sql.includes('DISTINCT toString(site_id)')) return [{ site: 'bad-zone' }, { site: 'good' }]
        if (sql.includes('LEFT ANTI JOIN')) return [{ d: '2026-11-20', n: '5', s: '9' }]
        return [{ n: '0' }]
      },
      async command(sql: string, params?: Record<string, unknown>) {
        commands.push({ sql, params })
      },
    } as unknown as ClickHouse
    const repositories = {
      sites: {
        async get(id: string) {
          return { id, timezone: id === 'bad-zone' ? 'Not/AZone' : 'Europe/Berlin' }
        },
      },
      // no saved funnels: the refresh builds none of their days
      funnels: { list: async () => [] },
      goals: { list: async () => [] },
    } as unknown as Repositories
    const logged: string[] = []
    const built = await refreshRollups(clickhouse, repositories, new Date('2026-11-22T15:00:00Z'), 3, (message) => logged.push(message))
    expect(built).toBe(1)
    expect(logged).toHaveLength(1)
    expect(logged[0]).toContain('bad-zone')
    expect(commands.length).toBeGreaterThan(0)
    expect(commands.every((c) => Object.values(c.params ?? {}).includes('good'))).toBe(true)
  })

  it('builds a week at a time, and more small days at once: up to 100,000 events or a year of days', () => {
    const days = (events: number[]) => events.map((n, i) => ({ d: `day ${i}`, n: String(n) }))
    const sizes = (events: number[]) => buildBatches(days(events)).map((batch) => batch.length)
    // big days: a week a build, however many events the week holds
    expect(sizes(Array(16).fill(50_000))).toEqual([7, 7, 2])
    // small days: 100,000 events (here 400 days of 100) fit together, but no more than 366 days
    expect(sizes(Array(400).fill(100))).toEqual([366, 34])
    // past the week, a day is added while the build stays within 100,000 events: 7 x 10,000 + 3 x 10,000 = 100,000
    expect(sizes(Array(12).fill(10_000))).toEqual([10, 2])
    // every day is built once, in order
    const mixed = [5, 90_000, 3, 3, 3, 3, 3, 20_000, 1, 1, 200_000, 1]
    const batches = buildBatches(days(mixed))
    expect(batches.flat().map((d) => d.d)).toEqual(days(mixed).map((d) => d.d))
    // 7 days (90,020 events), then 20,000 would pass 100,000: a new build of the rest, whose 200,000-event day fits in its first week
    expect(batches.map((b) => b.length)).toEqual([7, 5])
    expect(buildBatches([])).toEqual([])
  })
})
