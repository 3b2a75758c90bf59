import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM, launchChromium } from './chromium'
import { createApp } from '../../functions/app'
import { seed, testServices } from '../helpers'

const DESKTOP_CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

const page = (snippetId: string) => `<!doctype html>
<html><head><title>Tracker test</title>
<script>window.svc=window.svc||function(){(svc.q=svc.q||[]).push(arguments)};svc('Queued Before Load',{props:{early:'yes'}})</script>
<script defer data-site="${snippetId}" data-allow-localhost src="/js/script.js"></script>
</head><body style="height:3000px">
<a id="out" href="https://example.org/elsewhere">Elsewhere</a>
<button id="dead" class="cta primary">Does nothing</button>
<button id="alive" onclick="document.body.appendChild(document.createElement('p'))">Adds a paragraph</button>
<form id="signup" action="/thanks" onsubmit="event.preventDefault()"><input name="email"><button id="send" type="submit">Send</button></form>
<button id="boom" onclick="setTimeout(() => { throw new TypeError('boom happened') })">Throw</button>
</body></html>`

// the snippet as pasted: no opt-in for a page on the developer's own machine
const localPage = (snippetId: string) => `<!doctype html>
<html><head><title>Local page</title>
<script defer data-site="${snippetId}" src="/js/script.js"></script>
</head><body><button id="b">Press</button></body></html>`

