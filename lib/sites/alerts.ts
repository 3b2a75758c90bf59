import type { DomainServices } from './domain-services'
import { z } from 'zod'
import { ApiError } from '../core/errors'
import { randomString } from '../core/crypto'
import { OutboundError, outboundCheckOf } from '../network/guarded-fetch'
import { SOURCES, type Site, siteViewSchema } from './sites'

/** The most addresses one site's reports and alerts go to. */
export const MAX_RECIPIENTS = 20

const recipientsSchema = z
  .array(z.email({ message: 'must be valid e-mail addresses' }).max(254), { message: 'must be an array of e-mail addresses' })
  .max(MAX_RECIPIENTS, `at most ${MAX_RECIPIENTS} recipients`)
  .transform((list) => [...new Set(list.map((address) => address.toLowerCase()))])

const webhookUrlSchema = z.url({ protocol: /^https$/, message: 'must be an https URL' }).max(2000)

/** What PATCH /sites/{id}/alerts takes: any of these, merged into the stored settings. */
export const alertsPatchSchema = z
  .strictObject({
    weeklyReport: z.boolean().describe('E-mail and webhook report every Monday for the week before, in the site timezone'),
    monthlyReport: z.boolean().describe('Report on the 1st for the month before'),
    spikeAlerts: z.boolean(),
    spikeThreshold: z
      .number()
      .min(1.1)
      .max(100)
      .describe('Alert when visitors of an hour reach this multiple of the usual for that hour (2 = twice)'),
    dropAlerts: z.boolean(),
    dropThreshold: z
      .number()
      .gt(0)
      .lt(1)
      .describe('Alert when visitors of an hour fall to this fraction of the usual for that hour (0.5 = half)'),
    backlinkAlerts: z.boolean(),
    vitalsAlerts: z.boolean(),
    recipients: recipientsSchema.describe(`E-mail addresses, at most ${MAX_RECIPIENTS}; replaces the list`),
    webhookUrl: webhookUrlSchema.nullable().describe('https URL that receives reports as signed JSON; null removes it'),
    source: z.enum(SOURCES).nullable().describe("The source reports measure; null follows the site's primary source"),
    rotateWebhookSecret: z.literal(true).describe('Issue a new signing secret for the current webhook'),
  })
  .partial()
  .refine((patch) => Object.keys(patch).length > 0, 'body must name at least one field to change')

export type AlertsPatch = z.infer<typeof alertsPatchSchema>

/** The stored settings as every read shows them (the site view's alerts group). */
export const alertsSchema = siteViewSchema.shape.alerts

export const alertsAnswerSchema = alertsSchema.extend({
  webhookSecret: z
    .string()
    .optional()
    .describe(
      'The signing secret of the webhook, shown only in the answer that issued it: when webhookUrl changes or rotateWebhookSecret is sent',
    ),
})

/** The measured source of a site's reports; the primary one when the chosen source was since dropped from the site. */
export const reportSource = (site: Site) =>
  site.alerts.source && site.sources.includes(site.alerts.source) ? site.alerts.source : site.primarySource

/** A webhook URL the guarded fetch would refuse is refused when it is saved, not at the first delivery. */
async function checkWebhookUrl(services: DomainServices, url: string) {
  try {
    await outboundCheckOf(services.fetch)(new URL(url))
  } catch (err) {
    const reason = err instanceof OutboundError ? err.message : `its host does not resolve (${(err as Error).message})`
    throw new ApiError(400, `webhookUrl: ${reason}`)
  }
}

/** Merges a validated patch into the site's alert settings and saves it; a new webhook gets a new secret, shown once. */
export async function updateAlerts(services: DomainServices, site: Site, patch: AlertsPatch): Promise<z.input<typeof alertsAnswerSchema>> {
  const { rotateWebhookSecret, ...fields } = patch
  if (fields.webhookUrl && fields.webhookUrl !== site.alerts.webhookUrl) await checkWebhookUrl(services, fields.webhookUrl)
  const secret = newWebhookSecret()
  let issued: string | undefined
  // computed on the record as stored when it is saved: a concurrent change of other settings survives
  const next = await services.sites.update(site.id, (fresh) => {
    issued = undefined
    const changed: Site = structuredClone(fresh)
    Object.assign(changed.alerts, fields)
    if (fields.source && !fresh.sources.includes(fields.source)) {
      throw new ApiError(400, `source: "${fields.source}" is not one of the site's sources (${fresh.sources.join(', ')})`)
    }
    if (rotateWebhookSecret && !changed.alerts.webhookUrl) throw new ApiError(400, 'rotateWebhookSecret: the site has no webhook')
    if (fields.webhookUrl !== undefined && fields.webhookUrl !== fresh.alerts.webhookUrl) {
      changed.webhookSecret = issued = fields.webhookUrl ? secret : undefined
    } else if (rotateWebhookSecret) {
      changed.webhookSecret = issued = secret
    }
    if (!changed.webhookSecret) delete changed.webhookSecret
    return changed
  })
  return issued ? { ...next.alerts, webhookSecret: issued } : next.alerts
}

const newWebhookSecret = () => `whsec_${randomString(40)}`
