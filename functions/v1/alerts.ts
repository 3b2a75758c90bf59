import { z } from 'zod'
import { alertsAnswerSchema, alertsPatchSchema, updateAlerts } from '../../lib/sites/alerts'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

export const alertEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/alerts',
    scope: 'read',
    tool: 'get_alert_settings',
    summary:
      'The site’s reports and alerts: weekly and monthly reports; spike, drop, backlink and vitals alerts; thresholds, recipients, webhook, source.',
    description:
      'Reports go out on Mondays (the week before) and on the 1st (the month before), in the site timezone, by e-mail to recipients and as signed JSON to webhookUrl. The webhook signing secret is never shown here.',
    params: z.object({ site_id: siteRefSchema }),
    response: alertsAnswerSchema.omit({ webhookSecret: true }),
    async handler({ site }, { params }) {
      return (await site(params.site_id)).alerts
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/sites/{site_id}/alerts',
    scope: 'write',
    tool: 'update_alert_settings',
    summary: 'Changes the site’s reports and alerts; send only the fields to change.',
    description:
      'Merges into the stored settings. spikeThreshold is a multiple of the usual visitors of an hour (over 1, default 2); dropThreshold a fraction of it (between 0 and 1, default 0.5). recipients replaces the list (at most 20 addresses). webhookUrl must be https and publicly reachable; setting or changing it issues a signing secret, returned once as webhookSecret: deliveries carry X-Signature: sha256=<hex HMAC-SHA256 of the body>. rotateWebhookSecret: true issues a new one. source null measures the primary source. An unknown field or a wrong type is rejected and nothing changes.',
    params: z.object({ site_id: siteRefSchema }),
    body: alertsPatchSchema,
    response: alertsAnswerSchema,
    async handler({ services, site }, { params, body }) {
      return updateAlerts(services, await site(params.site_id), body)
    },
  }),
]
