import { expect } from 'vitest'
import { createApp } from '../../functions/app'
import type { MailMessage } from '../../lib/network/mail'
import type { Services } from '../../lib/runtime/services'
import { type KvKind, testServices } from '../helpers'

export const ORIGIN = 'https://api.test'

/** The web application on real stores, with a mailer that keeps what it sends and the clock, which the test can move forward. */
export async function webHarness(kv: KvKind = 'embedded', extra: Partial<Services> = {}) {
  // the real clock, moved forward by what the test advances
  let offset = 0
  const sent: MailMessage[] = []
  const services = {
    ...(await testServices({ kv, now: () => new Date(Date.now() + offset) })),
    mailer: { send: async (m: MailMessage) => void sent.push(m) },
    ...extra,
  }
  const app = createApp(services)
  const request = (path: string, init: RequestInit & { cookie?: string; form?: Record<string, string> } = {}) => {
    const headers = new Headers(init.headers)
    if (init.cookie) headers.set('cookie', init.cookie)
    if (init.form) {
      headers.set('content-type', 'application/x-www-form-urlencoded')
      if (!headers.has('origin')) headers.set('origin', ORIGIN)
    }
    return app.request(`${ORIGIN}${path}`, {
      ...init,
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      body: init.form ? new URLSearchParams(init.form).toString() : init.body,
    })
  }
  const linkIn = (message: MailMessage) => {
    const match = /https:\/\/api\.test(\/app\/signin\/link\?token=\S+)/.exec(message.text)
    if (!match) throw new Error(`no link in ${message.text}`)
    return match[1]
  }
  /** Asks for a link for `email` and follows it to a session; the session cookie. */
  const signIn = async (email: string, userAgent = 'test browser') => {
    const asked = await request('/app/signin', { form: { email } })
    expect(asked.status).toBe(200)
    const link = linkIn(sent.at(-1)!)
    const token = new URL(link, ORIGIN).searchParams.get('token')!
    const used = await request('/app/signin/link', { form: { token }, headers: { 'user-agent': userAgent } })
    expect(used.status).toBe(303)
    return cookieOf(used)
  }
  return { services, request, sent, linkIn, signIn, advance: (ms: number) => (offset += ms) }
}

export const cookieOf = (response: Response) => {
  const header = response.headers.get('set-cookie') ?? ''
  return header.split(';')[0]
}
export const email = () => `person-${crypto.randomUUID().slice(0, 8)}@example.com`
