import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium } from './chromium'
import { type RunningServer, demoKeys, startServer } from './server-process'

describe.skipIf(!CHROMIUM)('the API reference page in real Chromium', () => {
  let server: RunningServer
  let browser: Browser

  beforeAll(async () => {
    server = await startServer({
      DATA_DIR: tempDir('reference'),
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      SKIP_DEMO_TRAFFIC: '1',
    })
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  it('/ redirects to /docs', async () => {
    const res = await fetch(`${server.url}/`, { redirect: 'manual' })
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('/docs')
  })

  it('renders every endpoint from the OpenAPI document with files from this server, and calls get_stats with a key', async () => {
    const { readKey, site } = demoKeys(server.output())
    const page = await browser.newPage()
    const origins = new Set<string>()
    page.on('request', (request) => origins.add(new URL(request.url()).origin))
    await page.goto(`${server.url}/`)
    expect(new URL(page.url()).pathname).toBe('/docs')
    const operation = page.locator('.opblock', { hasText: 'get_stats' }).first()
    await operation.waitFor({ timeout: 30_000 })

    // the key goes in through the page's Authorize dialog
    await page.locator('.auth-wrapper .authorize').first().click()
    await page.locator('.modal-ux .auth-container input').first().fill(readKey)
    await page.locator('.modal-ux .auth-container .authorize').first().click()
    await page.locator('.modal-ux .btn-done').first().click()

    await operation.locator('.opblock-summary').click()
    await operation.locator('tr[data-param-name="site_id"] input').fill(site)
    await operation.locator('.execute').click()
    await expect
      .poll(() => operation.locator('.live-responses-table .response .response-col_status').first().textContent(), { timeout: 30_000 })
      .toContain('200')
    expect(await operation.locator('.live-responses-table .microlight').first().textContent()).toContain('"visitors"')
    // nothing from a CDN: every file came from this server
    expect([...origins]).toEqual([new URL(server.url).origin])
  })
})
