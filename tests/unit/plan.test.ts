import { describe, expect, it } from 'vitest'
import type { Query, Read, RolledDays } from '../../lib/reports/query/model'
import { parseFilters } from '../../lib/reports/query/parse'
import { combinedProperty } from '../../lib/reports/dimensions'
import { completePlan, mayUseRollup, plan, planImported, planRead } from '../../lib/reports/query/plan'
import { resolveRange } from '../../lib/reports/query/range'
import { compileRead } from '../../lib/reports/query/run'
import { eventsFrom, windowScope } from '../../lib/reports/query/compile/scope'
import { samplingView, scaleCounts } from '../../lib/reports/query/sampling'

const now = new Date('2026-03-08T12:00:00Z')
const rolled: RolledDays = { days: ['2026-03-03'], events: ['10'], sums: ['7'] }
const query = (filters: unknown[] = [], range: 'realtime' | 'today' | '7d' | '12mo' = '7d'): Query => ({
  siteId: '00000000-0000-4000-8000-000000000001',
  range: resolveRange({ range }, 'America/New_York', now),
  filters: parseFilters(JSON.stringify(filters), 'standalone'),
  goals: [{ id: 'g', name: 'Signup', type: 'event', matchValue: 'Signup', currency: null, createdAt: '' }],
  limit: 10,
  now,
})
const country = { dimension: 'country', operator: 'is', value: ['US'] }
const path = { dimension: 'path', operator: 'contains', value: ['/blog'] }
const stats: Read = { kind: 'stats' }
const series: Read = { kind: 'series' }
const by = (property: string): Read => ({ kind: 'breakdown', property })

