import { Temporal } from 'temporal-polyfill'
import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/admin'
import { importHits } from '../../lib/ingest/import'
import { resolveRange } from '../../lib/query/range'
import { refreshRollups } from '../../lib/rollup/refresh'
import { rolledDays } from '../../lib/query/run'
import { newSite } from '../../lib/sites'
import { client, testServices } from '../helpers'

/**
 * Reports against a small reference implementation: the raw fixture hits are grouped into
 * visitors (address, agent, site-local day) and visits (30-minute gaps) here, independently of
 * the ingestion code, and every expected number is computed from that grouping.
 */
const NOW = new Date('2026-11-22T15:00:00Z')
const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
]
const IPS: [string, string][] = [['81.2.69.142', 'GB'], ['8.8.8.8', 'US'], ['46.114.0.1', 'DE'], ['1.1.1.1', 'AU']]
const REFERRERS: [string | null, string][] = [[null, 'Direct / None'], ['https://www.google.com/', 'Google'], ['https://news.ycombinator.com/', 'Hacker News'], ['https://chatgpt.com/', 'ChatGPT']]
const PATHS = ['/', '/pricing', '/blog/a', '/blog/b', '/docs']

type RefEvent = { ts: number; kind: 'pageview' | 'custom' | 'engagement'; name: string; path: string; visitor: string; visit: string; plan?: string }
type RefVisit = { id: string; visitor: string; start: number; end: number; pageviews: number; custom: number; source: string; country: string; device: string; entry: string; exit: string }

function prng(seed: number) {
  let s = seed
  return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
}

const localDate = (ts: number, tz: string) => new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(ts))

function fixture(snippet: string, domain: string, tz: string, seed: number) {
  const random = prng(seed)
  const lines: string[] = []
  const raw: { ts: number; name: string; path: string; ip: string; ua: string; referrer: string | null; plan?: string }[] = []
  const start = Date.parse('2026-08-01T00:00:00Z')
  for (let v = 0; v < 140; v++) {
    const ip = IPS[Math.floor(random() * IPS.length)][0]
    const ua = UAS[Math.floor(random() * UAS.length)]
    const referrer = REFERRERS[Math.floor(random() * REFERRERS.length)][0]
    // cluster some visits near the end so short ranges have data, and near the DST change
    const spread = v % 3 === 0 ? Date.parse('2026-11-20T00:00:00Z') : v % 3 === 1 ? Date.parse('2026-10-30T00:00:00Z') : start
    let ts = spread + Math.floor(random() * Math.min(NOW.getTime() - spread - 3_600_000, 110 * 86_400_000))
    const pages = 1 + Math.floor(random() * 4)
    for (let p = 0; p < pages; p++) {
      const path = PATHS[Math.floor(random() * PATHS.length)]
      raw.push({ ts, name: 'pageview', path, ip, ua, referrer: p === 0 ? referrer : null })
      if (random() < 0.25) raw.push({ ts: ts + 30_000, name: 'Signup', path, ip, ua, referrer: null, plan: random() < 0.5 ? 'pro' : 'free' })
      if (random() < 0.5) raw.push({ ts: ts + 60_000, name: 'engagement', path, ip, ua, referrer: null })
      // mostly within a visit, sometimes past the 30-minute gap
      ts += random() < 0.8 ? 5 * 60_000 : 40 * 60_000
    }
  }
  for (const h of raw) {
    const hit: Record<string, unknown> = { timestamp: new Date(h.ts).toISOString(), site: snippet, name: h.name, url: `https://${domain}${h.path}`, referrer: h.referrer, ip: h.ip, userAgent: h.ua }
    if (h.name === 'engagement') hit.engagement = { ms: 60_000, scroll: 50 }
    if (h.plan) {
      hit.props = { plan: h.plan }
      if (h.plan === 'pro') hit.revenue = { amount: '10.50', currency: 'EUR' }
    }
    lines.push(JSON.stringify(hit))
  }
  // the reference grouping
  const byVisitor = new Map<string, typeof raw>()
  for (const h of raw) {
    const key = `${h.ip}|${h.ua}|${localDate(h.ts, tz)}`
    byVisitor.set(key, [...(byVisitor.get(key) ?? []), h])
  }
  const events: RefEvent[] = []
  const visits = new Map<string, RefVisit>()
  for (const [visitor, hits] of byVisitor) {
    hits.sort((a, b) => a.ts - b.ts)
    let visit: RefVisit | null = null
    for (const h of hits) {
      if (!visit || h.ts - visit.end > 30 * 60_000) {
        const country = IPS.find(([ip]) => ip === h.ip)![1]
        visit = { id: `${visitor}|${h.ts}`, visitor, start: h.ts, end: h.ts, pageviews: 0, custom: 0, source: REFERRERS.find(([r]) => r === h.referrer)![1], country, device: h.ua.includes('iPhone') ? 'Mobile' : 'Desktop', entry: '', exit: '' }
        visits.set(visit.id, visit)
      }
      visit.end = Math.max(visit.end, h.ts)
      const kind = h.name === 'pageview' ? 'pageview' : h.name === 'engagement' ? 'engagement' : 'custom'
      if (kind === 'pageview') {
        visit.pageviews++
        if (!visit.entry) visit.entry = h.path
        visit.exit = h.path
      }
      if (kind === 'custom') visit.custom++
      events.push({ ts: h.ts, kind, name: h.name, path: h.path, visitor, visit: visit.id, plan: h.plan })
    }
  }
  return { lines, events, visits }
}

