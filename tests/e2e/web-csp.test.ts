import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium } from './chromium'
import { type RunningServer, demoKeys, startServer } from './server-process'

const panelsLoaded = (page: Page) => page.waitForFunction(() => !document.querySelector('[data-defer]'), null, { timeout: 60_000 })

describe.skipIf(!CHROMIUM)('the pages under their Content-Security-Policy in real Chromium', () => {
  let server: RunningServer
  let browser: Browser
  let demo: ReturnType<typeof demoKeys>

  beforeAll(async () => {
    server = await startServer({
      DATA_DIR: tempDir('web-csp'),
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      SKIP_DEMO_TRAFFIC: '1',
    })
    demo = demoKeys(server.output())
    browser = await launchChromium()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  /** Every page of the context reports what the browser refused under the policy, and every uncaught error. */
  function watched(context: BrowserContext) {
    const violations: string[] = []
    const errors: string[] = []
    const watch = (page: Page) => {
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(`${page.url()}: ${message.text()}`)
      })
      page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`))
    }
    context.on('page', watch)
    return { violations, errors }
  }

  it('runs the dashboard, settings and shared pages with no violation, and refuses a script without the nonce', async () => {
    const context = await browser.newContext()
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url })
    const seen = watched(context)
    const page = await context.newPage()
    // the demo owner, with the banner's one-time link
    await page.goto(/(http:\/\/\S+\/app\/signin\/link\?token=[A-Za-z0-9]+)/.exec(server.stdout())![1])
    await page.getByRole('button', { name: 'Sign in' }).click()
    // the demo organization's only site: signing in lands on its dashboard
    await page.waitForURL(`${server.url}/app/sites/${demo.site}`)
    await page.goto(`${server.url}/app`)

    // the policy bites: a script the server did not write does not run, and is reported
    const reported = page.waitForEvent('console', { predicate: (message) => /Content Security Policy/i.test(message.text()) })
    const injected = await page.evaluate(() => {
      const script = document.createElement('script')
      script.textContent = 'window.injected = true'
      document.body.append(script)
      return (window as unknown as { injected?: boolean }).injected === true
    })
    expect(injected).toBe(false)
    await reported
    expect(seen.violations).toHaveLength(1)
    seen.violations.length = 0

    // the dashboard: its script loads every panel; the stylesheet and the bars' widths apply
    const dashboard = await page.goto(`${server.url}/app/sites/${demo.site}?range=30d`)
    expect(dashboard!.headers()['content-security-policy']).toContain("script-src 'nonce-")
    await panelsLoaded(page)
    expect(await page.evaluate(() => getComputedStyle(document.body).margin)).toBe('0px')
    // choosing a range submits its form (a nonce'd script attaches the handler; an inline one would be refused)
    await page.locator('select#range').selectOption('7d')
    await page.waitForURL(/range=7d/)
    await panelsLoaded(page)
    // a section, whose range picker works the same way
    await page.goto(`${server.url}/app/sites/${demo.site}/errors?range=30d`)
    await page.locator('select#range').selectOption('90d')
    await page.waitForURL(/\/errors\?range=90d/)

    // the settings: the copy button's script runs
    await page.goto(`${server.url}/app/sites/${demo.site}/settings`)
    const copy = page.locator('button[data-copy=snippet]')
    await copy.click()
    await page.waitForFunction(() => document.querySelector('button[data-copy=snippet]')?.textContent === 'Copied')
    expect(await page.evaluate(() => navigator.clipboard.readText())).toContain(`data-site="`)

    // a shared link, made on its page and opened by someone signed out
    // shared by link through the sharing form's post (with this browser's session), then the link made on its page
    const sharing = await page.request.post(`${server.url}/app/sites/${demo.site}/share`, {
      form: { shareLevel: 'link' },
      headers: { origin: server.url },
    })
    expect(sharing.ok()).toBe(true)
    await page.goto(`${server.url}/app/sites/${demo.site}/share`)
    await page.getByRole('button', { name: /Make a link|Replace the link/ }).click()
    const link = (await page.locator('#share-link').innerText()).trim()
    expect(link.startsWith(`${server.url}/share/${demo.site}?auth=`)).toBe(true)
    const visitor = await browser.newContext()
    const visitorSeen = watched(visitor)
    const shared = await visitor.newPage()
    await shared.goto(link)
    await panelsLoaded(shared)
    expect(await shared.evaluate(() => getComputedStyle(document.body).margin)).toBe('0px')

    expect(seen.violations).toEqual([])
    expect(visitorSeen.violations).toEqual([])
    expect([...seen.errors, ...visitorSeen.errors]).toEqual([])
    await context.close()
    await visitor.close()
  }, 180_000)
})
