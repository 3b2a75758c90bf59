import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM, launchChromium } from './chromium'
import { createApp } from '../../functions/app'
import { client, seed, testServices } from '../helpers'

const DESKTOP_CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

// what a person types: none of it may leave the page
const EMAIL = 'jane.typed@private-mail.test'
const PASSWORD = 'Hunter2-typed-secret'
const NOTE = 'typed-into-the-textarea'
const EDITED = 'typed-into-contenteditable'
const PRIVATE_LABEL = 'Private-account-number-1234'
const TYPED = [EMAIL, PASSWORD, NOTE, EDITED, PRIVATE_LABEL]

const page = (snippetId: string) => `<!doctype html>
<html><head><title>Privacy test</title>
<script defer data-site="${snippetId}" data-allow-localhost src="/js/script.js"></script>
</head><body>
<form onsubmit="event.preventDefault()">
  <input id="email" type="email" name="email">
  <input id="password" type="password" name="password">
  <textarea id="note" name="note"></textarea>
  <input id="submit" type="submit" value="Create account">
</form>
<div id="editor" contenteditable="true" tabindex="0"></div>
<div data-private><button id="secret">${PRIVATE_LABEL}</button></div>
<button id="label" onclick="document.body.appendChild(document.createElement('p'))">Save draft</button>
</body></html>`

describe.skipIf(!CHROMIUM)('the tracker never sends what a person typed', () => {
  let browser: Browser
  let base = ''
  let close: () => void
  let services: Awaited<ReturnType<typeof testServices>>
  let fx: Awaited<ReturnType<typeof seed>>
  const bodies: string[] = []

  beforeAll(async () => {
    services = await testServices()
    fx = await seed(services)
    // served from 127.0.0.1: the tag opts in, and the site counts that hostname
    await services.sites.update(fx.a.site.id, (s) => ({ ...s, tracking: { ...s.tracking, allowedHostnames: ['127.0.0.1'] } }))
    const app = createApp(services)
    const outer = new Hono()
    outer.get('/form', (c) => c.html(page(fx.a.site.snippetId)))
    outer.all('*', async (c) => {
      if (c.req.path === '/api/event') bodies.push(await c.req.raw.clone().text())
      return app.fetch(c.req.raw)
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

  const clicksSent = () => bodies.map((b) => JSON.parse(b)).filter((e) => e.name === 'click')

  it('clicks into filled e-mail, password and text fields, a contenteditable region and a private element send no typed text', async () => {
    const context = await browser.newContext({ userAgent: DESKTOP_CHROME })
    const tab = await context.newPage()
    await tab.goto(`${base}/form`)
    await tab.fill('#email', EMAIL)
    await tab.fill('#password', PASSWORD)
    await tab.fill('#note', NOTE)
    await tab.click('#editor')
    await tab.keyboard.type(EDITED)
    for (const field of ['#email', '#password', '#note', '#editor', '#submit', '#secret']) await tab.click(field)
    await tab.click('#label')
    // the last click is sent after its one-second dead-click watch
    for (let i = 0; i < 100 && !clicksSent().some((e) => e.click?.selector?.includes('#label')); i++) await tab.waitForTimeout(50)
    await tab.waitForTimeout(1200)
    await context.close()

    const selectors = clicksSent().map((e) => e.click.selector)
    // every click was sent (so the absence of text below is not the absence of clicks)
    for (const id of ['#email', '#password', '#note', '#editor', '#submit', '#secret', '#label'])
      expect(
        selectors.some((s) => s.includes(id)),
        id,
      ).toBe(true)
    // a button's label is still sent; a field, a submit input's value, an editor or a private element carry no text
    expect(clicksSent().find((e) => e.click.selector.includes('#label')).click.text).toBe('Save draft')
    for (const e of clicksSent().filter((e) => !e.click.selector.includes('#label'))) expect(e.click.text, e.click.selector).toBe('')
    for (const body of bodies) for (const typed of TYPED) expect(body).not.toContain(typed)
  })

  it('finds nothing typed in any stored row or in any read', async () => {
    const site = fx.a.site.id
    const stored: string[] = []
    for (const table of ['events', 'recent_events', 'visit_pages', 'sessions']) {
      stored.push(JSON.stringify(await services.clickhouse.query(`SELECT * FROM ${table} WHERE site_id = {site:UUID}`, { site })))
    }
    // the clicks are there, with the button's label
    expect(stored[0]).toContain('Save draft')
    const call = client(services)
    const reads = [
      `/api/v1/clicks?site_id=${site}&range=today`,
      `/api/v1/activity?site_id=${site}`,
      `/api/v1/journeys?site_id=${site}&range=today`,
      `/api/v1/export?site_id=${site}&range=today`,
      `/api/v1/breakdown?site_id=${site}&range=today&property=button`,
      `/api/v1/properties?site_id=${site}&range=today`,
      `/api/v1/heatmap?site_id=${site}&range=today&path=/form`,
    ]
    for (const path of reads) {
      const res = await call('GET', path, { key: fx.a.read.key })
      expect(res.status, `${path}: ${JSON.stringify(res.json)}`).toBe(200)
      stored.push(JSON.stringify(res.json))
    }
    expect(stored.some((s) => s.includes('Save draft'))).toBe(true)
    for (const text of stored) for (const typed of TYPED) expect(text).not.toContain(typed)
  })

  it('drops the text an older tracker sent with a click on a form field', async () => {
    const ua = { 'user-agent': DESKTOP_CHROME }
    const send = (click: object) =>
      createApp(services).request('http://api.test/api/event', {
        method: 'POST',
        headers: { ...ua, 'content-type': 'text/plain', 'x-forwarded-for': '198.51.100.77' },
        body: JSON.stringify({ site: fx.a.site.snippetId, name: 'click', url: `https://${fx.a.site.domain}/signup`, click }),
      })
    expect((await send({ selector: 'input#legacy-email', tag: 'input', text: 'old-tracker-typed@x.test', interactive: true })).status).toBe(
      202,
    )
    expect((await send({ selector: 'textarea#n', tag: 'TEXTAREA', text: 'old-tracker-typed-note', interactive: true })).status).toBe(202)
    expect((await send({ selector: 'a#docs', tag: 'a', text: 'Read the docs', interactive: true })).status).toBe(202)
    const rows = await services.clickhouse.query<{ selector: string; element_text: string }>(
      `SELECT selector, element_text FROM events WHERE site_id = {site:UUID} AND selector IN ('input#legacy-email', 'textarea#n', 'a#docs') ORDER BY selector`,
      { site: fx.a.site.id },
    )
    expect(rows).toEqual([
      { selector: 'a#docs', element_text: 'Read the docs' },
      { selector: 'input#legacy-email', element_text: '' },
      { selector: 'textarea#n', element_text: '' },
    ])
  })
})
