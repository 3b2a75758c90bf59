import type { Mailer } from '../network/mail'
import { WEBHOOK_RETRY_DELAYS_MS, sendWebhook } from '../network/webhook'
import type { ReportDeps } from '../reports/query/reports'
import type { Site } from '../sites/sites'
import type { JobRepositories } from './job-services'

/**
 * The one way the scheduled jobs deliver (reports, traffic alerts, daily alerts): each (message,
 * channel) is claimed in the store before it is sent, so a second instance or a later run never
 * sends it again, and a failed send gives its claim back for the next run to retry.
 */

export type Channel = 'email' | 'webhook'

export interface DeliveryDeps extends ReportDeps {
  repositories: JobRepositories
  /** The guarded outbound fetch. */
  fetch: typeof fetch
  /** Absent on Workers: e-mail is then left for a home that has one. */
  mailer?: Mailer
}

export interface DeliveryOptions {
  log?: (message: string) => void
  retryDelaysMs?: number[]
}

/** How long a claim holds while its message is being sent; a sender that dies leaves it to expire and be retried. */
const SENDING_LEASE_SECONDS = 15 * 60

/** What a delivery says: the e-mail's subject and text, and the webhook's payload (its deliveryId is added). */
export interface Message {
  subject: string
  text: string
  webhook: { event: string } & Record<string, unknown>
}

/** Where a site's deliveries go: e-mail when it has recipients and the home a mailer, the webhook when it has one. */
export function channelsOf(deps: DeliveryDeps, site: Site, log: (message: string) => void, what = 'reports'): Channel[] {
  const channels: Channel[] = []
  if (site.alerts.recipients.length) {
    if (deps.mailer) channels.push('email')
    else log(`${site.id}: ${what} have recipients, but this home has no mailer`)
  }
  if (site.alerts.webhookUrl && site.webhookSecret) channels.push('webhook')
  return channels
}

/**
 * Delivers one message once on each of the channels: claims each channel's delivery, composes the
 * message only when one was claimed, sends it, and marks each sent channel; a failed channel's
 * claim is given back. A message of `null` (nothing to say) settles the claimed channels unsent.
 * The channels' failures are thrown together after every channel was tried; the count sent is returned.
 */
export async function deliverOnce(
  deps: DeliveryDeps,
  site: Site,
  channels: Channel[],
  keyOf: (channel: Channel) => string,
  compose: () => Promise<Message | null>,
  options: DeliveryOptions,
): Promise<number> {
  const deliveries = deps.repositories.deliveries
  // this delivery's name on its claims: only it gives them back
  const holder = crypto.randomUUID()
  const claimed: Channel[] = []
  for (const channel of channels) if (await deliveries.claim(keyOf(channel), holder, SENDING_LEASE_SECONDS)) claimed.push(channel)
  if (!claimed.length) return 0
  let message: Message | null
  try {
    message = await compose()
  } catch (err) {
    await Promise.all(claimed.map((channel) => deliveries.release(keyOf(channel), holder)))
    throw err
  }
  const failures: string[] = []
  let sent = 0
  for (const channel of claimed) {
    // nothing to say is settled for the period too: a later run does not look again
    if (!message) {
      await deliveries.markSent(keyOf(channel))
      continue
    }
    try {
      if (channel === 'email') await deps.mailer!.send({ to: site.alerts.recipients, subject: message.subject, text: message.text })
      else
        await sendWebhook(
          deps.fetch,
          { url: site.alerts.webhookUrl!, secret: site.webhookSecret! },
          { deliveryId: keyOf(channel), ...message.webhook },
          options.retryDelaysMs ?? WEBHOOK_RETRY_DELAYS_MS,
        )
      await deliveries.markSent(keyOf(channel))
      sent++
    } catch (err) {
      await deliveries.release(keyOf(channel), holder)
      failures.push(`${channel}: ${(err as Error).message}`)
    }
  }
  if (failures.length) throw new Error(failures.join('; '))
  return sent
}
