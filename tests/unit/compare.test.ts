import { describe, expect, it } from 'vitest'
import { change, comparisonWindow, resolveComparison } from '../../lib/reports/query/compare'
import { resolveRange } from '../../lib/reports/query/range'

/** The comparison window by the calendar, worked out by hand for each case (Europe/Berlin: clocks go back on 25 October 2026). */
const TZ = 'Europe/Berlin'
const NOW = new Date('2026-10-26T09:30:00Z') // Monday 10:30 in Berlin, the day after the clock change
const span = (r: { from: { toString(o?: object): string }; to: { toString(o?: object): string } }) => [
  r.from.toString({ timeZoneName: 'never' }),
  r.to.toString({ timeZoneName: 'never' }),
]

describe('comparisonWindow', () => {
  it('previous_period: the day before for today, the days before across the clock change', () => {
    const today = resolveRange({ range: 'today' }, TZ, NOW)
    expect(span(comparisonWindow(today, 'previous_period'))).toEqual(['2026-10-25T00:00:00+02:00', '2026-10-26T00:00:00+01:00'])
    const week = resolveRange({ range: '7d' }, TZ, NOW)
    expect(span(comparisonWindow(week, 'previous_period'))).toEqual(['2026-10-13T00:00:00+02:00', '2026-10-20T00:00:00+02:00'])
    // week on a Monday is one day: the Monday before
    const thisWeek = resolveRange({ range: 'week' }, TZ, NOW)
    expect(span(comparisonWindow(thisWeek, 'previous_period'))).toEqual(['2026-10-19T00:00:00+02:00', '2026-10-20T00:00:00+02:00'])
  })

  it('previous_period of today, given now: yesterday up to the same time of day on the clock, across the clock change', () => {
    const today = resolveRange({ range: 'today' }, TZ, NOW)
    // 10:30 on Monday; Sunday had 25 hours, and its 10:30 is 11.5 hours after its start
    expect(span(comparisonWindow(today, 'previous_period', {}, NOW))).toEqual(['2026-10-25T00:00:00+02:00', '2026-10-25T10:30:00+01:00'])
    expect(span(resolveComparison(today, { compare: 'previous_period' }, NOW)!.window)).toEqual([
      '2026-10-25T00:00:00+02:00',
      '2026-10-25T10:30:00+01:00',
    ])
    // only today is cut: yesterday and year_over_year keep whole days
    const yesterday = resolveRange({ range: 'yesterday' }, TZ, NOW)
    expect(span(comparisonWindow(yesterday, 'previous_period', {}, NOW))).toEqual([
      '2026-10-24T00:00:00+02:00',
      '2026-10-25T00:00:00+02:00',
    ])
    expect(span(comparisonWindow(today, 'year_over_year', {}, NOW))).toEqual(['2025-10-26T00:00:00+02:00', '2025-10-27T00:00:00+01:00'])
  })

  it('previous_period of week, given now: the week before up to the same weekday and time of day, across the clock change', () => {
    // Monday 10:30 (+01:00): the Monday before, 00:00 to 10:30 (+02:00), not its whole day
    const thisWeek = resolveRange({ range: 'week' }, TZ, NOW)
    expect(span(comparisonWindow(thisWeek, 'previous_period', {}, NOW))).toEqual(['2026-10-19T00:00:00+02:00', '2026-10-19T10:30:00+02:00'])
    // Thursday 18:05: Monday to Thursday 18:05 of the week before
    const thursday = new Date('2026-10-29T17:05:00Z')
    expect(span(comparisonWindow(resolveRange({ range: 'week' }, TZ, thursday), 'previous_period', {}, thursday))).toEqual([
      '2026-10-19T00:00:00+02:00',
      '2026-10-22T18:05:00+02:00',
    ])
  })

  it('year_over_year: minutes for realtime, days for whole days', () => {
    const realtime = resolveRange({ range: 'realtime' }, TZ, NOW)
    expect(span(comparisonWindow(realtime, 'year_over_year'))).toEqual(['2025-10-26T10:25:00+01:00', '2025-10-26T10:30:00+01:00'])
    const month = resolveRange({ range: 'month' }, TZ, NOW)
    expect(span(comparisonWindow(month, 'year_over_year'))).toEqual(['2025-10-01T00:00:00+02:00', '2025-10-27T00:00:00+01:00'])
  })

  it('custom: the days asked; refusals name the parameter', () => {
    const week = resolveRange({ range: '7d' }, TZ, NOW)
    expect(span(comparisonWindow(week, 'custom', { from: '2026-01-01', to: '2026-01-07' }))).toEqual([
      '2026-01-01T00:00:00+01:00',
      '2026-01-08T00:00:00+01:00',
    ])
    expect(() => comparisonWindow(week, 'custom', { from: '2026-01-01' })).toThrow(/^compare_to: required/)
    expect(() => comparisonWindow(week, 'custom', { from: '2026-1-1', to: '2026-01-07' })).toThrow(/^compare_from: must be a date/)
    expect(() => resolveComparison(week, { compare_to: '2026-01-07' })).toThrow(/^compare_to: taken only with compare=custom/)
    expect(resolveComparison(week, {})).toBeNull()
  })
})

describe('change', () => {
  it('is current minus compared, and that over compared to 4 decimals; null from 0 or null', () => {
    expect(change(3, 2)).toEqual({ absolute: 1, relative: 0.5 })
    expect(change(1, 3)).toEqual({ absolute: -2, relative: -0.6667 })
    expect(change(0.3, 0.1)).toEqual({ absolute: 0.2, relative: 2 })
    expect(change(5, 0)).toEqual({ absolute: 5, relative: null })
    expect(change(null, 4)).toEqual({ absolute: null, relative: null })
  })
})
