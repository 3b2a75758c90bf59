import { describe, expect, it } from 'vitest'
import {
  heatmapCellsSql,
  heatmapElementsSql,
  heatmapRows,
  heatmapSummarySql,
  scrollReachSql,
} from '../../lib/reports/query/compile/heatmap'
import type { Query } from '../../lib/reports/query/model'
import { resolveRange } from '../../lib/reports/query/range'
import { render } from '../../lib/storage/clickhouse/sql'

const SITE = '00000000-0000-4000-8000-000000000001'
const now = new Date('2026-11-22T12:00:00Z')
const query: Query = { siteId: SITE, range: resolveRange({ range: '7d' }, 'UTC', now), filters: [], goals: [], limit: 5, now }
const HOSTILE = "/x' OR 1=1 --"
const page = { path: HOSTILE, device: 'phone' as const }

describe('heatmap builders', () => {
  it('rows make square cells on the document, from 1 to 400', () => {
    expect(heatmapRows(1280, 3200)).toBe(50)
    expect(heatmapRows(390, 9800)).toBe(400)
    expect(heatmapRows(1440, 10)).toBe(1)
    expect(heatmapRows(1000, 1030)).toBe(21)
    expect(heatmapRows(0, 0)).toBe(0)
  })

  it('binds the page, the device, the rows and the limit; only placed clicks of the page, and its engagement reports', () => {
    for (const statement of [heatmapSummarySql(query, page), heatmapCellsSql(query, page, 50), heatmapElementsSql(query, page)]) {
      const { sql, params } = render(statement)
      expect(sql).not.toContain(HOSTILE)
      expect(sql).toMatch(/pathname = \{p\d+:String\} AND viewport_class = \{p\d+:String\} AND doc_width > 0/)
      expect(Object.values(params)).toEqual(expect.arrayContaining([HOSTILE, 'phone']))
    }
    const cells = render(heatmapCellsSql(query, page, 50))
    expect(cells.sql).toMatch(/least\(intDiv\(toUInt64\(click_y\) \* \{p0:UInt32\}, 10000\), \{p1:UInt32\}\) AS row/)
    expect(cells.params).toMatchObject({ p0: 50, p1: 49, p2: 20, p3: 19 })
    expect(render(heatmapElementsSql(query, page)).sql).toMatch(/LIMIT \{p\d+:UInt32\}$/)
    const reach = render(scrollReachSql(query, page))
    expect(reach.sql).toContain("kind = 'engagement'")
    expect(reach.sql).toContain('countIf(scroll_depth >= 100) AS reached_100')
    expect(reach.sql).not.toContain(HOSTILE)
  })
})
