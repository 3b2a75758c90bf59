import { listAllSites } from '../sites/listing'
import type { Site } from '../sites/sites'
import { judgeBuckets, shiftId, shiftsOf, sum, type Shift } from '../insights/why/shifts'
import { isoLocal, readsEvents, zoned } from '../reports/query/window'
import { type DeliveryDeps, type DeliveryOptions, channelsOf, deliverOnce } from './deliver'

/**
 * Spike and drop alerts (docs/traffic-changes.md): the job runs every ten minutes, site by site,
 * and looks at the last day of site-local hours with the rule of GET /spikes. A spike counts the
 * hour under way too (its visitors can only grow); a drop only finished hours. Each alert goes
 * once per channel: it is claimed in the store under the shift's stable id before it is sent, a
 * failed send gives the claim back for the next run, and a sent one is never sent again.
 */

/** Hours judged each run: a day, so that a run that was missed is made up by the next. */
const LOOKBACK_HOURS = 24
/** A shift is news while its last hour ended at most this long ago. */
const RECENT_HOURS = 3

export interface TrafficAlert {
  kind: 'spike' | 'drop'
  id: string
  start: string
  end: string
  visitors: number
  expected: number
  /** Visitors over expected, of the hour that moved most. */
  ratio: number | null
}

/** The alerts a site's settings ask for that its traffic now calls for. */
export async function dueAlerts(deps: DeliveryDeps, site: Site, now: Date): Promise<TrafficAlert[]> {
  const { spikeAlerts, dropAlerts, spikeThreshold, dropThreshold } = site.alerts
  if ((!spikeAlerts && !dropAlerts) || !readsEvents(site)) return []
  const at = zoned(now.getTime(), site.timezone)
  const currentHour = at.round({ smallestUnit: 'hour', roundingMode: 'floor' })
  const judged = await judgeBuckets(deps, site, 'hour', currentHour.subtract({ hours: LOOKBACK_HOURS }), currentHour.add({ hours: 1 }))
  const recent = (s: Shift) => s.end * 1000 >= currentHour.subtract({ hours: RECENT_HOURS - 1 }).epochMilliseconds
  const worst = (s: Shift) => s.buckets.reduce((a, b) => (Math.abs(b.visitors - b.expected) > Math.abs(a.visitors - a.expected) ? b : a))
  const ratioOf = (visitors: number, expected: number) => (expected > 0 ? visitors / expected : null)
  const alerts: TrafficAlert[] = []
  const describe = async (kind: 'spike' | 'drop', s: Shift): Promise<TrafficAlert> => {
    const w = worst(s)
    const ratio = ratioOf(w.visitors, w.expected)
    return {
      kind,
      id: await shiftId(site.id, 'hour', s.start),
      start: isoLocal(zoned(s.start * 1000, site.timezone)),
      end: isoLocal(zoned(s.end * 1000, site.timezone)),
      visitors: sum(s.buckets.map((b) => b.visitors)),
      expected: sum(s.buckets.map((b) => b.expected)),
      ratio: ratio === null ? null : Math.round(ratio * 100) / 100,
    }
  }
  if (spikeAlerts) {
    for (const s of shiftsOf(judged, 'hour', 'up').filter(recent)) {
      const w = worst(s)
      // the settings' threshold on top of the rule: the hour reached spikeThreshold times its usual
      if (w.expected === 0 || w.visitors >= spikeThreshold * w.expected) alerts.push(await describe('spike', s))
    }
  }
  if (dropAlerts) {
    const finished = judged.filter((b) => b.end * 1000 <= at.epochMilliseconds)
    for (const s of shiftsOf(finished, 'hour', 'down').filter(recent)) {
      const w = worst(s)
      if (w.visitors <= dropThreshold * w.expected) alerts.push(await describe('drop', s))
    }
  }
  return alerts
}

/** Sends every spike and drop alert due now, site by site: one site's failure is logged with its id and the others still go out. */
export async function deliverTrafficAlerts(
  deps: DeliveryDeps,
  now: Date,
  options: DeliveryOptions = {},
): Promise<{ sent: number; failed: number }> {
  const log = options.log ?? console.error
  let sent = 0
  let failed = 0
  for (const site of await listAllSites(deps.repositories)) {
    try {
      for (const alert of await dueAlerts(deps, site, now)) sent += await deliverAlert(deps, site, alert, { ...options, log })
    } catch (err) {
      failed++
      log(`traffic alerts of site ${site.id} failed: ${(err as Error).message}`)
    }
  }
  return { sent, failed }
}

async function deliverAlert(
  deps: DeliveryDeps,
  site: Site,
  alert: TrafficAlert,
  options: DeliveryOptions & { log: (m: string) => void },
): Promise<number> {
  return deliverOnce(
    deps,
    site,
    channelsOf(deps, site, options.log, 'alerts'),
    (channel) => `${site.id}:alert:${alert.id}:${channel}`,
    async () => ({
      subject: alertSubject(site, alert),
      text: alertText(site, alert),
      webhook: { event: `alert.${alert.kind}`, site: { id: site.id, domain: site.domain, timezone: site.timezone }, alert },
    }),
    options,
  )
}

const alertSubject = (site: Site, alert: TrafficAlert) =>
  `${alert.kind === 'spike' ? 'Traffic spike' : 'Traffic drop'} on ${site.domain} at ${alert.start}`

/** The e-mail body: what moved, against what, and where to look. */
export function alertText(site: Site, alert: TrafficAlert): string {
  const usual = alert.expected.toLocaleString('en-US')
  return [
    alertSubject(site, alert),
    '',
    `${alert.start} to ${alert.end} (${site.timezone}): ${alert.visitors.toLocaleString('en-US')} visitors, where the same hours of the 8 weeks before had ${usual} (median)${alert.ratio === null ? '' : `, ${alert.ratio}×`}.`,
    alert.kind === 'spike'
      ? `GET /api/v1/spikes lists it as ${alert.id}, with the source that brought the extra visitors.`
      : 'GET /api/v1/anomalies shows which pages lost visits.',
    '',
    `You receive this because your address is a recipient of ${site.domain}'s alerts; turn them off or remove it in the site's alert settings.`,
  ].join('\n')
}
