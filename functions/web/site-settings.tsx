import type { Context, Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { z } from 'zod'
import type { ApiKeyRecord } from '../../lib/accounts/keys'
import { membershipIn, requireRole } from '../../lib/accounts/members'
import type { Member } from '../../lib/accounts/team'
import { ApiError } from '../../lib/core/errors'
import { MAX_ZIP_BYTES, importPlausibleExport } from '../../lib/plausible/csv-import'
import type { Services } from '../../lib/runtime/services'
import { withInstallState } from '../../lib/operations/install-state'
import { deleteSite } from '../../lib/operations/site-lifecycle'
import type { Site } from '../../lib/sites/sites'
import { CallContext, asApiError, invoke } from '../invoke'
import { endpoints } from '../registry'
import { TIMEZONES, dateTime } from './format'
import { readForm } from './forms'
import { googleConnectRoutes } from './google-connect'
import { Page } from './layout'
import { pageNonce } from './security'
import type { WebEnv } from './session'

/**
 * The site's pages in the account area: its settings groups as forms, its alerts, its custom
 * domain, its Google connection and its imports. Every read and write goes through the API's own
 * endpoint (its validation, its verb, its 4xx message), called as the signed-in member: owners and
 * admins write, members read.
 */

const ADMINS: Member['role'][] = ['owner', 'admin']

// biome-ignore lint/suspicious/noExplicitAny: the API's answers, checked by their declared schemas where they are made
type Json = Record<string, any>

/** A field of a settings form: how it is drawn and how its posted text becomes the API's value. */
interface Field {
  name: string
  label: string
  kind: 'check' | 'lines' | 'text' | 'optional-text' | 'number' | 'select'
  options?: readonly (readonly [string, string])[]
  hint?: string
}

interface FormGroup {
  id: string
  title: string
  intro?: string
  fields: Field[]
  /** The current values, from the site read. */
  values: (site: Json) => Json
}

const check = (name: string, label: string, hint?: string): Field => ({ name, label, kind: 'check', hint })
const lines = (name: string, label: string, hint: string): Field => ({ name, label, kind: 'lines', hint })

/** The settings groups PATCH /api/v1/sites/{site_id} takes, flat by field name. */
const SITE_GROUPS: FormGroup[] = [
  {
    id: 'general',
    title: 'General',
    fields: [
      {
        name: 'timezone',
        label: 'Timezone',
        kind: 'select',
        options: TIMEZONES,
        hint: 'Relative ranges (today, this month) resolve in it.',
      },
    ],
    values: (site) => ({ timezone: site.timezone }),
  },
  {
    id: 'tracking',
    title: 'Tracking',
    fields: [
      check('trackOutboundLinks', 'Outbound link clicks'),
      check('trackFileDownloads', 'File downloads'),
      check('trackForms', 'Form submissions', 'Never what is typed into the fields.'),
      check('trackErrors', 'JavaScript errors'),
      check('trackVitals', 'Core Web Vitals'),
      check('autocapture', 'Clicks on buttons and links'),
      check('hashRouting', 'Hash-based routing', 'Count a change of the #fragment as a page view (single-page apps).'),
      check('includeBots', 'Keep bot traffic', 'Bots are kept apart from visitors, never counted as them.'),
      lines('excludedPaths', 'Excluded paths', 'One path per line, starting with /; * matches any part (/admin/*).'),
      lines('excludedIps', 'Excluded IP addresses', 'One address or CIDR range per line.'),
      lines('allowedHostnames', 'Other hostnames', 'One per line, counted besides the site domain (a staging host, localhost).'),
      lines('capturedQueryParams', 'Captured query parameters', 'One name per line, kept in page addresses.'),
      lines('affiliatePaths', 'Affiliate paths', 'One path per line, starting with /.'),
    ],
    values: (site) => site.tracking,
  },
  {
    id: 'changeDetection',
    title: 'Change detection',
    intro: 'The crawler reads the site daily and records what changed on its pages.',
    fields: [
      check('changeDetectionEnabled', 'Detect page changes'),
      lines('changeExcludedPaths', 'Paths not crawled', 'One path per line, starting with /.'),
    ],
    values: (site) => site.changeDetection,
  },
  {
    id: 'sharing',
    title: 'Sharing',
    fields: [
      {
        name: 'access',
        label: 'Shared dashboard',
        kind: 'select',
        options: [
          ['private', 'Private: members only'],
          ['link', 'Whoever has the secret link'],
          ['public', 'Public: anyone, no link needed'],
        ],
        hint: 'Private ends the secret link and every browser it opened. What a shared dashboard shows, and its link: on the Sharing page.',
      },
      check('publicCounts', 'Public visitor count', 'The badge and the public count endpoint answer for this site.'),
      {
        name: 'publicCountsDial',
        label: 'Public count covers',
        kind: 'select',
        options: [
          ['live', 'Live visitors only'],
          ['30d', 'Up to the last 30 days'],
          ['year', 'Up to the last year'],
          ['all', 'Any period, all time included'],
        ],
      },
    ],
    values: (site) => site.sharing,
  },
  {
    id: 'appearance',
    title: 'Appearance',
    fields: [
      { name: 'displayName', label: 'Display name', kind: 'optional-text', hint: 'Shown instead of the domain; empty for none.' },
      {
        name: 'theme',
        label: 'Theme',
        kind: 'select',
        options: [
          ['system', 'As the system'],
          ['light', 'Light'],
          ['dark', 'Dark'],
        ],
      },
      { name: 'accentColor', label: 'Accent color', kind: 'text', hint: 'A #rrggbb color.' },
    ],
    values: (site) => site.appearance,
  },
]

const ALERT_GROUP: FormGroup = {
  id: 'alerts',
  title: 'Reports and alerts',
  intro:
    'Reports go out on Mondays (the week before) and on the 1st (the month before), in the site timezone, by e-mail to the recipients and as signed JSON to the webhook.',
  fields: [
    check('weeklyReport', 'Weekly report'),
    check('monthlyReport', 'Monthly report'),
    check('spikeAlerts', 'Traffic spike alerts'),
    {
      name: 'spikeThreshold',
      label: 'Spike threshold',
      kind: 'number',
      hint: 'A multiple of the usual visitors of an hour, over 1 (2 = twice).',
    },
    check('dropAlerts', 'Traffic drop alerts'),
    { name: 'dropThreshold', label: 'Drop threshold', kind: 'number', hint: 'A fraction of the usual, between 0 and 1 (0.5 = half).' },
    check('backlinkAlerts', 'New and lost backlinks'),
    check('vitalsAlerts', 'Core Web Vitals getting worse'),
    lines('recipients', 'Recipients', 'One e-mail address per line, at most 20.'),
    {
      name: 'webhookUrl',
      label: 'Webhook URL',
      kind: 'optional-text',
      hint: 'An https URL that receives the reports and alerts as signed JSON; empty for none.',
    },
    {
      name: 'source',
      label: 'Measured source',
      kind: 'select',
      options: [
        ['', "The site's primary source"],
        ['standalone', 'Collected events'],
        ['ga4', 'Imported GA4 data'],
      ],
    },
  ],
  values: (alerts) => alerts,
}

/** The posted text of a form as the API's values; only the fields that differ from `current` (PATCH sends what changes). */
export function changedFields(fields: Field[], form: Record<string, string>, current: Json): Json {
  const body: Json = {}
  for (const field of fields) {
    const raw = (form[field.name] ?? '').trim()
    let value: unknown
    if (field.kind === 'check') value = raw === 'on'
    else if (field.kind === 'lines')
      value = raw
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter(Boolean)
    else if (field.kind === 'number') {
      // an empty number is no change; text that is no number is refused as the API refuses a wrong type
      if (raw === '') continue
      value = Number(raw)
      if (!Number.isFinite(value)) throw new ApiError(400, `${field.name}: must be a number`)
    } else if (field.kind === 'optional-text' || (field.kind === 'select' && raw === '')) value = raw === '' ? null : raw
    else value = raw
    if (JSON.stringify(value) !== JSON.stringify(current[field.name] ?? null)) body[field.name] = value
  }
  return body
}

/** What a failed post shows: the API's message, next to the field it names (or above the form), and what was typed. */
interface Refused {
  form: string
  message: string
  values: Record<string, string>
}

/** The field an API message names: `excludedPaths.0: must start with /` names excludedPaths. */
const fieldOf = (message: string) => /^([A-Za-z]+)[.:]/.exec(message)?.[1]

/** The text a field shows: what was posted after a refusal, else the current value. */
function shown(field: Field, current: Json, refused?: Refused): string {
  if (refused) return refused.values[field.name] ?? ''
  const value = current[field.name]
  if (field.kind === 'check') return value ? 'on' : ''
  if (Array.isArray(value)) return value.join('\n')
  return value === null || value === undefined ? '' : String(value)
}

function SettingsForm({
  group,
  action,
  current,
  canWrite,
  refused,
  saved,
  submit = 'Save',
}: {
  group: FormGroup
  action: string
  current: Json
  canWrite: boolean
  refused?: Refused
  saved?: boolean
  submit?: string
}) {
  const mine = refused?.form === group.id ? refused : undefined
  const errorField = mine ? fieldOf(mine.message) : undefined
  const onField = mine && group.fields.some((f) => f.name === errorField)
  const errorId = (name: string) => `${group.id}-${name}-error`
  return (
    <form method="post" action={action} class="card" id={group.id} aria-labelledby={`${group.id}-title`}>
      <h2 id={`${group.id}-title`}>{group.title}</h2>
      {group.intro ? <p class="muted">{group.intro}</p> : null}
      {saved ? (
        <p class="saved" role="status">
          Saved.
        </p>
      ) : null}
      {mine && !onField ? (
        <p class="error" role="alert">
          {mine.message}
        </p>
      ) : null}
      {[group.fields.filter((f) => f.kind === 'check'), group.fields.filter((f) => f.kind !== 'check')].map((list) =>
        list.length ? (
          <div class="fields">
            {list.map((field) => {
              const id = `${group.id}-${field.name}`
              const value = shown(field, current, mine)
              const invalid = onField && errorField === field.name
              const hintId = field.hint ? `${id}-hint` : undefined
              const describedBy = [invalid ? errorId(field.name) : undefined, hintId].filter(Boolean).join(' ') || undefined
              const error = invalid ? (
                <p class="error" id={errorId(field.name)} role="alert">
                  {mine!.message}
                </p>
              ) : null
              const hint = field.hint ? (
                <p class="hint muted" id={hintId}>
                  {field.hint}
                </p>
              ) : null
              if (field.kind === 'check')
                return (
                  <div class="field check">
                    <input
                      type="checkbox"
                      id={id}
                      name={field.name}
                      checked={value === 'on'}
                      disabled={!canWrite}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                      autofocus={invalid}
                    />
                    <label for={id}>{field.label}</label>
                    {hint}
                    {error}
                  </div>
                )
              return (
                <div class="field">
                  <label for={id}>{field.label}</label>
                  {field.kind === 'lines' ? (
                    <textarea
                      id={id}
                      name={field.name}
                      rows={3}
                      disabled={!canWrite}
                      autofocus={invalid}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                    >
                      {value}
                    </textarea>
                  ) : field.kind === 'select' ? (
                    <select
                      id={id}
                      name={field.name}
                      disabled={!canWrite}
                      autofocus={invalid}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                    >
                      {(field.options!.some(([option]) => option === value) || value === ''
                        ? field.options!
                        : [[String(value), String(value)] as const, ...field.options!]
                      ).map(([option, label]) => (
                        <option value={option} selected={option === value}>
                          {label}
                        </option>
                      ))}
                    </select>
                  ) : (
                    <input
                      id={id}
                      name={field.name}
                      value={value}
                      inputmode={field.kind === 'number' ? 'decimal' : undefined}
                      disabled={!canWrite}
                      autofocus={invalid}
                      aria-describedby={describedBy}
                      aria-invalid={invalid ? 'true' : undefined}
                    />
                  )}
                  {hint}
                  {error}
                </div>
              )
            })}
          </div>
        ) : null,
      )}
      {canWrite ? <button type="submit">{submit}</button> : null}
    </form>
  )
}

const TABS = [
  ['settings', 'Settings', ''],
  ['alerts', 'Alerts', '/alerts'],
  ['domain', 'Custom domain', '/domain'],
  ['integrations', 'Google and imports', '/integrations'],
] as const
type Tab = (typeof TABS)[number][0]

function SiteNav({ site, orgId, orgName, current }: { site: Site; orgId: string; orgName: string; current: Tab }) {
  return (
    <div class="org-nav">
      <p class="crumb">
        <a href={`/app/orgs/${orgId}`}>← {orgName}</a>
      </p>
      <h1>{site.domain}</h1>
      <nav aria-label="Site">
        <a href={`/app/sites/${site.id}`}>Dashboard</a>
        <a href={`/app/sites/${site.id}/share`}>Sharing</a>
        {TABS.map(([tab, label, path]) => (
          <a href={`/app/sites/${site.id}/settings${path}`} aria-current={tab === current ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
    </div>
  )
}

function ReadOnlyNotice({ canWrite }: { canWrite: boolean }) {
  return canWrite ? null : (
    <p class="notice">You are a member of this organization: you see these settings; owners and admins change them.</p>
  )
}

const when = (iso: string | null | undefined) => (iso ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : 'never')

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

function ImportsTable({ imports }: { imports: Json[] }) {
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

export function siteSettingsRoutes(web: Hono<WebEnv>, services: Services) {
  const email = (c: Context<WebEnv>) => c.get('session')!.email

  /** A site of one of the signed-in person's organizations; 404 otherwise, as for one that does not exist. */
  const siteOf = async (c: Context<WebEnv>) => {
    const site = await services.sites.findFresh(c.req.param('siteId') ?? '')
    if (!site) throw new ApiError(404, 'site not found')
    try {
      const { org, member } = await membershipIn(services.repositories, site.orgId, email(c))
      return { site, org, member, canWrite: ADMINS.includes(member.role) }
    } catch {
      throw new ApiError(404, 'site not found')
    }
  }
  type Scope = Awaited<ReturnType<typeof siteOf>>

  /**
   * The API's endpoint `method path` for the site, called as the member: a read key's rights for
   * members, a write key's for owners and admins. Its errors are the API's.
   */
  const api = async (c: Context<WebEnv>, scope: Scope, method: string, path: string, body?: unknown): Promise<Json> => {
    const endpoint = endpoints.find((e) => e.method === method && e.path === path)
    if (!endpoint) throw new Error(`no endpoint ${method} ${path}`)
    if (endpoint.scope === 'write') requireRole(scope.member, ADMINS, 'change site settings')
    const key: ApiKeyRecord = {
      id: `web:${c.get('session')!.id}`,
      orgId: scope.site.orgId,
      name: 'web application',
      prefix: '',
      scope: scope.canWrite ? 'write' : 'read',
      siteId: null,
      createdAt: scope.site.createdAt,
      madeBy: { memberId: scope.member.id, email: scope.member.email },
    }
    try {
      return (await invoke(endpoint, new CallContext(services, key, c.req.raw, c.env, c), {
        params: { site_id: scope.site.id },
        body,
      })) as Json
    } catch (err) {
      throw asApiError(err, c.req.raw)
    }
  }

  /** A post's answer: back to the page (303) once it worked; the page again with the API's message when it was refused. */
  const refusedOr = async <T,>(
    work: () => Promise<T>,
    render: (refused: Refused) => Promise<Response>,
    refused: Omit<Refused, 'message'>,
  ) => {
    try {
      return { done: await work() }
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 403 || err.status === 404) throw err
      const response = await render({ ...refused, message: err.message })
      return { response: new Response(response.body, { status: err.status, headers: response.headers }) }
    }
  }

  const postedText = async (c: Context<WebEnv>) =>
    Object.fromEntries(Object.entries(await c.req.parseBody()).filter((e): e is [string, string] => typeof e[1] === 'string'))

  // ---- settings: install, the groups of the site read, deletion
  const settingsPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused) => {
    const { site, org, canWrite } = scope
    const view = await api(c, scope, 'GET', '/api/v1/sites/{site_id}')
    const saved = c.req.query('saved')
    return c.html(
      <Page title={`${site.domain} settings`} email={email(c)}>
        <SiteNav site={site} orgId={org.id} orgName={org.name} current="settings" />
        <section class="card" aria-labelledby="install">
          <h2 id="install">Install</h2>
          <p>Paste this snippet into the &lt;head&gt; of every page:</p>
          <pre id="snippet" class="code">
            {view.snippet}
          </pre>
          <button type="button" class="secondary" data-copy="snippet">
            Copy snippet
          </button>
          <p id="install-state" role="status">
            {view.install.installed
              ? `Installed: the first event arrived ${view.install.firstEventAt ? `on ${dateTime(view.install.firstEventAt, view.timezone)}` : ''}.`
              : 'Waiting for the first event…'}
          </p>
          <details class="spaced">
            <summary>Trying it on a page on your own machine</summary>
            <ul>
              <li>
                Pages on <code>localhost</code>, <code>127.0.0.1</code> and <code>file:</code> send nothing unless the tag opts in: add{' '}
                <code>data-allow-localhost</code> to it.
              </li>
              <li>
                Add <code>localhost</code> to <em>Other hostnames</em> under Tracking below: a hit from a hostname the site does not list is
                dropped.
              </li>
              <li>
                Open the page in an ordinary browser. A headless one (Playwright's or Puppeteer's, Lighthouse) counts as a bot and is
                dropped; give it an ordinary user agent to count its visits as people's.
              </li>
              <li>
                The browser's network panel shows the <code>POST</code> to <code>/api/event</code>: <code>202</code> without an{' '}
                <code>X-Dropped</code> header means the hit was stored; with one, the header says why not.
              </li>
            </ul>
          </details>
        </section>
        <ReadOnlyNotice canWrite={canWrite} />
        {SITE_GROUPS.map((group) => (
          <SettingsForm
            group={group}
            action={`/app/sites/${site.id}/settings/${group.id}`}
            current={group.values(view)}
            canWrite={canWrite}
            refused={refused}
            saved={saved === group.id}
          />
        ))}
        <section class="card" aria-labelledby="crawl">
          <h2 id="crawl">Crawl status</h2>
          <dl class="facts">
            <div>
              <dt>Status</dt>
              <dd>{view.changeDetection.crawlStatus}</dd>
            </div>
            <div>
              <dt>Last crawl</dt>
              <dd>{when(view.changeDetection.lastCrawlAt)}</dd>
            </div>
            <div>
              <dt>Pages known</dt>
              <dd>{view.changeDetection.pagesKnown}</dd>
            </div>
          </dl>
          {view.changeDetection.crawlErrors.length ? (
            <ul>
              {view.changeDetection.crawlErrors.map((e: { path: string; error: string }) => (
                <li>
                  <code>{e.path || '(the crawl)'}</code>: {e.error}
                </li>
              ))}
            </ul>
          ) : null}
        </section>
        {canWrite ? (
          <form method="post" action={`/app/sites/${site.id}/delete`} class="card danger-zone">
            <h2>Delete this site</h2>
            <p>This deletes the site and all its data, for good. Type its domain to confirm.</p>
            <div class="field">
              <label for="confirm">Domain</label>
              <input id="confirm" name="confirm" required autocomplete="off" />
            </div>
            <button type="submit" class="danger">
              Delete {site.domain}
            </button>
          </form>
        ) : null}
        <CopyScript />
        {view.install.installed ? null : <InstallWatch siteId={site.id} />}
      </Page>,
    )
  }

  web.get('/sites/:siteId/settings', async (c) => settingsPage(c, await siteOf(c)))

  // the install state, polled by the settings page until the first event arrives
  web.get('/sites/:siteId/install', async (c) => {
    const { site } = await siteOf(c)
    const [withState] = await withInstallState(services.clickhouse, [site], services.now())
    return c.json({ installed: withState.install.installed, firstEventAt: withState.install.firstEventAt })
  })

  web.post('/sites/:siteId/delete', async (c) => {
    const { site, org, member } = await siteOf(c)
    requireRole(member, ADMINS, 'delete sites')
    const { confirm } = await readForm(c, z.object({ confirm: z.string({ message: "required: type the site's domain" }) }))
    await deleteSite(services, site, confirm, (task) => void task.catch((err) => console.error('background task failed', err)))
    return c.redirect(`/app/orgs/${org.id}`, 303)
  })

  for (const group of SITE_GROUPS) {
    web.post(`/sites/:siteId/settings/${group.id}`, async (c) => {
      const scope = await siteOf(c)
      requireRole(scope.member, ADMINS, 'change site settings')
      const form = await postedText(c)
      const current = group.values(await api(c, scope, 'GET', '/api/v1/sites/{site_id}'))
      const result = await refusedOr(
        async () => {
          const body = changedFields(group.fields, form, current)
          if (Object.keys(body).length) await api(c, scope, 'PATCH', '/api/v1/sites/{site_id}', body)
        },
        (refused) => settingsPage(c, scope, refused),
        { form: group.id, values: form },
      )
      if (result.response) return result.response
      return c.redirect(`/app/sites/${scope.site.id}/settings?saved=${group.id}#${group.id}`, 303)
    })
  }

  // ---- reports and alerts
  const alertsPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused, webhookSecret?: string) => {
    const { site, org, canWrite } = scope
    const alerts = await api(c, scope, 'GET', '/api/v1/sites/{site_id}/alerts')
    return c.html(
      <Page title={`${site.domain} alerts`} email={email(c)}>
        <SiteNav site={site} orgId={org.id} orgName={org.name} current="alerts" />
        <ReadOnlyNotice canWrite={canWrite} />
        {webhookSecret ? (
          <section class="card created" aria-labelledby="webhook-secret">
            <h2 id="webhook-secret">The webhook's signing secret</h2>
            <p>
              Copy it now: it is shown only this once. Each delivery carries <code>X-Signature: sha256=</code> and the HMAC-SHA256 of its
              body under this secret.
            </p>
            <pre id="secret" class="code">
              {webhookSecret}
            </pre>
            <button type="button" data-copy="secret">
              Copy secret
            </button>
          </section>
        ) : null}
        <SettingsForm
          group={ALERT_GROUP}
          action={`/app/sites/${site.id}/settings/alerts`}
          current={alerts}
          canWrite={canWrite}
          refused={refused}
          saved={!webhookSecret && c.req.query('saved') === 'alerts'}
        />
        {canWrite && alerts.webhookUrl ? (
          <form method="post" action={`/app/sites/${site.id}/settings/alerts/rotate`} class="card">
            <h2>Webhook signing secret</h2>
            <p class="muted">A new secret replaces the current one at once: deliveries are signed with the new one from now on.</p>
            <button type="submit" class="secondary">
              Issue a new secret
            </button>
          </form>
        ) : null}
        <CopyScript />
      </Page>,
    )
  }

  web.get('/sites/:siteId/settings/alerts', async (c) => alertsPage(c, await siteOf(c)))

  web.post('/sites/:siteId/settings/alerts', async (c) => {
    const scope = await siteOf(c)
    requireRole(scope.member, ADMINS, 'change site settings')
    const form = await postedText(c)
    const current = await api(c, scope, 'GET', '/api/v1/sites/{site_id}/alerts')
    const result = await refusedOr(
      async () => {
        const body = changedFields(ALERT_GROUP.fields, form, current)
        return Object.keys(body).length ? api(c, scope, 'PATCH', '/api/v1/sites/{site_id}/alerts', body) : null
      },
      (refused) => alertsPage(c, scope, refused),
      { form: 'alerts', values: form },
    )
    if (result.response) return result.response
    // a new webhook's secret is shown once, on this answer, never in a URL
    if (result.done?.webhookSecret) return alertsPage(c, scope, undefined, result.done.webhookSecret)
    return c.redirect(`/app/sites/${scope.site.id}/settings/alerts?saved=alerts#alerts`, 303)
  })

  web.post('/sites/:siteId/settings/alerts/rotate', async (c) => {
    const scope = await siteOf(c)
    const answer = await api(c, scope, 'PATCH', '/api/v1/sites/{site_id}/alerts', { rotateWebhookSecret: true })
    return alertsPage(c, scope, undefined, answer.webhookSecret)
  })

  // ---- the custom tracking domain
  const domainPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused) => {
    const { site, org, canWrite } = scope
    const state = await api(c, scope, 'GET', '/api/v1/sites/{site_id}/custom-domain')
    const mine = refused?.form === 'domain' ? refused : undefined
    return c.html(
      <Page title={`${site.domain} custom domain`} email={email(c)}>
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
            <div class="field">
              <label for="domain-input">Subdomain</label>
              <input
                id="domain-input"
                name="domain"
                placeholder={`stats.${site.domain}`}
                value={mine ? mine.values.domain : undefined}
                aria-describedby={mine ? 'domain-error' : undefined}
                aria-invalid={mine ? 'true' : undefined}
                autofocus={!!mine}
              />
              {mine ? (
                <p class="error" id="domain-error" role="alert">
                  {mine.message}
                </p>
              ) : null}
            </div>
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

  web.get('/sites/:siteId/settings/domain', async (c) => domainPage(c, await siteOf(c)))

  web.post('/sites/:siteId/settings/domain', async (c) => {
    const scope = await siteOf(c)
    requireRole(scope.member, ADMINS, 'change site settings')
    const form = await postedText(c)
    const domain = (form.domain ?? '').trim()
    const result = await refusedOr(
      () => api(c, scope, 'POST', '/api/v1/sites/{site_id}/custom-domain', domain ? { domain } : {}),
      (refused) => domainPage(c, scope, refused),
      { form: 'domain', values: form },
    )
    return result.response ?? c.redirect(`/app/sites/${scope.site.id}/settings/domain?saved=domain#domain`, 303)
  })

  web.post('/sites/:siteId/settings/domain/remove', async (c) => {
    const scope = await siteOf(c)
    await api(c, scope, 'DELETE', '/api/v1/sites/{site_id}/custom-domain')
    return c.redirect(`/app/sites/${scope.site.id}/settings/domain`, 303)
  })

  // ---- Google (GA4 and Search Console) and the imports
  const importsOf = async (c: Context<WebEnv>, scope: Scope) =>
    (await api(c, scope, 'GET', '/api/v1/sites/{site_id}/imports')).imports as Json[]

  const integrationsPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused) => {
    const { site, org, canWrite } = scope
    const [ga4, searchConsole, imports] = await Promise.all([
      api(c, scope, 'GET', '/api/v1/sites/{site_id}/ga4'),
      api(c, scope, 'GET', '/api/v1/sites/{site_id}/search-console'),
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
    return c.html(
      <Page title={`${site.domain} Google and imports`} email={email(c)}>
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
                <div class="field">
                  <label for="ga4-propertyId">Property to import</label>
                  {ga4.properties.length ? (
                    <select
                      id="ga4-propertyId"
                      name="propertyId"
                      aria-describedby={ga4Refused ? 'ga4-error' : undefined}
                      aria-invalid={ga4Refused ? 'true' : undefined}
                      autofocus={!!ga4Refused}
                    >
                      {ga4.properties.map((p: Json) => (
                        <option value={p.propertyId} selected={p.propertyId === (ga4Refused?.values.propertyId ?? ga4.propertyId)}>
                          {p.displayName} ({p.propertyId}) · {p.accountName}
                        </option>
                      ))}
                    </select>
                  ) : (
                    <input
                      id="ga4-propertyId"
                      name="propertyId"
                      value={ga4Refused?.values.propertyId}
                      aria-describedby={ga4Refused ? 'ga4-error' : undefined}
                      aria-invalid={ga4Refused ? 'true' : undefined}
                      autofocus={!!ga4Refused}
                    />
                  )}
                  {ga4Refused ? (
                    <p class="error" id="ga4-error" role="alert">
                      {ga4Refused.message}
                    </p>
                  ) : null}
                </div>
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
                <div class="field">
                  <label for="sc-siteUrl">Search Console site</label>
                  <select
                    id="sc-siteUrl"
                    name="siteUrl"
                    aria-describedby={scRefused ? 'sc-error' : undefined}
                    aria-invalid={scRefused ? 'true' : undefined}
                    autofocus={!!scRefused}
                  >
                    {searchConsole.sites.map((p: Json) => (
                      <option value={p.siteUrl} selected={p.siteUrl === (scRefused?.values.siteUrl ?? searchConsole.siteUrl)}>
                        {p.siteUrl}
                        {p.verified ? '' : ' (not verified)'}
                      </option>
                    ))}
                  </select>
                  {scRefused ? (
                    <p class="error" id="sc-error" role="alert">
                      {scRefused.message}
                    </p>
                  ) : null}
                </div>
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
              <div class="field">
                <label for="plausible-export">Export (.zip)</label>
                <input
                  id="plausible-export"
                  name="export"
                  type="file"
                  accept=".zip,application/zip"
                  required
                  aria-describedby={refusedHere('plausible') ? 'plausible-error' : undefined}
                  aria-invalid={refusedHere('plausible') ? 'true' : undefined}
                />
                {refusedHere('plausible') ? (
                  <p class="error" id="plausible-error" role="alert">
                    {refusedHere('plausible')!.message}
                  </p>
                ) : null}
              </div>
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

  web.get('/sites/:siteId/settings/integrations', async (c) => integrationsPage(c, await siteOf(c)))

  // the imports list alone, which the page reloads while an import moves
  web.get('/sites/:siteId/settings/imports', async (c) => {
    const scope = await siteOf(c)
    return c.html(<ImportsTable imports={await importsOf(c, scope)} />)
  })

  googleConnectRoutes(web, services)

  // a Plausible export, uploaded as a form's file: stored as the API's POST /imports/plausible stores it
  web.post(
    '/sites/:siteId/settings/imports/plausible',
    bodyLimit({ maxSize: MAX_ZIP_BYTES + 64 * 1024, onError: () => new Response('The upload is too large.', { status: 413 }) }),
    async (c) => {
      const scope = await siteOf(c)
      requireRole(scope.member, ADMINS, 'import data')
      const result = await refusedOr(
        async () => {
          const file = (await c.req.parseBody()).export
          if (!(file instanceof File) || !file.size) throw new ApiError(400, 'choose the zip file of a Plausible export')
          return importPlausibleExport(services, scope.site, new Uint8Array(await file.arrayBuffer()))
        },
        (refused) => integrationsPage(c, scope, refused),
        { form: 'plausible', values: {} },
      )
      return result.response ?? c.redirect(`/app/sites/${scope.site.id}/settings/integrations#imports-title`, 303)
    },
  )

  const bind = (name: 'ga4' | 'search-console', field: 'propertyId' | 'siteUrl') => {
    web.post(`/sites/:siteId/settings/${name}`, async (c) => {
      const scope = await siteOf(c)
      requireRole(scope.member, ADMINS, 'change site settings')
      const form = await postedText(c)
      const result = await refusedOr(
        () => api(c, scope, 'PATCH', `/api/v1/sites/{site_id}/${name}`, { [field]: form[field] ?? '' }),
        (refused) => integrationsPage(c, scope, refused),
        { form: name, values: form },
      )
      return result.response ?? c.redirect(`/app/sites/${scope.site.id}/settings/integrations#${name}`, 303)
    })
    web.post(`/sites/:siteId/settings/${name}/disconnect`, async (c) => {
      const scope = await siteOf(c)
      await api(c, scope, 'DELETE', `/api/v1/sites/{site_id}/${name}`)
      return c.redirect(`/app/sites/${scope.site.id}/settings/integrations`, 303)
    })
  }
  bind('ga4', 'propertyId')
  bind('search-console', 'siteUrl')
}

/** Copies the text of the element a button names (data-copy) to the clipboard. */
export function CopyScript() {
  return (
    <script
      nonce={pageNonce()}
      dangerouslySetInnerHTML={{
        __html:
          "document.querySelectorAll('[data-copy]').forEach(function(b){b.addEventListener('click',function(){navigator.clipboard.writeText(document.getElementById(b.dataset.copy).textContent.trim()).then(function(){b.textContent='Copied'})})})",
      }}
    />
  )
}

/** Asks every 5 seconds whether the first event arrived, and says so once it has. */
function InstallWatch({ siteId }: { siteId: string }) {
  return (
    <script
      nonce={pageNonce()}
      dangerouslySetInnerHTML={{
        __html: `(function(){var t=setInterval(function(){fetch('/app/sites/${siteId}/install').then(function(r){return r.json()}).then(function(s){if(s.installed){clearInterval(t);document.getElementById('install-state').textContent='Installed: the first event arrived just now.'}})},5000)})()`,
      }}
    />
  )
}
