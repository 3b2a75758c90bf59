import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import type { CrawlerConfig } from '../../lib/crawl/config'
import { crawlSite } from '../../lib/crawl/crawl'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { ORIGIN, email, webHarness } from './web-harness'

const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

/** The drawn cells of the page: [row, col, clicks]. */
const drawnCells = (html: string) =>
  [...html.matchAll(/<rect class="cell"[^>]*data-row="(\d+)" data-col="(\d+)" data-clicks="(\d+)"/g)].map((m) => m.slice(1).map(Number))

describe('the heatmap page', () => {
  it('draws the cells, elements and scroll reach the API answers, and refuses bad input and other people’s sites', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const orgId = /([0-9a-f-]{36})$/.exec((await t.request('/app/orgs', { form: { name: 'Heat' }, cookie })).headers.get('location')!)![1]
    const domain = `heat-${crypto.randomUUID().slice(0, 6)}.example.com`
    const siteId = /sites\/([0-9a-f-]{36})/.exec(
      (await t.request(`/app/orgs/${orgId}/sites`, { form: { domain }, cookie })).headers.get('location')!,
    )![1]
    const settings = await (await t.request(`/app/sites/${siteId}/settings`, { cookie })).text()
    const snippetId = /data-site=(?:&quot;|")([a-z0-9]{10})/.exec(settings)![1]
    const keyHtml = await (await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'r', scope: 'read' }, cookie })).text()
    const key = /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(keyHtml)![1].trim()

    // on a 1000 x 2000 document (20 columns, 40 rows of 50 px): two clicks in row 2, column 3; one in row 39, column 19
    const app = createApp(t.services)
    const send = async (body: object) => {
      const hit = await app.request(`${ORIGIN}/api/event`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-forwarded-for': '203.0.113.9', 'user-agent': CHROME },
        body: JSON.stringify({ site: snippetId, url: `https://${domain}/pricing`, screenWidth: 1280, ...body }),
      })
      expect(hit.status).toBe(202)
    }
    const at = (x: number, y: number, extra = {}) => ({
      selector: 'button#buy',
      tag: 'button',
      text: 'Buy',
      x,
      y,
      docWidth: 1000,
      docHeight: 2000,
      ...extra,
    })
    await send({ name: 'pageview' })
    await send({ name: 'click', click: at(0.175, 0.06) })
    await send({ name: 'click', click: at(0.18, 0.07, { rage: true }) })
    await send({ name: 'click', click: { ...at(1, 1), selector: 'div.footer', tag: 'div', text: '', dead: true } })
    await send({ name: 'engagement', engagement: { ms: 3000, scroll: 45 } })

    const api = (await (
      await app.request(`${ORIGIN}/api/v1/heatmap?site_id=${siteId}&path=/pricing&limit=20`, {
        headers: { authorization: `Bearer ${key}` },
      })
    ).json()) as any
    expect(api.grid.cells.map((c: any) => [c.row, c.col, c.clicks])).toEqual([
      [2, 3, 2],
      [39, 19, 1],
    ])

    const page = await t.request(`/app/sites/${siteId}/heatmap?path=/pricing`, { cookie })
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(drawnCells(html)).toEqual([
      [2, 3, 2],
      [39, 19, 1],
    ])
    // the rage cell is outlined; the elements and the scroll reach are listed with the API's shares
    expect(html.match(/<rect class="rage"/g)).toHaveLength(1)
    expect(html).toContain('3 clicks on /pricing')
    expect(html).toMatch(/<code>button#buy<\/code>.*?<td class="num">2<\/td><td class="num">67%<\/td>/)
    expect(html).toMatch(/<td>40% of the page<\/td><td class="num">100%<\/td>/)
    expect(html).toMatch(/<td>50% of the page<\/td><td class="num">0%<\/td>/)
    // no crawler here: a blank page, and the page says why and what to do
    expect(html).toContain('data-outline="none"')
    expect(html).toContain('The crawler is turned off on this server (CRAWLER=0), so the clicks are drawn over a blank page.')

    expect((await t.request(`/app/sites/${siteId}/heatmap?path=/pricing&device=watch`, { cookie })).status).toBe(400)
    expect((await t.request(`/app/sites/${siteId}/heatmap?path=pricing`, { cookie })).status).toBe(400)
    const stranger = await t.signIn(email())
    expect((await t.request(`/app/sites/${siteId}/heatmap?path=/pricing`, { cookie: stranger })).status).toBe(404)
  })

  it('draws the clicks over the crawler’s copy of the page: its heading and text; before a crawl it says there is none and what to do', async () => {
    // the site's pages, served here
    const pricing = `<html><head><title>Pricing - Heat</title></head><body><nav><a href="/">Home</a></nav><main><h1>Plans and pricing</h1>
      <p>Every plan includes unlimited dashboards, shared links and the full API, with no cookie banner needed.</p>
      <p>The business plan adds single sign-on and a service agreement for larger teams.</p></main></body></html>`
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname
      if (path === '/pricing') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(pricing)
      if (path === '/')
        return void res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end('<html><body><h1>Heat</h1><a href="/pricing">Pricing</a></body></html>')
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      const crawler: CrawlerConfig = {
        fetch: guardedFetch({ allowPrivate: true, timeoutMs: 5000 }),
        userAgent: 'SvcAnalyticsBot',
        hostIntervalMs: 0,
        maxQueuedPings: 3,
        siteRunMs: 30_000,
        siteOrigin: () => origin,
      }
      const t = await webHarness('embedded', { crawler })
      const cookie = await t.signIn(email())
      const orgId = /([0-9a-f-]{36})$/.exec(
        (await t.request('/app/orgs', { form: { name: 'Outline' }, cookie })).headers.get('location')!,
      )![1]
      const siteId = /sites\/([0-9a-f-]{36})/.exec(
        (await t.request(`/app/orgs/${orgId}/sites`, { form: { domain: 'outline.example.com' }, cookie })).headers.get('location')!,
      )![1]
      const snippetId = /data-site=(?:&quot;|")([a-z0-9]{10})/.exec(
        await (await t.request(`/app/sites/${siteId}/settings`, { cookie })).text(),
      )![1]
      const app = createApp(t.services)
      for (const body of [
        { name: 'pageview' },
        { name: 'click', click: { selector: 'a.buy', tag: 'a', text: 'Buy', x: 0.5, y: 0.5, docWidth: 1000, docHeight: 2000 } },
      ]) {
        const hit = await app.request(`${ORIGIN}/api/event`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain', 'x-forwarded-for': '203.0.113.7', 'user-agent': CHROME },
          body: JSON.stringify({ site: snippetId, url: 'https://outline.example.com/pricing', screenWidth: 1280, ...body }),
        })
        expect(hit.status).toBe(202)
      }
      // before any crawl: a blank page, why, and how to have it read
      const before = await (await t.request(`/app/sites/${siteId}/heatmap?path=/pricing`, { cookie })).text()
      expect(before).toContain('data-outline="none"')
      expect(before).toContain('The crawler has no copy of /pricing yet, so the clicks are drawn over a blank page.')
      expect(before).toContain('ping it (POST /api/v1/ping with its URL)')
      expect(before).not.toContain('class="heading"')

      const site = (await t.services.sites.findFresh(siteId))!
      const run = await crawlSite(t.services, crawler, site)
      expect(run.errors).toEqual([])
      const after = await (await t.request(`/app/sites/${siteId}/heatmap?path=/pricing`, { cookie })).text()
      expect(after).not.toContain('data-outline="none"')
      // the page's h1, then its text from the start, under the one cell clicked (row 20 of 40, column 10)
      const outline = /<div class="heat-outline"[^>]*>([\s\S]*?)<\/div>/.exec(after)![1]
      expect(outline).toContain('<span class="heading">Plans and pricing</span>')
      expect(outline).toMatch(/<p>Plans and pricing Every plan includes unlimited dashboards, shared links and the full API/)
      expect(after).toContain('The outline is the crawler’s copy of /pricing from')
      expect(after).toMatch(/<rect class="cell"[^>]*data-row="20" data-col="10" data-clicks="1"/)
    } finally {
      server.close()
    }
  })
})
