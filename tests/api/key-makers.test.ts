import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { createApiKey } from '../../lib/accounts/admin'
import { checkAnswer } from '../helpers'
import { ORIGIN, email, webHarness } from './web-harness'

/**
 * Keys and the members who made them (issue 45, item 7): a key records its maker; the key lists
 * (API and web application) show it; removing a member revokes the keys they made, and the
 * answer says how many; a plain member lists and revokes only their own keys.
 */

const idIn = (response: Response, pattern: RegExp) => {
  const match = pattern.exec(response.headers.get('location') ?? '')
  if (!match) throw new Error(`unexpected redirect ${response.status} ${response.headers.get('location')}`)
  return match[1]
}
const secretIn = async (page: Response) => {
  expect(page.status).toBe(201)
  return /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(await page.text())![1].trim()
}

describe('who made a key', () => {
  it('lists the maker, keeps a plain member to their own keys, and revokes a removed member’s keys', async () => {
    const t = await webHarness()
    const app = createApp(t.services)
    const api = async (method: string, path: string, key: string) => {
      const res = await app.request(`${ORIGIN}${path}`, { method, headers: { authorization: `Bearer ${key}` } })
      const json = (await res.json()) as any
      checkAnswer(method, `${ORIGIN}${path}`, res.status, json)
      return { status: res.status, json }
    }
    const owner = email()
    const member = email()
    const ownerCookie = await t.signIn(owner)
    const orgId = idIn(await t.request('/app/orgs', { form: { name: 'Makers' }, cookie: ownerCookie }), /([0-9a-f-]{36})$/)
    await t.request(`/app/orgs/${orgId}/team/invite`, { form: { email: member, role: 'member' }, cookie: ownerCookie })
    const ownerTeam = await (await t.request(`/app/orgs/${orgId}/team`, { cookie: ownerCookie })).text()
    const invitationId = /team\/invitations\/([0-9a-f-]{36})\/cancel/.exec(ownerTeam)![1]
    const memberCookie = await t.signIn(member)
    await t.request(`/app/invitations/${invitationId}/accept`, { form: {}, cookie: memberCookie })

    const ownerWrite = await secretIn(
      await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'owner write', scope: 'write' }, cookie: ownerCookie }),
    )
    const ownerRead = await secretIn(
      await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'owner read', scope: 'read' }, cookie: ownerCookie }),
    )
    const memberRead = await secretIn(
      await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'member read', scope: 'read' }, cookie: memberCookie }),
    )
    await createApiKey(t.services.repositories, { orgId, name: 'cli key', scope: 'read' }, t.services.now())
    // a key stored before keys recorded their maker
    const legacy = await createApiKey(t.services.repositories, { orgId, name: 'old key', scope: 'read' }, t.services.now())
    const legacyMeta = (await t.services.repositories.keys.meta(legacy.id))!
    const { madeBy: _, ...withoutMaker } = legacyMeta
    await t.services.repositories.keys.create(withoutMaker)

    const me = await api('GET', '/api/v1/me', memberRead)
    expect(me.json.member).toMatchObject({ email: member, role: 'member' })
    expect((await api('GET', '/api/v1/me', ownerWrite)).json.member).toMatchObject({ email: owner, role: 'owner' })

    // the owner's key lists every key with its maker
    const all = (await api('GET', '/api/v1/org/api-keys', ownerWrite)).json.keys as { name: string; madeBy: unknown; id: string }[]
    const makers = Object.fromEntries(all.map((k) => [k.name, k.madeBy]))
    const ownerMemberId = (makers['owner read'] as { memberId: string }).memberId
    expect(makers).toEqual({
      'owner write': { memberId: ownerMemberId, email: owner },
      'owner read': { memberId: ownerMemberId, email: owner },
      'member read': { memberId: expect.any(String), email: member },
      'cli key': 'admin_cli',
      'old key': 'unknown',
    })
    // the member's key lists the member's keys only
    const mine = (await api('GET', '/api/v1/org/api-keys', memberRead)).json.keys as { name: string }[]
    expect(mine.map((k) => k.name)).toEqual(['member read'])

    // the web application: the owner sees every maker; the member sees their own key only and cannot revoke the owner's
    const ownerPage = await (await t.request(`/app/orgs/${orgId}/keys`, { cookie: ownerCookie })).text()
    for (const shown of [`<td>${member}</td>`, `<td>${owner}</td>`, '<td>admin CLI</td>', '<td>unknown</td>'])
      expect(ownerPage).toContain(shown)
    const memberPage = await (await t.request(`/app/orgs/${orgId}/keys`, { cookie: memberCookie })).text()
    expect(memberPage).toContain('member read')
    expect(memberPage).not.toContain('owner read')
    const ownerReadId = all.find((k) => k.name === 'owner read')!.id
    const refused = await t.request(`/app/orgs/${orgId}/keys/${ownerReadId}/revoke`, { form: {}, cookie: memberCookie })
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('members who are not admins revoke only the keys they made')
    expect((await api('GET', '/api/v1/me', ownerRead)).status).toBe(200)

    // removing the member revokes the key they made, and says so; the owner's keys keep working
    const memberId = (me.json.member as { id: string }).id
    const removed = await app.request(`${ORIGIN}/api/v1/org/members?member_id=${memberId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ownerWrite}` },
    })
    expect(await removed.json()).toEqual({ deleted: true, kind: 'member', id: memberId, keysRevoked: 1 })
    const gone = await api('GET', '/api/v1/me', memberRead)
    expect(gone.status).toBe(401)
    expect(gone.json.error).toMatch(/^API key was revoked/)
    expect((await api('GET', '/api/v1/me', ownerRead)).status).toBe(200)
  })

  it('a member removed in the web application loses their keys too', async () => {
    const t = await webHarness()
    const owner = await t.signIn(email())
    const member = email()
    const orgId = idIn(await t.request('/app/orgs', { form: { name: 'Web removal' }, cookie: owner }), /([0-9a-f-]{36})$/)
    await t.request(`/app/orgs/${orgId}/team/invite`, { form: { email: member, role: 'admin' }, cookie: owner })
    const team = await (await t.request(`/app/orgs/${orgId}/team`, { cookie: owner })).text()
    const invitationId = /team\/invitations\/([0-9a-f-]{36})\/cancel/.exec(team)![1]
    const memberCookie = await t.signIn(member)
    await t.request(`/app/invitations/${invitationId}/accept`, { form: {}, cookie: memberCookie })
    const key = await secretIn(
      await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'admin write', scope: 'write' }, cookie: memberCookie }),
    )
    const app = createApp(t.services)
    const me = async () => app.request(`${ORIGIN}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } })
    const memberId = ((await (await me()).json()) as any).member.id
    expect((await t.request(`/app/orgs/${orgId}/team/${memberId}/remove`, { form: {}, cookie: owner })).status).toBe(303)
    expect((await me()).status).toBe(401)
  })
})
