import { expect } from 'vitest'
import { mintSignInLink } from '../lib/accounts/signin'
import type { Services } from '../lib/runtime/services'

type Send = (url: string, init: RequestInit) => Response | Promise<Response>

/**
 * A browser, as far as connecting Google needs one: one cookie jar for the service's origin (the
 * session, the connect's binding), forms posted from that origin, redirects left to the test.
 * Google's consent page (the fake's, which consents at once) is opened outside the jar.
 */
export class Browser {
  private readonly jar = new Map<string, string>()

  constructor(
    readonly origin: string,
    private readonly send: Send,
  ) {}

  /** Opens a path or URL of the service (a form, when given, is posted from `from`); the answer's cookies are kept. */
  async open(target: string, form?: Record<string, string>, from = this.origin): Promise<Response> {
    const url = new URL(target, this.origin)
    if (url.origin !== this.origin) throw new Error(`${url.href} is not on ${this.origin}`)
    const headers = new Headers()
    if (this.jar.size) headers.set('cookie', [...this.jar].map(([name, value]) => `${name}=${value}`).join('; '))
    if (form) {
      headers.set('content-type', 'application/x-www-form-urlencoded')
      headers.set('origin', from)
    }
    const res = await this.send(url.href, {
      method: form ? 'POST' : 'GET',
      headers,
      body: form ? new URLSearchParams(form).toString() : undefined,
      redirect: 'manual',
    })
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const at = pair.indexOf('=')
      const name = pair.slice(0, at)
      if (/;\s*max-age=0/i.test(line)) this.jar.delete(name)
      else this.jar.set(name, pair.slice(at + 1))
    }
    return res
  }

  has(cookie: string) {
    return this.jar.has(cookie)
  }
}

/** A browser signed in as `email`, through a sign-in link minted in the store (as `admin login` does). */
export async function signedIn(services: Pick<Services, 'repositories' | 'now'>, origin: string, send: Send, email: string) {
  const browser = new Browser(origin, send)
  const link = new URL(await mintSignInLink(services.repositories, email, origin, services.now()))
  const used = await browser.open('/app/signin/link', { token: link.searchParams.get('token')! })
  expect(used.status, 'signing in').toBe(303)
  return browser
}

const locationOf = (res: Response) => {
  const location = res.headers.get('location')
  if (!location) throw new Error(`no redirect: ${res.status}`)
  return location
}

/** Starts connecting the site in this browser ("Continue to Google"): the address of Google's consent page. */
export async function startConnect(browser: Browser, siteId: string) {
  const started = await browser.open(`/app/sites/${siteId}/settings/google/connect`, {})
  expect(started.status, 'starting the connect').toBe(303)
  return locationOf(started)
}

/** Google's consent page opened: the fake consents at once (as its `account`) and answers where it sends the browser back. */
export async function consent(googleUrl: string) {
  return locationOf(await fetch(googleUrl, { redirect: 'manual' }))
}

/** The whole flow of an owner or admin: start, consent, the callback, the confirmation page, and the confirmation. */
export async function connectGoogle(browser: Browser, siteId: string) {
  const back = await consent(await startConnect(browser, siteId))
  const callback = await browser.open(back)
  expect(callback.status, 'the callback').toBe(303)
  const confirmation = await browser.open(locationOf(callback))
  expect(confirmation.status, 'the confirmation page').toBe(200)
  const page = await confirmation.text()
  const confirmed = await browser.open(`/app/sites/${siteId}/settings/google/confirm`, {})
  expect(locationOf(confirmed)).toMatch(/google=connected/)
  /** `back`: the callback's URL as Google sent the browser to it. */
  return { page, back }
}
