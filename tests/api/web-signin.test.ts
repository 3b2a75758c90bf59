import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { serverSecret } from '../../lib/accounts/signin'
import { REDIS_URL } from '../helpers'
import { ORIGIN, cookieOf, email, webHarness } from './web-harness'

describe('signing in to the web application by e-mail link', () => {
  it('sends a one-time link that opens a session in an HttpOnly, SameSite=Lax, Secure cookie', async () => {
    const t = await webHarness()
    const address = email()
    expect((await t.request('/app')).headers.get('location')).toBe('/app/signin')
    const asked = await t.request('/app/signin', { form: { email: address.toUpperCase() } })
    expect(asked.status).toBe(200)
    expect(await asked.text()).toContain(address)
    expect(t.sent).toHaveLength(1)
    expect(t.sent[0].to).toEqual([address])
    const link = t.linkIn(t.sent[0])

    // opening the link asks for a click and does not use it up
    for (let i = 0; i < 2; i++) {
      const confirm = await t.request(link)
      expect(confirm.status).toBe(200)
      expect(await confirm.text()).toContain(address)
    }
    const token = new URL(link, ORIGIN).searchParams.get('token')!
    const used = await t.request('/app/signin/link', { form: { token } })
    expect(used.status).toBe(303)
    expect(used.headers.get('location')).toBe('/app')
    const setCookie = used.headers.get('set-cookie')!
    expect(setCookie).toMatch(/^session=[^;]+;/)
    expect(setCookie).toContain('HttpOnly')
    expect(setCookie).toContain('SameSite=Lax')
    expect(setCookie).toContain('Secure')
    const home = await t.request('/app', { cookie: cookieOf(used) })
    expect(home.status).toBe(200)
    expect(await home.text()).toContain(address)

    // the link worked once
    const again = await t.request('/app/signin/link', { form: { token } })
    expect(again.status).toBe(400)
    expect(await again.text()).toContain('already used or has expired')
    expect((await t.request(link)).status).toBe(400)
  })

  it('refuses a link older than 15 minutes', async () => {
    const t = await webHarness()
    await t.request('/app/signin', { form: { email: email() } })
    const token = new URL(t.linkIn(t.sent[0]), ORIGIN).searchParams.get('token')!
    t.advance(15 * 60_000 + 1000)
    const used = await t.request('/app/signin/link', { form: { token } })
    expect(used.status).toBe(400)
    expect(used.headers.get('set-cookie')).toBeNull()
  })

  it('takes no forged, unknown or differently signed session cookie', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const [name, value] = cookie.split('=')
    const [id, signature] = decodeURIComponent(value).split('.')
    const forged = [
      `${name}=${encodeURIComponent(`${id}x.${signature}`)}`,
      `${name}=${encodeURIComponent(`${id}.${signature.slice(1)}A`)}`,
      `${name}=${id}`,
      `${name}=${encodeURIComponent(`${'a'.repeat(32)}.${signature}`)}`,
    ]
    for (const f of forged) {
      const answer = await t.request('/app', { cookie: f })
      expect(answer.status, f).toBe(303)
      expect(answer.headers.get('location')).toBe('/app/signin')
    }
    expect((await t.request('/app', { cookie })).status).toBe(200)
  })

  it('refuses form posts from another site, or with no origin at all', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    for (const headers of [{ origin: 'https://evil.example' }, { origin: 'null' }, {}] as Record<string, string>[]) {
      const answer = await t.request('/app/signout', {
        method: 'POST',
        cookie,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: '',
      })
      expect(answer.status).toBe(403)
      expect(await answer.text()).toContain('another site')
    }
    const before = t.sent.length
    const asked = await t.request('/app/signin', { form: { email: email() }, headers: { origin: 'https://evil.example' } })
    expect(asked.status).toBe(403)
    expect(t.sent.length).toBe(before)
    // still signed in
    expect((await t.request('/app', { cookie })).status).toBe(200)
  })

  it('names a malformed address and sends nothing', async () => {
    const t = await webHarness()
    const answer = await t.request('/app/signin', { form: { email: 'not an address' } })
    expect(answer.status).toBe(400)
    expect(await answer.text()).toContain('email: must be an e-mail address')
    expect(t.sent).toHaveLength(0)
  })

  it('lists sessions, ends another one, and signs out', async () => {
    const t = await webHarness()
    const address = email()
    const first = await t.signIn(address, 'first browser')
    const second = await t.signIn(address, 'second browser')
    const list = await (await t.request('/app/sessions', { cookie: first })).text()
    expect(list).toContain('first browser')
    expect(list).toContain('second browser')
    const ends = [...list.matchAll(/action="\/app\/sessions\/([^/]+)\/end"/g)].map((m) => m[1])
    expect(ends).toHaveLength(1)
    // someone else's session is not found
    const stranger = await t.signIn(email())
    expect((await t.request(`/app/sessions/${ends[0]}/end`, { form: {}, cookie: stranger })).status).toBe(404)
    expect((await t.request(`/app/sessions/${ends[0]}/end`, { form: {}, cookie: first })).status).toBe(303)
    expect((await t.request('/app', { cookie: second })).status).toBe(303)
    expect((await t.request('/app', { cookie: first })).status).toBe(200)
    const out = await t.request('/app/signout', { form: {}, cookie: first })
    expect(out.status).toBe(303)
    expect(out.headers.get('set-cookie')).toMatch(/^session=;/)
    // the old cookie no longer signs anyone in
    expect((await t.request('/app', { cookie: first })).status).toBe(303)
  })

  it.skipIf(!REDIS_URL)('rate-limits links per address and per client address, shared through Redis', async () => {
    const t = await webHarness('redis')
    const client = `2001:db8::${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}`
    const address = email()
    const statuses: number[] = []
    for (let i = 0; i < 6; i++)
      statuses.push((await t.request('/app/signin', { form: { email: address }, headers: { 'x-forwarded-for': client } })).status)
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
    const refused = await t.request('/app/signin', { form: { email: address }, headers: { 'x-forwarded-for': client } })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await refused.text()).toContain('this address')
    expect(t.sent).toHaveLength(5)
    // every request from the client counts, the refused one too: 20 in all, then refused
    for (let i = 0; i < 13; i++)
      expect((await t.request('/app/signin', { form: { email: email() }, headers: { 'x-forwarded-for': client } })).status).toBe(200)
    const fromClient = await t.request('/app/signin', { form: { email: email() }, headers: { 'x-forwarded-for': client } })
    expect(fromClient.status).toBe(429)
    expect(await fromClient.text()).toContain('network address')
  })

  it('keeps one generated server secret in the key/value store, so sessions survive a restart', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const secret = await serverSecret(t.services)
    expect(secret.length).toBeGreaterThanOrEqual(32)
    // a second process over the same store: the same secret, the same sessions
    const restarted = createApp({ ...t.services, repositories: { ...t.services.repositories } })
    expect(await serverSecret({ ...t.services, repositories: { ...t.services.repositories } })).toBe(secret)
    expect((await restarted.request(`${ORIGIN}/app`, { headers: { cookie } })).status).toBe(200)
    // a configured secret signs instead: cookies signed with the generated one no longer count
    const configured = createApp({ ...t.services, serverSecret: 'c'.repeat(40) })
    expect((await configured.request(`${ORIGIN}/app`, { headers: { cookie } })).status).toBe(303)
  })
})
