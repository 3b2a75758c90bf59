import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { readMail } from '../mail'
import { smtpSink } from '../sinks'
import { type RunningServer, demoKeys, startServer } from './server-process'

/** Where the requests below say they are sent: any client can put any Host in a request. */
const ATTACKER = 'attacker.example:8080'

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: string }

/** One request to the server as curl makes it, with the Host header it names rather than the server's own. */
function send(base: string, method: string, path: string, headers: Record<string, string>, body = ''): Promise<Answer> {
  const url = new URL(path, base)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: url.pathname + url.search,
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

describe('links that leave the quick-start server (no PUBLIC_URL) are built on the address it listens on', () => {
  let server: RunningServer
  let mail: Awaited<ReturnType<typeof smtpSink>>
  let demo: ReturnType<typeof demoKeys>
  const form = { 'content-type': 'application/x-www-form-urlencoded', host: ATTACKER, origin: `http://${ATTACKER}` }
  /** The one message to `address`, every part decoded (tests/mail.ts): its headers, text and HTML. */
  const mailTo = async (address: string) => {
    const found = mail.received.filter((m) => m.to.includes(address))
    expect(found, address).toHaveLength(1)
    return (await readMail(found[0].raw)).all
  }

  beforeAll(async () => {
    mail = await smtpSink()
    server = await startServer({
      DATA_DIR: tempDir('configured-origin'),
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      SKIP_DEMO_TRAFFIC: '1',
      SMTP_URL: mail.url,
      PUBLIC_URL: '',
    })
    demo = demoKeys(server.output())
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await mail?.close()
  })

  it('mails the sign-in link, the invitations, and shows the shared link, on its own address whatever the Host', async () => {
    // curl -X POST $B/app/signin -H 'Host: attacker.example:8080' -H 'Origin: http://attacker.example:8080' -d email=owner@demo.example.com
    const asked = await send(server.url, 'POST', '/app/signin', form, 'email=owner%40demo.example.com')
    expect(asked.status).toBe(200)
    const signIn = await mailTo('owner@demo.example.com')
    const link = /(http:\/\/\S+\/app\/signin\/link\?token=[A-Za-z0-9]+)/.exec(signIn)?.[1]
    expect(link?.startsWith(`${server.url}/app/signin/link?token=`), signIn).toBe(true)
    expect(signIn).not.toContain('attacker')

    // the owner signs in with it, and invites a teammate through a request that names the same Host
    const token = new URL(link!).searchParams.get('token')!
    const used = await send(
      server.url,
      'POST',
      '/app/signin/link',
      { ...form, host: new URL(server.url).host, origin: server.url },
      `token=${token}`,
    )
    expect(used.status).toBe(303)
    const cookie = String(used.headers['set-cookie']).split(';')[0]
    const invitee = `mate-${crypto.randomUUID().slice(0, 8)}@example.com`
    const invited = await send(
      server.url,
      'POST',
      `/app/orgs/${demo.org}/team/invite`,
      { ...form, cookie },
      `email=${encodeURIComponent(invitee)}&role=member`,
    )
    expect(invited.status).toBe(303)
    const invitation = await mailTo(invitee)
    expect(invitation).toContain(`${server.url}/app`)
    expect(invitation).not.toContain('attacker')

    // the API's invitation too
    const byKey = `key-mate-${crypto.randomUUID().slice(0, 8)}@example.com`
    const api = { authorization: `Bearer ${demo.writeKey}`, 'content-type': 'application/json', host: ATTACKER }
    const invitedByKey = await send(server.url, 'POST', '/api/v1/org/members', api, JSON.stringify({ email: byKey, role: 'member' }))
    expect(invitedByKey.status).toBe(201)
    expect(await mailTo(byKey)).toContain(`${server.url}/app`)
    expect(await mailTo(byKey)).not.toContain('attacker')

    // the shared link, shown once to be copied, on the page and in the API's answer
    const sharing = await send(server.url, 'POST', `/app/sites/${demo.site}/share`, { ...form, cookie }, 'shareLevel=link')
    // back to the page, or that page with the first link made at once
    expect([201, 303]).toContain(sharing.status)
    expect(sharing.body).not.toContain('attacker')
    const made = await send(server.url, 'POST', `/app/sites/${demo.site}/share/link`, { ...form, cookie })
    expect(made.status).toBe(201)
    expect(made.body).toContain(`${server.url}/share/${demo.site}?auth=`)
    expect(made.body).not.toContain('attacker')
    const madeByKey = await send(server.url, 'POST', `/api/v1/sites/${demo.site}/share-link`, api)
    expect(madeByKey.status).toBe(201)
    expect(JSON.parse(madeByKey.body).url.startsWith(`${server.url}/share/${demo.site}?auth=`)).toBe(true)
  })
})