describe('the planner', () => {
  it('uses the daily rollup only for reads of whole days, of totals, day or month series and rolled properties', () => {
    expect(mayUseRollup(query(), stats)).toBe(true)
    expect(mayUseRollup(query(), series)).toBe(true)
    expect(mayUseRollup(query([], '12mo'), series)).toBe(true)
    expect(mayUseRollup(query(), by('path'))).toBe(true)
    expect(mayUseRollup(query(), by('entry_page'))).toBe(true)
    // a filtered read is rolled up under its filters
    expect(mayUseRollup(query([country]), stats)).toBe(true)
    expect(mayUseRollup(query([country]), series)).toBe(true)
    expect(mayUseRollup(query([country]), by('path'))).toBe(true)
    // hour buckets are parts of a day; goal is not rolled; bot reads and partial days never
    expect(mayUseRollup(query([], 'today'), series)).toBe(false)
    expect(mayUseRollup(query(), by('goal'))).toBe(false)
    expect(mayUseRollup(query(), by(combinedProperty(['goal', 'source'])))).toBe(false)
    expect(mayUseRollup(query([{ dimension: 'bot_kind', operator: 'is', value: ['seo'] }]), stats)).toBe(false)
    expect(mayUseRollup(query([], 'realtime'), stats)).toBe(false)
  })

  it('reads rolled days from the rollup when there are any', () => {
    expect(plan(query(), stats, rolled)).toEqual({ table: 'rollup', rolled })
    expect(plan(query(), series, rolled)).toEqual({ table: 'rollup', rolled })
    expect(plan(query(), by('source'), rolled)).toEqual({ table: 'rollup', rolled })
    // no rolled day, or a read the rollup cannot answer: as if there were none
    expect(plan(query(), stats, { days: [], events: [], sums: [] })).toEqual({ table: 'sessions' })
    expect(plan(query(), by('goal'), rolled)).toEqual({ table: 'events', visits: false })
    // days rolled up unfiltered never answer a filtered read, nor days rolled up under filters an unfiltered one
    expect(plan(query([country]), stats, rolled)).toEqual({ table: 'sessions' })
    const filteredDays = { ...rolled, filtersKey: 'filters:0123' }
    expect(plan(query([country]), stats, filteredDays)).toEqual({ table: 'rollup', rolled: filteredDays })
    expect(plan(query(), stats, filteredDays)).toEqual({ table: 'sessions' })
  })

  it('reads visits from the sessions rollup when every filter is on a visit attribute', () => {
    expect(plan(query(), stats)).toEqual({ table: 'sessions' })
    expect(plan(query([country]), stats)).toEqual({ table: 'sessions' })
    expect(plan(query([country]), by('source'))).toEqual({ table: 'sessions' })
  })

  it('reads events otherwise, joining visit facts for totals and visit attributes', () => {
    expect(plan(query([path]), stats)).toEqual({ table: 'events', visits: true })
    expect(plan(query([path, country]), by('source'))).toEqual({ table: 'events', visits: true })
    expect(plan(query([country]), by('entry_page'))).toEqual({ table: 'events', visits: true })
    expect(plan(query(), by('exit_page'))).toEqual({ table: 'events', visits: true })
    expect(plan(query([country]), by('path'))).toEqual({ table: 'events', visits: false })
    expect(plan(query(), by('goal'))).toEqual({ table: 'events', visits: false })
    expect(plan(query([], 'today'), series)).toEqual({ table: 'events', visits: false })
    expect(plan(query([{ dimension: 'goal', operator: 'is', value: ['Signup'] }]), stats)).toEqual({ table: 'events', visits: true })
  })

  it('counts bot hits for a bot_kind filter or breakdown', () => {
    expect(plan(query([{ dimension: 'bot_kind', operator: 'is', value: ['seo'] }]), stats, rolled)).toEqual({ table: 'bots' })
    expect(plan(query(), by('bot_kind'))).toEqual({ table: 'bots' })
  })

  it('names the rolled-days lookup a read needs, and completes the plan from its rows', async () => {
    // 7d of 8 March in New York: 2 to 8 March, the 8th being today
    expect(await planRead(query(), stats)).toEqual({ lookup: { key: '', partial: false } })
    expect(await planRead(query(), series)).toEqual({ lookup: { key: '', partial: true } })
    expect(await planRead(query([], 'today'), series)).toEqual({ plan: { builds: [], plan: { table: 'events', visits: false } } })
    const unfiltered = [
      { rolled: 0, d: '2026-03-03', n: '10', s: '7', b: '' },
      { rolled: 1, d: '2026-03-03', n: '10', s: '7', b: '' },
      { rolled: 0, d: '2026-03-04', n: '5', s: '1', b: '' },
      { rolled: 1, d: '2026-03-04', n: '4', s: '1', b: '' },
    ]
    expect(completePlan(query(), stats, { key: '', partial: false }, unfiltered)).toEqual({ builds: [], plan: { table: 'rollup', rolled } })

    // a filtered read rolls up its finished days not yet built under its key, never today
    const step = await planRead(query([country]), by('path'))
    const key = step.lookup?.key ?? ''
    expect(key).toMatch(/^filters:[0-9a-f]{32}:path$/)
    const filtered = [
      { rolled: 0, d: '2026-03-03', n: '10', s: '7', b: '' },
      { rolled: 1, d: '2026-03-03', n: '10', s: '7', b: '' },
      { rolled: 0, d: '2026-03-04', n: '5', s: '1', b: '' },
      { rolled: 0, d: '2026-03-08', n: '2', s: '3', b: '' },
    ]
    expect(completePlan(query([country]), by('path'), { key, partial: false }, filtered)).toEqual({
      builds: [{ key, property: 'path', days: { days: ['2026-03-04'], events: ['5'], sums: ['1'] } }],
      plan: { table: 'rollup', rolled: { days: ['2026-03-03', '2026-03-04'], events: ['10', '5'], sums: ['7', '1'], filtersKey: key } },
    })

    // a filter's first read, none of its days rolled up yet: it answers from events and rolls them up after the answer
    const none = filtered.filter((r) => r.rolled === 0)
    const all = { key, property: 'path', days: { days: ['2026-03-03', '2026-03-04'], events: ['10', '5'], sums: ['7', '1'] } }
    expect(completePlan(query([country]), by('path'), { key, partial: false }, none)).toEqual({
      builds: [],
      plan: { table: 'events', visits: false },
      after: [all],
    })
    // unless the query is sampled: its days are rolled up first, and the answer stays exact
    const sampled = { ...query([country]), sample: { denominator: 4 } } as Query
    expect(completePlan(sampled, by('path'), { key, partial: false }, none)).toEqual({
      builds: [all],
      plan: { table: 'rollup', rolled: { ...all.days, filtersKey: key } },
    })
  })
})

