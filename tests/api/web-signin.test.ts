import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { serverSecret } from '../../lib/accounts/signin'
import { createOrg } from '../../lib/accounts/admin'
import { acceptInvitationAs, addOwner, inviteMember } from '../../lib/accounts/members'
import { newSite } from '../../lib/sites/sites'
import { nodeMailer } from '../../lib/network/mail-node'
import { REDIS_URL, tempDir } from '../helpers'
import { smtpSink } from '../sinks'
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

  /** A fresh IPv6 /64 of its own for one test: the Redis limiter is shared by every test of the run. */
  const network = () => `2001:db8:${crypto.randomUUID().slice(0, 4)}:${crypto.randomUUID().slice(0, 4)}`
  /** The page without its per-answer nonces, which differ between any two answers. */
  const pageOf = async (response: Response) => (await response.text()).replace(/ nonce="[^"]*"/g, '')
  const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)

  it.each(kinds)(
    'holds one unused link per address: asking again sends nothing and answers the same, and never locks the owner out (%s)',
    async (kind) => {
      const t = await webHarness(kind)
      const owner = email()
      const asked = await t.request('/app/signin', { form: { email: owner }, headers: { 'x-forwarded-for': `${network()}::1` } })
      expect(asked.status).toBe(200)
      const page = await pageOf(asked)
      expect(t.sent).toHaveLength(1)
      // someone else asks for the owner's address, from many networks: the same answer, no e-mail
      for (let i = 0; i < 6; i++) {
        const again = await t.request('/app/signin', { form: { email: owner }, headers: { 'x-forwarded-for': `${network()}::1` } })
        expect(again.status).toBe(200)
        expect(await pageOf(again)).toBe(page)
      }
      expect(t.sent).toHaveLength(1)
      // the owner signs in with the link in their mailbox
      const token = new URL(t.linkIn(t.sent[0]), ORIGIN).searchParams.get('token')!
      const used = await t.request('/app/signin/link', { form: { token }, headers: { 'x-forwarded-for': `${network()}::1` } })
      expect(used.status).toBe(303)
      expect((await t.request('/app', { cookie: cookieOf(used) })).status).toBe(200)
      // used, it holds nothing: the next ask sends a new link
      expect((await t.request('/app/signin', { form: { email: owner }, headers: { 'x-forwarded-for': `${network()}::1` } })).status).toBe(
        200,
      )
      expect(t.sent).toHaveLength(2)
      // nor does an expired one
      t.advance(15 * 60_000 + 1000)
      expect((await t.request('/app/signin', { form: { email: owner }, headers: { 'x-forwarded-for': `${network()}::1` } })).status).toBe(
        200,
      )
      expect(t.sent).toHaveLength(3)
      expect(t.sent.map((m) => m.to)).toEqual([[owner], [owner], [owner]])
    },
  )

  it.each(kinds)('limits sign-in requests per client, an IPv6 client by its /64: 5 in 15 minutes, then 429 (%s)', async (kind) => {
    const t = await webHarness(kind)
    const client = network()
    // five addresses of the same /64, each asking for another person
    for (let i = 1; i <= 5; i++)
      expect((await t.request('/app/signin', { form: { email: email() }, headers: { 'x-forwarded-for': `${client}::${i}` } })).status).toBe(
        200,
      )
    expect(t.sent).toHaveLength(5)
    const refused = await t.request('/app/signin', { form: { email: email() }, headers: { 'x-forwarded-for': `${client}:ffff::99` } })
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await refused.text()).toContain('too many sign-in links asked for from this network address')
    expect(t.sent).toHaveLength(5)
    // another client is not held back by that one
    expect((await t.request('/app/signin', { form: { email: email() }, headers: { 'x-forwarded-for': `${network()}::1` } })).status).toBe(
      200,
    )
    expect(t.sent).toHaveLength(6)
    if (kind === 'embedded') {
      // the memory limiter follows the harness's clock: two windows later the client asks again
      t.advance(30 * 60_000)
      expect((await t.request('/app/signin', { form: { email: email() }, headers: { 'x-forwarded-for': `${client}::1` } })).status).toBe(
        200,
      )
    }
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

describe('where signing in lands', () => {
  it('on the dashboard last viewed in this browser, and on the list before any or once that site is out of reach', async () => {
    const t = await webHarness()
    const address = email()
    const now = t.services.now()
    const org = await createOrg(t.services.repositories, 'Landing', now)
    await addOwner(t.services.repositories, org.id, address, now)
    const first = newSite({ domain: 'first.landing.test', timezone: 'UTC' }, org.id, now)
    await t.services.repositories.sites.create(first)
    /** Signs in and answers where the link sends the browser; `cookies` are the browser's others. */
    const landing = async (cookies = '') => {
      await t.request('/app/signin', { form: { email: address } })
      const token = new URL(t.linkIn(t.sent.at(-1)!), ORIGIN).searchParams.get('token')!
      const used = await t.request('/app/signin/link', { form: { token }, cookie: cookies })
      expect(used.status).toBe(303)
      return { location: used.headers.get('location'), cookie: cookieOf(used) }
    }
    const second = newSite({ domain: 'second.landing.test', timezone: 'UTC' }, org.id, now)
    await t.services.repositories.sites.create(second)
    const { location, cookie } = await landing()
    expect(location).toBe('/app')
    // the dashboard viewed last in this browser
    const viewed = await t.request(`/app/sites/${second.id}`, { cookie })
    expect(viewed.status).toBe(200)
    const last = viewed.headers.get('set-cookie')!
    expect(last).toMatch(new RegExp(`^last_site=${second.id};`))
    expect(last).toContain('HttpOnly')
    expect((await landing(last.split(';')[0])).location).toBe(`/app/sites/${second.id}`)
    // a site of an organization the person is not in is never a landing
    const other = await createOrg(t.services.repositories, 'Other', now)
    const foreign = newSite({ domain: 'foreign.landing.test', timezone: 'UTC' }, other.id, now)
    await t.services.repositories.sites.create(foreign)
    expect((await landing(`last_site=${foreign.id}`)).location).toBe('/app')
  })

  it('on the only site the member sees, without a last viewed one; on the list with two sites or an invitation waiting', async () => {
    const t = await webHarness()
    const address = email()
    const now = t.services.now()
    const landing = async (cookies = '') => {
      // past the 5 links a client may ask for in 15 minutes
      t.advance(5 * 60_000)
      await t.request('/app/signin', { form: { email: address } })
      const token = new URL(t.linkIn(t.sent.at(-1)!), ORIGIN).searchParams.get('token')!
      const used = await t.request('/app/signin/link', { form: { token }, cookie: cookies })
      expect(used.status).toBe(303)
      return used.headers.get('location')
    }
    // no organization, then one without a site: the list
    expect(await landing()).toBe('/app')
    const org = await createOrg(t.services.repositories, 'Only', now)
    await addOwner(t.services.repositories, org.id, address, now)
    expect(await landing()).toBe('/app')
    // one site: its dashboard
    const only = newSite({ domain: 'only.landing.test', timezone: 'UTC' }, org.id, now)
    await t.services.repositories.sites.create(only)
    expect(await landing()).toBe(`/app/sites/${only.id}`)
    // a last viewed site out of reach does not stop it
    const stranger = await createOrg(t.services.repositories, 'Stranger', now)
    const foreign = newSite({ domain: 'foreign.only.test', timezone: 'UTC' }, stranger.id, now)
    await t.services.repositories.sites.create(foreign)
    expect(await landing(`last_site=${foreign.id}`)).toBe(`/app/sites/${only.id}`)
    // an invitation waits on the list: the list
    const inviting = await createOrg(t.services.repositories, 'Inviting', now)
    const invitation = await inviteMember(t.services, inviting.id, { email: address, role: 'member' })
    expect(await landing()).toBe('/app')
    // accepted, and a second site among the organizations: the list
    await acceptInvitationAs(t.services.repositories, invitation.id, address, now)
    expect(await landing()).toBe(`/app/sites/${only.id}`)
    await t.services.repositories.sites.create(newSite({ domain: 'second.only.test', timezone: 'UTC' }, inviting.id, now))
    expect(await landing()).toBe('/app')
  })
})

/** The parts of a multipart message: each part's headers (lower-case names) and body, undecoded. */
function mimeParts(raw: string) {
  const boundary = /boundary="([^"]+)"/.exec(raw)?.[1]
  if (!boundary) throw new Error(`not a multipart message:\n${raw}`)
  return raw
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const [head, ...body] = part.replace(/^\r?\n/, '').split(/\r?\n\r?\n/)
      const headers = Object.fromEntries(
        head.split(/\r?\n/).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      )
      return { headers, body: body.join('\n\n').replace(/\r?\n$/, '') }
    })
}
const quotedPrintable = (text: string) =>
  text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex) => String.fromCharCode(Number.parseInt(hex, 16)))

