import type { Context, Hono } from 'hono'
import type { Services } from '../../../lib/runtime/services'
import { apiFor } from '../api'
import { Page } from '../layout'
import { memberOf } from '../membership'
import type { WebEnv } from '../session'
import { Field, ReadOnlyNotice, type Refused, type Scope, SiteNav, settingsPost, when } from './parts'

/** The custom domain tab: the tracking subdomain, its CNAME target and DNS status, set or removed. */

export function domainSettingsRoutes(web: Hono<WebEnv>, services: Services) {
  const domainPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused) => {
    const { site, org, canWrite } = scope
    const state = await apiFor(c, services, scope)('GET', '/api/v1/sites/{site_id}/custom-domain')
    const mine = refused?.form === 'domain' ? refused : undefined
    return c.html(
      <Page title={`${site.domain} custom domain`} email={c.get('session')!.email}>
        <SiteNav site={site} orgId={org.id} orgName={org.name} current="domain" />
        <ReadOnlyNotice canWrite={canWrite} />
        <section class="card" aria-labelledby="domain-state">
          <h2 id="domain-state">Custom tracking domain</h2>
          <p class="muted">
            The snippet can load the script from a subdomain of your site (stats.{site.domain}), which fewer blockers refuse. Point a CNAME
            record of it at this service; the snippet switches once DNS is verified.
          </p>
          <dl class="facts">
            <div>
              <dt>Domain</dt>
              <dd>{state.customDomain ?? 'none'}</dd>
            </div>
            <div>
              <dt>DNS status</dt>
              <dd>
                <span class={`state state-${state.status}`}>{state.status.replace('_', ' ')}</span>
              </dd>
            </div>
            <div>
              <dt>CNAME target</dt>
              <dd>{state.cnameTarget ?? 'not known'}</dd>
            </div>
            <div>
              <dt>Script served from</dt>
              <dd>{state.trackingDomain}</dd>
            </div>
          </dl>
          <p id="domain-detail">{state.detail}</p>
          {state.verifiedAt ? <p class="muted">Verified {when(state.verifiedAt)}.</p> : null}
        </section>
        {canWrite ? (
          <form method="post" action={`/app/sites/${site.id}/settings/domain`} class="card" id="domain">
            <h2>{state.customDomain ? 'Use another domain' : 'Add a custom domain'}</h2>
            {c.req.query('saved') === 'domain' ? (
              <p class="saved" role="status">
                Saved.
              </p>
            ) : null}
            <Field
              id="domain-input"
              name="domain"
              label="Subdomain"
              refused={mine?.message}
              errorId="domain-error"
              attrs={{ placeholder: `stats.${site.domain}`, value: mine ? mine.values.domain : undefined }}
            />
            <button type="submit">Save domain</button>
          </form>
        ) : null}
        {canWrite && state.customDomain ? (
          <form method="post" action={`/app/sites/${site.id}/settings/domain/remove`} class="card">
            <h2>Remove the custom domain</h2>
            <p class="muted">The snippet goes back to loading the script from this service.</p>
            <button type="submit" class="danger">
              Remove {state.customDomain}
            </button>
          </form>
        ) : null}
      </Page>,
    )
  }

  web.get('/sites/:siteId/settings/domain', async (c) => domainPage(c, memberOf(c)))

  web.post(
    '/sites/:siteId/settings/domain',
    settingsPost(services, {
      form: 'domain',
      page: domainPage,
      work: ({ form, api }) => {
        const domain = (form.domain ?? '').trim()
        return api('POST', '/api/v1/sites/{site_id}/custom-domain', { body: domain ? { domain } : {} })
      },
      done: (_c, scope) => `/app/sites/${scope.site.id}/settings/domain?saved=domain#domain`,
    }),
  )

  web.post('/sites/:siteId/settings/domain/remove', async (c) => {
    const scope = memberOf(c)
    await apiFor(c, services, scope)('DELETE', '/api/v1/sites/{site_id}/custom-domain')
    return c.redirect(`/app/sites/${scope.site.id}/settings/domain`, 303)
  })
}
