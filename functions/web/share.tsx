import { type Context, Hono } from 'hono'
import { getSignedCookie, setSignedCookie } from 'hono/cookie'
import { z } from 'zod'
import { requireRole } from '../../lib/accounts/members'
import { serverSecret } from '../../lib/accounts/signin'
import { ApiError } from '../../lib/core/errors'
import { configuredOrigin, linkOrigin } from '../../lib/network/origin'
import type { Services } from '../../lib/runtime/services'
import {
  SHARE_SECRET_PARAM,
  rotateShareLink,
  shareLinkHash,
  sharePath,
  sharedDashboardOpen,
  sharesSections,
} from '../../lib/sites/share-link'
import { SHARE_ACCESS, type ShareAccess, type Site, type SitePatch, applySitePatch, shareAccess } from '../../lib/sites/sites'
import { dashboardPage, liveVisitors, panelFragment } from './dashboard'
import { memberOf } from './membership'
import type { DashboardView } from './view'
import { webBudget } from './budget'
import { readForm } from './forms'
import { ErrorPage, Page, failurePage } from './layout'
import { ADMINS, apiFor } from './api'
import { sectionName, sectionPage } from './sections'
import { securityHeaders } from './security'
import type { WebEnv } from './session'

/** The cookie that keeps a shared link's hash for its dashboard's pages (its panels, its live figure). */
const cookieName = (site: Pick<Site, 'id'>) => `share_${site.id.replace(/-/g, '')}`

const NOT_SHARED = 'There is no shared dashboard here, or its link was replaced.'

/**
 * The read-only shared dashboard under /share/{site}: anyone when the site is public; with the
 * site's secret link otherwise. The link's secret is traded at once for a cookie holding its hash
 * (scoped to this dashboard's path) and the browser is sent on to the address without it, so the
 * secret stays out of the history and the request log. A new link ends the old one, and every
 * cookie made from it.
 */
export function sharedDashboards(services: Services) {
  const share = new Hono()
  share.use(securityHeaders(services))
  share.use(async (c, next) => {
    await next()
    c.header('Cache-Control', 'no-store')
    c.header('X-Frame-Options', 'DENY')
    c.header('X-Content-Type-Options', 'nosniff')
    c.header('Referrer-Policy', 'no-referrer')
  })
  share.use(
    '/:siteId/*',
    webBudget(services, (c) => c.req.param('siteId')),
  )

  const sharedView = async (c: Context): Promise<DashboardView> => {
    const site = await services.sites.findFresh(c.req.param('siteId')!)
    if (!site || site.id !== c.req.param('siteId')) throw new ApiError(404, NOT_SHARED)
    const held = await getSignedCookie(c, await serverSecret(services), cookieName(site))
    if (!sharedDashboardOpen(site, typeof held === 'string' ? held : null)) throw new ApiError(404, NOT_SHARED)
    return { site, base: sharePath(site), shared: true, sections: sharesSections(site) }
  }

  share.get('/:siteId', async (c) => {
    const secret = c.req.query(SHARE_SECRET_PARAM)
    if (secret !== undefined) {
      const site = await services.sites.findFresh(c.req.param('siteId'))
      const hash = site && site.id === c.req.param('siteId') ? await shareLinkHash(site, secret) : null
      if (!site || !hash) throw new ApiError(404, NOT_SHARED)
      const path = sharePath(site)
      await setSignedCookie(c, cookieName(site), hash, await serverSecret(services), {
        httpOnly: true,
        sameSite: 'Lax',
        secure: (services.publicUrl ?? c.req.url).startsWith('https:'),
        path,
      })
      const rest = new URL(c.req.url).searchParams
      rest.delete(SHARE_SECRET_PARAM)
      return c.redirect(rest.size ? `${path}?${rest}` : path, 303)
    }
    return c.html(await dashboardPage(c, services, await sharedView(c)))
  })
  share.get('/:siteId/live', async (c) => {
    const view = await sharedView(c)
    return c.json({ visitors: await liveVisitors(apiFor(c, services, view)) })
  })
  share.get('/:siteId/panels/:panel', async (c) => c.html(await panelFragment(c, services, await sharedView(c), c.req.param('panel'))))
  share.get('/:siteId/:section', async (c) => {
    const view = await sharedView(c)
    if (!view.sections) throw new ApiError(404, 'This dashboard is shared without its sections.')
    return c.html(await sectionPage(c, services, view, sectionName(c.req.param('section'))))
  })

  share.notFound((c) => c.html(<ErrorPage status={404} message="There is no such page." />, 404))
  share.onError((err, c) => failurePage(c, err))
  return share
}