type Ref = ReturnType<typeof fixture>
const round = (v: number, d: number) => Math.round(v * 10 ** d) / 10 ** d

/** The metric definitions of DESIGN.md section 4, over the reference grouping. */
function expectedTotals(ref: Ref, from: string, to: string, keep: (e: RefEvent, v: RefVisit) => boolean = () => true) {
  const lo = Date.parse(from)
  const hi = Date.parse(to)
  const selected = ref.events.filter((e) => e.ts >= lo && e.ts < hi && keep(e, ref.visits.get(e.visit)!))
  const visitIds = new Set(selected.map((e) => e.visit))
  const visits = [...visitIds].map((id) => ref.visits.get(id)!)
  const pageviews = selected.filter((e) => e.kind === 'pageview').length
  return {
    visitors: new Set(selected.map((e) => e.visitor)).size,
    visits: visitIds.size,
    pageviews,
    bounceRate: visits.length ? round(visits.filter((v) => v.pageviews <= 1 && v.custom === 0).length / visits.length, 4) : 0,
    avgDuration: visits.length ? Math.round(visits.reduce((s, v) => s + (v.end - v.start) / 1000, 0) / visits.length) : 0,
    viewsPerVisit: visitIds.size ? round(pageviews / visitIds.size, 2) : 0,
    events: selected.filter((e) => e.kind === 'custom').length,
  }
}

/** Breakdown rows over the reference: each value's totals, sorted by visitors then value. */
function expectedBreakdown(
  ref: Ref, from: string, to: string, valueOf: (e: RefEvent, v: RefVisit) => string | undefined, engagement: boolean,
  keep: (e: RefEvent, v: RefVisit) => boolean = () => true,
) {
  const values = new Set(ref.events.map((e) => valueOf(e, ref.visits.get(e.visit)!)).filter((v): v is string => v !== undefined))
  return [...values]
    .map((value) => {
      const t = expectedTotals(ref, from, to, (e, v) => keep(e, v) && valueOf(e, v) === value)
      const row: Record<string, unknown> = { value, visitors: t.visitors, visits: t.visits, pageviews: t.pageviews, events: t.events }
      if (engagement) Object.assign(row, { bounceRate: t.bounceRate, avgDuration: t.avgDuration })
      return row
    })
    .filter((r) => (r.visitors as number) > 0)
    .sort((a, b) => (b.visitors as number) - (a.visitors as number) || String(a.value).localeCompare(String(b.value)))
}

