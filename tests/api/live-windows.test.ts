import { describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { resolveRange } from '../../lib/reports/query/range'
import { compileRead } from '../../lib/reports/query/run'
import { client, getOk, orgWithSites, testServices } from '../helpers'
import { UAS } from './report-reference'

/**
 * The live windows (realtime, the last 5 and 30 minutes) read recent_events, the last two days of
 * events in time order, when they began within the last day before the read's now. This file runs
 * on the real clock, so its windows are live. A site in a zone where it is midday now keeps every
 * hit on one site-local day.
 */
describe('live windows', () => {
  it('read recent events: realtime and the activity tape give the same answers as events, and stop seeing what recent_events lost', async () => {
    const live = new Date()
    const services = await testServices({ now: () => live })
    const call = client(services)
    // the Etc zone where it is about noon now (Etc/GMT-3 is UTC+3)
    const offset = 12 - live.getUTCHours()
    const timezone = offset === 0 ? 'UTC' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`
    const {
      key,
      sites: [site],
    } = await orgWithSites(services, 'Live', [{ domain: 'live.windows.test', timezone }], live)
    const at = (minutesAgo: number) => new Date(live.getTime() - minutesAgo * 60_000).toISOString()
    const hit = (minutesAgo: number, ip: string, path: string, referrer?: string) =>
      JSON.stringify({
        timestamp: at(minutesAgo),
        site: site.snippetId,
        name: 'pageview',
        url: `https://live.windows.test${path}`,
        ip,
        userAgent: UAS[1],
        ...(referrer ? { referrer } : {}),
      })
    const google = 'https://www.google.com/'
    await importHits(
      [
        // A came from Google three hours ago and is back, direct; B from Google now; C twelve minutes ago; D 45 minutes ago
        hit(180, '8.8.8.8', '/landing', google),
        hit(2, '8.8.8.8', '/a'),
        hit(4, '1.1.1.1', '/b', google),
        hit(12, '46.114.0.1', '/a'),
        hit(45, '81.2.69.142', '/c'),
      ],
      services.ingestor,
    )
    const get = (path: string) => getOk(call, `${path}${path.includes('?') ? '&' : '?'}site_id=${site.id}`, key)

    // the compiled reads: a live window reads recent_events, a live window resolved two days before the read (or any other window) events
    const query = (range: 'realtime' | '30m' | '7d', resolvedAt = live) => ({
      siteId: site.id,
      range: resolveRange({ range }, timezone, resolvedAt),
      filters: [],
      goals: [],
      limit: 10,
      now: live,
    })
    expect(compileRead(query('realtime'), { kind: 'breakdown', property: 'path' }).sql).toContain('FROM recent_events')
    expect(compileRead(query('30m'), { kind: 'series' }).sql).toContain('FROM recent_events')
    expect(
      compileRead(query('realtime', new Date(live.getTime() - 2 * 86_400_000)), { kind: 'breakdown', property: 'path' }).sql,
    ).not.toContain('recent_events')
    expect(compileRead(query('7d'), { kind: 'series' }).sql).not.toContain('recent_events')

    const realtime = await get('/api/v1/realtime')
    expect(realtime).toMatchObject({ now: 2, halfHour: 3 })
    expect(realtime.series.reduce((s: number, b: { pageviews: number }) => s + b.pageviews, 0)).toBe(3)
    expect(realtime.pages.map((p: { value: string; visitors: number }) => [p.value, p.visitors])).toEqual([
      ['/a', 1],
      ['/b', 1],
    ])
    expect(realtime.sources.map((p: { value: string; visitors: number }) => [p.value, p.visitors])).toEqual([
      ['Direct / None', 1],
      ['Google', 1],
    ])
    expect((await get('/api/v1/stats?range=realtime')).totals).toMatchObject({ visitors: 2, visits: 2, pageviews: 2 })

    const activity = await get('/api/v1/activity')
    // the source is that of the visitor's first pageview of the day: A's is Google, from three hours ago
    expect(
      activity.actions.map((a: { timestamp: string; path: string; source: string; referrer: string }) => [
        a.timestamp,
        a.path,
        a.source,
        a.referrer,
      ]),
    ).toEqual([
      [at(2), '/a', 'Google', google],
      [at(4), '/b', 'Google', google],
      [at(12), '/a', '', ''],
    ])

    // the events of live windows come from recent_events, and so do the visits holding them: without its rows, the tape, views and visits are gone
    await services.clickhouse.command('ALTER TABLE recent_events DELETE WHERE site_id = {site:UUID} SETTINGS mutations_sync = 2', {
      site: site.id,
    })
    expect((await get('/api/v1/activity')).actions).toEqual([])
    const emptied = await get('/api/v1/realtime')
    expect(emptied).toMatchObject({ now: 0, halfHour: 0, pages: [], sources: [] })
    expect(emptied.series.reduce((s: number, b: { pageviews: number }) => s + b.pageviews, 0)).toBe(0)
    // a whole-day window still reads events
    expect((await get('/api/v1/stats?range=today')).totals.pageviews).toBe(5)
  })
})
