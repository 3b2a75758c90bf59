import { describe, expect, it } from 'vitest'
import type { Goal } from '../../lib/sites/goals'
import { combinedProperty } from '../../lib/reports/dimensions'
import { breakdownSql } from '../../lib/reports/query/compile/breakdown'
import { ROLLUP_VERSION, outdatedRows, signaturesAndBuilt, staleDays } from '../../lib/reports/query/compile/day-rollups'
import { filterConditions } from '../../lib/reports/query/compile/filters'
import { goalBreakdownSql } from '../../lib/reports/query/compile/goals'
import { rollupInsertSql } from '../../lib/reports/query/compile/rollup-build'
import { daySpansScope, windowScope } from '../../lib/reports/query/compile/scope'
import { seriesSql } from '../../lib/reports/query/compile/series'
import { bind, join, raw, render, sql } from '../../lib/storage/clickhouse/sql'
import { statsSql } from '../../lib/reports/query/compile/stats'
import type { Query, RolledDays } from '../../lib/reports/query/model'
import { daySpans, resolveRange } from '../../lib/reports/query/range'

const SITE = '00000000-0000-4000-8000-000000000001'
const now = new Date('2026-03-08T12:00:00Z') // New York springs forward at 07:00 UTC this day
const week = resolveRange({ range: '7d' }, 'America/New_York', now)
const goals: Goal[] = [
  { id: 'g1', name: 'Signup', type: 'event', matchValue: 'Signup', currency: 'EUR', createdAt: '' },
  { id: 'g2', name: 'Pricing', type: 'page', matchValue: '/pricing*', currency: null, createdAt: '' },
]
const query = (over: Partial<Query> = {}): Query => ({ siteId: SITE, range: week, filters: [], goals, limit: 5, now, ...over })
const rolled: RolledDays = { days: ['2026-03-03', '2026-03-04'], events: ['10', '20'], sums: ['1', '2'] }
const flat = (text: string) => text.replace(/\s+/g, ' ').trim()

describe('the sql template', () => {
  it('binds interpolated values as numbered parameters, in order, nested fragments included', () => {
    const inner = sql`name = ${bind('String', "x' OR 1=1")}`
    expect(render(sql`SELECT 1 WHERE site_id = ${bind('UUID', SITE)} AND ${inner} LIMIT ${bind('UInt32', 3)}`)).toEqual({
      sql: 'SELECT 1 WHERE site_id = {p0:UUID} AND name = {p1:String} LIMIT {p2:UInt32}',
      params: { p0: SITE, p1: "x' OR 1=1", p2: 3 },
    })
  })

  it('binds a value used twice once, per type; arrays by identity', () => {
    const days = ['2026-03-03']
    const both = sql`${bind('String', 'a')} ${bind('String', 'a')} ${bind('Array(Date)', days)} ${bind('Array(Date)', days)} ${bind('Array(Date)', [...days])}`
    expect(render(both)).toEqual({
      sql: '{p0:String} {p0:String} {p1:Array(Date)} {p1:Array(Date)} {p2:Array(Date)}',
      params: { p0: 'a', p1: days, p2: days },
    })
  })

  it('joins fragments and takes allow-listed text as is', () => {
    expect(render(join([raw('a = 1'), sql`b = ${bind('UInt16', 2)}`], ' AND '))).toEqual({
      sql: 'a = 1 AND b = {p0:UInt16}',
      params: { p0: 2 },
    })
    expect(render(join([], ' AND '))).toEqual({ sql: '', params: {} })
  })
})