const sharingForm = z.object({
  access: z.enum(SHARE_ACCESS).optional(),
  shareLevel: z.enum(['none', 'link', 'full']).optional(),
  isPublic: z.enum(['on']).optional(),
})

/**
 * The patch a sharing form asks for. The page's form names the state and what a shared dashboard
 * shows, which a private one does not (sent with private it would name two states). A form
 * without the state (an older page still open) gives the older fields, an unticked box being false.
 */
function sharingPatch(form: z.infer<typeof sharingForm>): SitePatch {
  if (form.access)
    return form.access === 'private' || !form.shareLevel ? { access: form.access } : { access: form.access, shareLevel: form.shareLevel }
  if (!form.shareLevel) throw new ApiError(400, 'access: required: private, link or public')
  return { shareLevel: form.shareLevel, isPublic: form.isPublic === 'on' }
}

/** The member's side under /app/sites/{site}/share: how the site is shared, and its secret link, made or replaced here. */
export function shareRoutes(web: Hono<WebEnv>, services: Services) {
  const admin = (c: Context<WebEnv>) => ({ ...memberOf(c), email: c.get('session')!.email })

  web.get('/sites/:siteId/share', async (c) => {
    const { email, site, member } = admin(c)
    return c.html(
      <SharePage site={site} email={email} canChange={member.role !== 'member'} origin={configuredOrigin(services)} created={undefined} />,
    )
  })
  web.post('/sites/:siteId/share', async (c) => {
    const { email, site, member } = admin(c)
    requireRole(member, ADMINS, 'change how a site is shared')
    const patch = sharingPatch(await readForm(c, sharingForm))
    const next = await services.sites.update(site.id, (fresh) => applySitePatch(fresh, patch))
    // a dashboard shared by link is nothing without one: after private, the old one is gone, so a new one is made and shown once
    const origin = configuredOrigin(services)
    if (shareAccess(next.sharing) !== 'link' || next.shareLink || !origin) return c.redirect(`/app/sites/${site.id}/share`, 303)
    const created = await rotateShareLink(services, next, origin)
    const fresh = (await services.sites.findFresh(site.id)) ?? next
    return c.html(<SharePage site={fresh} email={email} canChange origin={origin} created={created} />, 201)
  })
  web.post('/sites/:siteId/share/link', async (c) => {
    const { email, site, member } = admin(c)
    requireRole(member, ADMINS, 'make a shared link')
    // before the link is replaced: without an origin to show it on, the old link stays
    const origin = linkOrigin(services, 'a shared link')
    const created = await rotateShareLink(services, site, origin)
    const fresh = (await services.sites.findFresh(site.id)) ?? site
    return c.html(<SharePage site={fresh} email={email} canChange origin={origin} created={created} />, 201)
  })
}

const ACCESS_FACTS: Record<ShareAccess, string> = {
  private: 'nobody: private',
  link: 'whoever has the secret link',
  public: 'anyone, no link needed',
}

const ACCESS_CHOICES: Record<ShareAccess, [string, string]> = {
  private: [
    'Private',
    'Members of the organization only. Ends the secret link and every browser it opened; sharing again makes a new link.',
  ],
  link: ['With a secret link', 'Whoever has the link you send them.'],
  public: ['Public', 'Anyone who has the address, without a link.'],
}