/**
 * The sign-in e-mail as it leaves the server: HTML and plain text, the text part holding the link
 * on a line of its own and unencoded (no quoted-printable soft line break or =3D in it), the very
 * link the HTML part's button opens, which signs in.
 */
async function checkSignInMessage(t: Awaited<ReturnType<typeof webHarness>>, raw: string) {
  expect(raw).toMatch(/^Subject: Your sign-in link$/m)
  expect(raw).toMatch(/^Content-Type: multipart\/alternative;/m)
  const parts = mimeParts(raw)
  const text = parts.find((p) => p.headers['content-type'].startsWith('text/plain'))!
  const html = parts.find((p) => p.headers['content-type'].startsWith('text/html'))!
  expect(text.headers['content-transfer-encoding']).toBe('7bit')
  const link = /<a href="([^"]+)"/.exec(quotedPrintable(html.body))![1]
  expect(link).toMatch(/^https:\/\/api\.test\/app\/signin\/link\?token=[A-Za-z0-9]{43}$/)
  // longer than the 76 characters after which quoted-printable would have cut it
  expect(link.length).toBeGreaterThan(76)
  expect(text.body.split(/\r?\n/)).toContain(link)
  const token = new URL(link).searchParams.get('token')!
  const used = await t.request('/app/signin/link', { form: { token } })
  expect(used.status).toBe(303)
}

