import { describe, expect, it } from 'vitest'
import { funnelLevelsSql } from '../../lib/reports/query/compile/funnels'
import { render } from '../../lib/storage/clickhouse/sql'
import { contributorsSql, vitalsSql } from '../../lib/reports/query/compile/vitals'
import type { Query } from '../../lib/reports/query/model'
import { resolveRange } from '../../lib/reports/query/range'
import { experienceScore } from '../../lib/reports/query/vitals'

const SITE = '00000000-0000-4000-8000-000000000001'
const now = new Date('2026-11-22T12:00:00Z')
const week = resolveRange({ range: '7d' }, 'Europe/Berlin', now)
const query = (over: Partial<Query> = {}): Query => ({ siteId: SITE, range: week, filters: [], goals: [], limit: 5, now, ...over })
const flat = (text: string) => text.replace(/\s+/g, ' ').trim()
const HOSTILE = "x' OR 1=1 --"

describe('vitals builders', () => {
  it('bind the window, filters, the form factor and the limit; the percentile level comes from the allow-list', () => {
    const { sql, params } = render(
      vitalsSql(query({ filters: [{ dimension: 'path', operator: 'is', value: [HOSTILE] }] }), { percentile: '90', formFactor: 'phone' }),
    )
    expect(flat(sql)).toContain("pathname IN {p6:Array(String)} AND name = 'vital' AND kind = 'vital' AND device = {p7:String}")
    expect(flat(sql)).toContain("quantileExactInclusiveIf(0.9)(vital_value, vital_name = 'LCP') AS p_LCP")
    expect(flat(sql)).toContain(
      "countIf(vital_name = 'INP' AND vital_value <= 200) AS good_INP, countIf(vital_name = 'INP' AND vital_value > 500) AS poor_INP",
    )
    expect(flat(sql)).toContain('GROUP BY GROUPING SETS ((), (day), (pathname), (country_code), (device), (browser), (os))')
    expect(flat(sql)).toMatch(/WHERE group IN \('', 'day'\) OR rank <= \{p8:UInt32\} ORDER BY group, rank$/)
    expect(params).toMatchObject({ p0: 'Europe/Berlin', p1: SITE, p6: [HOSTILE], p7: 'Mobile', p8: 5 })
    expect(sql).not.toContain(HOSTILE)
  })

  it('contributors: attribution keys bound, one kind per metric field, at most the limit per kind', () => {
    const { sql, params } = render(contributorsSql(query(), { percentile: '50' }))
    expect(flat(sql)).toContain("('lcpElements', if(vital_name = 'LCP', props[{p0:String}], ''))")
    expect(flat(sql)).toContain('quantileExactInclusive(0.5)(vital_value) AS value')
    expect(params).toMatchObject({
      p0: 'attribution.target',
      p1: 'attribution.largestShiftTarget',
      p2: 'attribution.scriptUrl',
      p3: 'attribution.interactionTarget',
      p9: ['LCP', 'CLS', 'INP'],
      p10: 5,
    })
  })

  it('the experience score weighs good as 100 and needs-improvement as 50, over the metrics with samples', () => {
    const none = { samples: 0, good: 0, poor: 0 }
    expect(experienceScore({ LCP: none, INP: none, CLS: none, FCP: none, TTFB: none })).toBeNull()
    // LCP alone: 2 good, 1 needs improvement, 1 poor = (200 + 50) / 4
    expect(experienceScore({ LCP: { samples: 4, good: 2, poor: 1 }, INP: none, CLS: none, FCP: none, TTFB: none })).toBe(62.5)
    // LCP all good (weight 0.3), CLS all poor (weight 0.25): 30 / 0.55
    expect(
      experienceScore({ LCP: { samples: 3, good: 3, poor: 0 }, INP: none, CLS: { samples: 2, good: 0, poor: 2 }, FCP: none, TTFB: none }),
    ).toBe(54.5)
  })
})

describe('funnel builder', () => {
  const goals = [
    {
      id: '00000000-0000-4000-8000-00000000000a',
      name: 'Signup',
      type: 'event' as const,
      matchValue: 'Signup',
      currency: null,
      createdAt: '',
    },
  ]
  const page = (value: string) => ({ type: 'page' as const, value, label: null })
  const event = (value: string) => ({ type: 'event' as const, value, label: null })
  const goal = { type: 'goal' as const, value: goals[0].id, label: null }
  const PER_STEP =
    "windowFunnel(2764800000, 'strict_increase')(toUInt64(toUnixTimestamp64Milli(timestamp)) * 16 + toUInt64(15 - step), step = 0, step = 1"

  it('binds step values; windowFunnel in strict_increase mode per visit over the events that meet a step', () => {
    const steps = [page(`/pricing*${HOSTILE}`), event(HOSTILE), goal]
    const { sql, params } = render(funnelLevelsSql(query({ goals }), steps))
    expect(sql).not.toContain(HOSTILE)
    expect(Object.values(params)).toEqual(
      expect.arrayContaining([`/pricing%x' OR 1=1 --`, HOSTILE, 'Signup', ['pageview', HOSTILE, 'Signup']]),
    )
    expect(flat(sql)).toContain(
      "windowFunnel(172800000, 'strict_increase')(toUInt64(toUnixTimestamp64Milli(timestamp)), ((kind = 'pageview' AND pathname LIKE {p",
    )
    expect(flat(sql)).toContain('GROUP BY visitor_id, session_id')
    expect(sql).not.toContain('ARRAY JOIN')
    // a step naming a deleted goal is never met
    expect(flat(render(funnelLevelsSql(query(), steps)).sql)).toContain(', toUInt8(0)) AS visit_level')
    // filters keep the visits holding a selected event
    expect(
      flat(render(funnelLevelsSql(query({ filters: [{ dimension: 'country', operator: 'is', value: ['DE'] }] }), steps)).sql),
    ).toContain('AND session_id IN (SELECT session_id FROM events WHERE')
  })

  it('gives an event a row per step it meets where one event may meet two steps in a row', () => {
    const perStep = (steps: Parameters<typeof funnelLevelsSql>[1]) =>
      flat(render(funnelLevelsSql(query({ goals }), steps)).sql).includes(PER_STEP)
    expect(perStep([page('/pricing*'), page('/pricing/pro')])).toBe(true)
    expect(perStep([page('/pricing/pro'), page('/pricing*')])).toBe(true)
    expect(perStep([page('/a'), page('/a')])).toBe(true)
    expect(perStep([page('/*/x'), page('/blog/*')])).toBe(true)
    expect(perStep([event('Signup'), goal])).toBe(true)
    expect(perStep([page('/blog/*'), page('/pricing/*')])).toBe(false)
    expect(perStep([page('/a'), page('/b'), page('/a')])).toBe(false)
    expect(perStep([page('/pricing*'), event('Signup'), goal])).toBe(true)
    expect(perStep([page('/pricing*'), goal, event('Start')])).toBe(false)
  })
})
