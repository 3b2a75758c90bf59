import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium } from './chromium'
import { type RunningServer, demoKeys, startServer } from './server-process'

describe.skipIf(!CHROMIUM)('the API reference page in real Chromium', () => {
  let server: RunningServer
  let browser: Browser
  // screenshots to look at, outside the repository (the run's folder goes when it ends; REFERENCE_SHOTS keeps them)
  const shots = process.env.REFERENCE_SHOTS ?? tempDir('reference-shots')

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
    // the key is kept for this tab alone, never in storage that outlives it
    const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }))
    expect(stored).not.toContain(readKey)

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

  it('groups the operations by what people come for, reports first and meta last, with realistic examples', async () => {
    const doc = await (await fetch(`${server.url}/api/v1/openapi.json`)).json()
    const sections = [
      'Reports',
      'Behaviour',
      'Pages and changes',
      'Why traffic changed',
      'Sites and settings',
      'Team',
      'Tracking and public',
      'Meta',
    ]
    expect(doc.tags.map((t: { name: string }) => t.name)).toEqual(sections)
    // no absurd bound anywhere a generated example could come from
    expect(JSON.stringify(doc)).not.toContain('9007199254740991')

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    await page.goto(`${server.url}/docs`)
    await page.locator('.opblock-tag-section').first().waitFor({ timeout: 30_000 })
    const shown = await page.locator('.opblock-tag-section h3 .nostyle span').allTextContents()
    expect(shown).toEqual(sections)
    const firstOperation = await page.locator('.opblock .opblock-summary-operation-id').first().textContent()
    expect(firstOperation).toBe('get_stats')

    // the example answer of get_stats reads like a site's numbers
    const stats = page.locator('.opblock', { hasText: 'get_stats' }).first()
    await stats.locator('.opblock-summary').click()
    const example = JSON.parse((await stats.locator('.responses-wrapper .highlight-code').first().textContent()) ?? '{}')
    expect(example.totals.visitors).toBeGreaterThan(0)
    expect(example.totals.visitors).toBeLessThan(1_000_000)
    expect(example.totals.bounceRate).toBeGreaterThan(0)
    expect(example.totals.bounceRate).toBeLessThan(1)
    await page.screenshot({ path: join(shots, 'desktop.png') })

    // a phone: nothing wider than the screen, the path of an operation readable
    await page.setViewportSize({ width: 390, height: 844 })
    await page.goto(`${server.url}/docs`)
    await page.locator('.opblock-tag-section').first().waitFor({ timeout: 30_000 })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await page.screenshot({ path: join(shots, 'phone.png') })
    const phoneStats = page.locator('.opblock', { hasText: 'get_stats' }).first()
    await phoneStats.locator('.opblock-summary').click()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    const box = await phoneStats.locator('.opblock-summary-path').boundingBox()
    expect(box!.x + box!.width).toBeLessThanOrEqual(390)
    await page.screenshot({ path: join(shots, 'phone-operation.png') })
    await phoneStats.locator('.parameters-container').scrollIntoViewIfNeeded()
    await page.screenshot({ path: join(shots, 'phone-parameters.png') })
    await phoneStats.locator('.responses-wrapper .highlight-code').first().scrollIntoViewIfNeeded()
    await page.screenshot({ path: join(shots, 'phone-responses.png') })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    console.info(`reference page screenshots in ${shots}`)
    await page.close()
  })
})
