import type { Context, Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { ApiError } from '../../../lib/core/errors'
import { MAX_ZIP_BYTES, importPlausibleExport } from '../../../lib/plausible/csv-import'
import type { Services } from '../../../lib/runtime/services'
import { type AnswerOf, apiFor } from '../api'
import { Page } from '../layout'
import { memberOf } from '../membership'
import type { WebEnv } from '../session'
import { googleConnectRoutes } from '../google-connect'
import { pageNonce } from '../security'
import { Field, ReadOnlyNotice, type Refused, type Scope, SiteNav, settingsPost, when } from './parts'

/** The Google and imports tab: the site's Google connection, its GA4 property and Search Console site, a Plausible export, and every import. */

type ImportsRead = AnswerOf<'GET', '/api/v1/sites/{site_id}/imports'>

/** What the callback of Google's consent page says when it sends the browser back here. */
const GOOGLE_OUTCOMES: Record<string, { ok: boolean; text: string }> = {
  connected: { ok: true, text: 'Google is connected. Choose the GA4 property and the Search Console site below.' },
  denied: { ok: false, text: 'Google did not authorize the connection; nothing was changed.' },
  no_refresh_token: {
    ok: false,
    text: "Google sent no lasting access: remove this application from your Google account's third-party access, then connect again.",
  },
  expired: {
    ok: false,
    text: 'That connect link expired (they last 15 minutes) or was already used; nothing was changed. Connect again.',
  },
  failed: { ok: false, text: 'The connection with Google could not be completed; nothing was changed. Try connecting again.' },
  cancelled: { ok: false, text: 'You did not confirm the Google account; nothing was changed.' },
}

/** Imports still moving: the list refreshes while one is. */
const MOVING = new Set(['queued', 'running', 'waiting'])

const IMPORT_KINDS: Record<string, string> = {
  raw_hits: 'Raw hits',
  standalone: 'Collected events',
  ga4: 'GA4',
  search_console: 'Search Console',
  plausible: 'Plausible export',
}

function ImportsTable({ imports }: { imports: ImportsRead['imports'] }) {
  const moving = imports.some((i) => MOVING.has(i.state))
  return (
    <div id="imports-list" class="imports" data-moving={moving ? 'true' : 'false'}>
      {imports.length ? (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Import</th>
                <th scope="col">State</th>
                <th scope="col">Progress</th>
                <th scope="col">Period</th>
                <th scope="col" class="num">
                  Rows
                </th>
                <th scope="col">Started</th>
              </tr>
            </thead>
            <tbody>
              {imports.map((i) => {
                const percent = i.progress ? Math.round(i.progress.fraction * 100) : null
                return (
                  <tr>
                    <td>
                      {IMPORT_KINDS[i.kind] ?? i.kind}
                      {i.trigger ? <span class="muted"> ({i.trigger})</span> : null}
                    </td>
                    <td>
                      <span class={`state state-${i.state}`}>{i.state}</span>
                      {i.error ? <p class="small-text">{i.error}</p> : null}
                      {i.retryAt && MOVING.has(i.state) ? <p class="small-text muted">goes on after {when(i.retryAt)}</p> : null}
                    </td>
                    <td>
                      {percent === null ? (
                        <span class="muted">—</span>
                      ) : (
                        <span class="progress-cell">
                          <progress max={100} value={percent} aria-label={`${IMPORT_KINDS[i.kind] ?? i.kind} import progress`} />
                          {` ${percent}%`}
                        </span>
                      )}
                    </td>
                    <td class="nowrap">{i.from || i.to ? `${i.from ?? '…'} – ${i.to ?? '…'}` : <span class="muted">—</span>}</td>
                    <td class="num">{i.rows === null ? '—' : Number(i.rows).toLocaleString('en')}</td>
                    <td class="nowrap">{when(i.startedAt)}</td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="muted">No imports yet.</p>
      )}
    </div>
  )
}

/** Reloads the imports list every 5 seconds while one of them is queued, running or waiting. */
function ImportsWatch({ siteId }: { siteId: string }) {
  return (
    <script
      nonce={pageNonce()}
      dangerouslySetInnerHTML={{
        __html: `(function(){var t=setInterval(function(){var l=document.getElementById('imports-list');if(!l||l.dataset.moving!=='true'){clearInterval(t);return}fetch('/app/sites/${siteId}/settings/imports').then(function(r){return r.ok?r.text():null}).then(function(h){if(h){l.outerHTML=h}})},5000)})()`,
      }}
    />
  )
}

export function integrationSettingsRoutes(web: Hono<WebEnv>, services: Services) {
  const importsOf = async (c: Context<WebEnv>, scope: Scope) =>
    (await apiFor(c, services, scope)('GET', '/api/v1/sites/{site_id}/imports')).imports

  const integrationsPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused) => {
    const { site, org, canWrite } = scope
    const [ga4, searchConsole, imports] = await Promise.all([
      apiFor(c, services, scope)('GET', '/api/v1/sites/{site_id}/ga4'),
      apiFor(c, services, scope)('GET', '/api/v1/sites/{site_id}/search-console'),
      importsOf(c, scope),
    ])
    const outcome = GOOGLE_OUTCOMES[c.req.query('google') ?? '']
    const configured = ga4.status !== 'not_configured'
    const connected = ga4.status === 'connected'
    // one connection serves both: it is asked for Search Console's scope too where this server reads Search Console
    const needsConnect = configured && (!connected || searchConsole.google === 'needs_reconnect')
    const refusedHere = (form: string) => (refused?.form === form ? refused : undefined)
    const ga4Refused = refusedHere('ga4')
    const scRefused = refusedHere('search-console')
    // the property picker: a list of the connection's properties, or a field for its id where it lists none
    const ga4Field = {
      id: 'ga4-propertyId',
      name: 'propertyId',
      label: 'Property to import',
      refused: ga4Refused?.message,
      errorId: 'ga4-error',
    }
    return c.html(
      <Page title={`${site.domain} Google and imports`} email={c.get('session')!.email}>
        <SiteNav site={site} orgId={org.id} orgName={org.name} current="integrations" />
        <ReadOnlyNotice canWrite={canWrite} />
        <section class="card" id="google" aria-labelledby="google-title">
          <h2 id="google-title">Google connection</h2>
          {outcome ? (
            <p class={outcome.ok ? 'saved' : 'error'} role={outcome.ok ? 'status' : 'alert'}>
              {outcome.text}
            </p>
          ) : null}
          {!configured ? (
            <p class="muted">{ga4.reason}</p>
          ) : (
            <>
              <p>
                Status:{' '}
                <strong id="google-status">
                  {connected ? 'connected' : ga4.status === 'needs_reconnect' ? 'needs connecting again' : 'not connected'}
                </strong>
                {connected && ga4.account ? <span class="muted"> (account {ga4.account.name})</span> : null}
              </p>
              {ga4.reason ? <p class="notice">{ga4.reason}</p> : null}
              {searchConsole.google === 'needs_reconnect' && searchConsole.reason && searchConsole.reason !== ga4.reason ? (
                <p class="notice">{searchConsole.reason}</p>
              ) : null}
              {canWrite && needsConnect ? (
                <form method="post" action={`/app/sites/${site.id}/settings/google/connect`}>
                  <button type="submit">{connected ? 'Grant Search Console access' : 'Connect Google'}</button>
                </form>
              ) : null}
              {canWrite && (connected || ga4.status === 'needs_reconnect') ? (
                <form method="post" action={`/app/sites/${site.id}/settings/ga4/disconnect`} class="spaced">
                  <button type="submit" class="danger small">
                    Disconnect Google
                  </button>
                </form>
              ) : null}
            </>
          )}
        </section>

        {configured ? (
          <section class="card" id="ga4" aria-labelledby="ga4-title">
            <h2 id="ga4-title">Google Analytics 4</h2>
            <p>
              Property:{' '}
              <strong id="ga4-property">{ga4.propertyId ? `${ga4.propertyName ?? ''} (${ga4.propertyId})` : 'none chosen'}</strong>
              {ga4.propertyId ? <span class="muted"> (its imports are listed below)</span> : null}
            </p>
            {connected && canWrite ? (
              <form method="post" action={`/app/sites/${site.id}/settings/ga4`}>
                {ga4.properties.length ? (
                  <Field {...ga4Field} kind="select">
                    {ga4.properties.map((p) => (
                      <option value={p.propertyId} selected={p.propertyId === (ga4Refused?.values.propertyId ?? ga4.propertyId)}>
                        {p.displayName} ({p.propertyId}) · {p.accountName}
                      </option>
                    ))}
                  </Field>
                ) : (
                  <Field {...ga4Field} attrs={{ value: ga4Refused?.values.propertyId }} />
                )}
                <button type="submit">{ga4.propertyId ? 'Import this property instead' : 'Import this property'}</button>
              </form>
            ) : null}
            {connected ? null : <p class="muted">Connect Google above to choose the property to import.</p>}
          </section>
        ) : null}

        {searchConsole.google !== 'not_configured' ? (
          <section class="card" id="search-console" aria-labelledby="sc-title">
            <h2 id="sc-title">Search Console</h2>
            <p>
              Site: <strong id="sc-site">{searchConsole.siteUrl ?? 'none chosen'}</strong>
              {searchConsole.siteUrl ? <span class="muted"> (its import is listed below)</span> : null}
            </p>
            {canWrite && searchConsole.google === 'connected' ? (
              <form method="post" action={`/app/sites/${site.id}/settings/search-console`}>
                <Field
                  id="sc-siteUrl"
                  name="siteUrl"
                  label="Search Console site"
                  refused={scRefused?.message}
                  errorId="sc-error"
                  kind="select"
                >
                  {searchConsole.sites.map((p) => (
                    <option value={p.siteUrl} selected={p.siteUrl === (scRefused?.values.siteUrl ?? searchConsole.siteUrl)}>
                      {p.siteUrl}
                      {p.verified ? '' : ' (not verified)'}
                    </option>
                  ))}
                </Field>
                <button type="submit">{searchConsole.siteUrl ? 'Import this site instead' : 'Import this site'}</button>
              </form>
            ) : null}
            {searchConsole.google === 'connected' ? null : (
              <p class="muted">Connect Google above, with Search Console access, to choose the site to import.</p>
            )}
            {canWrite && searchConsole.siteUrl ? (
              <form method="post" action={`/app/sites/${site.id}/settings/search-console/disconnect`} class="spaced">
                <button type="submit" class="danger small">
                  Stop importing Search Console
                </button>
              </form>
            ) : null}
          </section>
        ) : null}

        {canWrite ? (
          <section class="card" id="plausible" aria-labelledby="plausible-title">
            <h2 id="plausible-title">Plausible export</h2>
            <p class="muted">
              The zip of CSV files Plausible exports from its site settings. Its days before this site's first tracked day are added to the
              numbers of Stats API queries with imports included; a new export replaces the one imported before.
            </p>
            <form method="post" action={`/app/sites/${site.id}/settings/imports/plausible`} enctype="multipart/form-data">
              <Field
                id="plausible-export"
                name="export"
                label="Export (.zip)"
                refused={refusedHere('plausible')?.message}
                errorId="plausible-error"
                // a file input is not focused after a refusal
                attrs={{ type: 'file', accept: '.zip,application/zip', required: true, autofocus: false }}
              />
              <button type="submit">Import</button>
            </form>
          </section>
        ) : null}

        <section class="card" aria-labelledby="imports-title">
          <h2 id="imports-title">Imports</h2>
          <ImportsTable imports={imports} />
        </section>
        <ImportsWatch siteId={site.id} />
      </Page>,
    )
  }

  web.get('/sites/:siteId/settings/integrations', async (c) => integrationsPage(c, memberOf(c)))

  // the imports list alone, which the page reloads while an import moves
  web.get('/sites/:siteId/settings/imports', async (c) => {
    const scope = memberOf(c)
    return c.html(<ImportsTable imports={await importsOf(c, scope)} />)
  })

  googleConnectRoutes(web, services)

  // a Plausible export, uploaded as a form's file: stored as the API's POST /imports/plausible stores it
  web.post(
    '/sites/:siteId/settings/imports/plausible',
    bodyLimit({ maxSize: MAX_ZIP_BYTES + 64 * 1024, onError: () => new Response('The upload is too large.', { status: 413 }) }),
    settingsPost(services, {
      form: 'plausible',
      what: 'import data',
      text: false,
      page: integrationsPage,
      work: async ({ c, scope }) => {
        const file = (await c.req.parseBody()).export
        if (!(file instanceof File) || !file.size) throw new ApiError(400, 'choose the zip file of a Plausible export')
        return importPlausibleExport(services, scope.site, new Uint8Array(await file.arrayBuffer()))
      },
      done: (_c, scope) => `/app/sites/${scope.site.id}/settings/integrations#imports-title`,
    }),
  )

  const bind = (name: 'ga4' | 'search-console', field: 'propertyId' | 'siteUrl') => {
    web.post(
      `/sites/:siteId/settings/${name}`,
      settingsPost(services, {
        form: name,
        page: integrationsPage,
        work: ({ form, api }) => api('PATCH', `/api/v1/sites/{site_id}/${name}`, { body: { [field]: form[field] ?? '' } }),
        done: (_c, scope) => `/app/sites/${scope.site.id}/settings/integrations#${name}`,
      }),
    )
    web.post(`/sites/:siteId/settings/${name}/disconnect`, async (c) => {
      const scope = memberOf(c)
      await apiFor(c, services, scope)('DELETE', `/api/v1/sites/{site_id}/${name}`)
      return c.redirect(`/app/sites/${scope.site.id}/settings/integrations`, 303)
    })
  }
  bind('ga4', 'propertyId')
  bind('search-console', 'siteUrl')
}
