import { beforeAll, describe, expect, it } from 'vitest'
import { createOrg } from '../../lib/accounts/admin'
import type { MailMessage } from '../../lib/network/mail'
import { acceptInvitation, addOwner } from '../../lib/accounts/members'
import { client, harness, type Harness } from '../helpers'

describe('team members', () => {
  let t: Harness
  const sent: MailMessage[] = []
  let ownerId = ''

  beforeAll(async () => {
    t = await harness({ with: { mailer: { send: async (message) => void sent.push(message) } } })
    // the seeded organizations were made without an owner; give org A one the way createOrg does
    ownerId = (await addOwner(t.repositories, t.a.org.id, 'boss@example.com', t.services.now())).id
  })

  it('makes the creator of an organization its owner', async () => {
    const org = await createOrg(t.repositories, 'Owned', t.services.now(), 'owner@example.com')
    expect((await t.repositories.team.list(org.id)).members).toEqual([
      { id: expect.any(String), email: 'owner@example.com', role: 'owner', joinedAt: expect.any(String) },
    ])
  })

  const team = async () => (await t.call('GET', '/api/v1/org/members', { key: t.a.read.key })).json

  it('lists the owner, invites by e-mail, and 409s an address already on the team', async () => {
    expect(await team()).toEqual({
      members: [{ id: ownerId, email: 'boss@example.com', role: 'owner', joinedAt: expect.any(String) }],
      invitations: [],
    })
    const res = await t.call('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email: 'Carol@Example.com', role: 'member' } })
    expect(res.status).toBe(201)
    expect(res.json).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email: 'carol@example.com',
      role: 'member',
      invitedAt: expect.any(String),
      emailed: true,
    })
    expect(sent.at(-1)).toMatchObject({ to: ['carol@example.com'], subject: 'You are invited to join Org A' })
    expect(sent.at(-1)!.text).toContain(res.json.id)
    expect((await team()).invitations).toEqual([
      { id: res.json.id, email: 'carol@example.com', role: 'member', invitedAt: res.json.invitedAt },
    ])
    for (const email of ['carol@example.com', 'BOSS@example.com']) {
      const again = await t.call('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email, role: 'admin' } })
      expect(again.status).toBe(409)
      expect(again.json.error).toMatch(/already a member or invited/)
    }
    // concurrent invitations of one address: one wins
    const racing = await Promise.all(
      [1, 2, 3].map(() =>
        t.call('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email: 'dan@example.com', role: 'member' } }),
      ),
    )
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409])
    // another organization may invite the same address
    expect(
      (await t.call('POST', '/api/v1/org/members', { key: t.b.write.key, body: { email: 'carol@example.com', role: 'admin' } })).status,
    ).toBe(201)
  })

  it('sets roles, never the owner’s, and removes members and invitations, never the owner', async () => {
    const invited = (await team()).invitations.find((i: { email: string }) => i.email === 'carol@example.com')
    const carol = await acceptInvitation(t.repositories, invited.id, t.services.now())
    expect((await team()).invitations.map((i: { email: string }) => i.email)).toEqual(['dan@example.com'])
    const promoted = await t.call('PATCH', '/api/v1/org/members', { key: t.a.write.key, body: { member_id: carol.id, role: 'admin' } })
    expect(promoted.status).toBe(200)
    expect(promoted.json).toEqual({ id: carol.id, email: 'carol@example.com', role: 'admin', joinedAt: carol.joinedAt })
    const owner = await t.call('PATCH', '/api/v1/org/members', { key: t.a.write.key, body: { member_id: ownerId, role: 'member' } })
    expect(owner.status).toBe(403)
    expect(owner.json.error).toMatch(/changed in the browser/)
    expect(
      (await t.call('PATCH', '/api/v1/org/members', { key: t.a.write.key, body: { member_id: carol.id, role: 'owner' } })).status,
    ).toBe(400)
    expect((await t.call('DELETE', `/api/v1/org/members?member_id=${ownerId}`, { key: t.a.write.key })).status).toBe(403)
    expect((await t.call('DELETE', `/api/v1/org/members?member_id=${carol.id}`, { key: t.a.write.key })).json).toEqual({
      deleted: true,
      kind: 'member',
      id: carol.id,
      keysRevoked: 0,
    })
    const dan = (await team()).invitations[0]
    expect((await t.call('DELETE', `/api/v1/org/members?invitation_id=${dan.id}`, { key: t.a.write.key })).json).toEqual({
      deleted: true,
      kind: 'invitation',
      id: dan.id,
      keysRevoked: 0,
    })
    expect(await team()).toEqual({ members: [expect.objectContaining({ id: ownerId })], invitations: [] })
    // a removed address may be invited again
    expect(
      (await t.call('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email: 'carol@example.com', role: 'member' } })).status,
    ).toBe(201)
    expect((await t.call('DELETE', `/api/v1/org/members?member_id=${carol.id}`, { key: t.a.write.key })).status).toBe(404)
  })

  const bad: [string, string, string, unknown, RegExp][] = [
    ['invalid address', 'POST', '', { email: 'nope', role: 'member' }, /email: must be an e-mail address/],
    ['owner role by invitation', 'POST', '', { email: 'x@example.com', role: 'owner' }, /role: must be admin or member/],
    ['unknown field', 'POST', '', { email: 'x@example.com', role: 'member', name: 'X' }, /unknown field "name"/],
    ['missing role', 'POST', '', { email: 'x@example.com' }, /role/],
    ['bad member id', 'PATCH', '', { member_id: 'abc', role: 'admin' }, /member_id: must be a UUID/],
    ['neither id', 'DELETE', '', undefined, /exactly one of member_id and invitation_id/],
    ['both ids', 'DELETE', `?member_id=${crypto.randomUUID()}&invitation_id=${crypto.randomUUID()}`, undefined, /exactly one/],
    ['bad invitation id', 'DELETE', '?invitation_id=1', undefined, /invitation_id: must be a UUID/],
  ]
  for (const [name, method, query, body, message] of bad) {
    it(`rejects ${name} with 400 and changes nothing`, async () => {
      const before = await team()
      const res = await t.call(method, `/api/v1/org/members${query}`, { key: t.a.write.key, body })
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(message)
      expect(await team()).toEqual(before)
    })
  }

  it('needs a write key to change, an organization-wide key, and keeps organizations apart', async () => {
    expect(
      (await t.call('POST', '/api/v1/org/members', { key: t.a.read.key, body: { email: 'r@example.com', role: 'member' } })).status,
    ).toBe(403)
    for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
      const res = await t.call(method, '/api/v1/org/members', {
        key: t.ingest.key,
        body: method === 'GET' || method === 'DELETE' ? undefined : { email: 'i@example.com', role: 'member', member_id: ownerId },
      })
      expect(res.status, method).toBe(403)
    }
    // org B's ids are unknown to org A's keys
    const bTeam = (await t.call('GET', '/api/v1/org/members', { key: t.b.read.key })).json
    const bInvitation = bTeam.invitations[0].id
    const bMember = await acceptInvitation(t.repositories, bInvitation, t.services.now())
    const before = (await t.call('GET', '/api/v1/org/members', { key: t.b.read.key })).json
    expect(
      (await t.call('PATCH', '/api/v1/org/members', { key: t.a.write.key, body: { member_id: bMember.id, role: 'member' } })).status,
    ).toBe(404)
    expect((await t.call('DELETE', `/api/v1/org/members?member_id=${bMember.id}`, { key: t.a.write.key })).status).toBe(404)
    const bPending = (
      await t.call('POST', '/api/v1/org/members', { key: t.b.write.key, body: { email: 'pending@example.org', role: 'member' } })
    ).json
    expect((await t.call('DELETE', `/api/v1/org/members?invitation_id=${bPending.id}`, { key: t.a.write.key })).status).toBe(404)
    const after = (await t.call('GET', '/api/v1/org/members', { key: t.b.read.key })).json
    expect(after.members).toEqual(before.members)
    expect(after.invitations.map((i: { id: string }) => i.id)).toEqual([bPending.id])
    expect(JSON.stringify(await team())).not.toContain('pending@example.org')
  })

  it('answers emailed: false when no mailer can send, and keeps the invitation', async () => {
    const mailless = client({ ...t.services, mailer: undefined })
    const res = await mailless('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email: 'quiet@example.com', role: 'member' } })
    expect(res.json).toMatchObject({ email: 'quiet@example.com', emailed: false })
    const failing = client({ ...t.services, mailer: { send: async () => Promise.reject(new Error('mail server down')) } })
    expect(
      (await failing('POST', '/api/v1/org/members', { key: t.a.write.key, body: { email: 'loud@example.com', role: 'member' } })).json
        .emailed,
    ).toBe(false)
    expect((await team()).invitations.map((i: { email: string }) => i.email)).toEqual(
      expect.arrayContaining(['quiet@example.com', 'loud@example.com']),
    )
  })
})
