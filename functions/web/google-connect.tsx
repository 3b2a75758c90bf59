import type { Context, Hono } from 'hono'
import { deleteCookie, setCookie } from 'hono/cookie'
import { CONNECT_COOKIE as COOKIE, connectBinding } from '../google-binding'
import { requireRole } from '../../lib/accounts/members'
import {
  STATE_SECONDS,
  cancelGoogleConnect,
  confirmGoogleConnect,
  connectPagePath,
  googleSettingsPath,
  pendingGoogleGrant,
  startGoogleConnect,
} from '../../lib/integrations/google/connect'
import { GA4_SCOPE } from '../../lib/integrations/google/oauth'
import { SEARCH_CONSOLE_SCOPE } from '../../lib/integrations/search-console/connector'
import { SEARCH_CONSOLE_CONNECT_SCOPE } from '../../lib/integrations/search-console/connection'
import type { Services } from '../../lib/runtime/services'
import { ADMINS } from './api'
import { Page } from './layout'
import { memberOf } from './membership'
import { type WebEnv, isHttps } from './session'

/**
 * Connecting a site to Google in the browser of an owner or admin: the page the API's connectUrl
 * opens, the start (a secret kept in this browser's cookie, then Google's consent page), and the
 * confirmation of the Google account once Google sent the browser back through the callback.
 */

export function googleConnectRoutes(web: Hono<WebEnv>, services: Services) {
  /** The site, for an owner or admin of its organization: 404 for anyone else's site, 403 for a plain member. */
  const adminSite = (c: Context<WebEnv>) => {
    const { site, member } = memberOf(c)
    requireRole(member, ADMINS, 'connect Google')
    return { site, email: c.get('session')!.email }
  }
  const forget = (c: Context<WebEnv>) => deleteCookie(c, COOKIE, { path: '/', secure: isHttps(c, services) })

  web.get('/sites/:siteId/settings/google/connect', async (c) => {
    const { site, email } = adminSite(c)
    return c.html(
      <Page title={`Connect ${site.domain} to Google`} email={email}>
        <form method="post" action={connectPagePath(site.id)} class="card narrow">
          <h1>Connect {site.domain} to Google</h1>
          <p>
            Google asks which account to connect. Nothing is stored until you come back here and confirm that account for{' '}
            <strong>{site.domain}</strong>.
          </p>
          <button type="submit">Continue to Google</button>
        </form>
      </Page>,
    )
  })

  web.post('/sites/:siteId/settings/google/connect', async (c) => {
    const { site, email } = adminSite(c)
    const { url, binding } = await startGoogleConnect(
      services,
      site,
      // the callback's own origin (its redirect_uri at the token exchange must be this one); Google sends the browser only to registered ones
      services.publicUrl ?? new URL(c.req.url).origin,
      // where this server reads Search Console, one connection asks for both
      services.searchConsole ? SEARCH_CONSOLE_CONNECT_SCOPE : GA4_SCOPE,
      email,
    )
    // the state's 15 minutes, then the held grant's 15 until it is confirmed
    setCookie(c, COOKIE, binding, { httpOnly: true, sameSite: 'Lax', secure: isHttps(c, services), path: '/', maxAge: 2 * STATE_SECONDS })
    return c.redirect(url, 303)
  })

  web.get('/sites/:siteId/settings/google/confirm', async (c) => {
    const { site, email } = adminSite(c)
    const pending = await pendingGoogleGrant(services, site, connectBinding(c.req.raw), email)
    if (!pending) return c.redirect(googleSettingsPath(site.id, 'expired'), 303)
    const reads = pending.scopes.includes(SEARCH_CONSOLE_SCOPE) ? 'Google Analytics and Search Console' : 'Google Analytics'
    return c.html(
      <Page title="Confirm the Google account" email={email}>
        <div class="card narrow">
          <h1>Connect this Google account?</h1>
          <p>
            <strong id="google-account">{pending.account ?? 'A Google account that did not give its address'}</strong> is about to be
            connected to <strong id="google-site">{site.domain}</strong>, which will read its {reads} data.
          </p>
          <p class="muted">Connect it only if you chose this account just now, for this site.</p>
          <form method="post" action={`/app/sites/${site.id}/settings/google/confirm`} class="inline">
            <button type="submit">Connect this account</button>
          </form>{' '}
          <form method="post" action={`/app/sites/${site.id}/settings/google/cancel`} class="inline">
            <button type="submit" class="secondary">
              Cancel
            </button>
          </form>
        </div>
      </Page>,
    )
  })

  web.post('/sites/:siteId/settings/google/confirm', async (c) => {
    const { site, email } = adminSite(c)
    const confirmed = await confirmGoogleConnect(services, site, connectBinding(c.req.raw), email)
    forget(c)
    return c.redirect(googleSettingsPath(site.id, confirmed ? 'connected' : 'expired'), 303)
  })

  web.post('/sites/:siteId/settings/google/cancel', async (c) => {
    const { site, email } = adminSite(c)
    await cancelGoogleConnect(services, site, connectBinding(c.req.raw), email)
    forget(c)
    return c.redirect(googleSettingsPath(site.id, 'cancelled'), 303)
  })
}
