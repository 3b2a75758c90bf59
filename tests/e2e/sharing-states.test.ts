import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { CHROMIUM, launchChromium, pageChecker } from './chromium'
import { type RunningServer, cli, demoKeys, startServer } from './server-process'

const EMBEDDED = { REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' }

const checkPage = pageChecker('sharing-states')

/**
 * The owner moves the demo site between private, link and public on its sharing page, in
 * Chromium, while a visitor's browser holds the link's cookie: going private shuts that browser
 * out, and sharing by link again gives a new link the old one and its cookie never open.
 */
describe.skipIf(!CHROMIUM)('sharing states in real Chromium', () => {
  const dataDir = tempDir('sharing-states')
  let server: RunningServer
  let browser: Browser
  let demo: ReturnType<typeof demoKeys>

  beforeAll(async () => {
    // the sharing states are what this reads: the demo site without its traffic
    server = await startServer({ DATA_DIR: dataDir, SKIP_DEMO_TRAFFIC: '1', ...EMBEDDED })
    demo = demoKeys(server.stdout())
    browser = await launchChromium()
  }, 240_000)
  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  it('private → link → private → link → public → private: each link once, the old one and its cookie dead', async () => {
    const { link: signIn } = await cli('admin', ['login', '--email', 'owner@demo.example.com', '--url', server.url], {
      DATA_DIR: dataDir,
      ...EMBEDDED,
    })
    const owner = await (await browser.newContext()).newPage()
    await owner.goto(signIn)
    await owner.getByRole('button', { name: 'Sign in' }).click()
    // the demo organization's only site: signing in lands on its dashboard
    await owner.waitForURL(`${server.url}/app/sites/${demo.site}`)
    const sharePage = `${server.url}/app/sites/${demo.site}/share`
    const shared = `${server.url}/share/${demo.site}`
    const save = async (
      access: 'Private' | 'With a secret link' | 'Public',
      shows?: 'The dashboard' | 'The dashboard and its sections',
    ) => {
      await owner.goto(sharePage)
      await owner.getByLabel(access, { exact: true }).check()
      if (shows) await owner.getByLabel(shows, { exact: true }).check()
      await owner.getByRole('button', { name: 'Save' }).click()
      await owner.waitForLoadState()
    }

    // what the sections expose is on the page before they are chosen
    await owner.goto(sharePage)
    await expect(owner.getByLabel('Private', { exact: true }).isChecked()).resolves.toBe(true)
    const exposes = await owner.locator('#shows-full-exposes').innerText()
    expect(exposes).toMatch(/by visitor id/)
    expect(exposes).toMatch(/activity tape/)
    await checkPage(owner, 'share-private')

    // private → link: the first link, shown once
    await save('With a secret link', 'The dashboard')
    await expect(owner.locator('#link-made').innerText()).resolves.toBe('Link made')
    const first = (await owner.locator('#share-link').innerText()).trim()
    await checkPage(owner, 'share-link-made')
    const visitor = await (await browser.newContext()).newPage()
    expect((await visitor.goto(first))!.status()).toBe(200)
    expect(visitor.url()).toBe(shared)

    // link → private: the visitor's browser is shut out, and the link opens nothing
    await save('Private')
    await expect(owner.locator('[data-fact=access]').innerText()).resolves.toBe('nobody: private')
    expect((await visitor.goto(shared))!.status()).toBe(404)
    expect((await visitor.goto(first))!.status()).toBe(404)

    // private → link: a new link; the old one, and the cookie the visitor still holds, stay dead
    await save('With a secret link')
    const second = (await owner.locator('#share-link').innerText()).trim()
    expect(second).not.toBe(first)
    expect((await visitor.goto(shared))!.status()).toBe(404)
    expect((await visitor.goto(first))!.status()).toBe(404)
    expect((await visitor.goto(second))!.status()).toBe(200)

    // link → public with the sections: anyone, the sections too
    await save('Public', 'The dashboard and its sections')
    const stranger = await (await browser.newContext()).newPage()
    expect((await stranger.goto(shared))!.status()).toBe(200)
    expect((await stranger.goto(`${shared}/journeys`))!.status()).toBe(200)

    // public → private: nobody
    await save('Private')
    expect((await stranger.goto(shared))!.status()).toBe(404)
    expect((await visitor.goto(shared))!.status()).toBe(404)
    const read = await (
      await fetch(`${server.url}/api/v1/sites/${demo.site}`, { headers: { authorization: `Bearer ${demo.readKey}` } })
    ).json()
    expect(read.sharing).toMatchObject({ access: 'private', shareLevel: 'none', isPublic: false, linkCreatedAt: null })
  }, 240_000)
})
