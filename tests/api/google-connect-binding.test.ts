import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { acceptInvitation, addOwner, inviteMember } from '../../lib/accounts/members'
import { googleConfig } from '../../lib/integrations/google/config'
import { CONNECT_NEEDS_ADMIN } from '../../lib/integrations/google/connect'
import { nodeEnvSchema, parseEnv } from '../../lib/runtime/env'
import { type FakeGoogle, startFakeGoogle } from '../fakes/google'
import { type Browser, connectGoogle, consent, signedIn, startConnect } from '../google-connect'
import { REDIS_URL, type Harness, harness } from '../helpers'

/**
 * Who may connect a site to Google, and the flow bound to the browser that started it (issue 45,
 * items 2 and 3), against the stand-in for Google: a read key or a plain member gets no way to
 * connect; a connect link opened by another organization's user, or Google's consent page opened
 * in a browser that did not start the connect, stores nothing; the honest flow stores the grant
 * only after its owner or admin saw the Google account and the site and confirmed.
 */

const ORIGIN = 'https://api.test'
const SECRET = 'test-server-secret-0123456789abcdef'

describe('connecting Google: who, and from which browser', () => {
  let google: FakeGoogle
  let t: Harness
  let send: (url: string, init: RequestInit) => Response | Promise<Response>
  let ownerA: Browser
  let adminA: Browser
  let memberA: Browser
  let ownerB: Browser
  let adminMemberId = ''
  const siteA = () => t.a.site.id
  const ga4 = async (siteId: string, key: string) => (await t.call('GET', `/api/v1/sites/${siteId}/ga4`, { key })).json
  const tokenRequests = () => google.requests.filter((r) => r.path === '/token').length

  /** A key made on the keys page by a signed-in browser: its secret. */
  async function keyMadeBy(browser: Browser, scope: 'read' | 'write') {
    const page = await browser.open(`/app/orgs/${t.a.org.id}/keys`, { name: `${scope} key`, scope })
    expect(page.status).toBe(201)
    return /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(await page.text())![1].trim()
  }

  beforeAll(async () => {
    google = await startFakeGoogle({
      properties: [{ propertyId: '314159', displayName: 'Acme web', accountId: '1001', accountName: 'Acme account', sessions: [] }],
    })
    const env = parseEnv(nodeEnvSchema, { ...google.env(), SERVER_SECRET: SECRET })
    t = await harness({ kv: REDIS_URL ? 'redis' : 'embedded', with: { google: googleConfig(env) } })
    const app = createApp(t.services)
    send = (url, init) => app.request(url, init)
    const now = t.services.now()
    await addOwner(t.repositories, t.a.org.id, 'owner-a@example.com', now)
    await addOwner(t.repositories, t.b.org.id, 'owner-b@example.org', now)
    for (const [address, role] of [
      ['admin-a@example.com', 'admin'],
      ['member-a@example.com', 'member'],
    ] as const) {
      const invitation = await inviteMember(t.services, t.a.org.id, { email: address, role })
      const member = await acceptInvitation(t.repositories, invitation.id, now)
      if (role === 'admin') adminMemberId = member.id
    }
    ownerA = await signedIn(t.services, ORIGIN, send, 'owner-a@example.com')
    adminA = await signedIn(t.services, ORIGIN, send, 'admin-a@example.com')
    memberA = await signedIn(t.services, ORIGIN, send, 'member-a@example.com')
    ownerB = await signedIn(t.services, ORIGIN, send, 'owner-b@example.org')
  })

  afterAll(async () => {
    await google?.stop()
  })

  it('gives the page to connect at to write keys of owners and admins only; a read key or a plain member gets none, and says why', async () => {
    const page = `${ORIGIN}/app/sites/${siteA()}/settings/google/connect`
    expect(await ga4(siteA(), t.a.write.key)).toMatchObject({ status: 'not_connected', connectUrl: page, connectNote: null })
    expect(await ga4(siteA(), t.a.read.key)).toMatchObject({
      status: 'not_connected',
      connected: false,
      connectUrl: null,
      connectNote: CONNECT_NEEDS_ADMIN,
    })
    expect(await ga4(siteA(), await keyMadeBy(memberA, 'read'))).toMatchObject({ connectUrl: null, connectNote: CONNECT_NEEDS_ADMIN })
    // an admin's write key, while its maker is an admin; once the maker is a plain member, it connects nothing
    const adminWrite = await keyMadeBy(adminA, 'write')
    expect(await ga4(siteA(), adminWrite)).toMatchObject({ connectUrl: page, connectNote: null })
    const demoted = await t.call('PATCH', '/api/v1/org/members', { key: t.a.write.key, body: { member_id: adminMemberId, role: 'member' } })
    expect(demoted.status).toBe(200)
    expect(await ga4(siteA(), adminWrite)).toMatchObject({ connectUrl: null, connectNote: CONNECT_NEEDS_ADMIN })
    await t.call('PATCH', '/api/v1/org/members', { key: t.a.write.key, body: { member_id: adminMemberId, role: 'admin' } })

    // a plain member cannot start a connect in the browser either
    for (const form of [undefined, {}]) {
      const res = await memberA.open(`/app/sites/${siteA()}/settings/google/connect`, form)
      expect(res.status).toBe(403)
      expect(await res.text()).toContain('only owner or admins can connect Google')
    }
  })

  it("another organization's user opening the connect page gets a 404, and Google is never asked", async () => {
    const connectUrl = (await ga4(siteA(), t.a.write.key)).connectUrl
    const asked = google.requests.length
    expect((await ownerB.open(connectUrl)).status).toBe(404)
    expect((await ownerB.open(connectUrl, {})).status).toBe(404)
    expect(ownerB.has('google_connect')).toBe(false)
    expect(google.requests.length).toBe(asked)
    expect(await ga4(siteA(), t.a.read.key)).toMatchObject({ status: 'not_connected' })
  })

  it("Google's consent page opened in a browser that did not start the connect stores nothing, and exchanges no code", async () => {
    google.account = 'victim@example.com'
    const exchanges = tokenRequests()
    // the victim's browser, signed in; the victim's browser with a connect of its own under way; a browser with nothing
    await startConnect(adminA, siteA())
    const stranger = await signedIn(t.services, ORIGIN, send, 'someone@example.net')
    for (const victim of [ownerA, adminA, stranger]) {
      // the attacker starts a connect of their own site and sends the consent page to the victim, who consents
      const back = await consent(await startConnect(ownerB, t.b.site.id))
      const callback = await victim.open(back)
      expect(callback.status).toBe(400)
      expect((await callback.json()).error).toMatch(/^state: this connect was started in another browser, so nothing was stored/)
    }
    expect(tokenRequests()).toBe(exchanges)
    expect(await ga4(t.b.site.id, t.b.read.key)).toMatchObject({ status: 'not_connected', connected: false })
    // nothing waits for a confirmation either
    const confirm = await adminA.open(`/app/sites/${siteA()}/settings/google/confirm`)
    expect(confirm.headers.get('location')).toBe(`/app/sites/${siteA()}/settings/integrations?google=expired#google`)
  })

  it('the honest flow shows the Google account and the site, and stores the grant only once confirmed', async () => {
    google.account = 'owner-a@gmail.example'
    const googleUrl = new URL(await startConnect(ownerA, siteA()))
    expect(ownerA.has('google_connect')).toBe(true)
    expect(googleUrl.searchParams.get('scope')).toBe('openid email https://www.googleapis.com/auth/analytics.readonly')
    const callback = await ownerA.open(await consent(googleUrl.href))
    expect(callback.status).toBe(303)
    expect(callback.headers.get('location')).toBe(`${ORIGIN}/app/sites/${siteA()}/settings/google/confirm`)
    // exchanged and held, not stored
    expect(await ga4(siteA(), t.a.read.key)).toMatchObject({ status: 'not_connected' })

    const page = await (await ownerA.open(`/app/sites/${siteA()}/settings/google/confirm`)).text()
    expect(page).toMatch(/<strong id="google-account">owner-a@gmail\.example<\/strong>/)
    expect(page).toContain(`<strong id="google-site">${t.a.site.domain}</strong>`)
    expect(page).toContain(`action="/app/sites/${siteA()}/settings/google/confirm"`)
    // another admin of the organization, in another browser, has nothing to confirm
    const other = await adminA.open(`/app/sites/${siteA()}/settings/google/confirm`, {})
    expect(other.headers.get('location')).toMatch(/google=expired/)
    // a confirmation posted from another site is refused, as every form of the application
    expect((await ownerA.open(`/app/sites/${siteA()}/settings/google/confirm`, {}, 'https://attacker.example')).status).toBe(403)
    expect(await ga4(siteA(), t.a.read.key)).toMatchObject({ status: 'not_connected' })

    const confirmed = await ownerA.open(`/app/sites/${siteA()}/settings/google/confirm`, {})
    expect(confirmed.headers.get('location')).toBe(`/app/sites/${siteA()}/settings/integrations?google=connected#google`)
    expect(ownerA.has('google_connect')).toBe(false)
    expect(await ga4(siteA(), t.a.read.key)).toMatchObject({
      status: 'connected',
      connected: true,
      connectUrl: null,
      connectNote: null,
      properties: [{ propertyId: '314159' }],
    })
    // once only
    expect((await ownerA.open(`/app/sites/${siteA()}/settings/google/confirm`, {})).headers.get('location')).toMatch(/google=expired/)
  })

  it('cancelling revokes the new grant at Google and leaves the connection as it was', async () => {
    const before = await t.services.repositories.google.get(siteA())
    google.account = 'wrong-account@gmail.example'
    const callback = await adminA.open(await consent(await startConnect(adminA, siteA())))
    expect(callback.status).toBe(303)
    const page = await (await adminA.open(`/app/sites/${siteA()}/settings/google/confirm`)).text()
    expect(page).toContain('wrong-account@gmail.example')
    const active = google.issuedTokens().filter((token) => token.startsWith('1//') && google.grantActive(token))
    const cancelled = await adminA.open(`/app/sites/${siteA()}/settings/google/cancel`, {})
    expect(cancelled.headers.get('location')).toBe(`/app/sites/${siteA()}/settings/integrations?google=cancelled#google`)
    const still = google.issuedTokens().filter((token) => token.startsWith('1//') && google.grantActive(token))
    expect(still).toHaveLength(active.length - 1)
    expect(await t.services.repositories.google.get(siteA())).toEqual(before)
  })

  it('an admin connects again through the same flow; the helper the other tests use goes the whole way', async () => {
    google.account = 'admin-a@gmail.example'
    const { page } = await connectGoogle(adminA, t.a.site.id)
    expect(page).toContain('admin-a@gmail.example')
    expect(await ga4(siteA(), t.a.read.key)).toMatchObject({ status: 'connected' })
  })
})
