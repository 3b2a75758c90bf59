import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { client, getOk, testServices } from '../helpers'
import {
  NOW,
  UAS,
  localDate,
  fixture,
  expectedTotals,
  expectedBreakdown,
  round,
  type RefEvent,
  type RefVisit,
  type Ref,
} from './report-reference'

describe('reports', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key = ''
  let writeKey = ''
  const sites: Record<string, { id: string; ref: Ref; tz: string }> = {}

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Reports', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    writeKey = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    for (const [name, tz, seed] of [
      ['ny', 'America/New_York', 11],
      ['in', 'Asia/Kolkata', 29],
      ['empty', 'UTC', 0],
    ] as const) {
      const site = newSite({ domain: `${name}.reports.test`, timezone: tz }, org.id, NOW)
      await services.repositories.sites.create(site)
      const ref = name === 'empty' ? { lines: [], events: [], visits: new Map() } : fixture(site.snippetId, site.domain, tz, seed)
      const result = await importHits(ref.lines, services.ingestor)
      expect(result.rejected).toBe(0)
      sites[name] = { id: site.id, ref: ref as Ref, tz }
    }
  })

  const get = (path: string) => getOk(call, path, key)
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`

  // boundaries by hand: 2026-11-22T15:00Z is Sunday 10:00 in New York (EST since 1 November, 06:00 UTC)
  const NY_RANGES: [string, string, string, string][] = [
    ['today', '2026-11-22T00:00:00-05:00', '2026-11-23T00:00:00-05:00', 'hour'],
    ['yesterday', '2026-11-21T00:00:00-05:00', '2026-11-22T00:00:00-05:00', 'hour'],
    ['7d', '2026-11-16T00:00:00-05:00', '2026-11-23T00:00:00-05:00', 'day'],
    ['week', '2026-11-16T00:00:00-05:00', '2026-11-23T00:00:00-05:00', 'day'],
    ['month', '2026-11-01T00:00:00-04:00', '2026-11-23T00:00:00-05:00', 'day'],
    ['30d', '2026-10-24T00:00:00-04:00', '2026-11-23T00:00:00-05:00', 'day'],
    ['90d', '2026-08-25T00:00:00-04:00', '2026-11-23T00:00:00-05:00', 'day'],
    ['year', '2026-01-01T00:00:00-05:00', '2026-11-23T00:00:00-05:00', 'month'],
    ['ytd', '2026-01-01T00:00:00-05:00', '2026-11-23T00:00:00-05:00', 'month'],
    ['12mo', '2025-12-01T00:00:00-05:00', '2026-11-23T00:00:00-05:00', 'month'],
    ['last-year', '2025-01-01T00:00:00-05:00', '2026-01-01T00:00:00-05:00', 'month'],
    ['realtime', '2026-11-22T09:55:00-05:00', '2026-11-22T10:00:00-05:00', 'minute'],
  ]

  it.each(NY_RANGES)('range %s resolves in the site timezone and counts as the reference does', async (range, from, to, interval) => {
    const json = await get(`/api/v1/stats?site_id=${sites.ny.id}&range=${range}`)
    expect(json.range).toEqual({ name: range, from, to, interval, timezone: 'America/New_York' })
    expect(json.source).toBe('standalone')
    expect(json.totals).toEqual(expectedTotals(sites.ny.ref, from, to))
  })

  it('all starts at the first event day; custom ranges of one day and of several days', async () => {
    const first = Math.min(...sites.in.ref.events.map((e) => e.ts))
    const all = await get(`/api/v1/stats?site_id=${sites.in.id}&range=all`)
    expect(all.range.from).toBe(`${localDate(first, 'Asia/Kolkata')}T00:00:00+05:30`)
    expect(all.range.interval).toBe('month')
    expect(all.totals).toEqual(expectedTotals(sites.in.ref, all.range.from, all.range.to))
    const one = await get(`/api/v1/stats?site_id=${sites.in.id}&range=custom&from=2026-11-20&to=2026-11-20`)
    expect(one.range).toMatchObject({ from: '2026-11-20T00:00:00+05:30', to: '2026-11-21T00:00:00+05:30', interval: 'hour' })
    expect(one.totals).toEqual(expectedTotals(sites.in.ref, '2026-11-20T00:00:00+05:30', '2026-11-21T00:00:00+05:30'))
    const several = await get(`/api/v1/stats?site_id=${sites.in.id}&range=custom&from=2026-10-25&to=2026-11-21`)
    expect(several.range).toMatchObject({ from: '2026-10-25T00:00:00+05:30', to: '2026-11-22T00:00:00+05:30', interval: 'day' })
    expect(several.totals).toEqual(expectedTotals(sites.in.ref, '2026-10-25T00:00:00+05:30', '2026-11-22T00:00:00+05:30'))
  })

  it('timeseries are continuous and labelled with the site offset across the DST change', async () => {
    const json = await get(`/api/v1/timeseries?site_id=${sites.ny.id}&range=30d`)
    expect(json.series).toHaveLength(30)
    expect(json.series[0].timestamp).toBe('2026-10-24T00:00:00-04:00')
    expect(json.series.find((b: { timestamp: string }) => b.timestamp.startsWith('2026-11-01'))?.timestamp).toBe(
      '2026-11-01T00:00:00-04:00',
    )
    expect(json.series.find((b: { timestamp: string }) => b.timestamp.startsWith('2026-11-02'))?.timestamp).toBe(
      '2026-11-02T00:00:00-05:00',
    )
    for (const bucket of json.series) {
      const day = bucket.timestamp.slice(0, 10)
      const next = json.series[json.series.indexOf(bucket) + 1]?.timestamp ?? json.range.to
      const e = expectedTotals(sites.ny.ref, bucket.timestamp, next)
      expect({ day, visitors: bucket.visitors, visits: bucket.visits, pageviews: bucket.pageviews }).toEqual({
        day,
        visitors: e.visitors,
        visits: e.visits,
        pageviews: e.pageviews,
      })
    }
    // the day of the change has 25 hours
    const change = await get(`/api/v1/timeseries?site_id=${sites.ny.id}&range=custom&from=2026-11-01&to=2026-11-01`)
    expect(change.series).toHaveLength(25)
    expect(
      change.series
        .filter((b: { timestamp: string }) => b.timestamp.startsWith('2026-11-01T01:00'))
        .map((b: { timestamp: string }) => b.timestamp),
    ).toEqual(['2026-11-01T01:00:00-04:00', '2026-11-01T01:00:00-05:00'])
    const realtime = await get(`/api/v1/timeseries?site_id=${sites.ny.id}&range=realtime`)
    expect(realtime.series).toHaveLength(30)
    expect(realtime.range.interval).toBe('minute')
  })

  const R = ['2026-08-01T00:00:00Z', '2026-11-23T00:00:00Z'] as const
  const custom = `range=custom&from=2026-07-31&to=2026-11-22`

  it('filters with every operator, OR within a filter and AND across them', async () => {
    const cases: [unknown[], (e: RefEvent, v: RefVisit) => boolean][] = [
      [[{ dimension: 'path', operator: 'is', value: ['/pricing', '/docs'] }], (e) => ['/pricing', '/docs'].includes(e.path)],
      [[{ dimension: 'path', operator: 'is_not', value: ['/'] }], (e) => e.path !== '/'],
      [[{ dimension: 'path', operator: 'contains', value: ['BLOG'] }], (e) => e.path.includes('blog')],
      [[{ dimension: 'path', operator: 'matches', value: ['^/blog/[ab]$'] }], (e) => /^\/blog\/[ab]$/.test(e.path)],
      [[{ dimension: 'country', operator: 'is', value: ['GB', 'DE'] }], (e, v) => ['GB', 'DE'].includes(v.country)],
      [[{ dimension: 'source', operator: 'is', value: ['Direct / None'] }], (e, v) => v.source === 'Direct / None'],
      // event-scoped and visit-scoped together
      [
        [
          { dimension: 'path', operator: 'is', value: ['/pricing'] },
          { dimension: 'device', operator: 'is', value: ['Mobile'] },
        ],
        (e, v) => e.path === '/pricing' && v.device === 'Mobile',
      ],
      [[{ dimension: 'entry_page', operator: 'is', value: ['/'] }], (e, v) => v.entry === '/'],
      [[{ dimension: 'exit_page', operator: 'contains', value: ['blog'] }], (e, v) => v.exit.includes('blog')],
      [[{ dimension: 'event', operator: 'is', value: ['Signup'] }], (e) => e.name === 'Signup'],
      [[{ dimension: 'prop:plan', operator: 'is', value: ['pro'] }], (e) => e.plan === 'pro'],
    ]
    for (const [filters, keep] of cases) {
      const json = await get(`/api/v1/stats?site_id=${sites.ny.id}&${custom}${filtersParam(filters)}`)
      expect(json.totals, JSON.stringify(filters)).toEqual(
        expectedTotals(sites.ny.ref, `${R[0].replace('Z', '')}-04:00`, '2026-11-23T00:00:00-05:00', keep),
      )
    }
  })

  it('breaks down by path, source and prop:, sorted by visitors then value, with limits', async () => {
    const from = '2026-08-01T00:00:00-04:00'
    const to = '2026-11-23T00:00:00-05:00'
    const reference = (valueFor: (e: RefEvent, v: RefVisit) => string | undefined, engagement: boolean) =>
      expectedBreakdown(sites.ny.ref, from, to, valueFor, engagement)
    const path = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=path`)
    expect(path.results).toEqual(reference((e) => e.path, true))
    const source = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=source&limit=2`)
    expect(source.results).toEqual(reference((e, v) => v.source, true).slice(0, 2))
    const plan = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=prop:plan`)
    expect(plan.results).toEqual(reference((e) => e.plan, false))
    expect(plan.results[0]).not.toHaveProperty('bounceRate')
    // the event breakdown: pageviews and custom events, not the collector's engagement reports
    const event = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=event`)
    expect(event.results).toEqual(reference((e) => (e.kind === 'engagement' ? undefined : e.name), false))
    const limited = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=path&limit=0`)
    expect(limited.results).toHaveLength(1)
  })

  it('breaks down by visit attributes, entry and exit pages under event-scoped and visit-scoped filters', async () => {
    const [from, to] = R
    const cases: [unknown[], (e: RefEvent, v: RefVisit) => boolean][] = [
      [[{ dimension: 'path', operator: 'is', value: ['/pricing'] }], (e) => e.path === '/pricing'],
      [
        [
          { dimension: 'country', operator: 'is', value: ['US', 'DE'] },
          { dimension: 'path', operator: 'contains', value: ['blog'] },
        ],
        (e, v) => ['US', 'DE'].includes(v.country) && e.path.includes('blog'),
      ],
      [[{ dimension: 'event', operator: 'is', value: ['Signup'] }], (e) => e.name === 'Signup'],
    ]
    const properties: [string, (e: RefEvent, v: RefVisit) => string][] = [
      ['entry_page', (e, v) => v.entry],
      ['exit_page', (e, v) => v.exit],
      ['source', (e, v) => v.source],
      ['device', (e, v) => v.device],
    ]
    for (const [filters, keep] of cases) {
      for (const [property, valueFor] of properties) {
        const json = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=${property}&limit=1000${filtersParam(filters)}`)
        const expected = expectedBreakdown(sites.ny.ref, from, to, valueFor, true, keep)
        expect(expected.length, `${property} ${JSON.stringify(filters)}`).toBeGreaterThan(0)
        expect(json.results, `${property} ${JSON.stringify(filters)}`).toEqual(expected)
      }
    }
  })

  it('goals: definitions, conversions, a goal filter, and goal breakdown rows', async () => {
    const created = await call('POST', '/api/v1/goals', {
      key: writeKey,
      body: { site_id: sites.ny.id, type: 'event', matchValue: 'Signup', currency: 'EUR' },
    })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ name: 'Signup', type: 'event', currency: 'EUR' })
    const page = await call('POST', '/api/v1/goals', { key: writeKey, body: { site_id: sites.ny.id, type: 'page', matchValue: '/blog/*' } })
    expect(page.json.name).toBe('Visit /blog/*')
    expect(
      (await call('POST', '/api/v1/goals', { key: writeKey, body: { site_id: sites.ny.id, type: 'page', matchValue: '/blog/*' } })).status,
    ).toBe(409)
    expect(
      (await call('POST', '/api/v1/goals', { key: writeKey, body: { site_id: sites.ny.id, type: 'visit', matchValue: '/x' } })).status,
    ).toBe(400)

    const from = '2026-08-01T00:00:00-04:00'
    const to = '2026-11-23T00:00:00-05:00'
    const all = expectedTotals(sites.ny.ref, from, to)
    const signups = sites.ny.ref.events.filter((e) => e.name === 'Signup')
    const blog = sites.ny.ref.events.filter((e) => e.kind === 'pageview' && e.path.startsWith('/blog/'))
    const rows = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=goal`)
    const expected = [
      {
        value: 'Signup',
        visitors: new Set(signups.map((e) => e.visitor)).size,
        events: signups.length,
        conversions: signups.length,
        conversionRate: round(new Set(signups.map((e) => e.visitor)).size / all.visitors, 4),
        revenue: { amount: round(signups.filter((e) => e.plan === 'pro').length * 10.5, 2), currency: 'EUR' },
      },
      {
        value: 'Visit /blog/*',
        visitors: new Set(blog.map((e) => e.visitor)).size,
        events: blog.length,
        conversions: blog.length,
        conversionRate: round(new Set(blog.map((e) => e.visitor)).size / all.visitors, 4),
      },
    ].sort((a, b) => b.visitors - a.visitors || a.value.localeCompare(b.value))
    expect(rows.results).toEqual(expected)
    expect(rows.results[0]).not.toHaveProperty('bounceRate')

    // a goal filter keeps the visits that converted, with all their events
    const converted = new Set(signups.map((e) => e.visit))
    const filtered = await get(
      `/api/v1/stats?site_id=${sites.ny.id}&${custom}${filtersParam([{ dimension: 'goal', operator: 'is', value: ['Signup'] }])}`,
    )
    expect(filtered.totals).toEqual(expectedTotals(sites.ny.ref, from, to, (e) => converted.has(e.visit)))

    const goals = await get(`/api/v1/goals?site_id=${sites.ny.id}&${custom}`)
    expect(goals.available).toBe(true)
    expect(goals.goals.map((g: { name: string; visitors: number; conversions: number }) => [g.name, g.visitors, g.conversions])).toEqual([
      ['Signup', expected.find((r) => r.value === 'Signup')!.visitors, signups.length],
      ['Visit /blog/*', expected.find((r) => r.value === 'Visit /blog/*')!.visitors, blog.length],
    ])
    const removed = await call('DELETE', `/api/v1/goals?site_id=${sites.ny.id}&goal_id=${page.json.id}`, { key: writeKey })
    expect(removed.json).toEqual({ deleted: true, id: page.json.id })
    expect((await get(`/api/v1/goals?site_id=${sites.ny.id}`)).goals).toHaveLength(1)
  })

  it('an empty site answers zeros and a continuous zero series', async () => {
    const stats = await get(`/api/v1/stats?site_id=${sites.empty.id}&range=7d`)
    expect(stats.totals).toEqual({ visitors: 0, visits: 0, pageviews: 0, bounceRate: 0, avgDuration: 0, viewsPerVisit: 0, events: 0 })
    const series = await get(`/api/v1/timeseries?site_id=${sites.empty.id}&range=7d`)
    expect(series.series).toHaveLength(7)
    expect(series.series.every((b: { visitors: number }) => b.visitors === 0)).toBe(true)
    expect((await get(`/api/v1/breakdown?site_id=${sites.empty.id}&property=path`)).results).toEqual([])
    expect((await get(`/api/v1/stats?site_id=${sites.empty.id}&range=all`)).range.from).toBe('2026-11-22T00:00:00+00:00')
  })

  it("matches Plausible's worked example: visits 2, views per visit 1.5, bounce rate 0.5, duration 750 s", async () => {
    const org = await createOrg(services.repositories, 'Worked example', NOW)
    const readKey = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'worked.example.com' }, org.id, NOW)
    await services.repositories.sites.create(site)
    const hit = (ts: string, ip: string) =>
      JSON.stringify({ timestamp: ts, site: site.snippetId, name: 'pageview', url: 'https://worked.example.com/', ip, userAgent: UAS[0] })
    await importHits(
      [hit('2026-11-20T00:00:00Z', '8.8.8.8'), hit('2026-11-20T00:25:00Z', '8.8.8.8'), hit('2026-11-20T00:10:00Z', '1.1.1.1')],
      services.ingestor,
    )
    const res = await call('GET', `/api/v1/stats?site_id=${site.id}&range=custom&from=2026-11-20&to=2026-11-20`, { key: readKey })
    expect(res.json.totals).toEqual({
      visitors: 2,
      visits: 2,
      pageviews: 3,
      bounceRate: 0.5,
      avgDuration: 750,
      viewsPerVisit: 1.5,
      events: 0,
    })
  })

  it('realtime: the last 5 and 30 minutes, a minute series, pages and sources', async () => {
    const org = await createOrg(services.repositories, 'Live', NOW)
    const readKey = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'live.example.com' }, org.id, NOW)
    await services.repositories.sites.create(site)
    const hit = (minutesAgo: number, ip: string, path: string) =>
      JSON.stringify({
        timestamp: new Date(NOW.getTime() - minutesAgo * 60_000).toISOString(),
        site: site.snippetId,
        name: 'pageview',
        url: `https://live.example.com${path}`,
        ip,
        userAgent: UAS[1],
        referrer: 'https://www.google.com/',
      })
    await importHits(
      [hit(2, '8.8.8.8', '/a'), hit(4, '1.1.1.1', '/b'), hit(12, '46.114.0.1', '/a'), hit(45, '81.2.69.142', '/c')],
      services.ingestor,
    )
    const res = await call('GET', `/api/v1/realtime?site_id=${site.id}`, { key: readKey })
    expect(res.json).toMatchObject({ now: 2, halfHour: 3 })
    expect(res.json.series).toHaveLength(30)
    expect(res.json.series.reduce((s: number, b: { pageviews: number }) => s + b.pageviews, 0)).toBe(3)
    expect(res.json.pages.map((p: { value: string; visitors: number }) => [p.value, p.visitors])).toEqual([
      ['/a', 1],
      ['/b', 1],
    ])
    expect(res.json.sources.map((p: { value: string; visitors: number }) => [p.value, p.visitors])).toEqual([['Google', 2]])
    const stats = await call('GET', `/api/v1/stats?site_id=${site.id}&range=realtime`, { key: readKey })
    expect(stats.json.totals.visitors).toBe(2)
  })

  it('rejects bad parameters with 400 naming them', async () => {
    const bad = async (query: string, pattern: RegExp) => {
      const res = await call('GET', `/api/v1/${query}`, { key })
      expect(res.status, query).toBe(400)
      expect(res.json.error, query).toMatch(pattern)
    }
    const s = `site_id=${sites.ny.id}`
    await bad(`stats?${s}&range=fortnight`, /^range/)
    await bad(`stats?${s}&range=custom&from=2026-11-01`, /^to: required/)
    await bad(`stats?${s}&range=custom&from=2026-11-31&to=2026-12-01`, /^from/)
    await bad(`stats?${s}&range=custom&from=2026-11-05&to=2026-11-01`, /^from: must not be after/)
    await bad(`stats?${s}&filters=not-json`, /^filters: not valid JSON/)
    await bad(`stats?${s}${filtersParam([{ dimension: 'colour', operator: 'is', value: ['x'] }])}`, /unknown dimension "colour"/)
    await bad(`stats?${s}${filtersParam([{ dimension: 'path', operator: 'like', value: ['x'] }])}`, /^filters\[0\]\.operator/)
    await bad(`stats?${s}${filtersParam([{ dimension: 'path', operator: 'is', value: 'x' }])}`, /^filters\[0\]\.value/)
    await bad(`stats?${s}${filtersParam({ dimension: 'path' })}`, /^filters/)
    await bad(`stats?${s}${filtersParam([{ dimension: 'path', operator: 'matches', value: ['(unclosed'] }])}`, /invalid regular expression/)
    await bad(`stats?${s}${filtersParam([{ dimension: 'goal', operator: 'is', value: ['Nope'] }])}`, /no goal named "Nope"/)
    await bad(`stats?${s}&source=ga4`, /^source: this site has no ga4 source/)
    await bad(`stats?${s}&limit=abc`, /^limit/)
    await bad(`breakdown?${s}`, /^property/)
    await bad(`breakdown?${s}&property=colour`, /^property: unknown dimension/)
    await bad('stats', /^site_id/)
    expect((await call('GET', '/api/v1/stats?site_id=zzzzzzzzzz', { key })).status).toBe(404)
  })

  it('ga4 reads answer zeros until imports fill them, and refuse first-party dimensions', async () => {
    const patched = await call('PATCH', `/api/v1/sites/${sites.empty.id}`, { key: writeKey, body: { sources: ['standalone', 'ga4'] } })
    expect(patched.status).toBe(200)
    const stats = await get(`/api/v1/stats?site_id=${sites.empty.id}&source=ga4`)
    expect(stats).toMatchObject({ source: 'ga4', totals: { visitors: 0, pageviews: 0 } })
    const res = await call(
      'GET',
      `/api/v1/stats?site_id=${sites.empty.id}&source=ga4${filtersParam([{ dimension: 'goal', operator: 'is', value: ['x'] }])}`,
      { key },
    )
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/first-party/)
    const gaOnly = await call('POST', '/api/v1/sites', { key: writeKey, body: { domain: 'ga-only.reports.test', sources: ['ga4'] } })
    expect((await get(`/api/v1/goals?site_id=${gaOnly.json.id}`)).available).toBe(false)
  })
})
