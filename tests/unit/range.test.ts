import { Temporal } from 'temporal-polyfill'
import { describe, expect, it } from 'vitest'
import { type ResolvedRange, buckets, daySpans, resolveRange, wholeDays, windowDays } from '../../lib/reports/query/range'

const window = (from: string, to: string, timezone: string, interval: ResolvedRange['interval']): ResolvedRange => ({
  name: 'custom',
  timezone,
  from: Temporal.PlainDate.from(from).toZonedDateTime({ timeZone: timezone }),
  to: Temporal.PlainDate.from(to).toZonedDateTime({ timeZone: timezone }),
  interval,
})

describe('the days and buckets of a window', () => {
  it('lists every site-local day, across clock changes, month and year ends', () => {
    // Berlin's clocks go back on 2026-10-25; Sydney's forward on 2026-10-04; Chatham is +12:45/+13:45
    for (const timezone of ['Europe/Berlin', 'Australia/Sydney', 'Pacific/Chatham', 'UTC']) {
      const days = windowDays(window('2026-09-28', '2027-01-03', timezone, 'day'))
      const walked: string[] = []
      for (
        let d = Temporal.PlainDate.from('2026-09-28');
        Temporal.PlainDate.compare(d, Temporal.PlainDate.from('2027-01-03')) < 0;
        d = d.add({ days: 1 })
      )
        walked.push(d.toString())
      expect(days).toEqual(walked)
      expect(days).toContain('2026-10-25')
      expect(days.at(-1)).toBe('2027-01-02')
    }
    expect(windowDays(window('2026-03-01', '2026-03-01', 'Europe/Berlin', 'day'))).toEqual([])
  })

  it('gives each bucket its local start, a 23- and a 25-hour day included, and the same buckets when asked again', () => {
    const days = buckets(window('2026-03-28', '2026-03-31', 'Europe/Berlin', 'day'))
    expect(days.map((b) => b.label)).toEqual(['2026-03-28T00:00:00+01:00', '2026-03-29T00:00:00+01:00', '2026-03-30T00:00:00+02:00'])
    expect(days.map((b) => b.epoch)).toEqual([
      Date.parse('2026-03-27T23:00:00Z') / 1000,
      Date.parse('2026-03-28T23:00:00Z') / 1000,
      Date.parse('2026-03-29T22:00:00Z') / 1000,
    ])
    const hours = buckets(window('2026-10-25', '2026-10-26', 'Europe/Berlin', 'hour'))
    expect(hours).toHaveLength(25)
    expect(hours.filter((b) => b.label.startsWith('2026-10-25T02:00:00'))).toHaveLength(2)
    // a window asked again is answered with the buckets kept, which nothing can change
    expect(buckets(window('2026-03-28', '2026-03-31', 'Europe/Berlin', 'day'))).toBe(days)
    expect(Object.isFrozen(days)).toBe(true)
    // another timezone or interval over the same dates is another window
    expect(buckets(window('2026-03-28', '2026-03-31', 'UTC', 'day'))[0].label).toBe('2026-03-28T00:00:00+00:00')
    expect(buckets(window('2026-03-01', '2026-05-01', 'Europe/Berlin', 'month')).map((b) => b.label)).toEqual([
      '2026-03-01T00:00:00+01:00',
      '2026-04-01T00:00:00+02:00',
    ])
  })

  it('resolves the ranges that start at a month or a year', () => {
    const now = new Date('2026-11-24T11:00:00Z')
    const view = (range: Parameters<typeof resolveRange>[0]['range']) => {
      const r = resolveRange({ range }, 'Europe/Berlin', now)
      return [r.from.toString(), r.to.toString(), r.interval]
    }
    expect(view('month')).toEqual(['2026-11-01T00:00:00+01:00[Europe/Berlin]', '2026-11-25T00:00:00+01:00[Europe/Berlin]', 'day'])
    expect(view('year')).toEqual(['2026-01-01T00:00:00+01:00[Europe/Berlin]', '2026-11-25T00:00:00+01:00[Europe/Berlin]', 'month'])
    expect(view('last-year')).toEqual(['2025-01-01T00:00:00+01:00[Europe/Berlin]', '2026-01-01T00:00:00+01:00[Europe/Berlin]', 'month'])
    expect(view('12mo')).toEqual(['2025-12-01T00:00:00+01:00[Europe/Berlin]', '2026-11-25T00:00:00+01:00[Europe/Berlin]', 'month'])
    expect(view('30d')).toEqual(['2026-10-26T00:00:00+01:00[Europe/Berlin]', '2026-11-25T00:00:00+01:00[Europe/Berlin]', 'day'])
    // 2026-11-24 is a Tuesday; asked twice, as a read after a read
    for (let i = 0; i < 2; i++) {
      expect(view('7d')).toEqual(['2026-11-18T00:00:00+01:00[Europe/Berlin]', '2026-11-25T00:00:00+01:00[Europe/Berlin]', 'day'])
      expect(view('week')).toEqual(['2026-11-23T00:00:00+01:00[Europe/Berlin]', '2026-11-25T00:00:00+01:00[Europe/Berlin]', 'day'])
      expect(view('yesterday')).toEqual(['2026-11-23T00:00:00+01:00[Europe/Berlin]', '2026-11-24T00:00:00+01:00[Europe/Berlin]', 'hour'])
      expect(view('90d')[0]).toBe('2026-08-27T00:00:00+02:00[Europe/Berlin]')
    }
  })

  it('moves to the next local day at midnight, whatever was resolved before it, and keeps days apart across timezones', () => {
    const today = (iso: string, timezone = 'Europe/Berlin') => resolveRange({ range: 'today' }, timezone, new Date(iso)).from.toString()
    expect(today('2026-10-24T21:59:59.999Z')).toBe('2026-10-24T00:00:00+02:00[Europe/Berlin]')
    // the clocks go back that night: a 25-hour day
    expect(today('2026-10-24T22:00:00Z')).toBe('2026-10-25T00:00:00+02:00[Europe/Berlin]')
    expect(today('2026-10-25T22:59:59.999Z')).toBe('2026-10-25T00:00:00+02:00[Europe/Berlin]')
    expect(today('2026-10-25T23:00:00Z')).toBe('2026-10-26T00:00:00+01:00[Europe/Berlin]')
    // an earlier instant after a later one
    expect(today('2026-10-24T12:00:00Z')).toBe('2026-10-24T00:00:00+02:00[Europe/Berlin]')
    expect(today('2026-10-24T12:00:00Z', 'America/New_York')).toBe('2026-10-24T00:00:00-04:00[America/New_York]')
    expect(today('2026-10-24T23:00:00Z', 'Asia/Tokyo')).toBe('2026-10-25T00:00:00+09:00[Asia/Tokyo]')
    const minutes = resolveRange({ range: 'realtime' }, 'Europe/Berlin', new Date('2026-10-24T12:00:30Z'))
    expect([minutes.from.toString(), minutes.to.toString()]).toEqual([
      '2026-10-24T13:55:30+02:00[Europe/Berlin]',
      '2026-10-24T14:00:30+02:00[Europe/Berlin]',
    ])
    expect(wholeDays(minutes)).toBe(false)
    expect(wholeDays(resolveRange({ range: '7d' }, 'Europe/Berlin', new Date('2026-10-24T12:00:30Z')))).toBe(true)
  })

  it('joins consecutive days into spans, and a span made once is not changed by the next', () => {
    const view = (spans: ReturnType<typeof daySpans>) => spans.map((s) => `${s.from.toString()}..${s.to.toString()}`)
    const first = daySpans(['2026-10-24', '2026-10-25', '2026-10-27'], 'Europe/Berlin')
    expect(view(first)).toEqual([
      '2026-10-24T00:00:00+02:00[Europe/Berlin]..2026-10-26T00:00:00+01:00[Europe/Berlin]',
      '2026-10-27T00:00:00+01:00[Europe/Berlin]..2026-10-28T00:00:00+01:00[Europe/Berlin]',
    ])
    expect(view(daySpans(['2026-10-25'], 'Europe/Berlin'))).toEqual([
      '2026-10-25T00:00:00+02:00[Europe/Berlin]..2026-10-26T00:00:00+01:00[Europe/Berlin]',
    ])
    expect(view(daySpans(['2026-10-24'], 'Europe/Berlin'))).toEqual([
      '2026-10-24T00:00:00+02:00[Europe/Berlin]..2026-10-25T00:00:00+02:00[Europe/Berlin]',
    ])
    expect(view(daySpans(['2026-10-24'], 'UTC'))).toEqual(['2026-10-24T00:00:00+00:00[UTC]..2026-10-25T00:00:00+00:00[UTC]'])
    expect(view(first)[0]).toBe('2026-10-24T00:00:00+02:00[Europe/Berlin]..2026-10-26T00:00:00+01:00[Europe/Berlin]')
  })
})
