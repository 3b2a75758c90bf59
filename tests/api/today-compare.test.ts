import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { ORIGIN, email, webHarness } from './web-harness'

/**
 * `today` against yesterday up to the same time of day (docs/api.md, Comparisons), on the API and
 * on the dashboard. A Berlin site (UTC+1 in November), read at 15:30 local time on 18 November.
 */
const NOW = new Date('2026-11-18T14:30:00Z')
const TZ = 'Europe/Berlin'
const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

/** One visitor each (their own address), one pageview, at a Berlin local time. */
const PLANTED: [local: string, path: string][] = [
  // today before 15:30: three visitors
  ['2026-11-18T08:00:00', '/'],
  ['2026-11-18T10:00:00', '/pricing'],
  ['2026-11-18T15:00:00', '/'],
  // yesterday before 15:30: two visitors
  ['2026-11-17T09:00:00', '/'],
  ['2026-11-17T15:00:00', '/blog'],
  // yesterday after 15:30: four visitors, in the whole of yesterday and not in its first 15.5 hours
  ['2026-11-17T16:00:00', '/'],
  ['2026-11-17T18:00:00', '/'],
  ['2026-11-17T20:00:00', '/pricing'],
  ['2026-11-17T23:00:00', '/'],
  // this week (from Monday 16 November) before today
  ['2026-11-16T12:00:00', '/'],
  // the week before: its Monday, its Wednesday before 15:30, then after 15:30 and its Thursday (a whole-day comparison would count them)
  ['2026-11-09T10:00:00', '/'],
  ['2026-11-11T15:00:00', '/about'],
  ['2026-11-11T17:00:00', '/'],
  ['2026-11-12T09:00:00', '/'],
  // the Sunday before that week: in no window
  ['2026-11-08T22:00:00', '/'],
]
/** The planted events from `from` up to `to` (site-local, end excluded): one visitor and one pageview each. */
const plantedIn = (from: string, to: string) => PLANTED.filter(([local]) => local >= from && local < to).length
/** Berlin is UTC+1 in November. */
const utc = (local: string) => new Date(`${local}+01:00`).toISOString()

