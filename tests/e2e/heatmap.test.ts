import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM, launchChromium } from './chromium'
import { createApp } from '../../functions/app'
import { client, seed, testServices } from '../helpers'

const DESKTOP_CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const TYPED = 'typed-heatmap-secret@mail.test'

/** A page laid out in fixed pixels: each element's centre, where a click lands, is known in both viewports. */
const page = (snippetId: string) => `<!doctype html>
<html><head><title>Heatmap test</title>
<style>html, body { margin: 0 } body { position: relative; height: 2400px } .at { position: absolute; margin: 0; padding: 0; border: 0 }</style>
<script defer data-site="${snippetId}" data-allow-localhost src="/js/script.js"></script>
</head><body>
<button id="buy" class="at" style="left: 40px; top: 300px; width: 120px; height: 40px" onclick="this.dataset.pressed = Date.now()">Buy</button>
<div id="hero" class="at" style="left: 200px; top: 900px; width: 150px; height: 100px; background: #ddd"></div>
<button id="rage" class="at" style="left: 40px; top: 1500px; width: 100px; height: 40px">Broken</button>
<input id="email" class="at" style="left: 200px; top: 1700px; width: 150px; height: 30px" type="email">
</body></html>`

type Sent = Record<string, any>

describe.skipIf(!CHROMIUM)('click heatmaps from real Chromium', () => {
  let browser: Browser
  let base = ''
  let close: () => void
  let services: Awaited<ReturnType<typeof testServices>>
  let fx: Awaited<ReturnType<typeof seed>>
  const bodies: string[] = []
  const sent = () => bodies.map((b) => JSON.parse(b) as Sent)

  beforeAll(async () => {
    services = await testServices()
    fx = await seed(services)
    await services.sites.update(fx.a.site.id, (s) => ({ ...s, tracking: { ...s.tracking, allowedHostnames: ['127.0.0.1'] } }))
    const app = createApp(services)
    const outer = new Hono()
    outer.get('/heat', (c) => c.html(page(fx.a.site.snippetId)))
    outer.all('*', async (c) => {
      const body = c.req.path === '/api/event' ? await c.req.raw.clone().text() : null
      const response = await app.fetch(c.req.raw)
      // recorded once answered: stored by then
      if (body !== null && response.status === 202) bodies.push(body)
      return response
    })
    const server = serve({ fetch: outer.fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => server.once('listening', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    close = () => server.close()
    browser = await launchChromium([`--user-agent=${DESKTOP_CHROME}`])
  })
  afterAll(async () => {
    await browser?.close()
    close?.()
  })

  const waitFor = async (count: (events: Sent[]) => number, n: number, what: string) => {
    for (let i = 0; i < 100 && count(sent()) < n; i++) await new Promise((r) => setTimeout(r, 50))
    expect(count(sent()), what).toBeGreaterThanOrEqual(n)
  }
  const clicksFrom = (width: number) => (events: Sent[]) => events.filter((e) => e.name === 'click' && e.screenWidth === width).length

  /** Each element's centre in document pixels and the document's size, measured in the page. */
  const layout = (tab: Page) =>
    tab.evaluate(() => {
      const centre = (id: string) => {
        const r = document.getElementById(id)!.getBoundingClientRect()
        return { x: r.left + r.width / 2 + window.scrollX, y: r.top + r.height / 2 + window.scrollY }
      }
      const root = document.documentElement
      return {
        width: root.scrollWidth,
        height: root.scrollHeight,
        at: { buy: centre('buy'), hero: centre('hero'), rage: centre('rage'), email: centre('email') },
      }
    })

  const hide = (tab: Page) =>
    tab.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true })
      document.dispatchEvent(new Event('visibilitychange'))
    })

  /** The cell of a point, as the docs state the grid: 20 columns, rows square on the document, positions of four decimals. */
  const cellOf = (point: { x: number; y: number }, size: { width: number; height: number }) => {
    const rows = Math.min(400, Math.max(1, Math.round((20 * size.height) / size.width)))
    const cell = (v: number, side: number, cells: number) =>
      Math.min(Math.floor((Math.round((v / side) * 10_000) * cells) / 10_000), cells - 1)
    return { rows, row: cell(point.y, size.height, rows), col: cell(point.x, size.width, 20) }
  }

  let desktop: Awaited<ReturnType<typeof layout>>
  let phone: Awaited<ReturnType<typeof layout>>

  it('clicks on a desktop and a phone viewport at known places: two on a live button, a dead one, a triple click, one into a field typed into', async () => {
    const wide = await browser.newContext({ userAgent: DESKTOP_CHROME, viewport: { width: 1280, height: 800 } })
    const tab = await wide.newPage()
    await tab.goto(`${base}/heat`)
    await waitFor((e) => e.filter((x) => x.name === 'pageview').length, 1, 'pageview')
    desktop = await layout(tab)
    await tab.click('#buy')
    await tab.click('#buy')
    await tab.click('#hero')
    // three clicks on one spot within a second: a rage click (the page does nothing, so each is dead too)
    await tab.click('#rage', { clickCount: 3 })
    await tab.click('#email')
    await tab.keyboard.type(TYPED)
    await waitFor(clicksFrom(1280), 7, 'desktop clicks')
    await hide(tab)
    await waitFor((e) => e.filter((x) => x.name === 'engagement' && x.screenWidth === 1280).length, 1, 'desktop engagement')
    await wide.close()

    const narrow = await browser.newContext({ userAgent: DESKTOP_CHROME, viewport: { width: 390, height: 844 } })
    const small = await narrow.newPage()
    await small.goto(`${base}/heat`)
    await waitFor((e) => e.filter((x) => x.name === 'pageview' && x.screenWidth === 390).length, 1, 'phone pageview')
    phone = await layout(small)
    // the live button first: its change would otherwise fall within the dead clicks' second
    await small.click('#buy')
    await small.click('#hero')
    await small.click('#hero')
    await waitFor(clicksFrom(390), 3, 'phone clicks')
    await hide(small)
    await waitFor((e) => e.filter((x) => x.name === 'engagement' && x.screenWidth === 390).length, 1, 'phone engagement')
    await narrow.close()

    // what was sent: positions as fractions of the document, its size, one rage click, and nothing typed
    const desktopClicks = sent().filter((e) => e.name === 'click' && e.screenWidth === 1280)
    for (const e of desktopClicks) expect(e.click).toMatchObject({ docWidth: desktop.width, docHeight: desktop.height })
    const buy = desktopClicks.find((e) => e.click.selector === 'button#buy')!
    expect(buy.click.x).toBeCloseTo(desktop.at.buy.x / desktop.width, 3)
    expect(buy.click.y).toBeCloseTo(desktop.at.buy.y / desktop.height, 3)
    expect(desktopClicks.filter((e) => e.click.rage).map((e) => e.click.selector)).toEqual(['button#rage'])
    for (const body of bodies) expect(body).not.toContain(TYPED)
  })

  it('reads each viewport’s grid with the clicks in the cells where they were made, element shares, dead and rage clicks and scroll reach', async () => {
    const call = client(services)
    const read = async (device: string) => {
      const res = await call('GET', `/api/v1/heatmap?site_id=${fx.a.site.id}&range=today&path=/heat&device=${device}`, {
        key: fx.a.read.key,
      })
      expect(res.status, JSON.stringify(res.json)).toBe(200)
      return res.json
    }
    const expectedCells = (clicks: [keyof typeof desktop.at, number][], size: typeof desktop) => {
      const cells = new Map<string, { row: number; col: number; clicks: number }>()
      for (const [id, n] of clicks) {
        const { row, col } = cellOf(size.at[id], size)
        const cell = cells.get(`${row},${col}`) ?? { row, col, clicks: 0 }
        cell.clicks += n
        cells.set(`${row},${col}`, cell)
      }
      return [...cells.values()].sort((a, b) => a.row - b.row || a.col - b.col)
    }
    const reachOf = (scroll: number) =>
      [10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map((depth) => ({
        depth,
        pageLoads: scroll >= depth ? 1 : 0,
        share: scroll >= depth ? 1 : 0,
      }))
    const scrollSent = (width: number) => sent().find((e) => e.name === 'engagement' && e.screenWidth === width)!.engagement.scroll

    const wide = await read('desktop')
    expect(wide.summary).toEqual({ clicks: 7, visitors: 1, deadClicks: 4, rageClicks: 1 })
    expect(wide.grid).toMatchObject({
      columns: 20,
      rows: cellOf(desktop.at.buy, desktop).rows,
      documentWidth: desktop.width,
      documentHeight: desktop.height,
    })
    expect(wide.grid.cells.map(({ row, col, clicks }: any) => ({ row, col, clicks }))).toEqual(
      expectedCells(
        [
          ['buy', 2],
          ['hero', 1],
          ['rage', 3],
          ['email', 1],
        ],
        desktop,
      ),
    )
    // the triple click's cell holds the rage click and its three dead clicks
    const rageCell = cellOf(desktop.at.rage, desktop)
    expect(wide.grid.cells.find((c: any) => c.row === rageCell.row && c.col === rageCell.col)).toMatchObject({
      deadClicks: 3,
      rageClicks: 1,
    })
    expect(wide.elements.map((e: any) => [e.selector, e.clicks, e.share, e.deadClicks, e.rageClicks])).toEqual([
      ['button#rage', 3, 0.4286, 3, 1],
      ['button#buy', 2, 0.2857, 0, 0],
      ['div#hero', 1, 0.1429, 1, 0],
      ['input#email', 1, 0.1429, 0, 0],
    ])
    expect(wide.scroll).toEqual({ pageLoads: 1, reach: reachOf(scrollSent(1280)) })

    const small = await read('phone')
    expect(small.summary).toEqual({ clicks: 3, visitors: 1, deadClicks: 2, rageClicks: 0 })
    expect(small.grid.documentWidth).toBe(phone.width)
    expect(small.grid.cells.map(({ row, col, clicks }: any) => ({ row, col, clicks }))).toEqual(
      expectedCells(
        [
          ['hero', 2],
          ['buy', 1],
        ],
        phone,
      ),
    )
    expect(small.scroll).toEqual({ pageLoads: 1, reach: reachOf(scrollSent(390)) })
    // the layouts differ: the same element falls in other cells on the phone
    expect(cellOf(phone.at.hero, phone)).not.toEqual(cellOf(desktop.at.hero, desktop))

    // a tablet viewport sent nothing
    expect((await read('tablet')).summary.clicks).toBe(0)
    expect(JSON.stringify([wide, small])).not.toContain(TYPED)
  })
})
