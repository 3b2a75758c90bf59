import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { DISTINCT_WINDOWS_PER_MINUTE } from '../../lib/operations/public-live'
import { newSite } from '../../lib/sites/sites'
import { checkedApp, client, testServices } from '../helpers'

const NOW = new Date('2026-11-22T15:00:00Z')
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

// by hand, for a UTC site at 2026-11-22 15:00: 30d admits windows starting on or after 2026-10-23,
// year those starting after 2025-11-22; the site's first event is 400 days back, so `all` starts then
const RANGES = [
  '5m',
  '30m',
  'realtime',
  'today',
  'yesterday',
  '7d',
  'week',
  'month',
  '30d',
  '90d',
  'year',
  'ytd',
  '12mo',
  'last-year',
  'all',
] as const
const ADMITTED: Record<string, string[]> = {
  live: ['5m', '30m', 'realtime'],
  '30d': ['5m', '30m', 'realtime', 'today', 'yesterday', '7d', 'week', 'month', '30d'],
  year: ['5m', '30m', 'realtime', 'today', 'yesterday', '7d', 'week', 'month', '30d', '90d', 'year', 'ytd', '12mo'],
  all: [...RANGES],
}
const CUSTOM_EDGES: [string, string, string, Record<string, boolean>][] = [
  ['just inside 30d', '2026-10-23', '2026-10-23', { live: false, '30d': true, year: true, all: true }],
  ['just outside 30d', '2026-10-22', '2026-10-22', { live: false, '30d': false, year: true, all: true }],
  ['just inside year', '2025-11-23', '2025-11-23', { live: false, '30d': false, year: true, all: true }],
  ['just outside year', '2025-11-22', '2025-11-22', { live: false, '30d': false, year: false, all: true }],
]