describe('today compared with yesterday up to the same time', () => {
  let t: Awaited<ReturnType<typeof webHarness>>
  let cookie = ''
  let siteId = ''
  let key = ''

  beforeAll(async () => {
    t = await webHarness('embedded', { now: () => NOW })
    const owner = email()
    const org = await createOrg(t.services.repositories, 'Today', NOW, owner)
    const site = newSite({ domain: 'today.example.com', timezone: TZ }, org.id, NOW)
    await t.services.repositories.sites.create(site)
    siteId = site.id
    key = (await createApiKey(t.services.repositories, { orgId: org.id, name: 'read', scope: 'read' }, NOW)).key
    const lines = PLANTED.map(([local, path], i) =>
      JSON.stringify({
        timestamp: utc(local),
        site: site.snippetId,
        name: 'pageview',
        url: `https://today.example.com${path}`,
        ip: `203.0.113.${i + 1}`,
        userAgent: UA,
      }),
    )
    expect((await importHits(lines, t.services.ingestor)).rejected).toBe(0)
    cookie = await t.signIn(owner)
  })

  const api = async (path: string) => {
    const answer = await createApp(t.services).request(`${ORIGIN}${path}`, { headers: { authorization: `Bearer ${key}` } })
    expect(answer.status, path).toBe(200)
    return (await answer.json()) as any
  }

  it('the API: compare=previous_period of today is yesterday from 00:00 to 15:30, site-local', async () => {
    const json = await api(`/api/v1/stats?site_id=${siteId}&range=today&compare=previous_period`)
    expect(json.range).toMatchObject({ from: '2026-11-18T00:00:00+01:00', to: '2026-11-19T00:00:00+01:00' })
    expect(json.comparison.range).toMatchObject({ from: '2026-11-17T00:00:00+01:00', to: '2026-11-17T15:30:00+01:00', interval: 'hour' })
    // by hand: 3 today, 2 yesterday up to 15:30 (not the 6 of the whole day)
    expect(json.totals.visitors).toBe(3)
    expect(json.comparison.totals.visitors).toBe(2)
    expect(json.comparison.totals.pageviews).toBe(2)
    expect(json.comparison.change.visitors).toEqual({ absolute: 1, relative: 0.5 })

    // yesterday as a range is still compared with the whole day before it
    const yesterday = await api(`/api/v1/stats?site_id=${siteId}&range=yesterday&compare=previous_period`)
    expect(yesterday.totals.visitors).toBe(6)
    expect(yesterday.comparison.range).toMatchObject({ from: '2026-11-16T00:00:00+01:00', to: '2026-11-17T00:00:00+01:00' })

    // the hourly series pairs today's hours with yesterday's up to 15:30: 16 buckets (the last one half an hour)
    const series = await api(`/api/v1/timeseries?site_id=${siteId}&range=today&compare=previous_period`)
    expect(series.series).toHaveLength(24)
    const paired = series.series.filter((b: any) => b.comparison !== null)
    expect(paired).toHaveLength(16)
    expect(paired.reduce((n: number, b: any) => n + b.comparison.pageviews, 0)).toBe(2)
  })

  it('the API: compare=previous_period of week is the week before up to the same weekday and time', async () => {
    const json = await api(`/api/v1/stats?site_id=${siteId}&range=week&compare=previous_period`)
    expect(json.range).toMatchObject({ from: '2026-11-16T00:00:00+01:00', to: '2026-11-19T00:00:00+01:00' })
    expect(json.comparison.range).toMatchObject({ from: '2026-11-09T00:00:00+01:00', to: '2026-11-11T15:30:00+01:00' })
    const now = plantedIn('2026-11-16T00:00:00', '2026-11-18T15:30:00')
    const before = plantedIn('2026-11-09T00:00:00', '2026-11-11T15:30:00')
    expect([now, before]).toEqual([10, 2])
    expect(json.totals.visitors).toBe(now)
    expect(json.comparison.totals.visitors).toBe(before)
    expect(json.comparison.totals.pageviews).toBe(before)
  })

  const v2 = async (body: Record<string, unknown>) => {
    const answer = await createApp(t.services).request(`${ORIGIN}/api/v2/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ site_id: 'today.example.com', ...body }),
    })
    const json = (await answer.json()) as any
    expect(answer.status, JSON.stringify(json)).toBe(200)
    return json
  }

  it('the Stats API v2: day compared with yesterday up to the same time', async () => {
    const today = plantedIn('2026-11-18T00:00:00', '2026-11-18T15:30:00')
    const yesterday = plantedIn('2026-11-17T00:00:00', '2026-11-17T15:30:00')
    expect([today, yesterday]).toEqual([3, 2])
    const json = await v2({ metrics: ['visitors', 'pageviews'], date_range: 'day', include: { comparisons: { mode: 'previous_period' } } })
    expect(json.query.comparison_date_range).toEqual(['2026-11-17T00:00:00+01:00', '2026-11-17T15:29:59+01:00'])
    expect(json.results[0].metrics).toEqual([today, today])
    expect(json.results[0].comparison.metrics).toEqual([yesterday, yesterday])
    expect(json.results[0].comparison.change).toEqual([50, 50])

    // by hour: today's hours paired with yesterday's up to 15:30 (16 buckets, the last one half an hour), the rest of yesterday left out
    const hours = await v2({
      metrics: ['pageviews'],
      date_range: 'day',
      dimensions: ['time:hour'],
      include: { comparisons: { mode: 'previous_period' }, time_labels: true },
    })
    expect(hours.meta.comparison_time_labels).toHaveLength(16)
    const byHour = Object.fromEntries(hours.results.map((r: any) => [r.dimensions[0].slice(11, 13), r.comparison.metrics[0]]))
    expect(byHour).toEqual({
      '08': plantedIn('2026-11-17T08:00:00', '2026-11-17T09:00:00'),
      '10': plantedIn('2026-11-17T10:00:00', '2026-11-17T11:00:00'),
      '15': plantedIn('2026-11-17T15:00:00', '2026-11-17T15:30:00'),
    })

    // a window of whole days keeps whole days: 7d against the 7 days before
    const week = await v2({ metrics: ['visitors'], date_range: '7d', include: { comparisons: { mode: 'previous_period' } } })
    expect(week.query.comparison_date_range).toEqual(['2026-11-05T00:00:00+01:00', '2026-11-11T23:59:59+01:00'])
    expect(week.results[0].comparison.metrics).toEqual([plantedIn('2026-11-05T00:00:00', '2026-11-12T00:00:00')])
  })

  it('the dashboard: today’s totals change against yesterday up to the same time, and it says so', async () => {
    const page = await t.request(`/app/sites/${siteId}?range=today`, { cookie })
    expect(page.status).toBe(200)
    const html = await page.text()
    const visitors =
      /data-metric="visitors"><dt>[^<]*<\/dt><dd><span class="value">([^<]+)<\/span><span class="change ([a-z]*)">([^<]*)</.exec(html)
    expect(visitors?.[1]).toBe('3')
    // 3 against 2 is 50% up (against the whole of yesterday, 6, it would be 50% down)
    expect(visitors?.[2]).toBe('up')
    expect(visitors?.[3].replace(/\s+/g, ' ').trim()).toBe('↑ 50%')
    expect(html).toContain('Changes against yesterday up to 15:30.')

    // a range of whole days says which days it is compared with
    const week = await (await t.request(`/app/sites/${siteId}?range=7d`, { cookie })).text()
    expect(week).toContain('Changes against 5 Nov 2026 to 11 Nov 2026.')
    // this week so far is compared with the week before up to the same weekday and time
    const thisWeek = await (await t.request(`/app/sites/${siteId}?range=week`, { cookie })).text()
    expect(thisWeek).toContain('Changes against 9 Nov 2026 to 11 Nov 2026 up to 15:30.')
  })
})
