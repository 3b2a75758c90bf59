import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { crawlerConfig } from '../../lib/crawl/config'
import { crawlDemoWebsite, createDemo, seedDemo, sendDemoVisit, withDemoWebsite } from '../../lib/operations/demo'
import { type DemoWebsite, startDemoWebsite } from '../../lib/operations/demo-website-node'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { FADING_PAGE, SPIKE_REFERRER } from '../../lib/ingest/demo-traffic'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../../lib/reports/rollup/refresh'
import { client, getOk, testServices } from '../helpers'

/**
 * What a first start's demo makes: every read of the demo site answers something, as a person
 * trying the quick start expects. The expectations are the planted facts of lib/operations/demo.ts and
 * lib/ingest/demo-traffic.ts, not numbers read back from the code under test.
 */
describe('the demo', () => {
  const now = new Date('2026-11-22T15:30:00Z')
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key = ''
  let writeKey = ''
  let site = ''
  let website: DemoWebsite | undefined
  const read = (path: string) => getOk(call, `/api/v1/${path}${path.includes('?') ? '&' : '?'}site_id=${site}`, key)

  beforeAll(async () => {
    services = await testServices({ now: () => now })
    call = client(services)
    const demo = await createDemo(services.repositories, now)
    key = demo.readKey
    writeKey = demo.writeKey
    site = demo.site.id
    const seeded = await seedDemo(services, demo.site, now, { traffic: true, flush: async () => {} })
    expect(seeded.rejected).toBe(0)
    await refreshRollups(services.clickhouse, services.repositories, now, ROLLUP_ALL_DAYS)
    // the crawler of a deployment: its guarded fetch refuses loopback
    // the website carries the demo site's snippet, as the API gives it
    website = await startDemoWebsite('before', (await getOk(call, `/api/v1/sites/${site}`, key)).snippet)
    const config = withDemoWebsite(
      crawlerConfig({ guarded: (limits) => guardedFetch({ allowPrivate: false, ...limits }) }),
      demo.site.id,
      website.origin,
    )
    services.crawler = config
    await crawlDemoWebsite(services, config, demo.site, website, now)
  }, 300_000)
  afterAll(async () => {
    await website?.close()
  })

  it('has its website crawled: the pages, and what changed between two crawls with word diffs', async () => {
    const pages = (await read('pages?limit=100')).pages.map((p: any) => p.path).sort()
    for (const path of ['/', '/pricing', '/blog/launch-week', '/docs/api']) expect(pages).toContain(path)
    const changes = (await read('changes?range=30d&limit=100')).changes
    const pricing = changes.find((c: any) => c.path === '/pricing' && c.type === 'text')
    expect(pricing, JSON.stringify(changes)).toBeDefined()
    expect(pricing.wordsAdded).toBeGreaterThan(0)
    const diff = await getOk(call, `/api/v1/changes/diff?change_id=${pricing.id}`, key)
    expect(JSON.stringify(diff)).toContain('twelve')
    expect(changes.some((c: any) => c.path === '/blog/launch-week' && c.type === 'title')).toBe(true)
    expect(changes.some((c: any) => c.path === '/docs/api')).toBe(true)
    expect((await getOk(call, `/api/v1/sites/${site}`, key)).changeDetection.crawlStatus).toBe('ok')
  })

  it('checks its install on its own website on loopback, where the crawler reads it, not at https://demo.example.com', async () => {
    const checked = await call('POST', `/api/v1/sites/${site}/install`, { key: writeKey })
    expect(checked.status, JSON.stringify(checked.json)).toBe(200)
    expect(checked.json.lastCheck).toMatchObject({ result: 'found', url: `${website!.origin}/`, status: 200 })
    expect(checked.json.installed).toBe(true)
    expect((await getOk(call, `/api/v1/sites/${site}/install`, key)).lastCheck.result).toBe('found')
  })

  it('has traffic, all five vitals, goals with revenue and a funnel with visitors at every step', async () => {
    expect((await read('stats?range=30d')).totals.visitors).toBeGreaterThan(1000)
    const vitals = (await read('vitals?range=30d')).metrics
    for (const name of ['LCP', 'INP', 'CLS', 'FCP', 'TTFB']) {
      expect(vitals[name].samples, name).toBeGreaterThan(100)
      // rated across the range: some good, some not
      expect(vitals[name].good, name).toBeGreaterThan(0)
      expect(vitals[name].good, name).toBeLessThan(1)
    }
    const goals = (await read('goals?range=30d')).goals
    expect(goals.map((g: any) => g.name).sort()).toEqual(['Purchase', 'Saw pricing', 'Signup'])
    for (const g of goals) expect(g.visitors, g.name).toBeGreaterThan(0)
    expect(goals.find((g: any) => g.name === 'Purchase').revenue).toEqual({ amount: expect.any(Number), currency: 'EUR' })
    expect(goals.find((g: any) => g.name === 'Purchase').revenue.amount).toBeGreaterThan(0)
    const funnels = await read('funnels?range=30d')
    expect(funnels.funnels).toHaveLength(1)
    expect(funnels.result.steps).toHaveLength(4)
    for (const step of funnels.result.steps) expect(step.visitors).toBeGreaterThan(0)
  })

  it('has a heatmap of its home page: the call to action near the top, the GitHub link in the footer', async () => {
    const map = await read('heatmap?range=30d&path=/&device=desktop')
    expect(map.summary.clicks).toBeGreaterThan(50)
    expect(map.elements.map((e: any) => e.selector).sort()).toEqual(['a.external', 'main>button.cta'])
    // the button spans 42% to 58% of the width, 18% to 21% of the height; the link 78% to 88%, 95.5% to 98.5%
    const { rows } = map.grid
    for (const cell of map.grid.cells) {
      const top = cell.row < rows / 2
      expect(cell.col, JSON.stringify(cell)).toBeGreaterThanOrEqual(top ? 8 : 15)
      expect(cell.col, JSON.stringify(cell)).toBeLessThanOrEqual(top ? 11 : 17)
      // the cell's band of the page, [row, row + 1) / rows, meets the element's
      expect((cell.row + 1) / rows, JSON.stringify(cell)).toBeGreaterThan(top ? 0.18 : 0.955)
      expect(cell.row / rows, JSON.stringify(cell)).toBeLessThanOrEqual(top ? 0.21 : 0.985)
    }
    expect(map.scroll.pageLoads).toBeGreaterThan(50)
  })

  it('has annotations, the planted spike with its source, and the fading page', async () => {
    const annotations = await getOk(call, `/api/v1/annotations?siteId=${site}`, key)
    expect(annotations.annotations.length).toBeGreaterThanOrEqual(3)
    const spikes = (await read('spikes?range=7d')).spikes
    expect(spikes.length).toBeGreaterThan(0)
    expect(spikes.some((s: any) => s.source?.referrerUrl === SPIKE_REFERRER || s.source?.value === 'news.ycombinator.com')).toBe(true)
    const decay = await read('decay')
    expect(JSON.stringify(decay)).toContain(FADING_PAGE)
  })

  it('lists its seed under the site imports', async () => {
    const imports = (await getOk(call, `/api/v1/sites/${site}/imports`, key)).imports
    expect(imports).toHaveLength(1)
    expect(imports[0]).toMatchObject({ kind: 'raw_hits', state: 'completed' })
    expect(imports[0].rows).toBeGreaterThan(10_000)
  })

  it('shows someone live once the trickle has sent a visit', async () => {
    const before = (await read('realtime')).now
    await sendDemoVisit(services, (await services.repositories.sites.get(site))!, 1)
    expect((await read('realtime')).now).toBe(before + 1)
    expect((await read('activity')).actions.length).toBeGreaterThan(0)
  })
})

