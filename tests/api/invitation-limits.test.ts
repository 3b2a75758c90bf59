import { describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { LIMITS } from '../../lib/accounts/ratelimit'
import type { MailMessage } from '../../lib/network/mail'
import { harness } from '../helpers'

/** Invitations send mail to addresses the organization does not own: bounded, one line of its name, one mail while one is open. */
describe('invitations cannot be turned into a mail relay', () => {
  const setup = async () => {
    const sent: MailMessage[] = []
    const t = await harness({ with: { mailer: { send: async (message) => void sent.push(message) } } })
    const invite = (key: string, email: string) => t.call('POST', '/api/v1/org/members', { key, body: { email, role: 'member' } })
    const cancel = async (key: string, email: string) => {
      const { invitations } = (await t.call('GET', '/api/v1/org/members', { key })).json
      const id = invitations.find((i: { email: string }) => i.email === email).id
      expect((await t.call('DELETE', `/api/v1/org/members?invitation_id=${id}`, { key })).status).toBe(200)
    }
    return { t, sent, invite, cancel }
  }

  it('an invite-and-cancel loop sends one address at most its daily budget of mails, then 429 with Retry-After', async () => {
    const { t, sent, invite, cancel } = await setup()
    const max = LIMITS.invitationsAddress.max
    for (let i = 0; i < max; i++) {
      expect((await invite(t.a.write.key, 'victim@example.com')).status).toBe(201)
      await cancel(t.a.write.key, 'victim@example.com')
    }
    const refused = await invite(t.a.write.key, 'victim@example.com')
    expect(refused.status).toBe(429)
    expect(refused.json.error).toMatch(new RegExp(`^invitations: at most ${max} a day that victim@example.com is sent`))
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(sent.filter((m) => m.to.includes('victim@example.com'))).toHaveLength(max)
    // another organization cannot spend more of it either
    expect((await invite(t.b.write.key, 'victim@example.com')).status).toBe(429)
    // another address is still served
    expect((await invite(t.a.write.key, 'someone-else@example.com')).status).toBe(201)
  })

  it('an organization sends at most its daily budget of invitations', async () => {
    const { t, invite } = await setup()
    const max = LIMITS.invitationsOrg.max
    const statuses: number[] = []
    for (let i = 0; i <= max; i++) statuses.push((await invite(t.b.write.key, `person${i}@example.com`)).status)
    expect(statuses.filter((s) => s === 201)).toHaveLength(max)
    expect(statuses.at(-1)).toBe(429)
  })

  it('an address with an invitation open is not mailed a second one, from any organization, and that spends none of its budget', async () => {
    const { t, sent, invite } = await setup()
    expect((await invite(t.a.write.key, 'popular@example.com')).json.emailed).toBe(true)
    const second = await invite(t.b.write.key, 'popular@example.com')
    expect(second.status).toBe(201)
    expect(second.json.emailed).toBe(false)
    expect(sent.filter((m) => m.to.includes('popular@example.com'))).toHaveLength(1)
    // more organizations inviting while one invitation is open: recorded, not mailed, within no budget of the address
    for (let i = 0; i < LIMITS.invitationsAddress.max + 1; i++) {
      const org = await createOrg(t.repositories, `Org ${i}`, t.services.now())
      const key = await createApiKey(t.repositories, { orgId: org.id, name: 'w', scope: 'write' }, t.services.now())
      expect((await invite(key.key, 'popular@example.com')).status).toBe(201)
    }
    expect(sent.filter((m) => m.to.includes('popular@example.com'))).toHaveLength(1)
  })

  it("an organization's name is one line: a name with a line break is refused, and an old one is mailed as one line", async () => {
    const { t, sent, invite } = await setup()
    await expect(createOrg(t.repositories, 'Acme\nClick http://evil.example to claim', t.services.now())).rejects.toMatchObject({
      status: 400,
      message: 'name: one line, without control characters',
    })
    // stored before names were checked
    const org = await createOrg(t.repositories, 'Old name', t.services.now())
    await t.repositories.orgs.create({ ...org, name: 'Old\r\nBcc: everyone@example.com' })
    const key = await createApiKey(t.repositories, { orgId: org.id, name: 'w', scope: 'write' }, t.services.now())
    expect((await invite(key.key, 'newline@example.com')).status).toBe(201)
    const mail = sent.find((m) => m.to.includes('newline@example.com'))!
    expect(mail.subject).toBe('You are invited to join Old Bcc: everyone@example.com')
    expect(mail.text.split('\n')[0]).toBe('You have been invited to join Old Bcc: everyone@example.com as a member.')
  })

  it("an invitation's e-mail links only to the configured origin, never to a request's Host", async () => {
    const sent: MailMessage[] = []
    const mailer = { send: async (message: MailMessage) => void sent.push(message) }
    const invite = (t: Awaited<ReturnType<typeof harness>>, email: string) =>
      t.app.request('http://attacker.example:8080/api/v1/org/members', {
        method: 'POST',
        headers: { authorization: `Bearer ${t.a.write.key}`, 'content-type': 'application/json', host: 'attacker.example:8080' },
        body: JSON.stringify({ email, role: 'member' }),
      })
    const configured = await harness({ with: { mailer } })
    expect((await invite(configured, 'configured@example.com')).status).toBe(201)
    const mail = sent.find((m) => m.to.includes('configured@example.com'))!
    expect(mail.text).toContain('https://api.test/app')
    expect(mail.text).not.toContain('attacker.example')
    // a Workers deployment without PUBLIC_URL has no configured origin: the e-mail carries no link at all
    const unset = await harness({ with: { mailer, publicUrl: undefined } })
    expect((await invite(unset, 'unset@example.com')).status).toBe(201)
    const bare = sent.find((m) => m.to.includes('unset@example.com'))!
    expect(bare.text).toContain('Sign in with this address to accept it.')
    expect(bare.text).not.toMatch(/https?:\/\//)
  })
})