describe('reports', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key = ''
  let writeKey = ''
  const sites: Record<string, { id: string; ref: Ref; tz: string }> = {}

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.store, 'Reports', NOW)
    key = (await createApiKey(services.store, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    writeKey = (await createApiKey(services.store, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    for (const [name, tz, seed] of [['ny', 'America/New_York', 11], ['in', 'Asia/Kolkata', 29], ['empty', 'UTC', 0]] as const) {
      const site = newSite({ domain: `${name}.reports.test`, timezone: tz }, org.id, NOW)
      await services.store.createSite(site)
      const ref = name === 'empty' ? { lines: [], events: [], visits: new Map() } : fixture(site.snippetId, site.domain, tz, seed)
      const result = await importHits(ref.lines, services.ingestor)
      expect(result.rejected).toBe(0)
      sites[name] = { id: site.id, ref: ref as Ref, tz }
    }
  })

  const get = async (path: string) => {
    const res = await call('GET', path, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }
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
    expect(json.series.find((b: { timestamp: string }) => b.timestamp.startsWith('2026-11-01'))?.timestamp).toBe('2026-11-01T00:00:00-04:00')
    expect(json.series.find((b: { timestamp: string }) => b.timestamp.startsWith('2026-11-02'))?.timestamp).toBe('2026-11-02T00:00:00-05:00')
    for (const bucket of json.series) {
      const day = bucket.timestamp.slice(0, 10)
      const next = json.series[json.series.indexOf(bucket) + 1]?.timestamp ?? json.range.to
      const e = expectedTotals(sites.ny.ref, bucket.timestamp, next)
      expect({ day, visitors: bucket.visitors, visits: bucket.visits, pageviews: bucket.pageviews }).toEqual({ day, visitors: e.visitors, visits: e.visits, pageviews: e.pageviews })
    }
    // the day of the change has 25 hours
    const change = await get(`/api/v1/timeseries?site_id=${sites.ny.id}&range=custom&from=2026-11-01&to=2026-11-01`)
    expect(change.series).toHaveLength(25)
    expect(change.series.filter((b: { timestamp: string }) => b.timestamp.startsWith('2026-11-01T01:00')).map((b: { timestamp: string }) => b.timestamp)).toEqual(['2026-11-01T01:00:00-04:00', '2026-11-01T01:00:00-05:00'])
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
      [[{ dimension: 'path', operator: 'is', value: ['/pricing'] }, { dimension: 'device', operator: 'is', value: ['Mobile'] }], (e, v) => e.path === '/pricing' && v.device === 'Mobile'],
      [[{ dimension: 'entry_page', operator: 'is', value: ['/'] }], (e, v) => v.entry === '/'],
      [[{ dimension: 'exit_page', operator: 'contains', value: ['blog'] }], (e, v) => v.exit.includes('blog')],
      [[{ dimension: 'event', operator: 'is', value: ['Signup'] }], (e) => e.name === 'Signup'],
      [[{ dimension: 'prop:plan', operator: 'is', value: ['pro'] }], (e) => e.plan === 'pro'],
    ]
    for (const [filters, keep] of cases) {
      const json = await get(`/api/v1/stats?site_id=${sites.ny.id}&${custom}${filtersParam(filters)}`)
      expect(json.totals, JSON.stringify(filters)).toEqual(expectedTotals(sites.ny.ref, R[0].replace('Z', '') + '-04:00', '2026-11-23T00:00:00-05:00', keep))
    }
  })

  it('breaks down by path, source and prop:, sorted by visitors then value, with limits', async () => {
    const from = '2026-08-01T00:00:00-04:00'
    const to = '2026-11-23T00:00:00-05:00'
    const reference = (valueOf: (e: RefEvent, v: RefVisit) => string | undefined, engagement: boolean) => expectedBreakdown(sites.ny.ref, from, to, valueOf, engagement)
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
      [[{ dimension: 'country', operator: 'is', value: ['US', 'DE'] }, { dimension: 'path', operator: 'contains', value: ['blog'] }], (e, v) => ['US', 'DE'].includes(v.country) && e.path.includes('blog')],
      [[{ dimension: 'event', operator: 'is', value: ['Signup'] }], (e) => e.name === 'Signup'],
    ]
    const properties: [string, (e: RefEvent, v: RefVisit) => string][] = [
      ['entry_page', (e, v) => v.entry],
      ['exit_page', (e, v) => v.exit],
      ['source', (e, v) => v.source],
      ['device', (e, v) => v.device],
    ]
    for (const [filters, keep] of cases) {
      for (const [property, valueOf] of properties) {
        const json = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=${property}&limit=1000${filtersParam(filters)}`)
        const expected = expectedBreakdown(sites.ny.ref, from, to, valueOf, true, keep)
        expect(expected.length, `${property} ${JSON.stringify(filters)}`).toBeGreaterThan(0)
        expect(json.results, `${property} ${JSON.stringify(filters)}`).toEqual(expected)
      }
    }
  })

  it('goals: definitions, conversions, a goal filter, and goal breakdown rows', async () => {
    const created = await call('POST', '/api/v1/goals', { key: writeKey, body: { site_id: sites.ny.id, type: 'event', matchValue: 'Signup', currency: 'EUR' } })
    expect(created.status).toBe(201)
    expect(created.json).toMatchObject({ name: 'Signup', type: 'event', currency: 'EUR' })
    const page = await call('POST', '/api/v1/goals', { key: writeKey, body: { site_id: sites.ny.id, type: 'page', matchValue: '/blog/*' } })
    expect(page.json.name).toBe('Visit /blog/*')
    expect((await call('POST', '/api/v1/goals', { key: writeKey, body: { site_id: sites.ny.id, type: 'page', matchValue: '/blog/*' } })).status).toBe(409)
    expect((await call('POST', '/api/v1/goals', { key: writeKey, body: { site_id: sites.ny.id, type: 'visit', matchValue: '/x' } })).status).toBe(400)

    const from = '2026-08-01T00:00:00-04:00'
    const to = '2026-11-23T00:00:00-05:00'
    const all = expectedTotals(sites.ny.ref, from, to)
    const signups = sites.ny.ref.events.filter((e) => e.name === 'Signup')
    const blog = sites.ny.ref.events.filter((e) => e.kind === 'pageview' && e.path.startsWith('/blog/'))
    const rows = await get(`/api/v1/breakdown?site_id=${sites.ny.id}&${custom}&property=goal`)
    const expected = [
      { value: 'Signup', visitors: new Set(signups.map((e) => e.visitor)).size, events: signups.length, conversions: signups.length, conversionRate: round(new Set(signups.map((e) => e.visitor)).size / all.visitors, 4), revenue: { amount: round(signups.filter((e) => e.plan === 'pro').length * 10.5, 2), currency: 'EUR' } },
      { value: 'Visit /blog/*', visitors: new Set(blog.map((e) => e.visitor)).size, events: blog.length, conversions: blog.length, conversionRate: round(new Set(blog.map((e) => e.visitor)).size / all.visitors, 4) },
    ].sort((a, b) => b.visitors - a.visitors || a.value.localeCompare(b.value))
    expect(rows.results).toEqual(expected)
    expect(rows.results[0]).not.toHaveProperty('bounceRate')

    // a goal filter keeps the visits that converted, with all their events
    const converted = new Set(signups.map((e) => e.visit))
    const filtered = await get(`/api/v1/stats?site_id=${sites.ny.id}&${custom}${filtersParam([{ dimension: 'goal', operator: 'is', value: ['Signup'] }])}`)
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

  it('matches Plausible\'s worked example: visits 2, views per visit 1.5, bounce rate 0.5, duration 750 s', async () => {
    const org = await createOrg(services.store, 'Worked example', NOW)
    const readKey = (await createApiKey(services.store, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'worked.example.com' }, org.id, NOW)
    await services.store.createSite(site)
    const hit = (ts: string, ip: string) => JSON.stringify({ timestamp: ts, site: site.snippetId, name: 'pageview', url: 'https://worked.example.com/', ip, userAgent: UAS[0] })
    await importHits([hit('2026-11-20T00:00:00Z', '8.8.8.8'), hit('2026-11-20T00:25:00Z', '8.8.8.8'), hit('2026-11-20T00:10:00Z', '1.1.1.1')], services.ingestor)
    const res = await call('GET', `/api/v1/stats?site_id=${site.id}&range=custom&from=2026-11-20&to=2026-11-20`, { key: readKey })
    expect(res.json.totals).toEqual({ visitors: 2, visits: 2, pageviews: 3, bounceRate: 0.5, avgDuration: 750, viewsPerVisit: 1.5, events: 0 })
  })

  it('realtime: the last 5 and 30 minutes, a minute series, pages and sources', async () => {
    const org = await createOrg(services.store, 'Live', NOW)
    const readKey = (await createApiKey(services.store, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'live.example.com' }, org.id, NOW)
    await services.store.createSite(site)
    const hit = (minutesAgo: number, ip: string, path: string) =>
      JSON.stringify({ timestamp: new Date(NOW.getTime() - minutesAgo * 60_000).toISOString(), site: site.snippetId, name: 'pageview', url: `https://live.example.com${path}`, ip, userAgent: UAS[1], referrer: 'https://www.google.com/' })
    await importHits([hit(2, '8.8.8.8', '/a'), hit(4, '1.1.1.1', '/b'), hit(12, '46.114.0.1', '/a'), hit(45, '81.2.69.142', '/c')], services.ingestor)
    const res = await call('GET', `/api/v1/realtime?site_id=${site.id}`, { key: readKey })
    expect(res.json).toMatchObject({ now: 2, halfHour: 3 })
    expect(res.json.series).toHaveLength(30)
    expect(res.json.series.reduce((s: number, b: { pageviews: number }) => s + b.pageviews, 0)).toBe(3)
    expect(res.json.pages.map((p: { value: string; visitors: number }) => [p.value, p.visitors])).toEqual([['/a', 1], ['/b', 1]])
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
    const res = await call('GET', `/api/v1/stats?site_id=${sites.empty.id}&source=ga4${filtersParam([{ dimension: 'goal', operator: 'is', value: ['x'] }])}`, { key })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/first-party/)
    const gaOnly = await call('POST', '/api/v1/sites', { key: writeKey, body: { domain: 'ga-only.reports.test', sources: ['ga4'] } })
    expect((await get(`/api/v1/goals?site_id=${gaOnly.json.id}`)).available).toBe(false)
  })
})