function SharePage({
  site,
  email,
  canChange,
  origin,
  created,
}: {
  site: Site
  email: string
  canChange: boolean
  /** The configured origin; none, the public address is shown as its path. */
  origin: string | undefined
  created?: { url: string; rotated: boolean }
}) {
  const access = shareAccess(site.sharing)
  const shows = site.sharing.shareLevel
  return (
    <Page title={`Sharing ${site.domain}`} email={email}>
      <div class="dash-head">
        <h1>Sharing {site.domain}</h1>
        <a href={`/app/sites/${site.id}`}>Back to the dashboard</a>
      </div>
      {created ? (
        <section class="card created" aria-labelledby="link-made">
          <h2 id="link-made">{created.rotated ? 'New link made: the old one no longer works' : 'Link made'}</h2>
          <p>Copy it now: it is shown only this once. Anyone with it sees the dashboard, read-only, without signing in.</p>
          <pre id="share-link" class="code">
            {created.url}
          </pre>
        </section>
      ) : null}
      <section class="card" aria-labelledby="how-shared">
        <h2 id="how-shared">How this site is shared</h2>
        <dl class="facts">
          <div>
            <dt>Who sees it signed out</dt>
            <dd data-fact="access">{ACCESS_FACTS[access]}</dd>
          </div>
          <div>
            <dt>What it shows</dt>
            <dd data-fact="shareLevel">
              {access === 'private' ? 'nothing' : shows === 'full' ? 'the dashboard and its sections' : 'the dashboard'}
            </dd>
          </div>
          <div>
            <dt>Secret link</dt>
            <dd data-fact="link">
              {access !== 'private' && site.shareLink ? `made ${site.shareLink.createdAt.slice(0, 16).replace('T', ' ')} UTC` : 'none'}
            </dd>
          </div>
        </dl>
        {access === 'public' ? (
          <p>
            Public address: <a href={`${origin ?? ''}${sharePath(site)}`}>{`${origin ?? ''}${sharePath(site)}`}</a>
          </p>
        ) : null}
      </section>
      {canChange ? (
        <>
          <form method="post" action={`/app/sites/${site.id}/share`} class="card">
            <h2>Change sharing</h2>
            <fieldset class="field">
              <legend>Who sees the dashboard, read-only and signed out</legend>
              {SHARE_ACCESS.map((option) => (
                <div class="field check">
                  <input type="radio" id={`access-${option}`} name="access" value={option} checked={access === option} />
                  <label for={`access-${option}`}>{ACCESS_CHOICES[option][0]}</label>
                  <p class="hint muted">{ACCESS_CHOICES[option][1]}</p>
                </div>
              ))}
            </fieldset>
            <fieldset class="field">
              <legend>What a shared dashboard shows</legend>
              <div class="field check">
                <input type="radio" id="shows-link" name="shareLevel" value="link" checked={shows !== 'full'} />
                <label for="shows-link">The dashboard</label>
                <p class="hint muted">
                  Totals, the chart, and the panels of sources, pages, locations, devices, goals, funnels and properties.
                </p>
              </div>
              <div class="field check">
                <input
                  type="radio"
                  id="shows-full"
                  name="shareLevel"
                  value="full"
                  checked={shows === 'full'}
                  aria-describedby="shows-full-exposes"
                />
                <label for="shows-full">The dashboard and its sections</label>
                <p class="hint notice" id="shows-full-exposes">
                  The sections show single visitors: journeys lists recent visitors by visitor id, one row per visitor and day, and opens
                  each one's events in order; the realtime section's activity tape shows every page load, click, custom event and error of
                  the last minutes as they come. Errors, clicks, vitals, flow, pages, changes and search come with them. Whoever opens the
                  shared dashboard sees all of this.
                </p>
              </div>
            </fieldset>
            <button type="submit">Save</button>
          </form>
          {access !== 'private' ? (
            <form method="post" action={`/app/sites/${site.id}/share/link`} class="card">
              <h2>Secret link</h2>
              <p class="muted">
                {site.shareLink ? 'A new link ends the current one at once.' : 'Make the link to send to people outside your team.'}
              </p>
              <button type="submit" class={site.shareLink ? 'danger' : undefined}>
                {site.shareLink ? 'Replace the link' : 'Make a link'}
              </button>
            </form>
          ) : null}
        </>
      ) : (
        <p class="muted">Owners and admins change how a site is shared.</p>
      )}
    </Page>
  )
}
