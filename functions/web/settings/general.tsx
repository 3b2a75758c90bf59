import type { Context, Hono } from 'hono'
import { z } from 'zod'
import type { Services } from '../../../lib/runtime/services'
import { type AnswerOf, apiFor } from '../api'
import { TIMEZONES, dateTime } from '../format'
import { readForm } from '../forms'
import { Page } from '../layout'
import { memberOf } from '../membership'
import { pageNonce } from '../security'
import type { WebEnv } from '../session'
import {
  CopyScript,
  Field,
  type FormGroup,
  ReadOnlyNotice,
  type Refused,
  type Scope,
  SettingsForm,
  SiteNav,
  changedFields,
  check,
  lines,
  settingsPost,
  siteAdmin,
  when,
} from './parts'

/** The settings tab: the snippet and install state, a form per settings group of the site read, the crawl status, deletion. */

type SiteRead = AnswerOf<'GET', '/api/v1/sites/{site_id}'>

/** The settings groups PATCH /api/v1/sites/{site_id} takes, flat by field name. */
const SITE_GROUPS: FormGroup<SiteRead>[] = [
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

export function generalSettingsRoutes(web: Hono<WebEnv>, services: Services) {
  const settingsPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused) => {
    const { site, org, canWrite } = scope
    const view = await apiFor(c, services, scope)('GET', '/api/v1/sites/{site_id}')
    const saved = c.req.query('saved')
    return c.html(
      <Page title={`${site.domain} settings`} email={c.get('session')!.email}>
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
            <Field id="confirm" name="confirm" label="Domain" attrs={{ required: true, autocomplete: 'off' }} />
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

  web.get('/sites/:siteId/settings', async (c) => settingsPage(c, memberOf(c)))

  // the install state, polled by the settings page until the first event arrives
  web.get('/sites/:siteId/install', async (c) => {
    const { install } = await apiFor(c, services, memberOf(c))('GET', '/api/v1/sites/{site_id}')
    return c.json({ installed: install.installed, firstEventAt: install.firstEventAt })
  })

  web.post('/sites/:siteId/delete', async (c) => {
    const scope = siteAdmin(c, 'delete sites')
    const { confirm } = await readForm(c, z.object({ confirm: z.string({ message: "required: type the site's domain" }) }))
    await apiFor(c, services, scope)('DELETE', '/api/v1/sites/{site_id}', { params: { confirm } })
    return c.redirect(`/app/orgs/${scope.org.id}`, 303)
  })

  for (const group of SITE_GROUPS)
    web.post(
      `/sites/:siteId/settings/${group.id}`,
      settingsPost(services, {
        form: group.id,
        page: settingsPage,
        work: async ({ form, api }) => {
          const body = changedFields(group.fields, form, group.values(await api('GET', '/api/v1/sites/{site_id}')))
          if (Object.keys(body).length) await api('PATCH', '/api/v1/sites/{site_id}', { body })
        },
        done: (_c, scope) => `/app/sites/${scope.site.id}/settings?saved=${group.id}#${group.id}`,
      }),
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
