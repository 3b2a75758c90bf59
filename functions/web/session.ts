import type { Context, MiddlewareHandler } from 'hono'
import { deleteCookie, getSignedCookie, setSignedCookie } from 'hono/cookie'
import { SESSION_TTL_SECONDS, type SessionRecord, findSession, serverSecret } from '../../lib/accounts/signin'
import type { Org } from '../../lib/accounts/org-record'
import type { Member } from '../../lib/accounts/team'
import type { Services } from '../../lib/runtime/services'
import type { Site } from '../../lib/sites/sites'

export const SESSION_COOKIE = 'session'

/** The signed-in person's place in the organization a page under /orgs/{org} or /sites/{site} is of (membership.ts). */
export interface Membership {
  org: Org
  member: Member
  /** An owner or admin: changes settings. */
  canWrite: boolean
  /** The site of a page under /sites/{site}. */
  site?: Site
}

export type WebEnv = { Variables: { session: SessionRecord | null; membership: Membership } }

/** Over https the cookie is Secure; a local http server (the embedded home) cannot keep a Secure cookie. */
export const isHttps = (c: Context, services: Services) => (services.publicUrl ?? c.req.url).startsWith('https:')

/** Reads the signed session cookie: a forged or unknown one is no session at all. */
export function readSession(services: Services): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const id = await getSignedCookie(c, await serverSecret(services), SESSION_COOKIE)
    c.set('session', typeof id === 'string' && id ? await findSession(services.repositories, id, services.now()) : null)
    await next()
  }
}

export async function startSessionCookie(c: Context, services: Services, session: SessionRecord) {
  await setSignedCookie(c, SESSION_COOKIE, session.id, await serverSecret(services), {
    httpOnly: true,
    sameSite: 'Lax',
    secure: isHttps(c, services),
    path: '/',
    maxAge: SESSION_TTL_SECONDS,
  })
}

export function endSessionCookie(c: Context, services: Services) {
  deleteCookie(c, SESSION_COOKIE, { path: '/', secure: isHttps(c, services) })
}