describe("the demo's live trickle", () => {
  it('sends a visit ending now at any hour of the day, weekends included', async () => {
    // 00:05 and 03:00 UTC had none: the generated day ended before its visits began
    for (const iso of [
      '2026-12-08T00:05:00Z',
      '2026-12-08T03:00:00Z',
      '2026-12-08T12:00:00Z',
      '2026-12-12T23:59:00Z',
      '2026-12-13T01:00:00Z',
    ]) {
      const now = new Date(iso)
      const services = await testServices({ now: () => now })
      const demo = await createDemo(services.repositories, now)
      const sent: { timestamp: string }[] = []
      const ingest = services.ingestor.ingest.bind(services.ingestor)
      services.ingestor.ingest = async (items) => {
        sent.push(...items.map((item) => ({ timestamp: String(item.hit.timestamp) })))
        return ingest(items)
      }
      await sendDemoVisit(services, demo.site, 1)
      expect(sent.length, iso).toBeGreaterThan(0)
      // the visit ends now, and began no earlier than an hour before
      const times = sent.map((s) => Date.parse(s.timestamp))
      expect(Math.max(...times), iso).toBe(now.getTime())
      expect(Math.min(...times), iso).toBeGreaterThan(now.getTime() - 3_600_000)
    }
  })
})