describe('the sign-in e-mail', () => {
  it('over SMTP: HTML and a plain-text part whose link is a whole line of its own', async () => {
    const sink = await smtpSink()
    try {
      const t = await webHarness('embedded', {
        mailer: nodeMailer({ smtpUrl: sink.url, dataDir: tempDir('signin-smtp'), from: 'no-reply@api.test', log: () => {} }),
      })
      const address = email()
      const asked = await t.request('/app/signin', { form: { email: address } })
      expect(asked.status).toBe(200)
      const page = await asked.text()
      expect(page).toContain('<h1>Check your inbox</h1>')
      expect(page).not.toContain('outbox')
      expect(sink.received).toHaveLength(1)
      expect(sink.received[0].to).toEqual([address])
      await checkSignInMessage(t, sink.received[0].raw)
    } finally {
      await sink.close()
    }
  })

  it('without a mail server: the page says the message is in the outbox folder, where the .eml holds the link whole', async () => {
    const dataDir = tempDir('signin-outbox')
    const logged: string[] = []
    const mailer = nodeMailer({ dataDir, from: 'no-reply@api.test', log: (line) => logged.push(line) })
    const t = await webHarness('embedded', { mailer })
    const address = email()
    const asked = await t.request('/app/signin', { form: { email: address } })
    expect(asked.status).toBe(200)
    const page = await asked.text()
    expect(page).toContain('<h1>Check the outbox</h1>')
    const outbox = join(dataDir, 'outbox')
    // the folder is named within the data directory: the server's own paths are not shown to whoever uses the form
    expect(page).toContain('<code>DATA_DIR/outbox</code>')
    expect(page).not.toContain(dataDir)
    const files = readdirSync(outbox)
    expect(files).toHaveLength(1)
    expect(logged.join('\n')).toContain(join(outbox, files[0]))
    await checkSignInMessage(t, readFileSync(join(outbox, files[0]), 'utf8'))
  })
})
