import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { googleConfig } from '../../lib/integrations/google/config'
import { nodeEnvSchema, parseEnv } from '../../lib/runtime/env'
import { type FakeGoogle, startFakeGoogle } from '../fakes/google'
import { type Browser, consent, signedIn } from '../google-connect'
import { ORIGIN, email, webHarness } from './web-harness'

/**
 * The site's pages of the account area: each form posts through the API's own endpoint, so what it
 * saves is what the API's site read answers, and what it refuses shows the API's own message.
 */

const idIn = (response: Response, pattern: RegExp) => {
  const match = pattern.exec(response.headers.get('location') ?? '')
  if (!match) throw new Error(`unexpected redirect ${response.status} ${response.headers.get('location')}`)
  return match[1]
}

type Web = Awaited<ReturnType<typeof webHarness>>

/** An organization with a site, its owner's cookie, and an API write key made on the keys page. */
async function orgWithSite(t: Web, domain = 'acme.example.com') {
  const owner = email()
  const cookie = await t.signIn(owner)
  const orgId = idIn(await t.request('/app/orgs', { form: { name: 'Acme' }, cookie }), /([0-9a-f-]{36})$/)
  const siteId = idIn(await t.request(`/app/orgs/${orgId}/sites`, { form: { domain }, cookie }), /sites\/([0-9a-f-]{36})/)
  const keyPage = await (await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'writer', scope: 'write' }, cookie })).text()
  const key = /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(keyPage)![1].trim()
  const app = createApp(t.services)
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(`${ORIGIN}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
    return { status: res.status, json: (await res.json()) as any }
  }
  return { owner, cookie, orgId, siteId, api }
}

/** The text of the element with this id in a page (its markup stripped). */
const textOf = (html: string, id: string) => {
  const match = new RegExp(`id="${id}"[^>]*>([\\s\\S]*?)</`).exec(html)
  const entities: Record<string, string> = { '&quot;': '"', '&amp;': '&', '&lt;': '<', '&gt;': '>', '&#39;': "'" }
  return match
    ? match[1]
        .replace(/<[^>]+>/g, '')
        .replace(/&quot;|&amp;|&lt;|&gt;|&#39;/g, (e) => entities[e])
        .trim()
    : null
}

describe("the site's settings pages", () => {
  it('saves each settings group through PATCH /sites/{id}: the site read answers what the forms posted', async () => {
    const t = await webHarness()
    const { cookie, siteId, api } = await orgWithSite(t)
    const before = (await api('GET', `/api/v1/sites/${siteId}`)).json
    // the settings page's install poll answers the site read's install state
    const polled = await t.request(`/app/sites/${siteId}/install`, { cookie })
    expect(await polled.json()).toEqual({ installed: before.install.installed, firstEventAt: before.install.firstEventAt })

    // tracking: the boxes posted are on, the others off; lists one per line
    const tracking = await t.request(`/app/sites/${siteId}/settings/tracking`, {
      form: {
        trackOutboundLinks: 'on',
        trackErrors: 'on',
        hashRouting: 'on',
        excludedPaths: '/admin/*\r\n\r\n  /private  ',
        excludedIps: '10.0.0.0/8',
        allowedHostnames: 'staging.acme.net',
        capturedQueryParams: '',
        affiliatePaths: '',
      },
      cookie,
    })
    expect(tracking.status).toBe(303)
    expect(tracking.headers.get('location')).toBe(`/app/sites/${siteId}/settings?saved=tracking#tracking`)
    const afterTracking = (await api('GET', `/api/v1/sites/${siteId}`)).json
    expect(afterTracking.tracking).toEqual({
      ...before.tracking,
      trackOutboundLinks: true,
      trackFileDownloads: false,
      trackForms: false,
      trackErrors: true,
      trackVitals: false,
      autocapture: false,
      hashRouting: true,
      includeBots: false,
      excludedPaths: ['/admin/*', '/private'],
      excludedIps: ['10.0.0.0/8'],
      allowedHostnames: ['staging.acme.net'],
    })

    for (const [group, form] of [
      ['general', { timezone: 'Europe/Paris' }],
      ['changeDetection', { changeExcludedPaths: '/search' }],
      ['sharing', { access: 'public', publicCounts: 'on', publicCountsDial: '30d' }],
      ['appearance', { displayName: 'Acme shop', theme: 'dark', accentColor: '#112233' }],
    ] as const)
      expect((await t.request(`/app/sites/${siteId}/settings/${group}`, { form, cookie })).status, group).toBe(303)
    const read = (await api('GET', `/api/v1/sites/${siteId}`)).json
    expect(read.timezone).toBe('Europe/Paris')
    expect(read.changeDetection).toMatchObject({ changeDetectionEnabled: false, changeExcludedPaths: ['/search'] })
    expect(read.sharing).toEqual({
      access: 'public',
      isPublic: true,
      shareLevel: 'link',
      publicCounts: true,
      publicCountsDial: '30d',
      linkCreatedAt: null,
    })
    expect(read.appearance).toEqual({ displayName: 'Acme shop', theme: 'dark', accentColor: '#112233' })
    // the untouched groups kept their values
    expect(read.tracking).toEqual(afterTracking.tracking)

    // the page shows the saved values and says which group was saved
    const page = await (await t.request(`/app/sites/${siteId}/settings?saved=sharing`, { cookie })).text()
    expect(textOf(page, 'tracking-excludedPaths')).toBe('/admin/*\n/private')
    expect(page).toMatch(/id="appearance-displayName" name="displayName" value="Acme shop"/)
    expect(page).toMatch(/<option value="dark" selected="">/)
    expect(page).toMatch(
      /id="sharing-access" name="access"[^>]*><option value="private">[^<]*<\/option><option value="link">[^<]*<\/option><option value="public" selected="">/,
    )
    expect(page).toMatch(/id="sharing-title">Sharing<\/h2><p class="saved" role="status">Saved\.<\/p>/)

    // emptying the display name sends null
    expect(
      (
        await t.request(`/app/sites/${siteId}/settings/appearance`, {
          form: { displayName: '', theme: 'dark', accentColor: '#112233' },
          cookie,
        })
      ).status,
    ).toBe(303)
    expect((await api('GET', `/api/v1/sites/${siteId}`)).json.appearance.displayName).toBeNull()
  })

  it('shows the API message next to the field on bad input, keeps what was typed and changes nothing', async () => {
    const t = await webHarness()
    const { cookie, siteId, api } = await orgWithSite(t)
    const before = (await api('GET', `/api/v1/sites/${siteId}`)).json

    // the API's own answer to the same change
    const direct = await api('PATCH', `/api/v1/sites/${siteId}`, { excludedPaths: ['/ok', 'admin'] })
    expect(direct.status).toBe(400)
    const refused = await t.request(`/app/sites/${siteId}/settings/tracking`, {
      form: { trackForms: 'on', excludedPaths: '/ok\nadmin' },
      cookie,
    })
    expect(refused.status).toBe(400)
    const html = await refused.text()
    expect(direct.json.error).toBe('excludedPaths.1: must start with /')
    expect(textOf(html, 'tracking-excludedPaths-error')).toBe(direct.json.error)
    // the refused field is described by the message, marked invalid and focused
    const textarea = /<textarea id="tracking-excludedPaths"[^>]*>/.exec(html)![0]
    expect(textarea).toContain('aria-describedby="tracking-excludedPaths-error')
    expect(textarea).toContain('aria-invalid="true"')
    expect(textarea).toContain('autofocus=""')
    expect(html.match(/aria-invalid/g)).toHaveLength(1)
    expect(textOf(html, 'tracking-excludedPaths')).toBe('/ok\nadmin')
    expect((await api('GET', `/api/v1/sites/${siteId}`)).json).toEqual(before)

    // a wrong color and an unknown time zone: the API's messages, on their fields
    const color = await t.request(`/app/sites/${siteId}/settings/appearance`, {
      form: { displayName: '', theme: 'light', accentColor: 'blue' },
      cookie,
    })
    expect(color.status).toBe(400)
    expect(textOf(await color.text(), 'appearance-accentColor-error')).toBe('accentColor: must be a #rrggbb color')
    const zone = await t.request(`/app/sites/${siteId}/settings/general`, { form: { timezone: 'Mars/Olympus' }, cookie })
    expect(zone.status).toBe(400)
    expect(textOf(await zone.text(), 'general-timezone-error')).toBe('timezone: unknown IANA time zone "Mars/Olympus"')
    const select = await t.request(`/app/sites/${siteId}/settings/sharing`, {
      form: { access: 'everyone', publicCountsDial: 'live' },
      cookie,
    })
    expect(select.status).toBe(400)
    expect(textOf(await select.text(), 'sharing-access-error')).toMatch(/^access: /)
    expect((await api('GET', `/api/v1/sites/${siteId}`)).json).toEqual(before)
  })

  it('saves alerts and recipients through PATCH /sites/{id}/alerts, refuses a bad threshold or webhook with the API message', async () => {
    const t = await webHarness()
    const { cookie, siteId, api } = await orgWithSite(t)
    const saved = await t.request(`/app/sites/${siteId}/settings/alerts`, {
      form: {
        weeklyReport: 'on',
        spikeAlerts: 'on',
        spikeThreshold: '3',
        dropThreshold: '0.25',
        recipients: 'Boss@Acme.example.com\nteam@acme.example.com\nboss@acme.example.com',
        webhookUrl: '',
        source: '',
      },
      cookie,
    })
    expect(saved.status).toBe(303)
    expect((await api('GET', `/api/v1/sites/${siteId}/alerts`)).json).toEqual({
      weeklyReport: true,
      monthlyReport: false,
      spikeAlerts: true,
      dropAlerts: false,
      spikeThreshold: 3,
      dropThreshold: 0.25,
      backlinkAlerts: false,
      vitalsAlerts: false,
      // lower-cased and deduplicated by the API
      recipients: ['boss@acme.example.com', 'team@acme.example.com'],
      webhookUrl: null,
      source: null,
    })
    const page = await (await t.request(`/app/sites/${siteId}/settings/alerts`, { cookie })).text()
    expect(textOf(page, 'alerts-recipients')).toBe('boss@acme.example.com\nteam@acme.example.com')

    const drop = await t.request(`/app/sites/${siteId}/settings/alerts`, { form: { dropThreshold: '2' }, cookie })
    expect(drop.status).toBe(400)
    const dropHtml = await drop.text()
    const direct = await api('PATCH', `/api/v1/sites/${siteId}/alerts`, { dropThreshold: 2 })
    expect(textOf(dropHtml, 'alerts-dropThreshold-error')).toBe(direct.json.error)
    const notNumber = await t.request(`/app/sites/${siteId}/settings/alerts`, { form: { spikeThreshold: 'lots' }, cookie })
    expect(notNumber.status).toBe(400)
    expect(textOf(await notNumber.text(), 'alerts-spikeThreshold-error')).toBe('spikeThreshold: must be a number')
    const webhook = await t.request(`/app/sites/${siteId}/settings/alerts`, {
      form: { webhookUrl: 'http://hooks.example.com/x', recipients: 'boss@acme.example.com\nteam@acme.example.com' },
      cookie,
    })
    expect(webhook.status).toBe(400)
    expect(textOf(await webhook.text(), 'alerts-webhookUrl-error')).toBe('webhookUrl: must be an https URL')
    const badAddress = await t.request(`/app/sites/${siteId}/settings/alerts`, { form: { recipients: 'not an address' }, cookie })
    expect(badAddress.status).toBe(400)
    expect(textOf(await badAddress.text(), 'alerts-recipients-error')).toBe('recipients.0: must be valid e-mail addresses')
    expect((await api('GET', `/api/v1/sites/${siteId}/alerts`)).json.spikeThreshold).toBe(3)

    // a webhook: its signing secret is on the answer to the form that set it, once
    const secretIn = (html: string) => /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(html)?.[1].trim()
    const recipients = 'boss@acme.example.com\nteam@acme.example.com'
    const hooked = await t.request(`/app/sites/${siteId}/settings/alerts`, {
      form: { weeklyReport: 'on', spikeAlerts: 'on', recipients, webhookUrl: 'https://127.0.0.1:9/hook' },
      cookie,
    })
    expect(hooked.status).toBe(200)
    const secret = secretIn(await hooked.text())!
    expect(secret).toMatch(/^whsec_[A-Za-z0-9]{40}$/)
    expect((await api('GET', `/api/v1/sites/${siteId}/alerts`)).json.webhookUrl).toBe('https://127.0.0.1:9/hook')
    const later = await (await t.request(`/app/sites/${siteId}/settings/alerts`, { cookie })).text()
    expect(later).not.toContain(secret)
    expect(secretIn(later)).toBeUndefined()
    // saving the same webhook again issues nothing; the button issues a new secret
    const again = await t.request(`/app/sites/${siteId}/settings/alerts`, {
      form: { weeklyReport: 'on', spikeAlerts: 'on', recipients, webhookUrl: 'https://127.0.0.1:9/hook', monthlyReport: 'on' },
      cookie,
    })
    expect(again.status).toBe(303)
    const rotated = await t.request(`/app/sites/${siteId}/settings/alerts/rotate`, { form: {}, cookie })
    expect(rotated.status).toBe(200)
    const next = secretIn(await rotated.text())!
    expect(next).toBeTruthy()
    expect(next).not.toBe(secret)
  })

  it('attaches and removes a custom domain through the custom-domain verbs, with the DNS status', async () => {
    const t = await webHarness()
    const { cookie, siteId, api } = await orgWithSite(t)
    const wrong = await t.request(`/app/sites/${siteId}/settings/domain`, { form: { domain: 'stats.other.example.org' }, cookie })
    expect(wrong.status).toBe(400)
    expect(textOf(await wrong.text(), 'domain-error')).toBe(
      'domain: must be a subdomain of acme.example.com, for example stats.acme.example.com',
    )
    const empty = await t.request(`/app/sites/${siteId}/settings/domain`, { form: { domain: '' }, cookie })
    expect(empty.status).toBe(400)
    expect(textOf(await empty.text(), 'domain-error')).toBe('domain: required')

    expect((await t.request(`/app/sites/${siteId}/settings/domain`, { form: { domain: 'Stats.Acme.example.com' }, cookie })).status).toBe(
      303,
    )
    const state = (await api('GET', `/api/v1/sites/${siteId}/custom-domain`)).json
    // no DNS here: the record is pending, or the lookup failed; the page says what the API says
    expect(state.customDomain).toBe('stats.acme.example.com')
    expect(['pending', 'error']).toContain(state.status)
    const page = await (await t.request(`/app/sites/${siteId}/settings/domain`, { cookie })).text()
    expect(page).toContain('<dd>stats.acme.example.com</dd>')
    expect(page).toContain(`<span class="state state-${state.status}">${state.status}</span>`)
    expect(textOf(page, 'domain-detail')).toBe(state.detail)

    expect((await t.request(`/app/sites/${siteId}/settings/domain/remove`, { form: {}, cookie })).status).toBe(303)
    expect((await api('GET', `/api/v1/sites/${siteId}/custom-domain`)).json).toMatchObject({ customDomain: null, status: 'none' })
  })

  it('shows a member every setting read-only and refuses their posts; another organization is not found', async () => {
    const t = await webHarness()
    const { cookie, orgId, siteId, api } = await orgWithSite(t)
    const memberAddress = email()
    await t.request(`/app/orgs/${orgId}/team/invite`, { form: { email: memberAddress, role: 'member' }, cookie })
    const member = await t.signIn(memberAddress)
    const invitation = /invitations\/([0-9a-f-]{36})\/accept/.exec(await (await t.request('/app', { cookie: member })).text())![1]
    expect((await t.request(`/app/invitations/${invitation}/accept`, { form: {}, cookie: member })).status).toBe(303)
    const before = (await api('GET', `/api/v1/sites/${siteId}`)).json

    for (const path of ['', '/alerts', '/domain', '/integrations']) {
      const page = await t.request(`/app/sites/${siteId}/settings${path}`, { cookie: member })
      expect(page.status, path).toBe(200)
      const html = await page.text()
      expect(html, path).toContain('owners and admins change them')
      expect(html, path).not.toMatch(/<button type="submit"(?! class="secondary small">Sign out)/)
    }
    const settings = await (await t.request(`/app/sites/${siteId}/settings`, { cookie: member })).text()
    expect(settings).toMatch(/id="tracking-trackForms" name="trackForms" checked="" disabled=""/)

    for (const [path, form] of [
      ['/settings/tracking', { includeBots: 'on' }],
      ['/settings/sharing', { isPublic: 'on' }],
      ['/settings/alerts', { weeklyReport: 'on' }],
      ['/settings/alerts/rotate', {}],
      ['/settings/domain', { domain: 'stats.acme.example.com' }],
      ['/settings/domain/remove', {}],
      ['/settings/google/connect', {}],
      ['/settings/ga4', { propertyId: '1' }],
      ['/settings/ga4/disconnect', {}],
      ['/settings/search-console/disconnect', {}],
      ['/delete', { confirm: 'acme.example.com' }],
    ] as const) {
      const refused = await t.request(`/app/sites/${siteId}${path}`, { form, cookie: member })
      expect(refused.status, path).toBe(403)
      expect(await refused.text(), path).toMatch(/only owner or admins can/)
    }
    expect((await api('GET', `/api/v1/sites/${siteId}`)).json).toEqual(before)

    // someone of another organization: not found, and nothing changes
    const stranger = await t.signIn(email())
    for (const path of ['/settings', '/settings/alerts', '/settings/domain', '/settings/integrations', '/settings/imports'])
      expect((await t.request(`/app/sites/${siteId}${path}`, { cookie: stranger })).status, path).toBe(404)
    for (const [path, form] of [
      ['/settings/tracking', { includeBots: 'on' }],
      ['/settings/alerts', { weeklyReport: 'on' }],
      ['/settings/domain', { domain: 'stats.acme.example.com' }],
    ] as const)
      expect((await t.request(`/app/sites/${siteId}${path}`, { form, cookie: stranger })).status, path).toBe(404)
    // the owner's own form posted from another site is refused too
    const crossSite = await t.request(`/app/sites/${siteId}/settings/sharing`, {
      form: { isPublic: 'on' },
      cookie,
      headers: { origin: 'https://evil.example' },
    })
    expect(crossSite.status).toBe(403)
    expect((await api('GET', `/api/v1/sites/${siteId}`)).json).toEqual(before)
  })
})

