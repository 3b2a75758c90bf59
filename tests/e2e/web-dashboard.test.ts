import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SECTIONS } from '../../functions/web/sections'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium, pageChecker } from './chromium'
import { type RunningServer, cli, demoKeys, startServer } from './server-process'

/** The embedded stores of the server under test, whatever the test run's own environment names. */
const EMBEDDED = { REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' }

const checkPage = pageChecker('web-dashboard')

/** Waits until every panel the page loads after it is in place (a deferred one keeps its data-defer until then). */
const panelsLoaded = (page: Page) => page.waitForFunction(() => !document.querySelector('[data-defer]'), null, { timeout: 60_000 })

describe.skipIf(!CHROMIUM)('the dashboard in real Chromium', () => {
  const dataDir = tempDir('web-dashboard')
  let server: RunningServer
  let browser: Browser
  let demo: ReturnType<typeof demoKeys>

  beforeAll(async () => {
    // the demo: two months of traffic, goals, a funnel, annotations, a spike, crawled pages and their changes
    server = await startServer({ DATA_DIR: dataDir, DEMO_LIVE_TRAFFIC: '0', REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' })
    demo = demoKeys(server.stdout())
    browser = await launchChromium()
  }, 240_000)
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  const api = async (path: string, init: { method?: string; body?: unknown; key?: string } = {}) => {
    const answer = await fetch(`${server.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${init.key ?? demo.readKey}`, 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })
    return { status: answer.status, body: (await answer.json()) as any }
  }

  /** The demo owner, signed in with the banner's one-time link. */
  async function owner() {
    const { link } = await cli('admin', ['login', '--email', 'owner@demo.example.com', '--url', server.url], {
      DATA_DIR: dataDir,
      ...EMBEDDED,
    })
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(link)
    await page.getByRole('button', { name: 'Sign in' }).click()
    // the demo organization's only site: signing in lands on its dashboard
    await page.waitForURL(`${server.url}/app/sites/${demo.site}`)
    return { context, page }
  }

  it('filters by a source and a country, and shows every section; the figures are the API’s', async () => {
    const { context, page } = await owner()
    await page.goto(`${server.url}/app/sites/${demo.site}?range=30d`)
    await panelsLoaded(page)
    await expect(page.locator('.map circle').count()).resolves.toBeGreaterThan(0)
    await expect(page.locator('.chart .marker').count()).resolves.toBeGreaterThan(0)
    await checkPage(page, 'dashboard')

    // a source: the Sources tab, then its first row
    await page.locator('[aria-label="Sources views"] a', { hasText: /^Sources$/ }).click()
    await page.waitForURL(/sources=source/)
    await panelsLoaded(page)
    const source = (await page.locator('[data-panel=source] td.bar a').first().innerText()).trim()
    await page.locator('[data-panel=source] td.bar a').first().click()
    await page.waitForURL(/filters=/)
    await panelsLoaded(page)
    // a country: the Countries tab, then its first row
    await page.locator('[aria-label="Locations views"] a', { hasText: 'Countries' }).click()
    await page.waitForURL(/locations=country/)
    await panelsLoaded(page)
    // the row names the country; the filter holds its code
    const country = (await page.locator('[data-panel=country] td.bar a').first().getAttribute('data-value'))!
    const countryName = new Intl.DisplayNames(['en'], { type: 'region' }).of(country)
    await expect(page.locator('[data-panel=country] td.bar a').first().innerText()).resolves.toBe(countryName)
    await page.locator('[data-panel=country] td.bar a').first().click()
    await page.waitForURL(/country/)
    await panelsLoaded(page)
    await expect(page.locator('ul.chips[aria-label=Filters]').innerText()).resolves.toContain(`source is ${source}`)
    await expect(page.locator('ul.chips[aria-label=Filters]').innerText()).resolves.toContain(`country is ${countryName}`)
    const filters = JSON.stringify([
      { dimension: 'source', operator: 'is', value: [source] },
      { dimension: 'country', operator: 'is', value: [country] },
    ])
    const stats = await api(`/api/v1/stats?site_id=${demo.site}&range=30d&filters=${encodeURIComponent(filters)}`)
    expect(stats.status).toBe(200)
    expect(stats.body.totals.visitors).toBeGreaterThan(0)
    await expect(page.locator('[data-metric=visitors] .value').innerText()).resolves.toBe(stats.body.totals.visitors.toLocaleString('en'))
    const pages = await api(
      `/api/v1/breakdown?site_id=${demo.site}&range=30d&property=path&limit=10&filters=${encodeURIComponent(filters)}`,
    )
    const shown = await page
      .locator('[data-panel=path] tbody tr')
      .evaluateAll((rows) =>
        rows.map((r) => [
          r.querySelector('td.bar')!.textContent!.trim(),
          Number(r.querySelector('td.num')!.textContent!.replace(/,/g, '')),
        ]),
      )
    expect(shown).toEqual(pages.body.results.map((r: any) => [r.value || '(none)', r.visitors]))
    await checkPage(page, 'dashboard-filtered')

    // every section, linked from the dashboard
    for (const [name, title] of SECTIONS) {
      await page.goto(`${server.url}/app/sites/${demo.site}?range=30d`)
      await page.locator('nav[aria-label=Sections] a', { hasText: new RegExp(`^${title}$`) }).click()
      await page.waitForURL(new RegExp(`/${name}\\?`))
      await expect(page.locator('h1').innerText()).resolves.toContain(title)
      await checkPage(page, `section-${name}`)
    }
    // a page's detail from the pages section, a change's word diff from the changes section
    await page.goto(`${server.url}/app/sites/${demo.site}/pages?range=30d`)
    await page.locator('a[href*="/page?"]').first().click()
    await page.waitForURL(/\/page\?/)
    await checkPage(page, 'section-page-detail')
    await page.goto(`${server.url}/app/sites/${demo.site}/changes?range=90d`)
    const diff = page.locator('a[href*="/diff?"]').first()
    if (await diff.count()) {
      await diff.click()
      await page.waitForURL(/\/diff\?/)
      // only a change the diff read takes is linked: the page shows its word diff, not a refusal
      expect(await page.locator('[aria-label="Word diff"]').count()).toBe(1)
      await checkPage(page, 'section-diff')
    }
    await context.close()
  }, 300_000)

  it('opens a shared link signed out, refuses it once replaced, and keeps another organization out', async () => {
    const { context, page } = await owner()
    await page.goto(`${server.url}/app/sites/${demo.site}/share`)
    await checkPage(page, 'share')
    // sharing by link makes the first link at once, shown this once
    await page.getByLabel('With a secret link').check()
    await page.getByRole('button', { name: 'Save' }).click()
    await expect(page.locator('#link-made').innerText()).resolves.toBe('Link made')
    const link = (await page.locator('#share-link').innerText()).trim()
    await checkPage(page, 'share-link-made')

    // a visitor with the link, not signed in
    const visitor = await browser.newContext()
    const shared = await visitor.newPage()
    const opened = await shared.goto(link)
    expect(opened!.status()).toBe(200)
    expect(shared.url()).toBe(`${server.url}/share/${demo.site}`)
    await panelsLoaded(shared)
    const stats = await api(`/api/v1/stats?site_id=${demo.site}&range=30d`)
    await expect(shared.locator('[data-metric=visitors] .value').innerText()).resolves.toBe(stats.body.totals.visitors.toLocaleString('en'))
    await expect(shared.locator('header').innerText()).resolves.not.toContain('Sign out')
    await checkPage(shared, 'shared-dashboard')
    // filtering works there too, and stays read-only
    await shared.locator('[data-panel=channel] td.bar a').first().click()
    await shared.waitForURL(/\/share\/[0-9a-f-]{36}\?.*filters=/)
    await expect(shared.locator('ul.chips[aria-label=Filters]').innerText()).resolves.toContain('channel is')

    // the owner replaces the link: the visitor's cookie and the old link stop working
    await page.getByRole('button', { name: 'Replace the link' }).click()
    await expect(page.locator('#link-made').innerText()).resolves.toContain('old one no longer works')
    const refused = await shared.goto(`${server.url}/share/${demo.site}`)
    expect(refused!.status()).toBe(404)
    await checkPage(shared, 'shared-refused')
    const stranger = await (await browser.newContext()).newPage()
    expect((await stranger.goto(link))!.status()).toBe(404)

    // a person of another organization sees no such site
    const other = await browser.newContext()
    const otherPage = await other.newPage()
    const outsider = `outsider-${crypto.randomUUID().slice(0, 8)}@example.com`
    await otherPage.goto(`${server.url}/app/signin`)
    await otherPage.getByLabel('E-mail address').fill(outsider)
    await otherPage.getByRole('button', { name: 'E-mail me a link' }).click()
    await otherPage.locator('h1', { hasText: 'Check the outbox' }).waitFor()
    const { readdirSync } = await import('node:fs')
    const outbox = join(dataDir, 'outbox')
    const mail = readdirSync(outbox)
      .map((f) => readFileSync(join(outbox, f), 'utf8'))
      .filter((m) => m.includes(outsider))
      .at(-1)!
      .replace(/=\r?\n/g, '')
      .replace(/=3D/g, '=')
    await otherPage.goto(/(http:\/\/\S+\/app\/signin\/link\?token=[A-Za-z0-9]+)/.exec(mail)![1])
    await otherPage.getByRole('button', { name: 'Sign in' }).click()
    await otherPage.waitForURL(`${server.url}/app`)
    for (const path of ['', '/errors', '/share', '/panels/pages']) {
      const answer = await otherPage.goto(`${server.url}/app/sites/${demo.site}${path}`)
      expect(answer!.status(), path).toBe(404)
    }
    await checkPage(otherPage, 'foreign-site')
    await context.close()
    await visitor.close()
    await other.close()
  }, 180_000)
})
