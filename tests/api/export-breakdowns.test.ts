import { describe, expect, it } from 'vitest'
import { demoHits } from '../../lib/ingest/demo-traffic'
import { importHits } from '../../lib/ingest/import'
import { createGoal } from '../../lib/sites/goals'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../../lib/reports/rollup/refresh'
import { rollupBuildsSettled } from '../../lib/reports/query/run'
import { client, getOk, orgWithSites, testServices } from '../helpers'

/**
 * The export reads its breakdowns several at once, and its totals with them where they share a plan
 * (lib/reports/query/breakdowns.ts): each breakdown must be what the breakdown read of that
 * property alone answers, and the totals and series what GET /stats and GET /timeseries answer
 * (whose numbers the reference tests hold), on rolled days and today, unfiltered and filtered, over a fixture that has every kind
 * of property: visit attributes, pages, events, links, clicks, forms, custom properties, goals.
 */
describe('the export', () => {
  it("answers each property's breakdown exactly as the breakdown read does", async () => {
    const now = new Date('2026-11-22T15:30:00Z')
    const services = await testServices({ now: () => now })
    const call = client(services)
    const {
      key,
      sites: [site],
    } = await orgWithSites(services, 'Export', [{ domain: 'export.reports.test', timezone: 'Europe/Berlin' }], now)
    const lines = [...demoHits({ site: site.snippetId, domain: site.domain, days: 40, visitorsPerDay: 40, end: now, planted: true })].map(
      (hit) => JSON.stringify(hit),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
    // finished days from the daily rollup, today from events
    await refreshRollups(services.clickhouse, services.repositories, now, ROLLUP_ALL_DAYS)
    await createGoal(services.repositories, site.id, { site_id: site.id, name: 'Signup', type: 'event', matchValue: 'Signup' }, now)
    await createGoal(services.repositories, site.id, { site_id: site.id, type: 'page', matchValue: '/pricing' }, now)

    const get = (path: string) => getOk(call, `${path}&site_id=${site.id}`, key)
    const filters = (list: unknown) => `filters=${encodeURIComponent(JSON.stringify(list))}`
    for (const window of [
      'range=30d',
      'range=7d',
      'range=today',
      'range=custom&from=2026-10-20&to=2026-11-22',
      `range=30d&${filters([{ dimension: 'country', operator: 'is_not', value: ['US'] }])}`,
      `range=30d&${filters([{ dimension: 'path', operator: 'contains', value: ['/blog'] }])}`,
    ]) {
      // the first export rolls up the days of the properties rolled up on demand after its answer; the second reads them
      // with the daily rollup's (breakdowns.ts, the rolled and demandEvents groups)
      const first = await get(`/api/v1/export?${window}&limit=1000`)
      await rollupBuildsSettled()
      const exported = await get(`/api/v1/export?${window}&limit=1000`)
      expect(exported.breakdowns, window).toEqual(first.breakdowns)
      expect(exported.totals, window).toEqual(first.totals)
      // the totals (read with the visit attributes where they share a plan) and the series are the single reads'
      const stats = await get(`/api/v1/stats?${window}`)
      expect(exported.totals, window).toEqual(stats.totals)
      expect(exported.totals.visits, window).toBeGreaterThan(0)
      expect(exported.series, window).toEqual((await get(`/api/v1/timeseries?${window}`)).series)
      const properties = Object.keys(exported.breakdowns)
      for (const expected of ['source', 'country', 'city', 'path', 'entry_page', 'event', 'link', 'goal'])
        expect(properties).toContain(expected)
      if (window === 'range=30d')
        expect(
          properties.some((p) => p.startsWith('prop:')),
          window,
        ).toBe(true)
      let rows = 0
      for (const property of properties) {
        const alone = await get(`/api/v1/breakdown?${window}&property=${encodeURIComponent(property)}&limit=1000`)
        expect(exported.breakdowns[property], `${window} ${property}`).toEqual(alone.results)
        rows += alone.results.length
      }
      expect(rows, window).toBeGreaterThan(30)
    }
  }, 600_000)
})
