import { describe, expect, it } from 'vitest'
import {
  clickGroupsSql,
  clickRollupInsertSql,
  clickSummarySql,
  rolledClickGroupsSql,
  rolledClickSummarySql,
} from '../../lib/reports/query/compile/clicks'
import { asRolledDays } from '../../lib/reports/query/model'
import {
  errorBreakdownSql,
  errorGroupsSql,
  errorRollupInsertSql,
  errorSummarySql,
  recentErrorsSql,
  rolledErrorGroupsSql,
  rolledErrorSummarySql,
} from '../../lib/reports/query/compile/errors'
import { propertyKeyCountsSql, propertyValuesSql } from '../../lib/reports/query/compile/properties'
import { render } from '../../lib/storage/clickhouse/sql'
import type { Query } from '../../lib/reports/query/model'
import { daySpans, resolveRange } from '../../lib/reports/query/range'

const SITE = '00000000-0000-4000-8000-000000000001'
const now = new Date('2026-11-22T12:00:00Z')
const week = resolveRange({ range: '7d' }, 'Europe/Berlin', now)
const query = (over: Partial<Query> = {}): Query => ({ siteId: SITE, range: week, filters: [], goals: [], limit: 5, now, ...over })
const flat = (text: string) => text.replace(/\s+/g, ' ').trim()
const HOSTILE = "x' OR 1=1 --"

