import type { Context, Hono } from 'hono'
import type { Services } from '../../../lib/runtime/services'
import { type AnswerOf, apiFor } from '../api'
import { Page } from '../layout'
import { memberOf } from '../membership'
import type { WebEnv } from '../session'
import {
  CopyScript,
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
} from './parts'

/** The alerts tab: weekly and monthly reports, traffic, backlink and vitals alerts, recipients, the webhook and its secret. */

type AlertsRead = AnswerOf<'GET', '/api/v1/sites/{site_id}/alerts'>

const ALERT_GROUP: FormGroup<AlertsRead> = {
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

export function alertSettingsRoutes(web: Hono<WebEnv>, services: Services) {
  const alertsPage = async (c: Context<WebEnv>, scope: Scope, refused?: Refused, webhookSecret?: string) => {
    const { site, org, canWrite } = scope
    const alerts = await apiFor(c, services, scope)('GET', '/api/v1/sites/{site_id}/alerts')
    return c.html(
      <Page title={`${site.domain} alerts`} email={c.get('session')!.email}>
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

  web.get('/sites/:siteId/settings/alerts', async (c) => alertsPage(c, memberOf(c)))

  web.post(
    '/sites/:siteId/settings/alerts',
    settingsPost(services, {
      form: 'alerts',
      page: alertsPage,
      work: async ({ form, api }) => {
        const body = changedFields(ALERT_GROUP.fields, form, await api('GET', '/api/v1/sites/{site_id}/alerts'))
        return Object.keys(body).length ? api('PATCH', '/api/v1/sites/{site_id}/alerts', { body }) : null
      },
      // a new webhook's secret is shown once, on this answer, never in a URL
      done: (c, scope, done) =>
        done?.webhookSecret
          ? alertsPage(c, scope, undefined, done.webhookSecret)
          : `/app/sites/${scope.site.id}/settings/alerts?saved=alerts#alerts`,
    }),
  )

  web.post('/sites/:siteId/settings/alerts/rotate', async (c) => {
    const scope = memberOf(c)
    const answer = await apiFor(c, services, scope)('PATCH', '/api/v1/sites/{site_id}/alerts', { body: { rotateWebhookSecret: true } })
    return alertsPage(c, scope, undefined, answer.webhookSecret)
  })
}
