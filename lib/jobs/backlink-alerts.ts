import { backlinkEvents } from '../backlinks/reads'
import { type VitalsRegression, vitalsRegressions } from '../insights/why/vitals-regressions'
import { readsEvents } from '../reports/query/window'
import { listAllSites } from '../sites/listing'
import type { Site } from '../sites/sites'
import { type DeliveryDeps, type DeliveryOptions, channelsOf, deliverOnce } from './deliver'

/**
 * The daily backlink and vitals alerts (docs/backlinks.md): at most one message a day per site
 * and channel, about the UTC day before: new referring domains and lost links that sent visits
 * (from the snapshots' events), and vitals regressions (the anomalies vitals=1 rule, the 7 days
 * before against the 7 before them) that were not already regressions a day earlier. The message
 * is claimed under the site and the day before it is sent, so a retry or a second instance never
 * sends it twice; a failed send gives the claim back.
 */

const DAY_MS = 86_400_000
/** Days of each vitals window. */
const VITALS_DAYS = 7

export interface DailyAlert {
  day: string
  newDomains: { domain: string; links: { from: string; to: string; anchor: string; rel: string }[] }[]
  lostLinks: { from: string; to: string; anchor: string; rel: string; reason: string | null; visits: number }[]
  vitalsRegressions: { path: string; metric: string; baseline: number; current: number; band: string }[]
}

const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)
const at = (day: string) => ({ epochMilliseconds: Date.parse(`${day}T00:00:00Z`) })

async function regressionsUpTo(deps: DeliveryDeps, site: Site, endDay: string): Promise<VitalsRegression[]> {
  const to = Date.parse(`${endDay}T00:00:00Z`) + DAY_MS
  return vitalsRegressions(deps.clickhouse, site.id, {
    baselineFrom: { epochMilliseconds: to - 2 * VITALS_DAYS * DAY_MS },
    currentFrom: { epochMilliseconds: to - VITALS_DAYS * DAY_MS },
    to: { epochMilliseconds: to },
  })
}

/** What the site's settings ask for about the UTC day before `now`; null when there is nothing to say. */
export async function dueDailyAlert(deps: DeliveryDeps, site: Site, now: Date): Promise<DailyAlert | null> {
  const { backlinkAlerts, vitalsAlerts } = site.alerts
  if (!backlinkAlerts && !vitalsAlerts) return null
  const day = utcDay(now.getTime() - DAY_MS)
  const alert: DailyAlert = { day, newDomains: [], lostLinks: [], vitalsRegressions: [] }
  if (backlinkAlerts) {
    const events = await backlinkEvents(deps.clickhouse, site.id, day, day)
    const domains = new Map<string, DailyAlert['newDomains'][number]['links']>()
    for (const e of events.filter((e) => e.kind !== 'lost' && e.newDomain))
      domains.set(e.domain, [...(domains.get(e.domain) ?? []), { from: e.from, to: e.to, anchor: e.anchor, rel: e.rel }])
    alert.newDomains = [...domains].map(([domain, links]) => ({ domain, links })).sort((a, b) => a.domain.localeCompare(b.domain))
    alert.lostLinks = events
      .filter((e) => e.kind === 'lost' && e.visits > 0)
      .map((e) => ({ from: e.from, to: e.to, anchor: e.anchor, rel: e.rel, reason: e.reason, visits: e.visits }))
  }
  if (vitalsAlerts && readsEvents(site)) {
    const [today, before] = await Promise.all([
      regressionsUpTo(deps, site, day),
      regressionsUpTo(deps, site, utcDay(at(day).epochMilliseconds - DAY_MS)),
    ])
    const known = new Set(before.map((r) => `${r.path} ${r.metric}`))
    alert.vitalsRegressions = today
      .filter((r) => !known.has(`${r.path} ${r.metric}`))
      .map((r) => ({ path: r.path, metric: r.metric, baseline: r.baseline.value, current: r.current.value, band: r.band }))
  }
  return alert.newDomains.length || alert.lostLinks.length || alert.vitalsRegressions.length ? alert : null
}

/** Sends the day's backlink and vitals alerts, site by site: one site's failure is logged with its id and the others still go out. */
export async function deliverDailyAlerts(
  deps: DeliveryDeps,
  now: Date,
  options: DeliveryOptions = {},
): Promise<{ sent: number; failed: number }> {
  const log = options.log ?? console.error
  let sent = 0
  let failed = 0
  for (const site of await listAllSites(deps.repositories)) {
    try {
      if (!site.alerts.backlinkAlerts && !site.alerts.vitalsAlerts) continue
      sent += await deliverOnce(
        deps,
        site,
        channelsOf(deps, site, log, 'alerts'),
        (channel) => `${site.id}:daily-alert:${utcDay(now.getTime() - DAY_MS)}:${channel}`,
        async () => {
          const alert = await dueDailyAlert(deps, site, now)
          return (
            alert && {
              subject: subjectOf(site, alert),
              text: alertText(site, alert),
              webhook: { event: 'alert.daily', site: { id: site.id, domain: site.domain }, alert },
            }
          )
        },
        { ...options, log },
      )
    } catch (err) {
      failed++
      log(`daily alerts of site ${site.id} failed: ${(err as Error).message}`)
    }
  }
  return { sent, failed }
}

const subjectOf = (site: Site, alert: DailyAlert) => {
  const parts = [
    alert.newDomains.length ? `${alert.newDomains.length} new referring domain${alert.newDomains.length === 1 ? '' : 's'}` : '',
    alert.lostLinks.length ? `${alert.lostLinks.length} lost link${alert.lostLinks.length === 1 ? '' : 's'}` : '',
    alert.vitalsRegressions.length
      ? `${alert.vitalsRegressions.length} vitals regression${alert.vitalsRegressions.length === 1 ? '' : 's'}`
      : '',
  ].filter(Boolean)
  return `${site.domain} on ${alert.day}: ${parts.join(', ')}`
}

/** The e-mail body. */
export function alertText(site: Site, alert: DailyAlert): string {
  const lines = [subjectOf(site, alert), '']
  if (alert.newDomains.length) {
    lines.push('New referring domains:')
    for (const d of alert.newDomains)
      for (const l of d.links) lines.push(`- ${d.domain}: ${l.from} links to ${l.to} ("${l.anchor}", ${l.rel})`)
    lines.push('')
  }
  if (alert.lostLinks.length) {
    lines.push('Lost links that sent visits:')
    for (const l of alert.lostLinks)
      lines.push(`- ${l.from} to ${l.to} ("${l.anchor}"): ${l.reason ?? 'lost'}, ${l.visits} visits in the last 30 days`)
    lines.push('')
  }
  if (alert.vitalsRegressions.length) {
    lines.push('Vitals regressions (75th percentile, the last 7 days against the 7 before):')
    for (const r of alert.vitalsRegressions) lines.push(`- ${r.path} ${r.metric}: ${r.baseline} to ${r.current} (${r.band})`)
    lines.push('')
  }
  lines.push('GET /api/v1/backlinks and GET /api/v1/anomalies?vitals=1 have the details.')
  lines.push(
    `You receive this because your address is a recipient of ${site.domain}'s alerts; turn backlink or vitals alerts off in the site's alert settings.`,
  )
  return lines.join('\n')
}
