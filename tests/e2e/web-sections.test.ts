import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium, pageChecker } from './chromium'
import { type RunningServer, cli, demoKeys, startServer } from './server-process'

/** The embedded stores of the server under test, whatever the test run's own environment names. */
const EMBEDDED = { REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' }
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

const checkPage = pageChecker('web-sections')

/** The page's overflow to the side at a phone's and a desktop's width: none may scroll sideways. */
async function sideways(page: Page) {
  const over: Record<number, number> = {}
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 800 })
    over[width] = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)
  }
  await page.setViewportSize({ width: 1280, height: 800 })
  return over
}
const NONE = { 390: 0, 1280: 0 }

/** A table's rows (marked data-list) as [label, figure] pairs. */
const listRows = (page: Page, list: string) =>
  page
    .locator(`table[data-list="${list}"] tbody tr`)
    .evaluateAll((rows) =>
      rows.map((r) => [r.querySelector('td.bar')!.textContent!.trim(), Number(r.querySelector('td.num')!.textContent!.replace(/,/g, ''))]),
    )

describe.skipIf(!CHROMIUM)('the section pages in real Chromium', () => {
  const dataDir = tempDir('web-sections')
  let server: RunningServer
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let demo: ReturnType<typeof demoKeys>

  const api = async (path: string) => {
    const answer = await fetch(
      `${server.url}${path}${path === '/api/v1/sites' ? '' : `${path.includes('?') ? '&' : '?'}site_id=${demo.site}`}`,
      {
        headers: { authorization: `Bearer ${demo.readKey}` },
      },
    )
    expect(answer.status, path).toBe(200)
    return (await answer.json()) as any
  }
  const open = async (section: string) => {
    await page.goto(`${server.url}/app/sites/${demo.site}/${section}`)
    expect(await sideways(page), section).toEqual(NONE)
  }

  beforeAll(async () => {
    // the demo's first start makes two months of traffic: slow on a busy machine
    server = await startServer({ DATA_DIR: dataDir, DEMO_LIVE_TRAFFIC: '0', ...EMBEDDED }, { startTimeoutMs: 420_000 })
    demo = demoKeys(server.stdout())
    browser = await launchChromium()
    const { link } = await cli('admin', ['login', '--email', 'owner@demo.example.com', '--url', server.url], {
      DATA_DIR: dataDir,
      ...EMBEDDED,
    })
    context = await browser.newContext()
    page = await context.newPage()
    await page.goto(link)
    await page.getByRole('button', { name: 'Sign in' }).click()
    // the demo organization's only site: signing in lands on its dashboard
    await page.waitForURL(`${server.url}/app/sites/${demo.site}`)
  }, 480_000)
  afterAll(async () => {
    await context?.close()
    await browser?.close()
    await server?.stop()
  })

  it('realtime: the live figures, the minute bars, the active pages and the feed are the API’s', async () => {
    // two visitors now (the demo's own live traffic is off)
    const { snippetId, domain } = (await api('/api/v1/sites')).sites.find((s: { id: string }) => s.id === demo.site)
    for (const [ua, path] of [
      [CHROME, '/realtime-check-a'],
      [FIREFOX, '/realtime-check-b'],
    ]) {
      const hit = await fetch(`${server.url}/api/event`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'user-agent': ua },
        body: JSON.stringify({ site: snippetId, name: 'pageview', url: `https://${domain}${path}`, referrer: 'https://www.google.com/' }),
      })
      expect(hit.status).toBe(202)
    }
    // the collector writes in batches: wait until both are read back, in the feed and in the figures
    const seen = async () => {
      const [live, activity] = await Promise.all([api('/api/v1/realtime'), api('/api/v1/activity')])
      const paths = [live.pages.map((p: { value: string }) => p.value), activity.actions.map((a: { path: string }) => a.path)]
      return ['/realtime-check-a', '/realtime-check-b'].every((p) => paths.every((list) => list.includes(p)))
    }
    await expect.poll(seen, { timeout: 30_000 }).toBe(true)
    await open('realtime')
    const [live, activity] = await Promise.all([api('/api/v1/realtime'), api('/api/v1/activity')])
    expect(live.now).toBeGreaterThan(0)
    await expect(page.locator('[data-metric=now] .value').innerText()).resolves.toBe(String(live.now))
    await expect(page.locator('[data-metric=halfHour] .value').innerText()).resolves.toBe(String(live.halfHour))
    const bars = await page.locator('.minute').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.visitors)))
    expect(bars).toEqual(live.series.map((s: { visitors: number }) => s.visitors))
    expect(await listRows(page, 'Page')).toEqual(live.pages.map((p: { value: string; visitors: number }) => [p.value, p.visitors]))
    expect(await listRows(page, 'Source')).toEqual(live.sources.map((p: { value: string; visitors: number }) => [p.value, p.visitors]))
    const feed = await page.locator('.feed li[data-kind] strong').allInnerTexts()
    expect(feed).toEqual(activity.actions.slice(0, 40).map((a: { path: string }) => a.path))
    await expect(page.locator('.feed').innerText()).resolves.toContain('from Google')
    await checkPage(page, 'realtime')
  }, 60_000)

  it('errors: the totals and each group are the API’s; a group shows its message and breakdowns', async () => {
    await open('errors?range=30d')
    const answer = await api('/api/v1/errors?range=30d')
    expect(answer.groups.length).toBeGreaterThan(0)
    for (const key of ['errors', 'groups', 'visitors'])
      await expect(page.locator(`[data-metric=${key}] .value`).innerText()).resolves.toBe(answer.summary[key].toLocaleString('en'))
    const groups = await page
      .locator('.groups li')
      .evaluateAll((items) =>
        items.map((li) => [
          (li as HTMLElement).dataset.fingerprint,
          Number((li.querySelector('[data-count]') as HTMLElement).dataset.count),
          Number((li.querySelector('[data-visitors]') as HTMLElement).dataset.visitors),
        ]),
      )
    expect(groups).toEqual(
      answer.groups.map((g: { fingerprint: string; count: number; visitors: number }) => [g.fingerprint, g.count, g.visitors]),
    )
    await expect(page.locator('.groups').innerText()).resolves.toMatch(/first seen .+ ago/)
    await checkPage(page, 'errors')

    const first = answer.groups[0]
    await page.locator('.groups a.group-title').first().click()
    await page.waitForURL(/fingerprint=/)
    expect(await sideways(page)).toEqual(NONE)
    const detail = await api(`/api/v1/errors?range=30d&fingerprint=${first.fingerprint}`)
    await expect(page.locator('pre.error-message').innerText()).resolves.toBe(detail.group.message)
    await expect(page.locator('[data-metric=count] .value').innerText()).resolves.toBe(detail.group.count.toLocaleString('en'))
    expect(await listRows(page, 'Page')).toEqual(detail.breakdowns.pages.map((r: { value: string; count: number }) => [r.value, r.count]))
    const countries = new Intl.DisplayNames(['en'], { type: 'region' })
    expect(await listRows(page, 'Country')).toEqual(
      detail.breakdowns.countries.map((r: { value: string; count: number }) => [countries.of(r.value), r.count]),
    )
    await checkPage(page, 'error-group')
  }, 60_000)

  it('web vitals: each metric’s percentile, its distribution and the per-page table are the API’s', async () => {
    await open('vitals?range=30d')
    const answer = await api('/api/v1/vitals?range=30d')
    expect(answer.summary.samples).toBeGreaterThan(0)
    await expect(page.locator('[data-metric=samples] .value').innerText()).resolves.toBe(answer.summary.samples.toLocaleString('en'))
    for (const key of ['LCP', 'INP', 'CLS', 'FCP', 'TTFB']) {
      const m = answer.metrics[key]
      const card = page.locator(`[data-vital=${key}]`)
      await expect(card.locator('.value').getAttribute('data-value')).resolves.toBe(String(m.value))
      await expect(card.locator('.stack').getAttribute('aria-label')).resolves.toBe(
        `${Math.round(m.good * 100)}% good, ${Math.round(m.needsImprovement * 100)}% need improvement, ${Math.round(m.poor * 100)}% poor`,
      )
      await expect(card.locator('.badge').innerText()).resolves.toMatch(/^(Good|Needs improvement|Poor)$/i)
    }
    const rows = await page
      .locator('[data-vitals=Page] tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [(tr as HTMLElement).dataset.value, Number(tr.querySelectorAll('td')[1].textContent!.replace(/,/g, ''))]),
      )
    expect(rows).toEqual(answer.tables.pages.map((r: { value: string; visitors: number }) => [r.value, r.visitors]))
    await checkPage(page, 'vitals')
  }, 60_000)

  it('flow: a Sankey diagram of the API’s nodes and links, and each step’s pages with their visits', async () => {
    await open('flow?range=30d')
    const answer = await api('/api/v1/flow?range=30d')
    expect(answer.nodes.length).toBeGreaterThan(0)
    expect(await page.locator('svg.sankey rect.node').count()).toBe(answer.nodes.length)
    expect(await page.locator('svg.sankey path.band').count()).toBe(answer.links.length)
    const shown = await page
      .locator('tr[data-node]')
      .evaluateAll((trs) =>
        trs.map((tr) => [(tr as HTMLElement).dataset.node, Number(tr.querySelector('td.num')!.textContent!.replace(/,/g, ''))] as const),
      )
    expect(new Map(shown)).toEqual(new Map(answer.nodes.map((n: { id: string; visits: number }) => [n.id, n.visits])))
    await expect(page.locator('#flow-title').innerText()).resolves.toContain(`${answer.visits.toLocaleString('en')} visits`)
    await checkPage(page, 'flow')
    // a page of a step opens the flow around it
    await page.locator('tr[data-node] td.bar a').first().click()
    await page.waitForURL(/focus_path=/)
    expect(await sideways(page)).toEqual(NONE)
    expect(await page.locator('svg.sankey rect.node').count()).toBeGreaterThan(0)
  }, 60_000)

  it('journeys: the visitors with landing and exit page and time spent are the API’s; one opens as a timeline', async () => {
    await open('journeys?range=30d')
    const answer = await api('/api/v1/journeys?range=30d&limit=25')
    expect(answer.journeys.length).toBeGreaterThan(0)
    const shown = await page
      .locator('.journeys li')
      .evaluateAll((items) =>
        items.map((li) => [
          (li as HTMLElement).dataset.visitor,
          li.querySelector('.journey-path')!.textContent!.replace(/\s+/g, ' ').trim(),
          Number((li.querySelector('[data-duration]') as HTMLElement).dataset.duration),
        ]),
      )
    expect(shown).toEqual(
      answer.journeys.map((j: { visitor: string; landingPage: string; exitPage: string; duration: number; pageviews: number }) => [
        j.visitor,
        j.exitPage !== j.landingPage || j.pageviews > 1 ? `${j.landingPage} → ${j.exitPage}` : j.landingPage,
        j.duration,
      ]),
    )
    await expect(page.locator('#journeys').innerText()).resolves.toContain(answer.total.toLocaleString('en'))
    await checkPage(page, 'journeys')
    await page.locator('.journeys a.journey-path').first().click()
    await page.waitForURL(/visitor=/)
    expect(await sideways(page)).toEqual(NONE)
    const one = await api(`/api/v1/journeys?range=30d&visitor=${answer.journeys[0].visitor}`)
    expect(await page.locator('.timeline li[data-kind] strong').allInnerTexts()).toEqual(one.events.map((e: { path: string }) => e.path))
    await checkPage(page, 'journey')
  }, 60_000)

  it('pages: each page’s status, visitors and trend are the API’s; the status tabs count as the API does', async () => {
    await open('pages?range=30d')
    const answer = await api('/api/v1/pages?range=30d&trends=1')
    expect(answer.pages.length).toBeGreaterThan(0)
    const rows = await page
      .locator('.pages-table tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [
          (tr as HTMLElement).dataset.path,
          tr.querySelector('.badge')!.textContent,
          Number((tr.querySelector('[data-visitors]') as HTMLElement).dataset.visitors),
          tr.querySelectorAll('svg.spark').length,
        ]),
      )
    const names: Record<string, string> = { active: 'Live', new: 'New', removed: 'Removed' }
    expect(rows).toEqual(
      answer.pages.map((p: { path: string; status: string; visitors: number }) => [p.path, names[p.status] ?? p.status, p.visitors, 1]),
    )
    await expect(page.locator('nav[aria-label="Pages by status"]').innerText()).resolves.toContain(`Removed (${answer.counts.removed})`)
    await checkPage(page, 'pages')
  }, 60_000)

  it('spikes: each spike’s visitors and source are the API’s', async () => {
    await open('spikes?range=30d')
    const answer = await api('/api/v1/spikes?range=30d')
    const shown = await page
      .locator('li[data-spike]')
      .evaluateAll((items) =>
        items.map((li) => [
          (li as HTMLElement).dataset.spike,
          Number((li.querySelector('[data-visitors]') as HTMLElement).dataset.visitors),
        ]),
      )
    expect(shown).toEqual(answer.spikes.map((s: { id: string; visitors: number }) => [s.id, s.visitors]))
    await checkPage(page, 'spikes')
  }, 60_000)

  it('changes: the feed’s kinds and the category counts are the API’s; a word diff shows inline', async () => {
    await open('changes?range=30d')
    const answer = await api('/api/v1/changes?range=30d&limit=25')
    expect(answer.changes.length).toBeGreaterThan(0)
    const shown = await page
      .locator('li[data-change]')
      .evaluateAll((items) => items.map((li) => [(li as HTMLElement).dataset.change, (li as HTMLElement).dataset.type]))
    expect(shown).toEqual(answer.changes.map((c: { id: string; type: string }) => [c.id, c.type]))
    const all = Object.values(answer.totals as Record<string, number>).reduce((s, n) => s + n, 0)
    await expect(page.locator('nav[aria-label="Changes by kind"] a').first().innerText()).resolves.toBe(`All (${all})`)
    const diffable = answer.changes.find((c: { diffable: boolean }) => c.diffable)
    if (diffable) {
      const diff = await api(`/api/v1/changes/diff?change_id=${diffable.id}`)
      const added = diff.runs.filter((r: { op: string }) => r.op === 'added').map((r: { text: string }) => r.text)
      // each inserted run is read out as added (a hidden word) before its text
      const ins = await page.locator(`li[data-change="${diffable.id}"] .diff ins`).evaluateAll((els) => els.map((e) => e.textContent ?? ''))
      expect(ins).toEqual(added.map((t: string) => `added: ${t}`))
    }
    await checkPage(page, 'changes')
  }, 60_000)

  it('anomalies: the site’s visits, the chart’s buckets and each page that moved are the API’s', async () => {
    await open('anomalies')
    const [answer, series] = await Promise.all([api('/api/v1/anomalies'), api('/api/v1/timeseries?range=7d&compare=previous_period')])
    await expect(page.locator('[data-metric=current] .value').innerText()).resolves.toBe(answer.site.current.toLocaleString('en'))
    await expect(page.locator('[data-metric=previous] .value').innerText()).resolves.toBe(answer.site.previous.toLocaleString('en'))
    expect(await page.locator('[data-chart=anomalies] .hit').count()).toBe(series.series.length)
    const first = await page.locator('[data-chart=anomalies] .hit').first().getAttribute('aria-label')
    expect(first).toContain(`${series.series[0].visits.toLocaleString('en')} visits`)
    const movers = await page
      .locator('.cause-card[data-path]')
      .evaluateAll((items) =>
        items.map((li) => [(li as HTMLElement).dataset.path, Number((li.querySelector('[data-current]') as HTMLElement).dataset.current)]),
      )
    expect(movers).toEqual(answer.pages.map((p: { path: string; current: number }) => [p.path, p.current]))
    await checkPage(page, 'anomalies')
  }, 60_000)

  it('decay: the site against its peak and each fading page are the API’s', async () => {
    await open('decay')
    const answer = await api('/api/v1/decay')
    await expect(page.locator('[data-metric=current] .value').innerText()).resolves.toBe(answer.site.current.toLocaleString('en'))
    await expect(page.locator('[data-metric=peak] .value').innerText()).resolves.toBe(answer.site.peak.toLocaleString('en'))
    const shown = await page
      .locator('.cause-card[data-path]')
      .evaluateAll((items) =>
        items.map((li) => [
          (li as HTMLElement).dataset.path,
          Number((li.querySelector('[data-current]') as HTMLElement).dataset.current),
          Number((li.querySelector('[data-peak]') as HTMLElement).dataset.peak),
        ]),
      )
    expect(shown).toEqual(answer.pages.map((p: { path: string; current: number; peak: number }) => [p.path, p.current, p.peak]))
    await checkPage(page, 'decay')
  }, 60_000)

  it('launches: each launched page’s visits and band, and the cohort’s days, are the API’s', async () => {
    await open('launches?range=90d')
    const answer = await api('/api/v1/pages/launches?range=90d')
    expect(answer.pages.length).toBeGreaterThan(0)
    const shown = await page
      .locator('.launches-table tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [
          (tr as HTMLElement).dataset.path,
          Number((tr.querySelector('[data-visits]') as HTMLElement).dataset.visits),
          tr.querySelector('.badge')!.textContent,
        ]),
      )
    const bands: Record<string, string> = { over: 'Above the median', at: 'At the median', under: 'Below the median' }
    expect(shown).toEqual(
      answer.pages.map((p: { path: string; visits: number; band: string | null }) => [
        p.path,
        p.visits,
        p.band ? bands[p.band] : 'Too young to tell',
      ]),
    )
    expect(await page.locator('[data-chart=cohort] .hit').count()).toBe(answer.cohort.shape.length)
    await checkPage(page, 'launches')
  }, 60_000)

  it('page detail: its totals, its visits by day, the shift and the ranked causes are the API’s', async () => {
    const path = '/blog/launch-week'
    await open(`page?range=30d&path=${encodeURIComponent(path)}`)
    const answer = await api(`/api/v1/pages/detail?range=30d&path=${encodeURIComponent(path)}`)
    for (const key of ['visits', 'visitors', 'pageviews'])
      await expect(page.locator(`[data-metric=${key}] .value`).innerText()).resolves.toBe(answer.totals[key].toLocaleString('en'))
    const hits = await page.locator('[data-chart=page] .hit').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')))
    expect(hits.length).toBe(answer.series.length)
    answer.series.forEach((s: { visits: number }, i: number) => expect(hits[i]).toContain(`${s.visits.toLocaleString('en')} visits`))
    expect(await page.locator('.cause-card[data-cause]').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.cause))).toEqual(
      answer.causes.map((c: { kind: string }) => c.kind),
    )
    expect(await listRows(page, 'Source')).toEqual(
      answer.drivers.sources.map((s: { value: string; visits: number }) => [s.value || 'Direct', s.visits]),
    )
    await checkPage(page, 'page-detail')
  }, 60_000)

  it('search: a site without Search Console says so and where to connect it', async () => {
    await open('search?range=30d')
    const answer = await api('/api/v1/search?range=30d')
    expect(answer.connected).toBe(false)
    await expect(page.locator('[data-read="/api/v1/search"]').innerText()).resolves.toContain('not connected to Google Search Console')
    await checkPage(page, 'search')
  }, 60_000)

  it('clicks: the totals and each clicked element, dead clicks marked, are the API’s; an element opens its page’s heatmap', async () => {
    await open('clicks?range=30d')
    const answer = await api('/api/v1/clicks?range=30d')
    expect(answer.clicks.length).toBeGreaterThan(0)
    for (const key of ['clicks', 'visitors', 'deadClicks'])
      await expect(page.locator(`[data-metric=${key}] .value`).innerText()).resolves.toBe(answer.summary[key].toLocaleString('en'))
    const shown = await page
      .locator('.groups li[data-selector]')
      .evaluateAll((items) =>
        items.map((li) => [
          (li as HTMLElement).dataset.selector,
          Number((li.querySelector('[data-count]') as HTMLElement).dataset.count),
          Number((li.querySelector('[data-dead]') as HTMLElement | null)?.dataset.dead ?? 0),
        ]),
      )
    expect(shown).toEqual(
      answer.clicks.map((g: { selector: string; count: number; deadClicks: number }) => [g.selector, g.count, g.deadClicks]),
    )
    await checkPage(page, 'clicks')

    await page.locator('.groups li[data-selector] .group-fig a').first().click()
    await page.waitForURL(/heatmap\?/)
    expect(await sideways(page)).toEqual(NONE)
    const map = await api(`/api/v1/heatmap?range=30d&path=${encodeURIComponent(answer.clicks[0].topPath)}&limit=20`)
    await expect(page.locator('#grid-title').innerText()).resolves.toContain(map.summary.clicks.toLocaleString('en'))
    expect(await page.locator('.heatmap rect.cell').count()).toBe(map.grid.cells.length)
    // the drawing stays inside its card
    const [svg, card] = await Promise.all([page.locator('.heatmap svg').boundingBox(), page.locator('section.heatmap').boundingBox()])
    expect(svg!.x + svg!.width).toBeLessThanOrEqual(card!.x + card!.width)
    await page.setViewportSize({ width: 390, height: 844 })
    const [svgPhone, cardPhone] = await Promise.all([
      page.locator('.heatmap svg').boundingBox(),
      page.locator('section.heatmap').boundingBox(),
    ])
    expect(svgPhone!.x + svgPhone!.width).toBeLessThanOrEqual(cardPhone!.x + cardPhone!.width)
    await page.setViewportSize({ width: 1280, height: 800 })
    await checkPage(page, 'heatmap')
  }, 60_000)

  it('a section shows the dashboard’s filters as chips, its figures filtered as the API’s; a chip removes its filter', async () => {
    const filters = JSON.stringify([{ dimension: 'country', operator: 'is', value: ['US'] }])
    await open(`clicks?range=30d&filters=${encodeURIComponent(filters)}`)
    const answer = await api(`/api/v1/clicks?range=30d&filters=${encodeURIComponent(filters)}`)
    await expect(page.locator('[data-metric=clicks] .value').innerText()).resolves.toBe(answer.summary.clicks.toLocaleString('en'))
    const chip = page.locator('ul.chips[aria-label=Filters] a')
    await expect(chip.innerText()).resolves.toContain('country is United States')
    await checkPage(page, 'clicks-filtered')
    await chip.click()
    await page.waitForURL((url) => url.pathname.endsWith('/clicks') && !url.searchParams.has('filters'))
    const all = await api('/api/v1/clicks?range=30d')
    await expect(page.locator('[data-metric=clicks] .value').innerText()).resolves.toBe(all.summary.clicks.toLocaleString('en'))
  }, 60_000)

  it('bad parameters of a section are a 400 with the API’s message, not a 500', async () => {
    for (const path of ['anomalies?range=nope', 'launches?measure=nope', 'page?range=30d', 'changes?category=nope', 'heatmap?path=nope']) {
      const answer = await page.request.get(`${server.url}/app/sites/${demo.site}/${path}`)
      expect(answer.status(), path).toBeGreaterThanOrEqual(400)
      expect(answer.status(), path).toBeLessThan(500)
    }
  }, 60_000)
})