describe('site listing statistics and export', () => {
  it('lists each site with totals, the previous window, a sparkline and install state; stats=0 gives rows only', async () => {
    const services = await testServices({ now: () => NOW })
    const call = client(services)
    const org = await createOrg(services.store, 'Listing', NOW)
    const key = (await createApiKey(services.store, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const busy = newSite({ domain: 'busy.listing.test' }, org.id, NOW)
    const idle = newSite({ domain: 'idle.listing.test' }, org.id, NOW)
    await services.store.createSite(busy)
    await services.store.createSite(idle)
    const hit = (ts: string, ip: string, path = '/') => JSON.stringify({ timestamp: ts, site: busy.snippetId, name: 'pageview', url: `https://busy.listing.test${path}`, ip, userAgent: UAS[0] })
    // this week (7d: 16-22 Nov, UTC): two visitors, three pageviews; the week before: one visitor
    await importHits([hit('2026-11-20T10:00:00Z', '8.8.8.8'), hit('2026-11-20T10:05:00Z', '8.8.8.8', '/b'), hit('2026-11-22T09:00:00Z', '1.1.1.1'), hit('2026-11-12T09:00:00Z', '1.1.1.1')], services.ingestor)
    const res = await call('GET', '/api/v1/sites', { key })
    const [b, i] = res.json.sites
    expect(b.domain).toBe('busy.listing.test')
    expect(b.stats).toMatchObject({ visitors: 2, visits: 2, pageviews: 3, bounceRate: 0.5, avgDuration: 150, range: { from: '2026-11-16T00:00:00+00:00', to: '2026-11-23T00:00:00+00:00' } })
    expect(b.stats.previous).toMatchObject({ visitors: 1, visits: 1, pageviews: 1, range: { from: '2026-11-09T00:00:00+00:00', to: '2026-11-16T00:00:00+00:00' } })
    expect(b.stats.sparkline).toEqual([0, 0, 0, 0, 1, 0, 1])
    expect(b.install).toMatchObject({ installed: true, lastEventAt: '2026-11-22T09:00:00.000Z' })
    expect(i.stats).toMatchObject({ visitors: 0, previous: { visitors: 0 } })
    expect(i.install.installed).toBe(false)
    const rowsOnly = await call('GET', '/api/v1/sites?stats=0', { key })
    expect(rowsOnly.json.sites[0]).not.toHaveProperty('stats')
    expect((await call('GET', '/api/v1/sites?range=custom', { key })).status).toBe(400)

    const exported = await call('GET', `/api/v1/export?site_id=${busy.id}&range=7d`, { key })
    expect(exported.json.totals).toMatchObject({ visitors: 2, pageviews: 3 })
    expect(exported.json.series).toHaveLength(7)
    expect(exported.json.breakdowns.path).toEqual([
      { value: '/', visitors: 2, visits: 2, pageviews: 2, events: 0, bounceRate: 0.5, avgDuration: 150 },
      { value: '/b', visitors: 1, visits: 1, pageviews: 1, events: 0, bounceRate: 0, avgDuration: 300 },
    ])
    expect(Object.keys(exported.json.breakdowns)).toHaveLength(28)
  })
})

describe('daily rollup', () => {
  it('unfiltered reads sum finished days from day_rollups, exactly, and read a day that changed from events until it is rebuilt', async () => {
    const services = await testServices({ now: () => NOW })
    const call = client(services)
    const org = await createOrg(services.store, 'Rollup', NOW)
    const key = (await createApiKey(services.store, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const tz = 'Europe/Berlin'
    const site = newSite({ domain: 'rollup.reports.test', timezone: tz }, org.id, NOW)
    await services.store.createSite(site)
    const ref = fixture(site.snippetId, site.domain, tz, 7)
    expect((await importHits(ref.lines, services.ingestor)).rejected).toBe(0)
    const get = async (path: string) => {
      const res = await call('GET', `${path}&site_id=${site.id}`, { key })
      expect(res.status, JSON.stringify(res.json)).toBe(200)
      return res.json
    }
    // the 30 days end with today, 22 November, and span the end of summer time on 25 October
    const from = '2026-10-24T00:00:00+02:00'
    const to = '2026-11-23T00:00:00+01:00'
    const breakdowns: [string, (e: RefEvent, v: RefVisit) => string][] = [
      ['path', (e) => e.path],
      ['entry_page', (e, v) => v.entry],
      ['source', (e, v) => v.source],
      ['country', (e, v) => v.country],
      ['device', (e, v) => v.device],
    ]
    const expectAllMatch = async (reference: Ref) => {
      for (const [range, lo, hi] of [
        ['range=30d', from, to],
        ['range=7d', '2026-11-16T00:00:00+01:00', to],
        ['range=year', '2026-01-01T00:00:00+01:00', to],
        ['range=custom&from=2026-10-25&to=2026-11-20', '2026-10-25T00:00:00+02:00', '2026-11-21T00:00:00+01:00'],
      ]) {
        expect((await get(`/api/v1/stats?${range}`)).totals, range).toEqual(expectedTotals(reference, lo, hi))
        for (const [property, valueOf] of breakdowns) {
          expect((await get(`/api/v1/breakdown?${range}&property=${property}&limit=1000`)).results, `${range} ${property}`).toEqual(expectedBreakdown(reference, lo, hi, valueOf, true))
        }
      }
      for (const range of ['30d', 'year']) {
        const json = await get(`/api/v1/timeseries?range=${range}`)
        for (const [i, bucket] of json.series.entries()) {
          const e = expectedTotals(reference, bucket.timestamp, json.series[i + 1]?.timestamp ?? json.range.to)
          expect({ t: bucket.timestamp, visitors: bucket.visitors, visits: bucket.visits, pageviews: bucket.pageviews }).toEqual({ t: bucket.timestamp, visitors: e.visitors, visits: e.visits, pageviews: e.pageviews })
        }
      }
    }
    await expectAllMatch(ref)

    const query = { siteId: site.id, range: resolveRange({ range: '30d' }, tz, NOW), filters: [], goals: [], limit: 1000 }
    expect((await rolledDays(services.olap, query)).days).toEqual([])
    await refreshRollups(services.olap, services.store, NOW, 200)
    const finished = [...new Set(ref.events.filter((e) => e.ts >= Date.parse(from) && e.ts < Date.parse(to)).map((e) => localDate(e.ts, tz)))].filter((d) => d < '2026-11-22').sort()
    expect(finished.length).toBeGreaterThan(3)
    const rolled = (await rolledDays(services.olap, query)).days
    expect(rolled).toEqual(finished)
    await expectAllMatch(ref)
    // a window of rolled days only (no day left to read from events): two days the fixture has visits on
    const [a, b] = finished.slice(-3)
    const onlyRolled = `range=custom&from=${a}&to=${b}`
    const [lo, hi] = [`${a}T00:00:00+01:00`, Temporal.PlainDate.from(b).add({ days: 1 }).toString() + 'T00:00:00+01:00']
    expect((await rolledDays(services.olap, { ...query, range: resolveRange({ range: 'custom', from: a, to: b }, tz, NOW) })).days.length).toBe(Temporal.PlainDate.from(a).until(b).days + 1)
    expect((await get(`/api/v1/stats?${onlyRolled}`)).totals).toEqual(expectedTotals(ref, lo, hi))
    for (const [property, valueOf] of breakdowns) {
      expect((await get(`/api/v1/breakdown?${onlyRolled}&property=${property}&limit=1000`)).results, property).toEqual(expectedBreakdown(ref, lo, hi, valueOf, true))
    }
    // an export's reads share one lookup of the rolled days and still agree with the reference
    const exported = await get('/api/v1/export?range=30d')
    expect(exported.totals).toEqual(expectedTotals(ref, from, to))
    for (const [property, valueOf] of breakdowns) expect(exported.breakdowns[property], `export ${property}`).toEqual(expectedBreakdown(ref, from, to, valueOf, true))
    // rows built for one timezone are never read for another
    expect((await rolledDays(services.olap, { ...query, range: resolveRange({ range: '30d' }, 'UTC', NOW) })).days).toEqual([])

    // a late visit into a finished, rolled day: that day is read from events until the next refresh
    const lateHits = [
      { timestamp: '2026-11-20T12:00:00Z', site: site.snippetId, name: 'pageview', url: `https://${site.domain}/late`, referrer: 'https://www.google.com/', ip: '8.8.8.8', userAgent: UAS[1] },
      { timestamp: '2026-11-20T12:04:00Z', site: site.snippetId, name: 'pageview', url: `https://${site.domain}/pricing`, ip: '8.8.8.8', userAgent: UAS[1] },
    ]
    expect((await importHits(lateHits.map((h) => JSON.stringify(h)), services.ingestor)).imported).toBe(2)
    const late = fixture(site.snippetId, site.domain, tz, 7)
    const visitor = `8.8.8.8|${UAS[1]}|2026-11-20`
    const id = `${visitor}|late`
    late.visits.set(id, { id, visitor, start: Date.parse(lateHits[0].timestamp), end: Date.parse(lateHits[1].timestamp), pageviews: 2, custom: 0, source: 'Google', country: 'US', device: 'Desktop', entry: '/late', exit: '/pricing' })
    for (const h of lateHits) late.events.push({ ts: Date.parse(h.timestamp), kind: 'pageview', name: 'pageview', path: new URL(h.url).pathname, visitor, visit: id })
    expect((await rolledDays(services.olap, query)).days).toEqual(rolled.filter((d) => d !== '2026-11-20'))
    await expectAllMatch(late)
    expect(await refreshRollups(services.olap, services.store, NOW, 200)).toBe(1)
    expect((await rolledDays(services.olap, query)).days).toEqual(rolled)
    await expectAllMatch(late)
  })
})
