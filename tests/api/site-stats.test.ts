import { describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { firstEventAt, lastEventBySite, siteActivity } from '../../lib/reports/query/site-events'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { client, orgWithSites, testServices } from '../helpers'
import { NOW, UAS } from './report-reference'

describe('site listing statistics and export', () => {
  it('lists each site with totals, the previous window, a sparkline and install state; stats=0 gives rows only', async () => {
    const services = await testServices({ now: () => NOW })
    const call = client(services)
    // an idle site beside the busy one: listed with zeros
    const {
      key,
      sites: [busy],
    } = await orgWithSites(services, 'Listing', [{ domain: 'busy.listing.test' }, { domain: 'idle.listing.test' }], NOW)
    const hit = (ts: string, ip: string, path = '/') =>
      JSON.stringify({
        timestamp: ts,
        site: busy.snippetId,
        name: 'pageview',
        url: `https://busy.listing.test${path}`,
        ip,
        userAgent: UAS[0],
      })
    // this week (7d: 16-22 Nov, UTC): two visitors, three pageviews; the week before: one visitor
    await importHits(
      [
        hit('2026-11-20T10:00:00Z', '8.8.8.8'),
        hit('2026-11-20T10:05:00Z', '8.8.8.8', '/b'),
        hit('2026-11-22T09:00:00Z', '1.1.1.1'),
        hit('2026-11-12T09:00:00Z', '1.1.1.1'),
      ],
      services.ingestor,
    )
    const res = await call('GET', '/api/v1/sites', { key })
    const [b, i] = res.json.sites
    expect(b.domain).toBe('busy.listing.test')
    expect(b.stats).toMatchObject({
      visitors: 2,
      visits: 2,
      pageviews: 3,
      bounceRate: 0.5,
      avgDuration: 150,
      range: { from: '2026-11-16T00:00:00+00:00', to: '2026-11-23T00:00:00+00:00' },
    })
    expect(b.stats.previous).toMatchObject({
      visitors: 1,
      visits: 1,
      pageviews: 1,
      range: { from: '2026-11-09T00:00:00+00:00', to: '2026-11-16T00:00:00+00:00' },
    })
    expect(b.stats.sparkline).toEqual([0, 0, 0, 0, 1, 0, 1])
    expect(b.install).toMatchObject({ installed: true, lastEventAt: '2026-11-22T09:00:00.000Z' })
    // a site without events answers the same zeros as a read of an empty window would, without reading
    expect(i.stats).toEqual({
      source: 'standalone',
      range: b.stats.range,
      visitors: 0,
      visits: 0,
      pageviews: 0,
      bounceRate: 0,
      avgDuration: 0,
      viewsPerVisit: 0,
      events: 0,
      previous: {
        range: b.stats.previous.range,
        visitors: 0,
        visits: 0,
        pageviews: 0,
        bounceRate: 0,
        avgDuration: 0,
        viewsPerVisit: 0,
        events: 0,
      },
      sparkline: [0, 0, 0, 0, 0, 0, 0],
    })
    expect(i.install.installed).toBe(false)
    // once the finished days are rolled up (one lookup for both windows), the same answers; and over 30 days
    const month = (await call('GET', '/api/v1/sites?range=30d', { key })).json.sites
    expect(await refreshRollups(services.clickhouse, services.repositories, NOW, 60)).toBeGreaterThan(0)
    expect((await call('GET', '/api/v1/sites', { key })).json.sites).toEqual(res.json.sites)
    expect((await call('GET', '/api/v1/sites?range=30d', { key })).json.sites).toEqual(month)
    expect(month[0].stats).toMatchObject({
      visitors: 3,
      visits: 3,
      pageviews: 4,
      bounceRate: 0.6667,
      avgDuration: 100,
      previous: { visitors: 0 },
    })
    // today's sparkline is hourly: read as a window, not from days; one visitor at 09:00
    const today = (await call('GET', '/api/v1/sites?range=today', { key })).json.sites[0].stats
    expect(today).toMatchObject({ visitors: 1, visits: 1, pageviews: 1, previous: { visitors: 0 } })
    expect(today.sparkline.map((v: number, hour: number) => [hour, v]).filter(([, v]: number[]) => v)).toEqual([[9, 1]])
    // twelve months in month buckets: October none, November three visitors
    const year = (await call('GET', '/api/v1/sites?range=12mo', { key })).json.sites[0].stats
    expect(year.sparkline.slice(-2)).toEqual([0, 3])
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

  it('lists many sites in different timezones from one lookup and one read of their days, each with its own numbers', async () => {
    const services = await testServices({ now: () => NOW })
    const call = client(services)
    // 30 sites (more than one statement takes), alternately in UTC and in Tokyo (UTC+9), site n with n + 1 visitors
    const inputs = Array.from({ length: 30 }, (_, n) => ({ domain: `s${n}.many.test`, timezone: n % 2 ? 'Asia/Tokyo' : 'UTC' }))
    const { key, sites } = await orgWithSites(services, 'Many', inputs, NOW)
    const lines: string[] = []
    sites.forEach((site, n) => {
      for (let v = 0; v <= n; v++) {
        // on 20 November at 20:00 UTC: the 20th in UTC, the 21st in Tokyo; and one visitor of the week before
        const hit = (ts: string, ip: string) =>
          JSON.stringify({ timestamp: ts, site: site.snippetId, name: 'pageview', url: `https://${site.domain}/`, ip, userAgent: UAS[0] })
        lines.push(hit('2026-11-20T20:00:00Z', `10.0.${n}.${v + 1}`))
        if (v === 0) lines.push(hit('2026-11-12T12:00:00Z', `10.1.${n}.1`))
      }
    })
    lines.sort((a, b) => JSON.parse(a).timestamp.localeCompare(JSON.parse(b).timestamp))
    expect((await importHits(lines, services.ingestor)).imported).toBe(lines.length)
    const listed = (await call('GET', '/api/v1/sites?range=7d', { key })).json.sites as any[]
    expect(listed).toHaveLength(30)
    for (const [n, row] of listed.map((r) => [Number(/^s(\d+)\./.exec(r.domain)![1]), r] as const)) {
      const tokyo = n % 2 === 1
      expect(row.stats.visitors, row.domain).toBe(n + 1)
      expect(row.stats.pageviews, row.domain).toBe(n + 1)
      expect(row.stats.previous.visitors, row.domain).toBe(1)
      // the hits of 20 November 20:00 UTC fall on the 20th in UTC and on the 21st in Tokyo: that day's place in the week
      const day = (iso: string) => Date.parse(`${iso.slice(0, 10)}T00:00:00Z`) / 86_400_000
      const spark = [0, 0, 0, 0, 0, 0, 0]
      spark[day(tokyo ? '2026-11-21' : '2026-11-20') - day(row.stats.range.from)] = n + 1
      expect(row.stats.sparkline, row.domain).toEqual(spark)
      // and, for the first few, the same as the stats read of that site alone
      if (n > 3) continue
      const alone = (await call('GET', `/api/v1/stats?site_id=${row.id}&range=7d&compare=previous_period`, { key })).json
      expect(row.stats.visitors).toBe(alone.totals.visitors)
      expect(row.stats.previous.visitors).toBe(alone.comparison.totals.visitors)
    }
  })

  it('first and last events and the events since a time are exact, found by day without a scan of the history', async () => {
    const services = await testServices({ now: () => NOW })
    const {
      sites: [a, b, empty],
    } = await orgWithSites(services, 'Edges', [{ domain: 'a.edges.test' }, { domain: 'b.edges.test' }, { domain: 'empty.edges.test' }], NOW)
    const hit = (site: typeof a, ts: string, ip: string) =>
      JSON.stringify({ timestamp: ts, site: site.snippetId, name: 'pageview', url: `https://${site.domain}/`, ip, userAgent: UAS[0] })
    // a: one event on 2 November, five on 21 November around the quarter hours; b: two on 20 November
    const times = [
      '2026-11-21T10:00:00.000Z',
      '2026-11-21T10:07:00.000Z',
      '2026-11-21T10:14:59.999Z',
      '2026-11-21T10:15:00.000Z',
      '2026-11-21T10:31:00.000Z',
    ]
    await importHits(
      [
        hit(a, '2026-11-02T23:59:00.000Z', '8.8.8.8'),
        ...times.map((t, i) => hit(a, t, `1.1.1.${i + 1}`)),
        hit(b, '2026-11-20T05:00:00.000Z', '9.9.9.9'),
        hit(b, '2026-11-20T06:00:00.000Z', '9.9.9.9'),
      ],
      services.ingestor,
    )
    expect(await lastEventBySite(services.clickhouse, [a.id, b.id, empty.id])).toEqual(
      new Map([
        [a.id, '2026-11-21T10:31:00.000Z'],
        [b.id, '2026-11-20T06:00:00.000Z'],
      ]),
    )
    expect(await firstEventAt(services.clickhouse, a.id)).toEqual(new Date('2026-11-02T23:59:00.000Z'))
    expect(await firstEventAt(services.clickhouse, empty.id)).toBeNull()
    // since 10:07 counts 10:07 and 10:14:59.999 (part of a quarter hour) and 10:15 and 10:31 (whole ones)
    const since = async (iso: string) => (await siteActivity(services.clickhouse, a.id, new Date(iso))).eventsSince
    expect([
      await since('2026-11-21T10:07:00.000Z'),
      await since('2026-11-21T10:07:00.001Z'),
      await since('2026-11-21T10:15:00.000Z'),
      await since('2026-11-21T09:00:00.000Z'),
      await since('2026-11-21T10:31:00.001Z'),
    ]).toEqual([4, 3, 2, 5, 0])
    expect(await siteActivity(services.clickhouse, a.id, new Date('2026-11-01T00:00:00Z'))).toEqual({
      firstEventAt: '2026-11-02T23:59:00.000Z',
      lastEventAt: '2026-11-21T10:31:00.000Z',
      eventsSince: 6,
    })
    expect(await siteActivity(services.clickhouse, empty.id, new Date('2026-11-01T00:00:00Z'))).toEqual({
      firstEventAt: null,
      lastEventAt: null,
      eventsSince: 0,
    })
  })
})
