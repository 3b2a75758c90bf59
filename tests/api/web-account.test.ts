import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { DEMO_DOMAIN, sendDemoVisit } from '../../lib/operations/demo'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { ORIGIN, email, webHarness } from './web-harness'

/** The id at the end of a redirect such as /app/orgs/<id>. */
const idIn = (response: Response, pattern: RegExp) => {
  const match = pattern.exec(response.headers.get('location') ?? '')
  if (!match) throw new Error(`unexpected redirect ${response.status} ${response.headers.get('location')}`)
  return match[1]
}

describe('the account area', () => {
  it('creates an organization, a site and keys; the key works on the API and is shown once', async () => {
    const t = await webHarness()
    const owner = email()
    const cookie = await t.signIn(owner)
    const created = await t.request('/app/orgs', { form: { name: 'Acme' }, cookie })
    const orgId = idIn(created, /^\/app\/orgs\/([0-9a-f-]+)$/)
    const overview = await (await t.request(`/app/orgs/${orgId}`, { cookie })).text()
    expect(overview).toContain('Acme')
    expect(overview).toContain('Plan and usage')

    const addedSite = await t.request(`/app/orgs/${orgId}/sites`, {
      form: { domain: 'acme.example.com', timezone: 'Europe/Paris' },
      cookie,
    })
    const siteId = idIn(addedSite, /^\/app\/sites\/([0-9a-f-]+)\/settings$/)
    const settings = await (await t.request(`/app/sites/${siteId}/settings`, { cookie })).text()
    expect(settings).toMatch(/data-site=&quot;[a-z0-9]{10}&quot;|data-site="[a-z0-9]{10}"/)
    expect(settings).toContain('Waiting for the first event')

    const keyPage = await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'reader', scope: 'read', siteId }, cookie })
    expect(keyPage.status).toBe(201)
    const html = await keyPage.text()
    const secret = /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(html)![1].trim()
    const api = createApp(t.services)
    const answer = await api.request(`${ORIGIN}/api/v1/me`, { headers: { authorization: `Bearer ${secret}` } })
    expect(answer.status).toBe(200)
    expect(await answer.json()).toMatchObject({ key: { scope: 'read' }, organization: { name: 'Acme' } })
    // listed by prefix, never again in full
    const list = await (await t.request(`/app/orgs/${orgId}/keys`, { cookie })).text()
    expect(list).toContain('reader')
    expect(list).toContain(secret.slice(0, 10))
    expect(list).not.toContain(secret)

    // revoked: it stops working
    const keyId = /action="\/app\/orgs\/[^/]+\/keys\/([^/]+)\/revoke"/.exec(list)![1]
    expect((await t.request(`/app/orgs/${orgId}/keys/${keyId}/revoke`, { form: {}, cookie })).status).toBe(303)
    expect((await api.request(`${ORIGIN}/api/v1/me`, { headers: { authorization: `Bearer ${secret}` } })).status).toBe(401)

    // deleting asks for the domain
    const wrong = await t.request(`/app/sites/${siteId}/delete`, { form: { confirm: 'other.example.com' }, cookie })
    expect(wrong.status).toBe(400)
    expect(await wrong.text()).toContain('confirm: must repeat')
    expect((await t.request(`/app/sites/${siteId}/delete`, { form: { confirm: 'acme.example.com' }, cookie })).status).toBe(303)
    expect((await t.request(`/app/sites/${siteId}/settings`, { cookie })).status).toBe(404)
  })

  it('answers another organization, or its site, as not found', async () => {
    const t = await webHarness()
    const a = await t.signIn(email())
    const b = await t.signIn(email())
    const orgA = idIn(await t.request('/app/orgs', { form: { name: 'A' }, cookie: a }), /([0-9a-f-]{36})$/)
    const siteA = idIn(
      await t.request(`/app/orgs/${orgA}/sites`, { form: { domain: 'a.example.com' }, cookie: a }),
      /sites\/([0-9a-f-]{36})/,
    )
    for (const path of [`/app/orgs/${orgA}`, `/app/orgs/${orgA}/keys`, `/app/orgs/${orgA}/team`, `/app/sites/${siteA}/settings`])
      expect((await t.request(path, { cookie: b })).status, path).toBe(404)
    expect((await t.request(`/app/orgs/${orgA}/keys`, { form: { name: 'x', scope: 'read' }, cookie: b })).status).toBe(404)
    expect((await t.request(`/app/sites/${siteA}/delete`, { form: { confirm: 'a.example.com' }, cookie: b })).status).toBe(404)
    expect((await t.request(`/app/sites/${siteA}/settings`, { cookie: a })).status).toBe(200)
  })

  it('invites by e-mail; the invitee accepts signed in as that address; members make read keys only; ownership is transferred', async () => {
    const t = await webHarness()
    const owner = email()
    const invitee = email()
    const ownerCookie = await t.signIn(owner)
    const orgId = idIn(await t.request('/app/orgs', { form: { name: 'Team org' }, cookie: ownerCookie }), /([0-9a-f-]{36})$/)
    expect(
      (await t.request(`/app/orgs/${orgId}/team/invite`, { form: { email: invitee, role: 'member' }, cookie: ownerCookie })).status,
    ).toBe(303)
    const invitation = t.sent.at(-1)!
    expect(invitation.to).toEqual([invitee])
    expect(invitation.text).toContain(`${ORIGIN}/app`)

    // someone else cannot accept it
    const stranger = await t.signIn(email())
    const strangerHome = await (await t.request('/app', { cookie: stranger })).text()
    expect(strangerHome).not.toContain('Team org')
    const ownerTeam = await (await t.request(`/app/orgs/${orgId}/team`, { cookie: ownerCookie })).text()
    const invitationId = /team\/invitations\/([0-9a-f-]{36})\/cancel/.exec(ownerTeam)![1]
    expect((await t.request(`/app/invitations/${invitationId}/accept`, { form: {}, cookie: stranger })).status).toBe(404)

    const inviteeCookie = await t.signIn(invitee)
    const home = await (await t.request('/app', { cookie: inviteeCookie })).text()
    expect(home).toContain('Team org')
    expect((await t.request(`/app/invitations/${invitationId}/accept`, { form: {}, cookie: inviteeCookie })).headers.get('location')).toBe(
      `/app/orgs/${orgId}`,
    )

    // a member: read keys yes, write keys no
    expect((await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'mine', scope: 'read' }, cookie: inviteeCookie })).status).toBe(201)
    const refused = await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'w', scope: 'write' }, cookie: inviteeCookie })
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('members who are not admins cannot create write keys')
    expect((await t.request(`/app/orgs/${orgId}/sites`, { form: { domain: 'm.example.com' }, cookie: inviteeCookie })).status).toBe(403)

    // the member cannot take ownership; the owner gives it
    const team = await (await t.request(`/app/orgs/${orgId}/team`, { cookie: ownerCookie })).text()
    const memberId = /team\/([0-9a-f-]{36})\/remove/.exec(team)![1]
    expect((await t.request(`/app/orgs/${orgId}/team/transfer`, { form: { memberId }, cookie: inviteeCookie })).status).toBe(403)
    expect((await t.request(`/app/orgs/${orgId}/team/transfer`, { form: { memberId }, cookie: ownerCookie })).status).toBe(303)
    const after = await (await t.request('/app', { cookie: inviteeCookie })).text()
    expect(after).toMatch(/Team org<\/a><span class="muted">owner/)
    const before = await (await t.request('/app', { cookie: ownerCookie })).text()
    expect(before).toMatch(/Team org<\/a><span class="muted">admin/)
    // now an admin, the old owner makes write keys; the new owner's keys page offers them too
    expect((await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'w', scope: 'write' }, cookie: ownerCookie })).status).toBe(201)
  })

  it('names a bad field in a form and changes nothing', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const orgId = idIn(await t.request('/app/orgs', { form: { name: 'Forms' }, cookie }), /([0-9a-f-]{36})$/)
    const bad = await t.request(`/app/orgs/${orgId}/sites`, { form: { domain: 'not a domain' }, cookie })
    expect(bad.status).toBe(400)
    expect(await bad.text()).toContain('domain')
    const badScope = await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'k', scope: 'admin' }, cookie })
    expect(badScope.status).toBe(400)
    expect(await badScope.text()).toContain('scope')
    expect((await t.request('/app/orgs', { form: { name: '' }, cookie })).status).toBe(400)
  })

  it('counts the usage of collected hits, not imported ones, and says so; the demo site’s live visitors count', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const orgId = idIn(await t.request('/app/orgs', { form: { name: 'Usage' }, cookie }), /^\/app\/orgs\/([0-9a-f-]+)$/)
    const siteId = idIn(
      await t.request(`/app/orgs/${orgId}/sites`, { form: { domain: 'usage.example.com' }, cookie }),
      /^\/app\/sites\/([0-9a-f-]+)\/settings$/,
    )
    const snippetId = /data-site=(?:&quot;|")([a-z0-9]{10})/.exec(
      await (await t.request(`/app/sites/${siteId}/settings`, { cookie })).text(),
    )![1]
    const keyHtml = await (await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'r', scope: 'read' }, cookie })).text()
    const key = /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(keyHtml)![1].trim()
    const app = createApp(t.services)
    const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
    // four imported pageviews of this month, an hour ago
    const at = new Date(t.services.now().getTime() - 3_600_000).toISOString()
    const imported = [1, 2, 3, 4].map((i) =>
      JSON.stringify({
        timestamp: at,
        site: snippetId,
        name: 'pageview',
        url: `https://usage.example.com/${i}`,
        ip: `198.51.100.${i}`,
        userAgent: UA,
      }),
    )
    expect((await importHits(imported, t.services.ingestor)).imported).toBe(4)
    // three collected pageviews
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      const hit = await app.request(`${ORIGIN}/api/event`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-forwarded-for': ip, 'user-agent': UA },
        body: JSON.stringify({ site: snippetId, name: 'pageview', url: 'https://usage.example.com/', referrer: '' }),
      })
      expect(hit.status).toBe(202)
    }
    const usage = async () => {
      const answer = await app.request(`${ORIGIN}/api/v1/org`, { headers: { authorization: `Bearer ${key}` } })
      return ((await answer.json()) as { usage: { events: number } }).usage.events
    }
    /** "Events this month" on the organization's page, and the note under the figures. */
    const shown = async () => {
      const html = await (await t.request(`/app/orgs/${orgId}`, { cookie })).text()
      const events = /<dt>Events this month<\/dt><dd>([\d,]+) of /.exec(html)![1]
      const note = /<p class="muted" data-usage-note[^>]*>([\s\S]*?)<\/p>/.exec(html)![1].replace(/\s+/g, ' ')
      return { events: Number(events.replace(/,/g, '')), note }
    }
    // by hand: the three collected, not the four imported
    expect(await usage()).toBe(3)
    const before = await shown()
    expect(before.events).toBe(3)
    expect(before.note).toContain('Not counted: bot and AI-crawler hits')
    expect(before.note).toContain('imported data (raw-hit imports, Google Analytics and Search Console imports, Plausible exports)')
    expect(before.note).not.toContain('demo')

    // the demo site's live visits go through the collector as any visitor's: counted, and the note says so
    const demo = newSite({ domain: DEMO_DOMAIN, timezone: 'UTC' }, orgId, t.services.now())
    await t.services.repositories.sites.create(demo)
    await sendDemoVisit(t.services, demo, 1)
    const after = await usage()
    expect(after).toBeGreaterThan(3)
    const withDemo = await shown()
    expect(withDemo.events).toBe(after)
    expect(withDemo.note).toContain('the demo site’s generated history among them')
    expect(withDemo.note).toContain(
      'The demo site’s live visitors, one every 20 seconds while the server runs, are counted as any visitor.',
    )
  })
})
