import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM, launchChromium } from './chromium'
import { createApp } from '../../functions/app'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { testServices } from '../helpers'

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

describe.skipIf(!CHROMIUM)('the live.js badge in real Chromium', () => {
  let browser: Browser
  let base = ''
  let close: () => void
  const asked: string[] = []
  let published: ReturnType<typeof newSite>

  beforeAll(async () => {
    const services = await testServices()
    const org = await createOrg(services.repositories, 'Badges', new Date())
    const key = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, new Date())).key
    published = newSite({ domain: 'badge.test' }, org.id, new Date())
    await services.repositories.sites.create(published)
    // compressed as the Node server serves it
    const app = createApp(services, undefined, { compress: true })
    await app.request(`http://x/api/v1/sites/${published.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ publicCounts: true, publicCountsDial: '30d' }),
    })
    const now = Date.now()
    const hit = (msAgo: number, ip: string) =>
      JSON.stringify({
        timestamp: new Date(now - msAgo).toISOString(),
        site: published.snippetId,
        name: 'pageview',
        url: 'https://badge.test/',
        ip,
        userAgent: FIREFOX,
      })
    // 1,234 pageviews over the last two days, two visitors in the last 5 minutes
    const lines = Array.from({ length: 1232 }, (_, i) => hit(86_400_000 + i * 60_000, `8.8.${Math.floor(i / 200)}.${i % 200}`))
    lines.push(hit(60_000, '1.1.1.1'), hit(120_000, '81.2.69.142'))
    expect((await importHits(lines, services.ingestor)).imported).toBe(1234)

    const page = `<!doctype html><html><body>
      <p>Live: <span id="live-a" data-svc-live="${published.snippetId}"></span> and <span id="live-b" data-svc-live="${published.snippetId}"></span></p>
      <p>Week views: <span id="week" data-svc-live="${published.snippetId}" data-svc-range="7d" data-svc-metric="pageviews"></span></p>
      <p>Year: <span id="year" data-svc-live="${published.snippetId}" data-svc-range="year"></span></p>
      <p>Broken: <span id="broken" data-svc-live="brokensite"></span></p>
      <script src="/live.js" data-interval="5"></script>
    </body></html>`
    const outer = new Hono()
    outer.get('/page', (c) => c.html(page))
    outer.all('*', async (c) => {
      if (c.req.path === '/api/public/live') {
        asked.push(c.req.url)
        if (c.req.query('site') === 'brokensite') return c.json({ error: 'boom' }, 500)
      }
      return app.fetch(c.req.raw)
    })
    const server = serve({ fetch: outer.fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => server.once('listening', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    close = () => server.close()
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    close?.()
  })

  it('fills live and period badges, shares one request per question, and marks unpublished and failing ones', async () => {
    const context = await browser.newContext({ locale: 'en-US' })
    const tab = await context.newPage()
    await tab.goto(`${base}/page`)
    await tab.waitForFunction(() =>
      [...document.querySelectorAll('[data-svc-live]')].every((el) => el.getAttribute('data-svc-state') !== 'loading'),
    )
    const state = async (id: string) =>
      tab.evaluate((i) => [document.getElementById(i)!.textContent, document.getElementById(i)!.getAttribute('data-svc-state')], id)
    expect(await state('live-a')).toEqual(['2', 'ok'])
    expect(await state('live-b')).toEqual(['2', 'ok'])
    // thousands separators
    expect(await state('week')).toEqual(['1,234', 'ok'])
    // the 30-day dial does not publish a year: off, and the text untouched
    expect(await state('year')).toEqual(['', 'off'])
    expect(await state('broken')).toEqual(['', 'error'])
    // the two live badges asked the same question once
    const liveAsks = asked.filter((u) => u.includes(`site=${published.snippetId}`) && !u.includes('range='))
    expect(liveAsks).toHaveLength(1)
    expect(await context.cookies()).toEqual([])
    expect(await tab.evaluate(() => [localStorage.length, sessionStorage.length])).toEqual([0, 0])

    // polls again after the interval while visible, and stops while the page is hidden
    const before = asked.length
    await tab.waitForTimeout(5600)
    expect(asked.length).toBeGreaterThan(before)
    await tab.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true })
      document.dispatchEvent(new Event('visibilitychange'))
    })
    const hiddenAt = asked.length
    await tab.waitForTimeout(6000)
    expect(asked.length).toBe(hiddenAt)
    await context.close()
  })
})
