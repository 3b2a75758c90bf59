import { describe, expect, it } from 'vitest'
import type { ClickHouse } from '../../lib/storage/clickhouse/types'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
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
})