describe('the planner of properties rolled up on demand', () => {
  const sourceAndPage = combinedProperty(['source', 'path'])
  const lookups = [
    { rolled: 0, d: '2026-03-03', n: '10', s: '7', b: '' },
    { rolled: 0, d: '2026-03-04', n: '5', s: '1', b: '' },
    { rolled: 0, d: '2026-03-08', n: '2', s: '3', b: '' },
  ]
  const days = { days: ['2026-03-03', '2026-03-04'], events: ['10', '5'], sums: ['7', '1'] }

  it('rolls up the days of two dimensions together, and of a dimension the refresh does not roll, unfiltered too', async () => {
    for (const property of [sourceAndPage, combinedProperty(['country', 'device']), 'city', 'entry_page_hostname', 'browser_version']) {
      expect(mayUseRollup(query(), by(property))).toBe(true)
      const key = `filters:none:${property}`
      expect(await planRead(query(), by(property))).toEqual({ lookup: { key, partial: false } })
      // the first read answers from events and rolls the finished days up after its answer
      const first = completePlan(query(), by(property), { key, partial: false }, lookups)
      expect(first.plan.table).not.toBe('rollup')
      expect(first.after).toEqual([{ key, property, days }])
      // the next reads take those days from the rollup, under that key alone
      const built = [...lookups, ...lookups.slice(0, 2).map((r) => ({ ...r, rolled: 1 }))]
      expect(completePlan(query(), by(property), { key, partial: false }, built)).toEqual({
        builds: [],
        plan: { table: 'rollup', rolled: { ...days, filtersKey: key } },
      })
      expect(plan(query(), by(property), days).table).not.toBe('rollup')
    }
    // a time bucket beside them: the same days, by day
    expect(mayUseRollup(query(), { kind: 'breakdown', property: sourceAndPage, byBucket: true })).toBe(true)
    // under filters, the filters' key as for any property
    expect((await planRead(query([country]), by(sourceAndPage))).lookup?.key).toMatch(/^filters:[0-9a-f]{32}:/)
  })
})

describe('the planner of ga4 reads', () => {
  const ga4 = (filters: unknown[] = [], range: 'realtime' | 'today' | '7d' = '7d') => ({
    range: resolveRange({ range }, 'America/New_York', now),
    filters: parseFilters(JSON.stringify(filters), 'ga4'),
  })
  const device = { dimension: 'device', operator: 'is', value: ['mobile'] }
  const event = { dimension: 'event', operator: 'is', value: ['signup'] }

  it('reads the one imported dataset every named dimension is in, and custom events only from the events dataset', () => {
    expect(planImported(ga4(), stats)).toEqual({ dataset: 'visitors', events: 'separate' })
    expect(planImported(ga4(), series)).toEqual({ dataset: 'visitors', events: 'none' })
    expect(planImported(ga4([], 'today'), series)).toEqual({ dataset: 'visitors_hourly', events: 'none' })
    expect(planImported(ga4([], 'today'), stats)).toEqual({ dataset: 'visitors', events: 'separate' })
    expect(planImported(ga4([country]), stats)).toEqual({ dataset: 'locations', events: 'none' })
    expect(planImported(ga4([country]), by('city'))).toEqual({ dataset: 'locations', events: 'none' })
    // a hostname alone reads its own users; beside a path, the pages that hold both; with Plausible's imports, their pages
    expect(planImported(ga4(), by('hostname'))).toEqual({ dataset: 'hostnames', events: 'none' })
    const host = { dimension: 'hostname', operator: 'is', value: ['example.com'] }
    expect(planImported(ga4([host]), by('path'))).toEqual({ dataset: 'pages', events: 'none' })
    expect(planImported(ga4([host]), stats)).toEqual({ dataset: 'hostnames', events: 'none' })
    expect(planImported(ga4(), by('hostname'), 'all')).toEqual({ dataset: 'pages', events: 'none' })
    expect(() => planImported(ga4([host]), by('country'))).toThrow(/filters hostname .*hostnames.* and property country .*locations/)
    expect(planImported(ga4([event]), stats)).toEqual({ dataset: 'events', events: 'same' })
    expect(planImported(ga4(), by('event'))).toEqual({ dataset: 'events', events: 'same' })
    expect(planImported(ga4([event]), series)).toEqual({ dataset: 'events', events: 'none' })
  })

  it('refuses dimensions no single dataset holds together, naming both, and windows of minutes', () => {
    expect(() => planImported(ga4([country]), by('path'))).toThrow(/filters country .*locations.* and property path .*pages/)
    expect(() => planImported(ga4([country, device]), stats)).toThrow(/filters country .* and filters device/)
    expect(() => planImported(ga4([device], 'today'), series)).toThrow(/filters device .* and hour buckets/)
    expect(() => planImported(ga4([event]), by('source'))).toThrow(/filters event .* and property source/)
    expect(() => planImported(ga4([], 'realtime'), stats)).toThrow(/^range: realtime/)
  })
})