describe('the SQL builders', () => {
  it('scope: the window, the visit scan widened by 26 hours, and whole days as spans', () => {
    const scope = windowScope(SITE, week)
    // 7d ends at the start of tomorrow in New York (EDT, -4h), starts six days before today (EST, -5h)
    expect(render(scope.events)).toEqual({
      // and the UTC days of those times, which the events order key starts with
      sql: 'site_id = {p0:UUID} AND (timestamp >= {p1:DateTime64(3)} AND timestamp < {p2:DateTime64(3)} AND toDate(timestamp) >= {p3:Date} AND toDate(timestamp) <= {p4:Date})',
      params: { p0: SITE, p1: '2026-03-02 05:00:00.000', p2: '2026-03-09 04:00:00.000', p3: '2026-03-02', p4: '2026-03-09' },
    })
    expect(render(scope.visitScan).params).toEqual({
      p0: SITE,
      p1: '2026-03-01 03:00:00.000',
      p2: '2026-03-10 06:00:00.000',
      p3: '2026-03-01',
      p4: '2026-03-10',
    })
    expect(render(scope.visitsBegan)).toEqual({
      sql: '(session_start >= {p0:DateTime64(3)} AND session_start < {p1:DateTime64(3)} AND toDate(session_start) >= {p2:Date} AND toDate(session_start) <= {p3:Date})',
      params: { p0: '2026-03-01 03:00:00.000', p1: '2026-03-09 04:00:00.000', p2: '2026-03-01', p3: '2026-03-09' },
    })
    const spans = daySpansScope(SITE, daySpans(['2026-03-03', '2026-03-04', '2026-03-06'], 'UTC'))
    expect(render(spans.events)).toEqual({
      // a span ending at midnight ends on the day before
      sql:
        'site_id = {p0:UUID} AND ((timestamp >= {p1:DateTime64(3)} AND timestamp < {p2:DateTime64(3)} AND toDate(timestamp) >= {p3:Date} AND toDate(timestamp) <= {p4:Date})' +
        ' OR (timestamp >= {p5:DateTime64(3)} AND timestamp < {p6:DateTime64(3)} AND toDate(timestamp) >= {p7:Date} AND toDate(timestamp) <= {p7:Date}))',
      params: {
        p0: SITE,
        p1: '2026-03-03 00:00:00.000',
        p2: '2026-03-05 00:00:00.000',
        p3: '2026-03-03',
        p4: '2026-03-04',
        p5: '2026-03-06 00:00:00.000',
        p6: '2026-03-07 00:00:00.000',
        p7: '2026-03-06',
      },
    })
    expect(render(daySpansScope(SITE, []).events).sql).toBe('site_id = {p0:UUID} AND (0)')
  })

  it('filters: operators over allow-listed expressions, goals and entry or exit pages as visit conditions', () => {
    const conditions = filterConditions(
      [
        { dimension: 'country', operator: 'is', value: ['US'] },
        { dimension: 'prop:plan', operator: 'contains', value: ['pro'] },
        { dimension: 'exit_page', operator: 'matches', value: ['^/a'] },
        { dimension: 'goal', operator: 'is_not', value: ['Pricing'] },
      ],
      goals,
      windowScope(SITE, week),
    ).map(render)
    expect(conditions[0]).toEqual({ sql: 'country_code IN {p0:Array(String)}', params: { p0: ['US'] } })
    expect(conditions[1]).toEqual({
      sql: 'multiSearchAnyCaseInsensitiveUTF8(props[{p0:String}], {p1:Array(String)})',
      params: { p0: 'plan', p1: ['pro'] },
    })
    expect(conditions[2]).toEqual({
      sql:
        'session_id IN (SELECT session_id FROM sessions WHERE site_id = {p0:UUID} AND (session_start >= {p1:DateTime64(3)} AND session_start < {p2:DateTime64(3)} AND toDate(session_start) >= {p3:Date} AND toDate(session_start) <= {p4:Date})' +
        ' GROUP BY session_id HAVING arrayExists(pattern -> match(argMaxMerge(exit_page), pattern), {p5:Array(String)}))',
      params: { p0: SITE, p1: '2026-03-01 03:00:00.000', p2: '2026-03-09 04:00:00.000', p3: '2026-03-01', p4: '2026-03-09', p5: ['^/a'] },
    })
    expect(conditions[3]).toEqual({
      sql:
        'NOT session_id IN (SELECT session_id FROM events WHERE site_id = {p0:UUID} AND (timestamp >= {p1:DateTime64(3)} AND timestamp < {p2:DateTime64(3)} AND toDate(timestamp) >= {p3:Date} AND toDate(timestamp) <= {p4:Date})' +
        " AND ((kind = 'pageview' AND pathname LIKE {p5:String})))",
      params: {
        p0: SITE,
        p1: '2026-03-02 05:00:00.000',
        p2: '2026-03-09 04:00:00.000',
        p3: '2026-03-02',
        p4: '2026-03-09',
        p5: '/pricing%',
      },
    })
  })

  it('stats: from the daily rollup, the sessions rollup, or selected events joined to their visits', () => {
    const fromRollup = render(statsSql(query(), { table: 'rollup', rolled }))
    expect(fromRollup.sql).toContain('FROM day_rollups FINAL')
    expect(Object.values(fromRollup.params)).toEqual(expect.arrayContaining([rolled.days, rolled.events, rolled.sums]))
    const fromSessions = render(
      statsSql(query({ filters: [{ dimension: 'country', operator: 'is', value: ['US'] }] }), { table: 'sessions' }),
    )
    expect(flat(fromSessions.sql)).toContain(
      'FROM sessions WHERE site_id = {p0:UUID} AND (session_start >= {p6:DateTime64(3)} AND session_start < {p2:DateTime64(3)} AND toDate(session_start) >= {p7:Date} AND toDate(session_start) <= {p4:Date}) AND country_code IN {p5:Array(String)} GROUP BY session_id HAVING max(end) >= {p1:DateTime64(3)}',
    )
    expect(fromSessions.params).toEqual({
      p0: SITE,
      p1: '2026-03-02 05:00:00.000',
      p2: '2026-03-09 04:00:00.000',
      p3: '2026-03-02',
      p4: '2026-03-09',
      p5: ['US'],
      p6: '2026-03-01 03:00:00.000',
      p7: '2026-03-01',
    })
    const fromEvents = render(
      statsSql(query({ filters: [{ dimension: 'path', operator: 'is', value: ['/'] }] }), { table: 'events', visits: true }),
    )
    expect(flat(fromEvents.sql)).toContain(
      "FROM (SELECT session_id, countIf(kind = 'pageview') AS sel_pv, countIf(kind = 'custom') AS sel_ce FROM events WHERE site_id = {p0:UUID} AND (timestamp >= {p1:DateTime64(3)} AND timestamp < {p2:DateTime64(3)} AND toDate(timestamp) >= {p3:Date} AND toDate(timestamp) <= {p4:Date}) AND pathname IN {p5:Array(String)} GROUP BY session_id) AS selected INNER JOIN",
    )
  })

  it('series: buckets in the site timezone, or rolled days summed into buckets', () => {
    const today = resolveRange({ range: 'today' }, 'America/New_York', now)
    expect(render(seriesSql(query({ range: today }), { table: 'events', visits: false }))).toEqual({
      sql: `
SELECT toUnixTimestamp(toStartOfHour(timestamp, {p0:String})) AS bucket, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits, countIf(kind = 'pageview') AS pageviews
FROM events WHERE site_id = {p1:UUID} AND (timestamp >= {p2:DateTime64(3)} AND timestamp < {p3:DateTime64(3)} AND toDate(timestamp) >= {p4:Date} AND toDate(timestamp) <= {p5:Date})
GROUP BY bucket ORDER BY bucket`,
      params: {
        p0: 'America/New_York',
        p1: SITE,
        p2: '2026-03-08 05:00:00.000',
        p3: '2026-03-09 04:00:00.000',
        p4: '2026-03-08',
        p5: '2026-03-09',
      },
    })
    const months = render(
      seriesSql(query({ range: resolveRange({ range: '12mo' }, 'America/New_York', now) }), { table: 'rollup', rolled }),
    )
    expect(months.sql).toContain('SELECT toUnixTimestamp(toDateTime(toStartOfMonth(day), {p0:String})) AS bucket')
    expect(months.sql).toContain('property = {p11:String}')
    expect(months.params.p11).toBe('')
  })

  it('breakdown: one shape per plan, the limit bound', () => {
    const rows = render(breakdownSql(query(), 'path', { table: 'events', visits: false }))
    expect(flat(rows.sql)).toMatch(
      /^SELECT value, visitors, visits, pageviews, events, bounces \/ visits AS bounce_rate, duration_ms \/ 1000 \/ visits AS avg_duration FROM \(.*\) WHERE visitors > 0 ORDER BY visitors DESC, value ASC LIMIT \{p\d+:UInt32\}$/,
    )
    expect(Object.values(rows.params)).toContain(5)
    // custom properties: the key bound, no engagement rates
    const prop = render(breakdownSql(query(), "prop:a'b", { table: 'events', visits: false }))
    expect(prop.sql).not.toContain("a'b")
    expect(prop.sql).not.toContain('bounce_rate')
    expect(Object.values(prop.params)).toContain("a'b")
    expect(flat(render(breakdownSql(query(), 'source', { table: 'sessions' })).sql)).toContain('AS visits_by_value LEFT JOIN')
    expect(flat(render(breakdownSql(query(), 'entry_page', { table: 'events', visits: true })).sql)).toContain(
      'argMinMerge(entry_page) AS value, any(visitor_id) AS visitor',
    )
    expect(render(breakdownSql(query(), 'path', { table: 'rollup', rolled })).sql).toContain('FROM day_rollups FINAL')
  })

  it('goals: one tag a goal, currencies by name; no goals, no rows', () => {
    expect(render(goalBreakdownSql(query({ goals: [] })))).toEqual({
      sql: "SELECT '' AS value, 0 AS visitors, 0 AS events, 0 AS total_visitors, 0 AS revenue, '' AS currency WHERE 0 LIMIT {p0:UInt32}",
      params: { p0: 5 },
    })
    const { sql: text, params } = render(goalBreakdownSql(query()))
    expect(text).toContain(
      "arrayFilter(g -> g != '', [if(name = {p0:String}, {p0:String}, ''), if((kind = 'pageview' AND pathname LIKE {p1:String}), {p2:String}, '')])",
    )
    expect(text).toContain("transform(goal, {p3:Array(String)}, {p4:Array(String)}, '') AS goal_currency")
    expect(text).toContain('LIMIT {p10:UInt32}')
    expect(params).toMatchObject({
      p0: 'Signup',
      p1: '/pricing%',
      p2: 'Pricing',
      p3: ['Signup', 'Pricing'],
      p4: ['EUR', ''],
      p5: SITE,
      p10: 5,
    })
  })

  it('goals beside other dimensions: each conversion with its goal and values as one JSON array, in the order of the property', () => {
    const { sql: text } = render(
      breakdownSql(query(), combinedProperty(['source', 'goal', 'entry_page']), { table: 'events', visits: false }),
    )
    expect(text).toContain(
      "toJSONString([toString(if(referrer_source = '', 'Direct / None', referrer_source)), goal, visit_2.visit_page]) AS value",
    )
    expect(text).toContain('INNER JOIN (SELECT session_id, finalizeAggregation(entry_page) AS visit_page FROM sessions FINAL')
    expect(text).toContain("visit_2.visit_page != ''")
    expect(text).toContain('GROUP BY value')
  })

  it('rollup build: the days of a property inserted with their signatures; lookups and clean-up by signature', () => {
    const insert = render(rollupInsertSql(SITE, 'Europe/Berlin', 'path', daySpans(rolled.days, 'Europe/Berlin'), rolled))
    expect(flat(insert.sql)).toMatch(
      /^INSERT INTO day_rollups \(site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms, reports, scroll_sum, engaged_ms_sum\) SELECT \{p0:UUID\}, \{p1:String\}, \{p2:UInt16\}, \{p3:String\}, day,/,
    )
    // a page's rows carry its engagement reports; another property's hold zeros
    expect(flat(insert.sql)).toContain(
      "countIf(kind = 'engagement') AS reports, sumIf(scroll_depth, kind = 'engagement') AS scroll_sum, sumIf(engaged_ms, kind = 'engagement') AS engaged_ms_sum",
    )
    expect(flat(render(rollupInsertSql(SITE, 'UTC', 'source', daySpans(rolled.days, 'UTC'), rolled)).sql)).toContain(
      'bounces, duration_ms, 0, 0, 0 FROM',
    )
    expect(insert.params).toMatchObject({ p0: SITE, p1: 'Europe/Berlin', p2: ROLLUP_VERSION, p3: 'path', p4: rolled.days })
    expect(flat(insert.sql)).toMatch(/WHERE has\(\{p4:Array\(Date\)\}, day\)$/)
    const window = resolveRange({ range: '7d' }, 'Europe/Berlin', now)
    const lookup = flat(render(signaturesAndBuilt(SITE, window)).sql)
    expect(lookup).toContain(
      "UNION ALL SELECT 1, toString(day), n, s, '' FROM (SELECT DISTINCT day, day_events AS n, day_sum AS s FROM day_rollups",
    )
    // the unfiltered lookup also reads the newest partial rollup of the window's last day and that day's visit counts; a filtered one does not
    expect(lookup).toContain('FROM partial_rollups')
    expect(lookup).toContain('visit_session_sum')
    expect(flat(render(signaturesAndBuilt(SITE, window, 'filters:abc')).sql)).not.toContain('partial_rollups')
    expect(flat(render(staleDays(SITE, window)).sql)).toContain('LEFT ANTI JOIN')
    expect(render(outdatedRows(SITE, 'UTC', rolled)).params).toEqual({
      p0: SITE,
      p1: rolled.days,
      p2: 'UTC',
      p3: ROLLUP_VERSION,
      p4: rolled.events,
      p5: rolled.sums,
    })
  })
})
