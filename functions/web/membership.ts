import type { Context, MiddlewareHandler } from 'hono'
import { membershipIn } from '../../lib/accounts/members'
import { ApiError } from '../../lib/core/errors'
import type { Services } from '../../lib/runtime/services'
import { ADMINS, type Caller } from './api'
import type { Membership, WebEnv } from './session'

/**
 * The signed-in person's membership of the site's organization, or the same 404 as for a site
 * that does not exist: another organization's site is not told apart from none.
 */
export async function siteMembership(services: Services, email: string, siteId: string): Promise<Membership> {
  const site = await services.sites.findFresh(siteId)
  if (!site) throw new ApiError(404, 'site not found')
  const { org, member } = await membershipIn(services.repositories, site.orgId, email).catch((err) => {
    throw err instanceof ApiError && err.status === 404 ? new ApiError(404, 'site not found') : err
  })
  return { org, member, canWrite: ADMINS.includes(member.role), site }
}

/**
 * The one membership check of the pages under /orgs/{org} and /sites/{site}: it runs before them
 * and sets `membership`, or answers 404 for an organization or site the person is no member of.
 */
export function requireMembership(services: Services): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const email = c.get('session')!.email
    const siteId = c.req.param('siteId')
    if (siteId !== undefined) c.set('membership', await siteMembership(services, email, siteId))
    else {
      const { org, member } = await membershipIn(services.repositories, c.req.param('orgId') ?? '', email)
      c.set('membership', { org, member, canWrite: ADMINS.includes(member.role) })
    }
    await next()
  }
}

/** The member and the site of a page under /sites/{site}, as the API's caller. */
export function memberOf(c: Context<WebEnv>): Caller & Membership & { site: NonNullable<Membership['site']> } {
  const membership = c.get('membership')
  if (!membership.site) throw new Error('no site in this route: memberOf is for pages under /sites/{site}')
  return { ...membership, site: membership.site }
}