describe('the Google connection from the site page', () => {
  const SECRET = 'test-server-secret-0123456789abcdef'
  let google: FakeGoogle
  let t: Web

  beforeAll(async () => {
    google = await startFakeGoogle({
      properties: [
        { propertyId: '314159', displayName: 'Acme web', accountId: '1001', accountName: 'Acme account', sessions: [] },
        { propertyId: '271828', displayName: 'Acme app', accountId: '1001', accountName: 'Acme account', sessions: [] },
      ],
    })
    const env = parseEnv(nodeEnvSchema, { ...google.env(), SERVER_SECRET: SECRET })
    t = await webHarness('embedded', { google: googleConfig(env) })
  })
  afterAll(async () => {
    await google?.stop()
  })

  /** The owner's browser: the session and the connect's cookie kept between requests. */
  const browserOf = (owner: string): Promise<Browser> =>
    signedIn(t.services, ORIGIN, (url, init) => t.request(url.slice(ORIGIN.length), init), owner)

  it('connects, confirms the account, comes back to the site page with a message, binds a property, lists its import and disconnects', async () => {
    const { owner, cookie, siteId, api } = await orgWithSite(t)
    const browser = await browserOf(owner)
    const before = await (await t.request(`/app/sites/${siteId}/settings/integrations`, { cookie })).text()
    expect(textOf(before, 'google-status')).toBe('not connected')
    expect(before).toContain(`action="/app/sites/${siteId}/settings/google/connect"`)

    const connect = await browser.open(`/app/sites/${siteId}/settings/google/connect`, {})
    expect(connect.status).toBe(303)
    const authorize = new URL(connect.headers.get('location')!)
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${google.url}/o/oauth2/v2/auth`)
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${ORIGIN}/oauth/google/callback`)
    const back = await consent(authorize.href)
    // the callback sends the browser on to confirm the account, not to a page of its own
    const callback = await browser.open(back)
    expect(callback.status).toBe(303)
    expect(callback.headers.get('location')).toBe(`${ORIGIN}/app/sites/${siteId}/settings/google/confirm`)
    // the same state a second time changes nothing and goes back to the page, which says so
    const reused = await browser.open(back)
    expect(reused.status).toBe(303)
    expect(reused.headers.get('location')).toBe(`${ORIGIN}/app/sites/${siteId}/settings/integrations?google=expired#google`)
    const reusedPage = await (await t.request(`/app/sites/${siteId}/settings/integrations?google=expired`, { cookie })).text()
    expect(reusedPage).toContain('That connect link expired (they last 15 minutes) or was already used; nothing was changed.')
    const confirmation = await (await browser.open(`/app/sites/${siteId}/settings/google/confirm`)).text()
    expect(textOf(confirmation, 'google-account')).toBe(google.account)
    expect(textOf(confirmation, 'google-site')).toBe('acme.example.com')
    const confirmed = await browser.open(`/app/sites/${siteId}/settings/google/confirm`, {})
    expect(confirmed.headers.get('location')).toBe(`/app/sites/${siteId}/settings/integrations?google=connected#google`)

    const connected = await (await t.request(`/app/sites/${siteId}/settings/integrations?google=connected`, { cookie })).text()
    expect(connected).toContain('Google is connected.')
    expect(textOf(connected, 'google-status')).toBe('connected')
    expect(connected).toContain('<option value="314159">Acme web (314159) · Acme account</option>')
    expect(connected).toContain('<option value="271828">Acme app (271828) · Acme account</option>')

    // a property the connection cannot read: the API's message next to the field
    const wrong = await t.request(`/app/sites/${siteId}/settings/ga4`, { form: { propertyId: '999' }, cookie })
    expect(wrong.status).toBe(400)
    expect(textOf(await wrong.text(), 'ga4-error')).toBe(
      'propertyId: "999" is not a GA4 property this connection can read (it reads 314159, 271828)',
    )
    const bound = await t.request(`/app/sites/${siteId}/settings/ga4`, { form: { propertyId: '271828' }, cookie })
    expect(bound.status).toBe(303)
    const ga4 = (await api('GET', `/api/v1/sites/${siteId}/ga4`)).json
    expect(ga4).toMatchObject({ status: 'connected', propertyId: '271828', propertyName: 'Acme app' })
    expect((await api('GET', `/api/v1/sites/${siteId}`)).json.sources).toEqual(['standalone', 'ga4'])
    const imports = (await api('GET', `/api/v1/sites/${siteId}/imports`)).json.imports
    expect(imports.length).toBeGreaterThan(0)
    const page = await (await t.request(`/app/sites/${siteId}/settings/integrations`, { cookie })).text()
    expect(textOf(page, 'ga4-property')).toBe('Acme app (271828)')
    expect(page).toContain('<option value="271828" selected="">')
    // the imports list shows each run the API lists, with its state
    const fragment = await (await t.request(`/app/sites/${siteId}/settings/imports`, { cookie })).text()
    expect(fragment.match(/<tr>/g)!.length - 1).toBe(imports.length)
    for (const run of imports) expect(fragment).toContain(`<span class="state state-${run.state}">${run.state}</span>`)
    expect(fragment).toContain(`data-moving="${imports.some((i: any) => ['queued', 'running', 'waiting'].includes(i.state))}"`)

    expect((await t.request(`/app/sites/${siteId}/settings/ga4/disconnect`, { form: {}, cookie })).status).toBe(303)
    expect((await api('GET', `/api/v1/sites/${siteId}/ga4`)).json).toMatchObject({ status: 'not_connected', propertyId: null })
    expect(textOf(await (await t.request(`/app/sites/${siteId}/settings/integrations`, { cookie })).text(), 'google-status')).toBe(
      'not connected',
    )
  })

  it('comes back with a clear message when Google does not authorize; a connect URL of the API opens the page that starts it', async () => {
    const { owner, cookie, siteId, api } = await orgWithSite(t, 'denied.example.com')
    const browser = await browserOf(owner)
    const connect = await browser.open(`/app/sites/${siteId}/settings/google/connect`, {})
    const state = new URL(connect.headers.get('location')!).searchParams.get('state')!
    const denied = await browser.open(`/oauth/google/callback?state=${encodeURIComponent(state)}&error=access_denied`)
    expect(denied.status).toBe(303)
    expect(denied.headers.get('location')).toBe(`${ORIGIN}/app/sites/${siteId}/settings/integrations?google=denied#google`)
    const page = await (await t.request(`/app/sites/${siteId}/settings/integrations?google=denied`, { cookie })).text()
    expect(page).toContain('Google did not authorize the connection; nothing was changed.')
    expect(textOf(page, 'google-status')).toBe('not connected')
    // an unknown outcome shows nothing: the text comes from the server, never from the URL
    const other = await (await t.request(`/app/sites/${siteId}/settings/integrations?google=Call%20us`, { cookie })).text()
    expect(other).not.toContain('Call us')

    // a connect link older than 15 minutes: back to the page too, nothing stored
    const late = await browser.open(`/app/sites/${siteId}/settings/google/connect`, {})
    const lateBack = await consent(late.headers.get('location')!)
    t.advance(16 * 60_000)
    const expired = await browser.open(lateBack)
    expect(expired.headers.get('location')).toBe(`${ORIGIN}/app/sites/${siteId}/settings/integrations?google=expired#google`)
    expect((await api('GET', `/api/v1/sites/${siteId}/ga4`)).json.status).toBe('not_connected')
    // a state another server signed, or none: the API's 400, as before
    expect((await t.request('/oauth/google/callback?state=forged.value&code=x')).status).toBe(400)

    // the connect URL the API hands out (to the owner's write key) is the page that starts the same flow
    const read = (await api('GET', `/api/v1/sites/${siteId}/ga4`)).json
    expect(read.connectUrl).toBe(`${ORIGIN}/app/sites/${siteId}/settings/google/connect`)
    const start = await browser.open(read.connectUrl)
    expect(start.status).toBe(200)
    expect(await start.text()).toContain(`action="/app/sites/${siteId}/settings/google/connect"`)
  })
})