describe.skipIf(!CHROMIUM)('the tracker in real Chromium', () => {
  let browser: Browser
  let base = ''
  let snippetId = ''
  const received: Record<string, any>[] = []
  let close: () => void

  beforeAll(async () => {
    const services = await testServices()
    const fx = await seed(services)
    snippetId = fx.a.site.snippetId
    // these pages are served from 127.0.0.1: the tag opts in, and the site counts that hostname
    await services.sites.update(fx.a.site.id, (s) => ({ ...s, tracking: { ...s.tracking, allowedHostnames: ['127.0.0.1'] } }))
    const app = createApp(services)
    const outer = new Hono()
    outer.get('/page', (c) => c.html(page(snippetId)))
    outer.get('/local', (c) => c.html(localPage(snippetId)))
    outer.get('/thanks', (c) => c.html('<p>thanks</p>'))
    outer.all('*', async (c) => {
      const isEvent = c.req.path === '/api/event' && c.req.method === 'POST'
      const body = isEvent ? JSON.parse(await c.req.raw.clone().text()) : null
      const response = await app.fetch(c.req.raw)
      // recorded once answered: the test sink has stored it by then
      if (isEvent && response.status === 202) received.push(body)
      return response
    })
    const server = serve({ fetch: outer.fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => server.once('listening', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    close = () => server.close()
    // the browser-wide agent too: beacons sent while a page unloads do not carry the context's override
    browser = await launchChromium([`--user-agent=${DESKTOP_CHROME}`])
  })
  afterAll(async () => {
    await browser?.close()
    close?.()
  })

  const waitFor = async (predicate: (e: Record<string, any>) => boolean, what: string) => {
    for (let i = 0; i < 100; i++) {
      const found = received.find(predicate)
      if (found) return found
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`no ${what} arrived; got ${JSON.stringify(received.map((e) => e.name))}`)
  }

  it('sends pageviews, SPA navigations, custom events, clicks, errors, forms and an engagement report', async () => {
    const context = await browser.newContext({ userAgent: DESKTOP_CHROME, viewport: { width: 1280, height: 800 } })
    const tab = await context.newPage()
    await tab.goto(`${base}/page?utm_source=test`)

    const view = await waitFor((e) => e.name === 'pageview', 'pageview')
    expect(view).toMatchObject({ site: snippetId, url: `${base}/page?utm_source=test`, screenWidth: 1280 })
    // the call queued before the script loaded is sent after it
    expect(await waitFor((e) => e.name === 'Queued Before Load', 'queued event')).toMatchObject({ props: { early: 'yes' } })

    // SPA navigation through the history API
    await tab.evaluate(() => history.pushState({}, '', '/app/step-2'))
    expect(await waitFor((e) => e.name === 'pageview' && e.url.endsWith('/app/step-2'), 'SPA pageview')).toBeTruthy()
    // leaving the first page view (by SPA navigation) reported its engagement
    const leftFirst = await waitFor((e) => e.name === 'engagement', 'engagement on SPA navigation')
    expect(leftFirst.url).toBe(`${base}/page?utm_source=test`)
    expect(leftFirst.engagement.ms).toBeGreaterThanOrEqual(0)

    // a custom event with props and revenue
    await tab.evaluate(() =>
      (window as any).svc('Signup', { props: { plan: 'pro', seats: 3 }, revenue: { amount: '19.00', currency: 'EUR' } }),
    )
    expect(await waitFor((e) => e.name === 'Signup', 'custom event')).toMatchObject({
      props: { plan: 'pro', seats: 3 },
      revenue: { amount: '19.00', currency: 'EUR' },
    })

    // a dead click: nothing changes within a second
    await tab.click('#dead')
    const dead = await waitFor((e) => e.name === 'click' && e.click?.selector?.includes('#dead'), 'dead click')
    expect(dead.click).toMatchObject({ tag: 'button', text: 'Does nothing', interactive: true, dead: true })
    // a live click changes the page, so it is not dead
    await tab.click('#alive')
    expect((await waitFor((e) => e.name === 'click' && e.click?.selector?.includes('#alive'), 'live click')).click.dead).toBe(false)

    // a form submission
    await tab.click('#send')
    expect(await waitFor((e) => e.name === 'form', 'form')).toMatchObject({ form: { selector: 'form#signup', action: `${base}/thanks` } })

    // an uncaught error
    await tab.click('#boom')
    const error = await waitFor((e) => e.name === 'error', 'error')
    expect(error.error).toMatchObject({ name: 'TypeError', message: expect.stringContaining('boom happened') })

    // an outbound link click (the navigation to example.org is stopped here)
    await tab.route('https://example.org/**', (route) => route.fulfill({ body: 'elsewhere' }))
    await tab.click('#out')
    expect(await waitFor((e) => e.name === 'click' && e.click?.href === 'https://example.org/elsewhere', 'outbound click')).toMatchObject({
      click: { tag: 'a', text: 'Elsewhere', interactive: true },
    })
    await context.close()
  })

  it('reports engagement with scroll depth when the page is hidden, and web vitals after load', async () => {
    const before = received.length
    const context = await browser.newContext({ userAgent: DESKTOP_CHROME, viewport: { width: 1000, height: 600 } })
    const tab = await context.newPage()
    await tab.goto(`${base}/page`)
    await waitFor((e) => received.indexOf(e) >= before && e.name === 'pageview', 'pageview')
    await tab.evaluate(() => window.scrollTo(0, 1200))
    await tab.waitForTimeout(300)
    // hide the page as a tab switch does
    await tab.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true })
      document.dispatchEvent(new Event('visibilitychange'))
    })
    const report = await waitFor(
      (e) => received.indexOf(e) >= before && e.name === 'engagement' && e.screenWidth === 1000,
      'engagement on hide',
    )
    // (1200 + 600) / 3000 = 60%
    expect(report.engagement.scroll).toBe(60)
    expect(report.engagement.ms).toBeGreaterThanOrEqual(250)
    // the vitals file loaded after `load` reports through the tracker
    const vital = await waitFor((e) => received.indexOf(e) >= before && e.name === 'vital', 'web vital')
    expect(['LCP', 'INP', 'CLS', 'FCP', 'TTFB']).toContain(vital.vital.name)
    expect(vital.vital.value).toBeGreaterThanOrEqual(0)
    await context.close()
  })

  it('stores every event it sent', async () => {
    const clickhouse = (await testServices()).clickhouse
    // let beacons still in flight land
    await new Promise((r) => setTimeout(r, 1000))
    const expected: Record<string, number> = {}
    for (const e of received) {
      const name = e.name === 'click' && e.click?.href?.startsWith('https://example.org') ? 'outbound' : e.name
      expected[name] = (expected[name] ?? 0) + 1
    }
    const rows = await clickhouse.query<{ name: string; n: string }>(
      `SELECT e.name AS name, count() AS n FROM events AS e WHERE e.hostname = '127.0.0.1' GROUP BY name`,
    )
    expect(Object.fromEntries(rows.map((r) => [r.name, Number(r.n)]))).toEqual(expected)
  })

  it('sends nothing from a page on 127.0.0.1 or localhost unless the tag opts in, and says so in the console', async () => {
    const port = new URL(base).port
    for (const origin of [base, `http://localhost:${port}`]) {
      const context = await browser.newContext({ userAgent: DESKTOP_CHROME })
      const tab = await context.newPage()
      const sent: string[] = []
      const messages: string[] = []
      tab.on('request', (r) => r.url().includes('/api/event') && sent.push(r.url()))
      tab.on('console', (m) => messages.push(m.text()))
      await tab.goto(`${origin}/local`, { waitUntil: 'load' })
      // the script has loaded and answered a call: a muted call runs its callback at once
      await tab.evaluate(() => new Promise<void>((done) => (window as any).svc('Probe', { callback: done })))
      await tab.click('#b')
      await tab.evaluate(() => new Promise<void>((done) => (window as any).svc('Probe again', { callback: done })))
      expect(sent).toEqual([])
      expect(messages.join('\n')).toContain('data-allow-localhost')
      await context.close()
    }
  })

  it('sets no cookies and uses no storage', async () => {
    const context = await browser.newContext({ userAgent: DESKTOP_CHROME })
    const tab = await context.newPage()
    await tab.goto(`${base}/page`)
    await tab.waitForTimeout(500)
    expect(await context.cookies()).toEqual([])
    expect(await tab.evaluate(() => [localStorage.length, sessionStorage.length])).toEqual([0, 0])
    await context.close()
  })
})
