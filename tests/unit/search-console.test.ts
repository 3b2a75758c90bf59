import { describe, expect, it } from 'vitest'
import { checkSiteUrlShape } from '../../lib/integrations/search-console/connection'
import { backfillDays, dataStateOf, pathOfPage, recentDays } from '../../lib/integrations/search-console/import'
import { searchPagesSql, searchTopSql } from '../../lib/insights/search/compile'
import { diagnoseSearch, metricsOf, parseSearchFilters } from '../../lib/insights/search/search'
import { updatesWithin } from '../../lib/insights/why/markers'
import { render } from '../../lib/storage/clickhouse/sql'

/** The pure parts of Search Console: the diagnosis rules, the import's days, property shapes, the compiled SQL. */

const m = (clicks: number, impressions: number, position: number) => metricsOf(clicks, impressions, position * impressions)
const same = { current: 14, previous: 14 }

describe('the search diagnosis (docs/traffic-changes.md, Search diagnosis)', () => {
  it('names each planted shape by the first rule that holds', () => {
    expect(diagnoseSearch(m(40, 1000, 3), m(100, 1000, 3), same)).toBe('ctr_drop')
    expect(diagnoseSearch(m(40, 1000, 6), m(100, 1000, 3), same)).toBe('rank_drop')
    expect(diagnoseSearch(m(50, 500, 3), m(100, 1000, 3), same)).toBe('demand_drop')
    expect(diagnoseSearch(m(50, 500, 7), m(100, 1000, 3), same)).toBe('fell')
    expect(diagnoseSearch(m(130, 1000, 3), m(100, 1000, 3), same)).toBe('gained')
    expect(diagnoseSearch(m(90, 1000, 3), m(100, 1000, 3), same)).toBe('stable')
    expect(diagnoseSearch(m(2, 100, 9), m(9, 100, 3), same)).toBe('stable')
    expect(diagnoseSearch(m(40, 900, 3), m(100, 1000, 3), same, { clicks: 60, queries: [{ query: 'q', previousClicks: 60 }] })).toBe(
      'lost_queries',
    )
  })

  it('compares per-day rates: 7 days before a shift against 3 after', () => {
    // 70 clicks and 700 impressions over 7 days before; 30 and 300 over 3 days after: the same per day
    expect(diagnoseSearch(m(30, 300, 3), m(70, 700, 3), { current: 3, previous: 7 })).toBe('stable')
    // taken as equal windows, clicks and impressions would look like they fell to 43%
    expect(diagnoseSearch(m(30, 300, 3), m(70, 700, 3), same)).toBe('demand_drop')
    // 15 clicks over the 3 days after at the same impressions a day: clicks halved, rank held
    expect(diagnoseSearch(m(15, 300, 3), m(70, 700, 3), { current: 3, previous: 7 })).toBe('ctr_drop')
  })
})

describe('the import’s days', () => {
  const now = new Date('2026-11-22T15:00:00Z')
  it('backfills yesterday back to the same day 16 months before, newest first; the last three are fresh', () => {
    const days = backfillDays(now)
    expect(days[0]).toBe('2026-11-21')
    expect(days[days.length - 1]).toBe('2025-07-21')
    expect(days).toHaveLength((Date.parse('2026-11-21') - Date.parse('2025-07-21')) / 86_400_000 + 1)
    expect(recentDays(now)).toEqual(['2026-11-21', '2026-11-20', '2026-11-19'])
    expect(['2026-11-21', '2026-11-19', '2026-11-18'].map((d) => dataStateOf(d, now))).toEqual(['all', 'all', 'final'])
  })

  it('keys a page by the path of its URL', () => {
    expect(pathOfPage('https://www.example.com/a/b?x=1')).toBe('/a/b')
    expect(pathOfPage('https://www.example.com')).toBe('/')
  })
})

describe('properties', () => {
  it('takes a domain property or a URL prefix, and names anything else', () => {
    for (const ok of ['sc-domain:example.com', 'https://www.example.com/', 'http://example.com/blog/'])
      expect(() => checkSiteUrlShape(ok)).not.toThrow()
    for (const bad of ['example.com', 'sc-domain:', 'https://www.example.com', 'ftp://example.com/', 'https://example.com/?q=1'])
      expect(() => checkSiteUrlShape(bad)).toThrow(bad)
  })
})

describe('the compiled statements', () => {
  it('bind every value: filters, paths, days and the site', () => {
    const windows = { current: { from: '2026-11-08', to: '2026-11-22' }, previous: { from: '2026-10-25', to: '2026-11-08' } }
    const evil = "x' OR 1=1 --"
    const filters = parseSearchFilters(JSON.stringify([{ dimension: 'path', operator: 'contains', value: [evil] }]))
    for (const statement of [
      searchTopSql('00000000-0000-4000-8000-000000000000', windows, filters, 'query', 10),
      searchPagesSql('00000000-0000-4000-8000-000000000000', windows, filters, [evil]),
    ]) {
      const { sql, params } = render(statement)
      expect(sql).not.toContain(evil)
      expect(sql).not.toContain('2026-11-08')
      expect(Object.values(params)).toContainEqual([evil])
    }
  })

  it('a filter on another dimension is a 400 naming it', () => {
    expect(() => parseSearchFilters(JSON.stringify([{ dimension: 'browser', operator: 'is', value: ['x'] }]))).toThrow(/"browser"/)
  })
})

describe('the ranking updates since June 2025', () => {
  it('are listed in the windows their rollouts overlap', () => {
    const names = (from: string, to: string) => updatesWithin(Date.parse(from), Date.parse(to), Date.parse('2026-11-22')).map((u) => u.name)
    expect(names('2025-09-01', '2025-09-10')).toEqual(['August 2025 spam update'])
    expect(names('2025-12-20', '2026-01-05')).toEqual(['December 2025 core update'])
    expect(names('2026-03-20', '2026-04-01')).toEqual(['March 2026 spam update', 'March 2026 core update'])
    expect(names('2026-05-25', '2026-06-10')).toEqual(['May 2026 core update'])
    expect(names('2026-06-10', '2026-11-22')).toEqual([])
  })
})
