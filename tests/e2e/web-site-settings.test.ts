import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ga4Sessions } from '../fakes/ga4-fixture'
import { type FakeGoogle, startFakeGoogle } from '../fakes/google'
import { fakeSearchConsole } from '../fakes/search-console'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium, pageChecker } from './chromium'
import { type RunningServer, cli, startServer } from './server-process'

/**
 * The site's settings pages in real Chromium, on a server whose Google is a local stand-in
 * (tests/fakes/google.ts and search-console.ts): each form saved and refused, the whole OAuth round
 * trip in the browser (the Google account confirmed) back to the site's page, a property bound and
 * its import listed. Every page
 * is checked with axe-core and kept as screenshots at desktop and phone widths.
 */

const EMBEDDED = { REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' }
const SECRET = 'e2e-server-secret-0123456789abcdef0123'
const SC_PROPERTY = 'sc-domain:shop.example.com'
const SC_SCOPE = 'https://www.googleapis.com/auth/webmasters.readonly'

const checkPage = pageChecker('web-site-settings')

describe.skipIf(!CHROMIUM)("the site's settings pages in real Chromium", () => {
  const dataDir = tempDir('web-site-settings')
  let server: RunningServer
  let browser: Browser
  let google: FakeGoogle
  let searchConsole: Awaited<ReturnType<typeof fakeSearchConsole>>

  beforeAll(async () => {
    google = await startFakeGoogle({
      properties: [
        {
          propertyId: '314159',
          displayName: 'Shop web',
          accountId: '1001',
          accountName: 'Shop account',
          sessions: ga4Sessions({ from: '2026-11-01', days: 3, perDay: 4, users: 6 }),
        },
      ],
    })
    searchConsole = await fakeSearchConsole({
      sites: [
        { siteUrl: SC_PROPERTY, permissionLevel: 'siteOwner' },
        { siteUrl: 'https://unverified.example/', permissionLevel: 'siteUnverifiedUser' },
      ],
      rows: { [SC_PROPERTY]: [] },
      tokens: [],
      vouchFor: (token) => google.accessTokenHolds(token, SC_SCOPE),
    })
    server = await startServer({
      DATA_DIR: dataDir,
      SKIP_DEMO_TRAFFIC: '1',
      ...EMBEDDED,
      ...google.env(),
      GOOGLE_SEARCH_CONSOLE_URL: searchConsole.url,
      SERVER_SECRET: SECRET,
      OUTBOUND_ALLOW_PRIVATE: '1',
    })
    browser = await launchChromium()
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
    await searchConsole?.close()
    await google?.stop()
  })

  async function signedInOwner() {
    const { link } = await cli('admin', ['login', '--email', 'owner@demo.example.com', '--url', server.url], {
      DATA_DIR: dataDir,
      ...EMBEDDED,
      SERVER_SECRET: SECRET,
    })
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(link)
    await page.getByRole('button', { name: 'Sign in' }).click()
    // the demo site's dashboard while it is the organization's only site, the list once one is added
    await page.waitForURL((url) => url.pathname !== '/app/signin/link')
    await page.goto(`${server.url}/app`)
    return { context, page }
  }

  it('adds a site, watches its install, saves and refuses settings, connects Google and lists the imports', async () => {
    const { context, page } = await signedInOwner()
    await page.getByRole('link', { name: 'Demo organization' }).click()
    await page.getByLabel('Domain').fill('shop.example.com')
    await page.getByRole('button', { name: 'Add site' }).click()
    await page.waitForURL(/\/app\/sites\/[0-9a-f-]{36}\/settings$/)
    const settingsUrl = page.url()
    const siteId = /sites\/([0-9a-f-]{36})/.exec(settingsUrl)![1]

    // the snippet, then the install state live until the first hit arrives
    const snippetId = /data-site="([a-z0-9]{10})"/.exec(await page.locator('#snippet').innerText())![1]
    await expect(page.locator('#install-state').innerText()).resolves.toContain('Waiting')
    const hit = await fetch(`${server.url}/api/event`, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      },
      body: JSON.stringify({ site: snippetId, name: 'pageview', url: 'https://shop.example.com/' }),
    })
    expect(hit.status).toBe(202)
    await page.waitForFunction(() => document.getElementById('install-state')!.textContent!.startsWith('Installed'), null, {
      timeout: 20_000,
    })

    // a bad path: the API's message next to the field, what was typed kept
    const tracking = page.locator('form#tracking')
    await tracking.getByLabel('Form submissions').uncheck()
    await tracking.getByLabel('Excluded paths').fill('/admin/*\nprivate')
    await tracking.getByRole('button', { name: 'Save' }).click()
    await expect(page.locator('#tracking-excludedPaths-error').innerText()).resolves.toBe('excludedPaths.1: must start with /')
    expect(await page.locator('#tracking-excludedPaths').inputValue()).toBe('/admin/*\nprivate')
    expect(await tracking.getByLabel('Form submissions').isChecked()).toBe(false)
    await checkPage(page, 'settings-refused')
    await tracking.getByLabel('Excluded paths').fill('/admin/*\n/private')
    await tracking.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/saved=tracking/)
    await expect(page.locator('form#tracking [role=status]').innerText()).resolves.toBe('Saved.')
    expect(await page.locator('form#tracking').getByLabel('Form submissions').isChecked()).toBe(false)
    await page.locator('form#sharing').getByLabel('Shared dashboard', { exact: true }).selectOption('public')
    await page.locator('form#sharing').getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/saved=sharing/)
    await checkPage(page, 'settings')

    // what the pages saved is what the API reads, for a key made on the keys page
    await page.goto(`${server.url}/app`)
    await page.getByRole('link', { name: 'Demo organization' }).click()
    await page.getByRole('link', { name: 'API keys' }).click()
    await page.getByLabel('Name').fill('settings reader')
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = (await page.locator('#secret').innerText()).trim()
    const read = await (await fetch(`${server.url}/api/v1/sites/${siteId}`, { headers: { authorization: `Bearer ${key}` } })).json()
    expect(read.tracking).toMatchObject({ trackForms: false, excludedPaths: ['/admin/*', '/private'] })
    expect(read.sharing).toMatchObject({ access: 'public', isPublic: true, shareLevel: 'link' })

    // alerts
    await page.goto(`${settingsUrl}/alerts`)
    await page.getByLabel('Weekly report').check()
    await page.getByLabel('Drop threshold').fill('1.5')
    await page.getByLabel('Recipients').fill('owner@demo.example.com\nteam@demo.example.com')
    await page.getByRole('button', { name: 'Save' }).click()
    await expect(page.locator('#alerts-dropThreshold-error').innerText()).resolves.toMatch(/^dropThreshold: /)
    await checkPage(page, 'alerts-refused')
    await page.getByLabel('Drop threshold').fill('0.4')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.waitForURL(/saved=alerts/)
    await checkPage(page, 'alerts')
    const alerts = await (
      await fetch(`${server.url}/api/v1/sites/${siteId}/alerts`, { headers: { authorization: `Bearer ${key}` } })
    ).json()
    expect(alerts).toMatchObject({
      weeklyReport: true,
      dropThreshold: 0.4,
      recipients: ['owner@demo.example.com', 'team@demo.example.com'],
    })

    // the custom domain and its DNS status
    await page.goto(`${settingsUrl}/domain`)
    await checkPage(page, 'domain-none')
    await page.getByLabel('Subdomain').fill('stats.other.example.org')
    await page.getByRole('button', { name: 'Save domain' }).click()
    await expect(page.locator('#domain-error').innerText()).resolves.toContain('must be a subdomain of shop.example.com')
    await page.getByLabel('Subdomain').fill('stats.shop.example.com')
    await page.getByRole('button', { name: 'Save domain' }).click()
    await page.waitForURL(/saved=domain/)
    await expect(page.locator('main').innerText()).resolves.toContain('stats.shop.example.com')
    await checkPage(page, 'domain')

    // Google: the consent round trip in the browser, the account confirmed, back to this page with a message
    await page.goto(`${settingsUrl}/integrations`)
    await checkPage(page, 'integrations-not-connected')
    await page.getByRole('button', { name: 'Connect Google' }).click()
    await page.waitForURL(/\/settings\/google\/confirm$/)
    await expect(page.locator('#google-account').innerText()).resolves.toBe(google.account)
    await expect(page.locator('#google-site').innerText()).resolves.toBe('shop.example.com')
    await checkPage(page, 'google-confirm')
    await page.getByRole('button', { name: 'Connect this account' }).click()
    await page.waitForURL(/\/settings\/integrations\?google=connected/)
    await expect(page.locator('#google [role=status]').innerText()).resolves.toContain('Google is connected')
    await expect(page.locator('#google-status').innerText()).resolves.toBe('connected')
    await page.getByLabel('Property to import').selectOption('314159')
    await page.getByRole('button', { name: 'Import this property' }).click()
    await page.waitForURL(/\/settings\/integrations#ga4$/)
    await expect(page.locator('#ga4-property').innerText()).resolves.toBe('Shop web (314159)')
    await page.getByLabel('Search Console site').selectOption('https://unverified.example/')
    await page.getByRole('button', { name: 'Import this site' }).click()
    await expect(page.locator('#sc-error').innerText()).resolves.toContain('is not verified')
    await page.getByLabel('Search Console site').selectOption(SC_PROPERTY)
    await page.getByRole('button', { name: 'Import this site' }).click()
    await page.waitForURL(/#search-console$/)
    await expect(page.locator('#sc-site').innerText()).resolves.toBe(SC_PROPERTY)
    // the imports list names both imports; it refreshes by itself until none moves
    const rows = await page.locator('#imports-list tbody tr').allInnerTexts()
    expect(rows.some((r) => r.startsWith('GA4'))).toBe(true)
    expect(rows.some((r) => r.startsWith('Search Console'))).toBe(true)
    await checkPage(page, 'integrations-connected')
    // while an import moves the list is fetched again every 5 seconds and replaced in place, without a reload
    expect(await page.locator('#imports-list').getAttribute('data-moving')).toBe('true')
    await page.evaluate(() => ((document.getElementById('imports-list') as any).marked = true))
    await page.waitForFunction(() => !(document.getElementById('imports-list') as any).marked, null, { timeout: 30_000 })
    const listed = (
      await (await fetch(`${server.url}/api/v1/sites/${siteId}/imports`, { headers: { authorization: `Bearer ${key}` } })).json()
    ).imports as { kind: string; state: string }[]
    const ga4Run = listed.find((r) => r.kind === 'ga4')!
    expect(ga4Run.state).toBe('done')
    const ga4Row = (await page.locator('#imports-list tbody tr').allInnerTexts()).find((r) => r.startsWith('GA4'))!
    expect(ga4Row).toContain('done')
    await checkPage(page, 'integrations-imported')

    // disconnecting
    await page.getByRole('button', { name: 'Disconnect Google' }).click()
    await page.waitForURL(/\/settings\/integrations$/)
    await expect(page.locator('#google-status').innerText()).resolves.toBe('not connected')
    await context.close()
  }, 240_000)

  it('shows a member the settings read-only', async () => {
    const owner = await signedInOwner()
    await owner.page.getByRole('link', { name: 'Demo organization' }).click()
    const orgUrl = owner.page.url()
    const siteLink = owner.page.getByRole('link', { name: 'Settings of shop.example.com' })
    const settingsUrl = new URL((await siteLink.getAttribute('href'))!, server.url).href
    await owner.page.goto(`${orgUrl}/team`)
    const mate = `mate-${crypto.randomUUID().slice(0, 8)}@example.com`
    await owner.page.getByLabel('E-mail address').fill(mate)
    await owner.page.getByRole('button', { name: 'Invite' }).click()
    await owner.page.waitForURL(`${orgUrl}/team`)
    // the invitee signs in through the link the server e-mailed (the outbox .eml)
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${server.url}/app/signin`)
    await page.getByLabel('E-mail address').fill(mate)
    await page.getByRole('button', { name: 'E-mail me a link' }).click()
    await page.locator('h1', { hasText: 'Check the outbox' }).waitFor()
    const outbox = join(dataDir, 'outbox')
    const mail = readdirSync(outbox)
      .sort()
      .map((f) => readFileSync(join(outbox, f), 'utf8'))
      .filter((raw) => raw.includes(mate) && raw.includes('signin/link'))
      .at(-1)!
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_, hex) => String.fromCharCode(Number.parseInt(hex, 16)))
    await page.goto(/(http:\/\/\S+\/app\/signin\/link\?token=[A-Za-z0-9]+)/.exec(mail)![1])
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${server.url}/app`)
    await page.getByRole('button', { name: 'Accept' }).click()
    await page.goto(settingsUrl)
    await expect(page.locator('main').innerText()).resolves.toContain('owners and admins change them')
    expect(await page.locator('form#tracking').getByLabel('Form submissions').isDisabled()).toBe(true)
    expect(await page.locator('main button[type=submit]').count()).toBe(0)
    await checkPage(page, 'settings-member')
    await context.close()
    await owner.context.close()
  }, 120_000)
})
