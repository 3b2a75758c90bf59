import { describe, expect, it } from 'vitest'
import type { Compiled } from '../../lib/storage/clickhouse/sql'
import type { Query } from '../../lib/reports/query/model'
import { parseFilters } from '../../lib/reports/query/parse'
import { buckets, previousWindow, rangeView, resolveRange } from '../../lib/reports/query/range'
import { compileRead } from '../../lib/reports/query/run'

const now = new Date('2026-03-08T12:00:00Z') // New York springs forward at 07:00 UTC this day
const query = (filters = '[]'): Query => ({
  siteId: '00000000-0000-4000-8000-000000000001',
  range: resolveRange({ range: '7d' }, 'America/New_York', now),
  filters: parseFilters(filters, 'standalone'),
  goals: [],
  limit: 10,
  now,
})

/** The SQL with each bound parameter written in as a quoted literal: to read values where they are used. */
const withValues = ({ sql, params }: Compiled) => sql.replace(/\{(p\d+):[^}]+\}/g, (_, name: string) => `'${String(params[name])}'`)

describe('the query pipeline, without a database', () => {
  it('compares a window of whole days with as many whole days before it, across a clock change', () => {
    // 7d of 8 March (2 to 9 March) holds New York's spring-forward day: 6 days of 24 hours and one of 23
    const week = resolveRange({ range: '7d' }, 'America/New_York', now)
    expect(rangeView(previousWindow(week))).toMatchObject({ from: '2026-02-23T00:00:00-05:00', to: '2026-03-02T00:00:00-05:00' })
    // Berlin falls back on 25 October 2026: 30 days then are 721 hours, still 30 days back
    const month = resolveRange({ range: '30d' }, 'Europe/Berlin', new Date('2026-11-10T12:00:00Z'))
    expect(rangeView(month)).toMatchObject({ from: '2026-10-12T00:00:00+02:00', to: '2026-11-11T00:00:00+01:00' })
    expect(rangeView(previousWindow(month))).toMatchObject({ from: '2026-09-12T00:00:00+02:00', to: '2026-10-12T00:00:00+02:00' })
  })

  it('compiles user values into bound parameters, never into the SQL text', () => {
    const hostile = "x' OR 1=1 --"
    const filters = JSON.stringify([
      { dimension: 'path', operator: 'contains', value: [hostile] },
      { dimension: "prop:plan'; DROP TABLE events", operator: 'is', value: [hostile] },
      { dimension: 'entry_page', operator: 'matches', value: [hostile] },
    ])
    for (const compiled of [
      compileRead(query(filters), { kind: 'stats' }),
      compileRead(query(filters), { kind: 'series' }),
      compileRead(query(filters), { kind: 'breakdown', property: "prop:a'b" }),
    ]) {
      expect(compiled.sql).not.toContain(hostile)
      expect(compiled.sql).not.toContain('DROP TABLE')
      expect(compiled.sql).not.toContain("a'b")
      expect(Object.values(compiled.params)).toContainEqual([hostile])
      expect(withValues(compiled)).toContain("site_id = '00000000-0000-4000-8000-000000000001'")
    }
  })

  it('adds the site and window scope itself', () => {
    const compiled = compileRead(query(), { kind: 'stats' })
    // 7d ends at the start of tomorrow in New York (EDT, -4h), starts six days before today (EST, -5h)
    expect(withValues(compiled)).toContain(
      "site_id = '00000000-0000-4000-8000-000000000001' AND (timestamp >= '2026-03-02 05:00:00.000' AND timestamp < '2026-03-09 04:00:00.000' AND toDate(timestamp) >= '2026-03-02' AND toDate(timestamp) <= '2026-03-09')",
    )
  })

  it('resolves the day of a DST change to 23 hourly buckets', () => {
    const day = resolveRange({ range: 'today' }, 'America/New_York', now)
    expect(
      buckets(day)
        .map((b) => b.label)
        .slice(1, 4),
    ).toEqual(['2026-03-08T01:00:00-05:00', '2026-03-08T03:00:00-04:00', '2026-03-08T04:00:00-04:00'])
    expect(buckets(day)).toHaveLength(23)
  })

  it('validates filters: dimensions, operators, shapes, sources', () => {
    expect(() => parseFilters('[{"dimension":"path","operator":"is","value":["/"]}', 'standalone')).toThrow(/not valid JSON/)
    expect(() => parseFilters('[{"dimension":"nope","operator":"is","value":["/"]}]', 'standalone')).toThrow(/unknown dimension/)
    expect(() => parseFilters('[{"dimension":"path","operator":"is","value":"/"}]', 'standalone')).toThrow(/filters\[0\]\.value/)
    expect(() => parseFilters('[{"dimension":"path","operator":"is","value":["/"],"x":1}]', 'standalone')).toThrow(/unknown field "x"/)
    expect(() => parseFilters('[{"dimension":"outbound","operator":"is","value":["/"]}]', 'ga4')).toThrow(/first-party/)
    expect(parseFilters('[{"dimension":"path","operator":"is","value":["/"]}]', 'ga4')).toHaveLength(1)
  })
})
