import { Hono } from 'hono'
import { getCookie } from 'hono/cookie'
import { csrf } from 'hono/csrf'
import { HTTPException } from 'hono/http-exception'
import { emailSchema } from '../../lib/accounts/team'
import { endSession, listSessions, redeemSignInLink, requestSignInLink, signInLinkAddress } from '../../lib/accounts/signin'
import type { Services } from '../../lib/runtime/services'
import { accountRoutes } from './account'
import { webBudget } from './budget'
import { LAST_SITE_COOKIE, dashboardRoutes, landingOf } from './dashboard'
import { heatmapRoutes } from './heatmap'
import { ErrorPage, Page, failurePage } from './layout'
import { requireMembership } from './membership'
import { shareRoutes } from './share'
import { securityHeaders } from './security'
import { type WebEnv, endSessionCookie, readSession, startSessionCookie } from './session'

/** The web application under /app: server-rendered pages over the same verbs as the API. */
export function webApp(services: Services) {
  const web = new Hono<WebEnv>()

  // first, so that every answer below, error pages too, carries its policy and its nonce
  web.use(securityHeaders(services))
  // before the session is read: a client past its budget costs one count, nothing more
  web.use(webBudget(services))
  // a form posted from another site is refused: its Origin must be this one (or PUBLIC_URL's)
  web.use(csrf({ origin: (origin, c) => origin === new URL(c.req.url).origin || origin === services.publicUrl }))
  web.use(readSession(services))
  web.use(async (c, next) => {
    await next()
    c.header('Cache-Control', 'no-store')
    c.header('X-Frame-Options', 'DENY')
    c.header('X-Content-Type-Options', 'nosniff')
  })

  /** The signed-in session, or a redirect to the sign-in page. */
  const signedIn = (c: { get: (key: 'session') => WebEnv['Variables']['session'] }) => c.get('session')

  web.get('/signin', (c) => {
    if (signedIn(c)) return c.redirect('/app', 303)
    return c.html(<SignInPage />)
  })

  web.post('/signin', async (c) => {
    const form = await c.req.parseBody()
    const email = emailSchema.safeParse(typeof form.email === 'string' ? form.email.trim() : '')
    if (!email.success) return c.html(<SignInPage error="email: must be an e-mail address" value={String(form.email ?? '')} />, 400)
    await requestSignInLink(services, { email: email.data, clientAddress: services.clientAddress(c.req.raw, c.env) })
    // the same answer whether a link went out now or one sent earlier is still unused
    const outbox = services.mailer?.outbox
    return c.html(
      <Page title={outbox ? 'Check the outbox' : 'Check your inbox'}>
        <div class="card narrow">
          {outbox ? (
            <>
              <h1>Check the outbox</h1>
              <p>
                This server has no mail server configured (<code>SMTP_URL</code>), so nothing was e-mailed: the sign-in link for{' '}
                <strong>{email.data}</strong> is written as an <code>.eml</code> file to the <code>outbox</code> folder of the server's data
                directory (<code>DATA_DIR/outbox</code>), and the server's log names the file. It works once, within 15 minutes.
              </p>
            </>
          ) : (
            <>
              <h1>Check your inbox</h1>
              <p>
                A sign-in link is on its way to <strong>{email.data}</strong>. It works once, within 15 minutes.
              </p>
            </>
          )}
          <p class="muted">One link at a time: if you asked in the last 15 minutes, use the link sent then.</p>
        </div>
      </Page>,
    )
  })

  // opening the link asks for a click: a mail scanner that fetches links does not use it up
  web.get('/signin/link', async (c) => {
    const token = c.req.query('token') ?? ''
    const email = await signInLinkAddress(services.repositories, token)
    return c.html(
      <Page title="Sign in">
        <form method="post" action="/app/signin/link" class="card narrow">
          <h1>Sign in</h1>
          <p>
            Continue as <strong>{email}</strong>?
          </p>
          <input type="hidden" name="token" value={token} />
          <button type="submit">Sign in</button>
        </form>
      </Page>,
    )
  })

  web.post('/signin/link', async (c) => {
    const form = await c.req.parseBody()
    const session = await redeemSignInLink(
      services.repositories,
      typeof form.token === 'string' ? form.token : '',
      c.req.header('user-agent') ?? '',
      services.now(),
    )
    await startSessionCookie(c, services, session)
    return c.redirect(await landingOf(services, session.email, getCookie(c, LAST_SITE_COOKIE)), 303)
  })

  web.post('/signout', async (c) => {
    const session = signedIn(c)
    if (session) await endSession(services.repositories, session.email, session.id)
    endSessionCookie(c, services)
    return c.redirect('/app/signin', 303)
  })

  // the pages' icon (their head names it): a small chart, no request to anyone else
  web.get('/favicon.svg', (c) =>
    c.body(FAVICON, 200, { 'Content-Type': 'image/svg+xml; charset=utf-8', 'Cache-Control': 'public, max-age=86400' }),
  )

  // every page below needs a session
  web.use(async (c, next) => {
    if (!signedIn(c)) return c.redirect(`/app/signin`, 303)
    await next()
  })
  // and an organization's or a site's pages, membership of that organization
  web.use('/orgs/:orgId/*', requireMembership(services))
  web.use('/sites/:siteId/*', requireMembership(services))

  web.get('/sessions', async (c) => {
    const session = signedIn(c)!
    const sessions = await listSessions(services.repositories, session.email, services.now())
    return c.html(
      <Page title="Sessions" email={session.email}>
        <section class="card">
          <h1>Your sessions</h1>
          <p class="muted">Every browser signed in as you. Ending a session signs that browser out.</p>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Signed in</th>
                  <th scope="col">Browser</th>
                  <th scope="col">
                    <span class="muted">Action</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {sessions.map((s) => (
                  <tr>
                    <td>{s.createdAt.slice(0, 16).replace('T', ' ')} UTC</td>
                    <td>{s.browser}</td>
                    <td>
                      {s.id === session.id ? (
                        <span class="muted">this browser</span>
                      ) : (
                        <form method="post" action={`/app/sessions/${s.id}/end`} class="inline">
                          <button type="submit" class="danger">
                            End
                          </button>
                        </form>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      </Page>,
    )
  })

  web.post('/sessions/:id/end', async (c) => {
    await endSession(services.repositories, signedIn(c)!.email, c.req.param('id'))
    return c.redirect('/app/sessions', 303)
  })

  accountRoutes(web, services)
  shareRoutes(web, services)
  dashboardRoutes(web, services)
  heatmapRoutes(web, services)

  web.notFound((c) => c.html(<ErrorPage status={404} message="There is no such page." email={c.get('session')?.email} />, 404))

  web.onError((err, c) => {
    const email = c.get('session')?.email
    if (err instanceof HTTPException && err.status === 403)
      return c.html(<ErrorPage status={403} message="This form was sent from another site, and was refused." email={email} />, 403)
    return failurePage(c, err, email)
  })

  return web
}

const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0b57d0"/><path d="M7 22l6-7 5 4 7-9" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>'

function SignInPage({ error, value }: { error?: string; value?: string }) {
  return (
    <Page title="Sign in">
      <form method="post" action="/app/signin" class="card narrow">
        <h1>Sign in</h1>
        <p class="muted">We e-mail you a link that signs you in. No password needed.</p>
        {error ? (
          <p class="error" id="email-error" role="alert">
            {error}
          </p>
        ) : null}
        <div class="field">
          <label for="email">E-mail address</label>
          <input
            id="email"
            name="email"
            type="email"
            autocomplete="email"
            required
            value={value}
            aria-describedby={error ? 'email-error' : undefined}
          />
        </div>
        <button type="submit">E-mail me a link</button>
      </form>
    </Page>
  )
}
