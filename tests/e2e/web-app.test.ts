import { readFileSync, readdirSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium, pageChecker } from './chromium'
import { type RunningServer, cli, startServer } from './server-process'
import { readMail } from '../mail'

/** The embedded stores of the server under test, whatever the test run's own environment names. */
const EMBEDDED = { REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' }

/** The newest .eml in the outbox sent to `to`, read as a mail client reads it (tests/mail.ts). */
async function lastMailTo(outbox: string, to: string) {
  const messages = readdirSync(outbox)
    .sort()
    .map((f) => readFileSync(join(outbox, f), 'utf8'))
    .filter((raw) => new RegExp(`^To: ${to.replace(/[.+]/g, '\\$&')}$`, 'im').test(raw))
  if (!messages.length) throw new Error(`no e-mail to ${to} in ${outbox}`)
  return readMail(messages.at(-1)!)
}

const linkIn = (text: string) => {
  const match = /(http:\/\/\S+\/app\/signin\/link\?token=[A-Za-z0-9]+)/.exec(text)
  if (!match) throw new Error(`no sign-in link in:\n${text}`)
  return match[1]
}

const checkPage = pageChecker('web-app')

/** A site's dashboard: where the demo owner, whose organization has one site, lands on signing in. */
const SITE_DASHBOARD = /\/app\/sites\/[0-9a-f-]{36}$/

describe.skipIf(!CHROMIUM)('the web application in real Chromium', () => {
  const dataDir = tempDir('web-app')
  let server: RunningServer
  let browser: Browser
  let evil: { url: string; close: () => void }

  beforeAll(async () => {
    server = await startServer({ DATA_DIR: dataDir, SKIP_DEMO_TRAFFIC: '1', REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' })
    browser = await launchChromium()
    // another site, whose page posts a form to the service
    const other = new Hono()
    other.get('/', (c) =>
      c.html(
        `<!doctype html><form id="f" method="post" action="${server.url}/app/signout"><button>go</button></form><script>document.getElementById('f').submit()</script>`,
      ),
    )
    const s = serve({ fetch: other.fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => s.once('listening', r))
    evil = { url: `http://localhost:${(s.address() as AddressInfo).port}/`, close: () => s.close() }
  }, 120_000)
  afterAll(async () => {
    await browser?.close()
    evil?.close()
    await server?.stop()
  })

  /** A fresh browser signed in as `address` through the sign-in form and the .eml it sends. */
  async function signedIn(address: string, landing: string | RegExp = `${server.url}/app`) {
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${server.url}/app/signin`)
    await page.getByLabel('E-mail address').fill(address)
    await page.getByRole('button', { name: 'E-mail me a link' }).click()
    // no SMTP_URL here: the page says the message is in the outbox
    await page.locator('h1', { hasText: 'Check the outbox' }).waitFor()
    await page.goto(linkIn((await lastMailTo(join(dataDir, 'outbox'), address)).text))
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(landing)
    return { context, page }
  }

  it('signs the demo owner in with the link the first-start banner prints, and the link works once', async () => {
    const link = linkIn(server.stdout())
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(link)
    await checkPage(page, 'signin-confirm')
    await page.getByRole('button', { name: 'Sign in' }).click()
    // the demo organization's only site: signing in lands on its dashboard
    await page.waitForURL(SITE_DASHBOARD)
    await expect(page.locator('h1').innerText()).resolves.toBe('demo.example.com')
    await page.goto(`${server.url}/app`)
    await expect(page.locator('header').innerText()).resolves.toContain('owner@demo.example.com')
    await expect(page.locator('main').innerText()).resolves.toContain('Demo organization')
    await checkPage(page, 'account')
    const cookies = await context.cookies()
    const session = cookies.find((c) => c.name === 'session')!
    expect(session.httpOnly).toBe(true)
    expect(session.sameSite).toBe('Lax')

    // the same link a second time, in another browser
    const other = await (await browser.newContext()).newPage()
    const again = await other.goto(link)
    expect(again!.status()).toBe(400)
    await expect(other.locator('[role=alert]').innerText()).resolves.toContain('already used or has expired')
    await checkPage(other, 'signin-used-link')
    await context.close()
  })

  it('signs a new person in through the link in the .eml, lists sessions and signs out', async () => {
    const address = `new-${crypto.randomUUID().slice(0, 8)}@example.com`
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(`${server.url}/app`)
    expect(page.url()).toBe(`${server.url}/app/signin`)
    await checkPage(page, 'signin')
    await page.getByLabel('E-mail address').fill(address)
    await page.getByRole('button', { name: 'E-mail me a link' }).click()
    await expect(page.locator('h1').innerText()).resolves.toBe('Check the outbox')
    // the folder is named within the data directory, never by the server's own path
    await expect(page.locator('main').innerText()).resolves.toContain('DATA_DIR/outbox')
    await expect(page.locator('main').innerText()).resolves.not.toContain(dataDir)
    await checkPage(page, 'signin-sent')

    await page.goto(linkIn((await lastMailTo(join(dataDir, 'outbox'), address)).text))
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(`${server.url}/app`)
    await page.getByRole('link', { name: 'Sessions' }).click()
    await expect(page.locator('table').innerText()).resolves.toContain('this browser')
    await checkPage(page, 'sessions')

    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.waitForURL(`${server.url}/app/signin`)
    await page.goto(`${server.url}/app`)
    expect(page.url()).toBe(`${server.url}/app/signin`)
    await context.close()
  })

  it('refuses a forged session cookie and a form posted from another site', async () => {
    const { link } = await cli('admin', ['login', '--email', 'owner@demo.example.com', '--url', server.url], {
      DATA_DIR: dataDir,
      ...EMBEDDED,
    })
    const context = await browser.newContext()
    const page = await context.newPage()
    await page.goto(link)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL(SITE_DASHBOARD)

    // another site's page posts the sign-out form: refused, and the session stays
    const cross = await page.goto(evil.url)
    await page.waitForURL(`${server.url}/app/signout`)
    await expect(page.locator('[role=alert]').innerText()).resolves.toContain('another site')
    expect(cross).toBeTruthy()
    await page.goto(`${server.url}/app`)
    expect(page.url()).toBe(`${server.url}/app`)

    // a cookie with a changed id is no session
    const real = (await context.cookies()).find((c) => c.name === 'session')!
    const forged = await browser.newContext()
    await forged.addCookies([{ ...real, value: real.value.replace(/^./, (ch) => (ch === 'a' ? 'b' : 'a')) }])
    const forgedPage = await forged.newPage()
    await forgedPage.goto(`${server.url}/app`)
    expect(forgedPage.url()).toBe(`${server.url}/app/signin`)
    await context.close()
    await forged.close()
  })

  it('lets a new person create an organization, a site and a read key, and watches the install live', async () => {
    const address = `founder-${crypto.randomUUID().slice(0, 8)}@example.com`
    const { page, context } = await signedIn(address)
    await checkPage(page, 'orgs-empty')
    await page.getByLabel('Name').fill('Founder Inc')
    await page.getByRole('button', { name: 'Create' }).click()
    await page.waitForURL(/\/app\/orgs\/[0-9a-f-]{36}$/)
    const orgUrl = page.url()
    await page.getByLabel('Domain').fill('founder.example.com')
    await page.getByRole('button', { name: 'Add site' }).click()
    await page.waitForURL(/\/settings$/)
    const snippet = await page.locator('#snippet').innerText()
    const snippetId = /data-site="([a-z0-9]{10})"/.exec(snippet)![1]
    await expect(page.locator('#install-state').innerText()).resolves.toContain('Waiting')
    await checkPage(page, 'site-settings')
    // the first hit arrives: the page says so without a reload
    const hit = await fetch(`${server.url}/api/event`, {
      method: 'POST',
      headers: {
        'content-type': 'text/plain',
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      },
      body: JSON.stringify({ site: snippetId, name: 'pageview', url: 'https://founder.example.com/' }),
    })
    expect(hit.status).toBe(202)
    await page.waitForFunction(() => document.getElementById('install-state')!.textContent!.startsWith('Installed'), null, {
      timeout: 15_000,
    })

    await page.goto(`${orgUrl}/keys`)
    await page.getByLabel('Name').fill('reader')
    await page.getByLabel('Scope').selectOption('read')
    await page.getByRole('button', { name: 'Create key' }).click()
    const secret = (await page.locator('#secret').innerText()).trim()
    await checkPage(page, 'keys-created')
    const me = await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${secret}` } })
    expect(me.status).toBe(200)
    await checkPage(page.context().pages()[0], 'keys')
    await page.goto(orgUrl)
    await checkPage(page, 'org-overview')

    // the dashboard: its figures are the API's for the same key
    await page.getByRole('link', { name: 'founder.example.com', exact: true }).click()
    await page.waitForURL(/\/app\/sites\/[0-9a-f-]{36}$/)
    const siteId = /sites\/([0-9a-f-]{36})/.exec(page.url())![1]
    const stats = await (
      await fetch(`${server.url}/api/v1/stats?site_id=${siteId}&range=30d`, { headers: { authorization: `Bearer ${secret}` } })
    ).json()
    await expect(page.locator('[data-metric=visitors] .value').innerText()).resolves.toBe(String(stats.totals.visitors))
    expect(stats.totals.visitors).toBe(1)
    await expect(page.locator('#live').innerText()).resolves.toBe('1')
    await checkPage(page, 'dashboard')
    // a row filters the page; its chip removes the filter
    await page.locator('[data-panel=path] a', { hasText: '/' }).first().click()
    await page.waitForURL(/filters=/)
    await expect(page.locator('.chips').innerText()).resolves.toContain('path is /')
    await checkPage(page, 'dashboard-filtered')
    await page.getByRole('link', { name: /Remove filter/ }).click()
    await page.waitForURL((url) => !url.searchParams.has('filters'))
    await context.close()
  })

  it('shows the team page, and a member who forges a write-key form is refused', async () => {
    // the demo organization's only site: signing in lands on its dashboard
    const { page, context } = await signedIn('owner@demo.example.com', SITE_DASHBOARD)
    await page.goto(`${server.url}/app`)
    await page.getByRole('link', { name: 'Demo organization' }).click()
    const orgUrl = page.url()
    await page.goto(`${orgUrl}/team`)
    const invitee = `mate-${crypto.randomUUID().slice(0, 8)}@example.com`
    await page.getByLabel('E-mail address').fill(invitee)
    await page.getByRole('button', { name: 'Invite' }).click()
    await page.waitForURL(`${orgUrl}/team`)
    await checkPage(page, 'team')
    // the invitation e-mail links to the account area
    expect((await lastMailTo(join(dataDir, 'outbox'), invitee)).text).toContain(`${server.url}/app`)

    const mate = await signedIn(invitee)
    await mate.page.getByRole('button', { name: 'Accept' }).click()
    await mate.page.waitForURL(orgUrl)
    await mate.page.goto(`${orgUrl}/keys`)
    expect(await mate.page.locator('#key-scope option').allInnerTexts()).toEqual(['read'])
    await mate.page.evaluate(() => {
      const select = document.getElementById('key-scope') as HTMLSelectElement
      select.add(new Option('write', 'write', true, true))
    })
    await mate.page.getByLabel('Name').fill('sneaky')
    const refused = mate.page.waitForResponse((r) => r.request().method() === 'POST')
    await mate.page.getByRole('button', { name: 'Create key' }).click()
    expect((await refused).status()).toBe(403)
    await expect(mate.page.locator('[role=alert]').innerText()).resolves.toContain('cannot create write keys')

    // another organization's site is not found
    const founderSite = await mate.page.goto(`${server.url}/app/sites/00000000-0000-4000-8000-000000000000/settings`)
    expect(founderSite!.status()).toBe(404)
    await mate.context.close()
    await context.close()
  })

  it('prints a sign-in link only for a member', async () => {
    await expect(cli('admin', ['login', '--email', 'nobody@example.com'], { DATA_DIR: dataDir, ...EMBEDDED })).rejects.toThrow(
      /not a member/,
    )
  })
})