describe('behaviour builders', () => {
  it('errors: the window, the error kind, filters and the limit bound; a fingerprint as UInt64', () => {
    const { sql, params } = render(errorGroupsSql(query({ filters: [{ dimension: 'path', operator: 'is', value: [HOSTILE] }] }), '42'))
    expect(flat(sql)).toContain(
      "WHERE site_id = {p1:UUID} AND (timestamp >= {p2:DateTime64(3)} AND timestamp < {p3:DateTime64(3)} AND toDate(timestamp) >= {p4:Date} AND toDate(timestamp) <= {p5:Date}) AND pathname IN {p6:Array(String)} AND kind = 'error' AND error_fingerprint = {p7:UInt64}",
    )
    expect(flat(sql)).toContain('GROUP BY error_fingerprint ORDER BY count DESC, visitors DESC, fingerprint ASC LIMIT {p8:UInt32}')
    // the UTC days of the Berlin week (from 23:00 UTC the day before), stated for the events order key
    expect(params).toMatchObject({ p1: SITE, p4: '2026-11-15', p5: '2026-11-22', p6: [HOSTILE], p7: '42', p8: 5 })
    expect(sql).not.toContain(HOSTILE)
  })

  it('errors: summary, sparkline counts per bucket of the window, breakdowns from an allow-list, recent occurrences', () => {
    expect(flat(render(errorSummarySql(query())).sql)).toMatch(
      /^SELECT count\(\) AS errors, uniqExact\(error_fingerprint\) AS groups, uniqExact\(visitor_id\) AS visitors FROM events WHERE .* AND kind = 'error'$/,
    )
    const groups = render(errorGroupsSql(query()))
    expect(flat(groups.sql)).toContain('sumMap(map(toUnixTimestamp(toStartOfDay(timestamp, {p0:String})), toUInt64(1))) AS per_bucket')
    expect(groups.params.p0).toBe('Europe/Berlin')
    const countries = render(errorBreakdownSql(query(), '7', 'countries', 40))
    expect(flat(countries.sql)).toMatch(
      /^SELECT country_code AS value, count\(\) AS count, uniqExact\(visitor_id\) AS visitors FROM events .* ORDER BY count DESC, value ASC LIMIT \{p6:UInt32\} OFFSET \{p7:UInt32\}$/,
    )
    expect(countries.params).toMatchObject({ p5: '7', p6: 5, p7: 40 })
    expect(flat(render(recentErrorsSql(query(), '7', 20)).sql)).toMatch(/ORDER BY timestamp DESC, pathname ASC LIMIT \{p6:UInt32\}$/)
  })

  it('clicks: click and link kinds bound, grouped by element and link', () => {
    const groups = render(clickGroupsSql(query({ limit: 3 })))
    expect(flat(groups.sql)).toContain('AND kind IN {p5:Array(String)}')
    expect(flat(groups.sql)).toContain(
      'GROUP BY selector, text, tag, url ORDER BY count DESC, selector ASC, text ASC, tag ASC, url ASC LIMIT {p6:UInt32}',
    )
    expect(groups.params).toMatchObject({ p5: ['click', 'outbound', 'download', 'affiliate'], p6: 3 })
    expect(flat(render(clickSummarySql(query())).sql)).toMatch(
      /^SELECT count\(\) AS clicks, uniqExact\(visitor_id\) AS visitors, countIf\(dead_click = 1\) AS dead_clicks FROM events WHERE /,
    )
  })

  it('clicks over rolled-up days: the rolled days by signature from click_rollups, the others (today) from events', () => {
    const rolled = asRolledDays([
      { d: '2026-11-16', n: '10', s: '99' },
      { d: '2026-11-18', n: '12', s: '7' },
    ])
    const summary = render(rolledClickSummarySql(query(), rolled))
    expect(flat(summary.sql)).toContain('SELECT clicks, visitors, dead_clicks FROM click_rollups FINAL WHERE site_id = {p0:UUID}')
    expect(flat(summary.sql)).toContain(
      'AND grain = 0 AND day IN {p3:Array(Date)} AND day_events = transform(day, {p3:Array(Date)}, arrayMap(x -> toUInt64(x), {p4:Array(String)}), toUInt64(0)) AND day_sum = transform(day, {p3:Array(Date)}, arrayMap(x -> toUInt64(x), {p5:Array(String)}), toUInt64(0))',
    )
    expect(summary.params).toMatchObject({ p3: rolled.days, p4: rolled.events, p5: rolled.sums })
    // the window's other days as runs of days (Berlin: from 23:00 UTC the day before): the 17th, and the 19th to today
    expect(Object.values(summary.params).filter((v) => typeof v === 'string' && v.endsWith(':00.000'))).toEqual([
      '2026-11-16 23:00:00.000',
      '2026-11-17 23:00:00.000',
      '2026-11-18 23:00:00.000',
      '2026-11-22 23:00:00.000',
    ])
    const groups = render(rolledClickGroupsSql(query({ limit: 3 }), rolled))
    expect(flat(groups.sql)).toContain('AND grain = 2 AND day IN {p3:Array(Date)} AND day_events = transform(day, {p3:Array(Date)}')
    expect(flat(groups.sql)).toContain('AND grain = 1 AND day IN {p3:Array(Date)} AND day_events = transform(day, {p3:Array(Date)}')
    expect(flat(groups.sql)).toMatch(
      /\) AS element_visitors USING \(selector, text, tag, url\) ORDER BY count DESC, selector ASC, text ASC, tag ASC, url ASC LIMIT \{p\d+:UInt32\} SETTINGS do_not_merge_across_partitions_select_final = 1$/,
    )
    const [cells, dayRows] = clickRollupInsertSql(SITE, 'Europe/Berlin', daySpans(rolled.days, 'Europe/Berlin'), rolled).map(render)
    expect(flat(cells.sql)).toContain('ARRAY JOIN [1, 2] AS grain')
    expect(flat(dayRows.sql)).toMatch(/^INSERT INTO click_rollups .* SELECT .*, 0, day, /)
    for (const { params } of [cells, dayRows]) expect(Object.values(params)).toContainEqual(rolled.days)
  })

  it('errors over rolled-up days: the rolled days by signature from error_rollups, the others (today) from events', () => {
    const rolled = asRolledDays([
      { d: '2026-11-16', n: '10', s: '99' },
      { d: '2026-11-18', n: '12', s: '7' },
    ])
    const summary = render(rolledErrorSummarySql(query(), rolled))
    expect(flat(summary.sql)).toContain(
      'SELECT grain, fingerprint AS fp, errors AS n, visitors AS v FROM error_rollups FINAL WHERE site_id = {p0:UUID}',
    )
    expect(flat(summary.sql)).toContain(
      'AND grain IN (0, 1) AND day IN {p3:Array(Date)} AND day_events = transform(day, {p3:Array(Date)}, arrayMap(x -> toUInt64(x), {p4:Array(String)}), toUInt64(0)) AND day_sum = transform(day, {p3:Array(Date)}, arrayMap(x -> toUInt64(x), {p5:Array(String)}), toUInt64(0))',
    )
    expect(summary.params).toMatchObject({ p3: rolled.days, p4: rolled.events, p5: rolled.sums })
    // the window's other days as runs of days (Berlin: from 23:00 UTC the day before): the 17th, and the 19th to today
    expect(Object.values(summary.params).filter((v) => typeof v === 'string' && v.endsWith(':00.000'))).toEqual([
      '2026-11-16 23:00:00.000',
      '2026-11-17 23:00:00.000',
      '2026-11-18 23:00:00.000',
      '2026-11-22 23:00:00.000',
    ])
    const groups = render(rolledErrorGroupsSql(query({ limit: 3 }), rolled))
    expect(flat(groups.sql)).toContain('AND grain IN (1) AND day IN {p3:Array(Date)} AND day_events = transform(day, {p3:Array(Date)}')
    // day buckets of the rolled days, the bucket of each event for the others
    expect(flat(groups.sql)).toContain('map(toUnixTimestamp(toDateTime(day, {p0:String})), errors) AS buckets')
    expect(flat(groups.sql)).toContain('sumMap(map(toUnixTimestamp(toStartOfDay(timestamp, {p0:String})), toUInt64(1)))')
    expect(flat(groups.sql)).toMatch(
      /GROUP BY fp ORDER BY count DESC, visitors DESC, fingerprint ASC LIMIT \{p\d+:UInt32\} SETTINGS do_not_merge_across_partitions_select_final = 1$/,
    )
    const [groupRows, dayRows] = errorRollupInsertSql(SITE, 'Europe/Berlin', daySpans(rolled.days, 'Europe/Berlin'), rolled).map(render)
    expect(flat(groupRows.sql)).toMatch(
      /^INSERT INTO error_rollups .* SELECT .*, 1, toDate\(timestamp, \{p\d+:String\}\) AS day, .* GROUP BY day, error_fingerprint HAVING has/,
    )
    expect(flat(dayRows.sql)).toMatch(/^INSERT INTO error_rollups .* SELECT .*, 0, day, /)
    for (const { params } of [groupRows, dayRows]) expect(Object.values(params)).toContainEqual(rolled.days)
  })

  it('properties: keys without the collector prefix; one key’s values with the key bound', () => {
    const keys = render(propertyKeyCountsSql(query()))
    expect(flat(keys.sql)).toContain('ARRAY JOIN mapKeys(props) AS key')
    expect(flat(keys.sql)).toContain('AND NOT startsWith(key, {p5:String}) GROUP BY key ORDER BY events DESC, key ASC LIMIT {p6:UInt32}')
    expect(keys.params).toMatchObject({ p5: 'attribution.', p6: 5 })
    const values = render(propertyValuesSql(query(), HOSTILE))
    expect(flat(values.sql)).toMatch(
      /^SELECT props\[\{p0:String\}\] AS value, .* AND mapContains\(props, \{p0:String\}\) GROUP BY value ORDER BY events DESC, value ASC LIMIT \{p6:UInt32\}$/,
    )
    expect(values.params.p0).toBe(HOSTILE)
    expect(values.sql).not.toContain(HOSTILE)
  })
})