describe('the planner with a sample', () => {
  const sampled = (filters: unknown[] = []): Query => ({ ...query(filters), sample: { denominator: 4 } })

  it('samples the reads of raw events, never the rollups, the sessions rollup or goal conversions', () => {
    expect(plan(sampled(), series)).toEqual({ table: 'events', visits: false, sample: 4 })
    expect(plan(sampled([path]), stats)).toEqual({ table: 'events', visits: true, sample: 4 })
    expect(plan(sampled([path]), by('city'))).toEqual({ table: 'events', visits: true, sample: 4 })
    expect(plan(sampled(), by('city'))).toEqual({ table: 'sessions' })
    expect(plan(sampled(), by('prop:plan'))).toEqual({ table: 'events', visits: false, sample: 4 })
    expect(plan(sampled(), by('goal'))).toEqual({ table: 'events', visits: false })
    expect(plan(sampled(), stats)).toEqual({ table: 'sessions' })
    expect(plan(sampled(), series, rolled)).toEqual({ table: 'rollup', rolled })
    // without a sample, as before
    expect(plan(query(), series)).toEqual({ table: 'events', visits: false })
  })

  it('reads events SAMPLE 1/n where the plan samples, and the statement is otherwise the same', () => {
    const exact = compileRead(query(), by('prop:plan')).sql
    const sample = compileRead(sampled(), by('prop:plan')).sql
    expect(sample).toContain('FROM events SAMPLE 1/4 WHERE')
    expect(exact).not.toContain('SAMPLE')
    expect(sample.replaceAll(' SAMPLE 1/4', '')).toBe(exact)
    expect(compileRead(sampled(), by('goal')).sql).not.toContain('SAMPLE')
    expect(() => eventsFrom({ ...windowScope(query().siteId, query().range), sample: 1.5 })).toThrow()
    expect(() => eventsFrom({ ...windowScope(query().siteId, query().range), table: 'recent_events', sample: 4 })).toThrow()
  })

  it('scales counts by n, not rates, and states the margin of the largest visitor figure', () => {
    expect(scaleCounts([{ value: '/', visitors: '3', visits: 4, pageviews: '10', bounce_rate: 0.5, avg_duration: 12 }], 4)).toEqual([
      { value: '/', visitors: 12, visits: 16, pageviews: 40, bounce_rate: 0.5, avg_duration: 12 },
    ])
    expect(samplingView(undefined, true, 100)).toBeUndefined()
    expect(samplingView({ denominator: 4 }, false, 100)).toBeUndefined()
    // 1.96 * sqrt(3 / 3000) = 0.061980
    expect(samplingView({ denominator: 4 }, true, 3000)).toEqual({ fraction: 0.25, relativeError: 0.062 })
    expect(samplingView({ denominator: 3 }, true, 0)).toEqual({ fraction: 0.333333, relativeError: null })
  })
})
