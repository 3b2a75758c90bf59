import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { mintSignInLink } from '../../lib/accounts/signin'
import type { Services } from '../../lib/runtime/services'
import { ORIGIN, cookieOf, email, webHarness } from './web-harness'

/** Where the requests below claim to come from and to be sent to: anyone can name any Host. */
const ATTACKER = 'http://attacker.example:8080'

/**
 * The web application's request as curl sends it with `-H 'Host: attacker.example:8080' -H
 * 'Origin: http://attacker.example:8080'`: the app sees that host in its URL, and the Origin
 * matches it, so the form is not refused as cross-site.
 */
function fromAttacker(services: Services) {
  const app = createApp(services)
  return (path: string, form: Record<string, string>, cookie?: string) =>
    app.request(`${ATTACKER}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ATTACKER, ...(cookie ? { cookie } : {}) },
      body: new URLSearchParams(form).toString(),
    })
}

/** A signed-in owner of a new organization with one site; signed in by a minted link, which needs no configured origin. */
async function ownerWithSite(t: Awaited<ReturnType<typeof webHarness>>) {
  const owner = email()
  const link = await mintSignInLink(t.services.repositories, owner, ORIGIN, t.services.now())
  const used = await t.request('/app/signin/link', { form: { token: new URL(link).searchParams.get('token')! } })
  const cookie = cookieOf(used)
  const orgId = /([0-9a-f-]{36})$/.exec((await t.request('/app/orgs', { form: { name: 'Links' }, cookie })).headers.get('location')!)![1]
  const created = await t.request(`/app/orgs/${orgId}/sites`, {
    form: { domain: `links-${crypto.randomUUID().slice(0, 6)}.example.com` },
    cookie,
  })
  const siteId = /sites\/([0-9a-f-]{36})/.exec(created.headers.get('location')!)![1]
  const shared = await t.request(`/app/sites/${siteId}/share`, { form: { shareLevel: 'link' }, cookie })
  // back to the page, or that page with the first link made at once
  expect([201, 303]).toContain(shared.status)
  return { cookie, orgId, siteId }
}

describe('links that leave the server are built on the configured origin, never on the request Host', () => {
  it('mails the sign-in link and the invitation, and shows the shared link, on PUBLIC_URL', async () => {
    const t = await webHarness()
    const post = fromAttacker(t.services)
    const owner = email()
    const asked = await post('/app/signin', { email: owner })
    expect(asked.status).toBe(200)
    expect(t.sent).toHaveLength(1)
    expect(t.sent[0].text).toContain(`${ORIGIN}/app/signin/link?token=`)
    expect(t.sent[0].text).not.toContain('attacker')

    const { cookie, orgId, siteId } = await ownerWithSite(t)
    const invitee = email()
    expect((await post(`/app/orgs/${orgId}/team/invite`, { email: invitee, role: 'member' }, cookie)).status).toBe(303)
    const invitation = t.sent.find((m) => m.to.includes(invitee))!
    expect(invitation.text).toContain(`${ORIGIN}/app`)
    expect(invitation.text).not.toContain('attacker')

    const made = await post(`/app/sites/${siteId}/share/link`, {}, cookie)
    expect(made.status).toBe(201)
    const page = await made.text()
    expect(page).toContain(`${ORIGIN}/share/${siteId}?auth=`)
    expect(page).not.toContain('attacker')
  })

  it('without one (Workers without PUBLIC_URL) makes no sign-in or shared link, and invites without a link', async () => {
    const t = await webHarness('embedded', { publicUrl: undefined })
    const post = fromAttacker(t.services)
    const asked = await post('/app/signin', { email: email() })
    expect(asked.status).toBe(503)
    expect(await asked.text()).toContain('PUBLIC_URL')
    expect(t.sent).toHaveLength(0)

    const { cookie, orgId, siteId } = await ownerWithSite(t)
    const refused = await post(`/app/sites/${siteId}/share/link`, {}, cookie)
    expect(refused.status).toBe(503)
    const page = await refused.text()
    expect(page).toContain('PUBLIC_URL')
    expect(page).not.toContain('attacker')
    // nothing was replaced: the site still has no link
    expect((await t.services.sites.findFresh(siteId))!.shareLink).toBeUndefined()

    const invitee = email()
    expect((await post(`/app/orgs/${orgId}/team/invite`, { email: invitee, role: 'member' }, cookie)).status).toBe(303)
    const invitation = t.sent.find((m) => m.to.includes(invitee))!
    expect(invitation.text).toContain('Sign in with this address to accept it.')
    expect(invitation.text).not.toMatch(/https?:\/\//)
  })
})