describe('GET /api/public/live', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let writeKey = ''
  let site: ReturnType<typeof newSite>
  let hidden: ReturnType<typeof newSite>
  let engineQueries = 0

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    const query = services.clickhouse.query.bind(services.clickhouse)
    services.clickhouse.query = (async (sql: string, params?: Record<string, unknown>) => {
      engineQueries++
      return query(sql, params)
    }) as typeof services.clickhouse.query
    call = client(services)
    const org = await createOrg(services.repositories, 'Public', NOW)
    writeKey = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    site = newSite({ domain: 'public.live.test' }, org.id, NOW)
    hidden = newSite({ domain: 'hidden.live.test' }, org.id, NOW)
    await services.repositories.sites.create(site)
    await services.repositories.sites.create(hidden)
    await call('PATCH', `/api/v1/sites/${site.id}`, { key: writeKey, body: { publicCounts: true, includeBots: true } })
    const hit = (minutesAgo: number, ip: string, ua = FIREFOX) =>
      JSON.stringify({
        timestamp: new Date(NOW.getTime() - minutesAgo * 60_000).toISOString(),
        site: site.snippetId,
        name: 'pageview',
        url: 'https://public.live.test/',
        ip,
        userAgent: ua,
      })
    const result = await importHits(
      [
        hit(400 * 1440, '9.9.9.9'),
        hit(2, '8.8.8.8'),
        hit(3, '1.1.1.1'),
        hit(3.5, '1.1.1.1'),
        hit(20, '46.114.0.1'),
        hit(60 * 24, '81.2.69.142'),
        // a bot, kept apart by includeBots: never counted
        hit(1, '66.249.66.1', 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'),
      ],
      services.ingestor,
    )
    expect(result.rejected).toBe(0)
  })

  let app: ReturnType<typeof checkedApp>
  const live = async (query: string, headers: Record<string, string> = {}) => {
    app ??= checkedApp(services)
    const res = await app.request(`http://api.test/api/public/live?${query}`, { headers })
    const text = await res.text()
    if (res.status >= 500) throw new Error(text)
    return { status: res.status, text, json: JSON.parse(text), headers: res.headers }
  }
  const dial = (level: string) => call('PATCH', `/api/v1/sites/${site.id}`, { key: writeKey, body: { publicCountsDial: level } })

  it('counts humans in the last 5 minutes by default, with halfHour, cached for 10 seconds', async () => {
    const res = await live(`site=${site.snippetId}`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({
      site: site.snippetId,
      range: '5m',
      from: '2026-11-22T14:55:00+00:00',
      to: '2026-11-22T15:00:00+00:00',
      visitors: 2,
      visits: 2,
      pageviews: 3,
      halfHour: 3,
    })
    expect(res.headers.get('cache-control')).toBe('public, max-age=10')
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    await dial('30d')
    const period = await live(`site=${site.snippetId}&range=today`)
    expect(period.json).not.toHaveProperty('halfHour')
    expect(period.json).toMatchObject({ range: 'today', visitors: 3 })
    expect(period.headers.get('cache-control')).toBe('public, max-age=60')
  })

  describe.each(Object.keys(ADMITTED))('dial %s', (level) => {
    beforeAll(() => dial(level))
    it.each(RANGES)('range %s', async (range) => {
      const res = await live(`site=${site.snippetId}&range=${range}`)
      expect(res.status).toBe(ADMITTED[level].includes(range) ? 200 : 404)
    })
    it.each(CUSTOM_EDGES)('custom window %s', async (_name, from, to, expected) => {
      const res = await live(`site=${site.snippetId}&range=custom&from=${from}&to=${to}`)
      expect(res.status).toBe(expected[level] ? 200 : 404)
    })
  })

  it('answers an unknown site, an unpublished site and a window past the dial with the same 404', async () => {
    await dial('live')
    const answers = await Promise.all([live('site=zzzzzzzzzz'), live(`site=${hidden.snippetId}`), live(`site=${site.snippetId}&range=30d`)])
    const shape = (r: (typeof answers)[number]) => ({
      status: r.status,
      body: r.text,
      headers: [...r.headers].filter(([name]) => name !== 'date' && name !== 'x-request-id'),
    })
    expect(answers.map(shape)).toEqual([shape(answers[0]), shape(answers[0]), shape(answers[0])])
    expect(answers[0].status).toBe(404)
  })

  it('rejects a bad range and missing custom dates with 400, whatever the site', async () => {
    for (const query of [
      `site=${site.snippetId}&range=fortnight`,
      `site=${site.snippetId}&range=custom&from=2026-11-01`,
      'site=zzzzzzzzzz&range=custom',
      'range=5m',
    ]) {
      const res = await live(query)
      expect(res.status, query).toBe(400)
      expect(res.json.error).toEqual(expect.any(String))
    }
  })

  it('a repeated question within its TTL never reaches the engine; concurrent misses share one computation', async () => {
    await dial('all')
    await live(`site=${site.snippetId}&range=7d`)
    const before = engineQueries
    for (let i = 0; i < 5; i++) expect((await live(`site=${site.snippetId}&range=7d`)).status).toBe(200)
    expect(engineQueries).toBe(before)
    const concurrent = await Promise.all(
      Array.from({ length: 200 }, () => live(`site=${site.snippetId}&range=custom&from=2026-11-01&to=2026-11-02`)),
    )
    expect(concurrent.every((r) => r.status === 200 && r.json.visitors === 0)).toBe(true)
    // one computation for the window: the lookup of its rolled-up days, then the totals query
    expect(engineQueries).toBe(before + 2)
  })

  it(`answers 429 past ${DISTINCT_WINDOWS_PER_MINUTE} distinct uncached windows a minute, and still serves cached ones`, async () => {
    await dial('all')
    const cached = await live(`site=${site.snippetId}&range=30d`)
    expect(cached.status).toBe(200)
    const statuses: number[] = []
    for (let day = 1; day <= DISTINCT_WINDOWS_PER_MINUTE + 5; day++) {
      statuses.push((await live(`site=${site.snippetId}&range=custom&from=2026-01-01&to=2026-01-${String(day).padStart(2, '0')}`)).status)
    }
    expect(statuses).toContain(429)
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(DISTINCT_WINDOWS_PER_MINUTE)
    const again = await live(`site=${site.snippetId}&range=30d`)
    expect(again.status).toBe(200)
    expect(again.json).toEqual(cached.json)
  })
})
