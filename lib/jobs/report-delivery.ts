import { Temporal } from 'temporal-polyfill'
import { reportSource } from '../sites/alerts'
import { reportParams } from '../reports/query/parse'
import { breakdown, totals } from '../reports/query/reports'
import { listAllSites } from '../sites/listing'
import type { Site } from '../sites/sites'
import { type DeliveryDeps, type DeliveryOptions, channelsOf, deliverOnce } from './deliver'

/**
 * The weekly and monthly reports: due on Monday (the week before) and on the 1st (the month
 * before), in the site's timezone, to the site's recipients by e-mail and to its webhook. The job
 * runs often (every ten minutes); each (site, kind, period, channel) is claimed in the store
 * before it is sent, so a second instance or a later run never sends it again, and a failed send
 * gives its claim back for the next run to retry.
 */

export type ReportKind = 'weekly' | 'monthly'

interface Period {
  kind: ReportKind
  from: Temporal.PlainDate
  to: Temporal.PlainDate
  previousFrom: Temporal.PlainDate
  previousTo: Temporal.PlainDate
}

/** The reports due for the site on its local day of `now`. */
export function duePeriods(site: Site, now: Date): Period[] {
  const today = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).toPlainDate()
  const periods: Period[] = []
  if (site.alerts.weeklyReport && today.dayOfWeek === 1) {
    const from = today.subtract({ days: 7 })
    periods.push({
      kind: 'weekly',
      from,
      to: today.subtract({ days: 1 }),
      previousFrom: from.subtract({ days: 7 }),
      previousTo: from.subtract({ days: 1 }),
    })
  }
  if (site.alerts.monthlyReport && today.day === 1) {
    const from = today.subtract({ months: 1 })
    periods.push({
      kind: 'monthly',
      from,
      to: today.subtract({ days: 1 }),
      previousFrom: from.subtract({ months: 1 }),
      previousTo: from.subtract({ days: 1 }),
    })
  }
  return periods
}

/** Sends every report due now, site by site: one site's failure is logged with its id and the others still go out. */
export async function deliverReports(
  deps: DeliveryDeps,
  now: Date,
  options: DeliveryOptions = {},
): Promise<{ sent: number; failed: number }> {
  const log = options.log ?? console.error
  let sent = 0
  let failed = 0
  for (const site of await listAllSites(deps.repositories)) {
    for (const period of duePeriods(site, now)) {
      try {
        sent += await deliverSiteReport(deps, site, period, { ...options, log })
      } catch (err) {
        failed++
        log(`${period.kind} report of site ${site.id} failed: ${(err as Error).message}`)
      }
    }
  }
  return { sent, failed }
}

async function deliverSiteReport(
  deps: DeliveryDeps,
  site: Site,
  period: Period,
  options: DeliveryOptions & { log: (m: string) => void },
): Promise<number> {
  return deliverOnce(
    deps,
    site,
    channelsOf(deps, site, options.log),
    (channel) => `${site.id}:${period.kind}:${period.from}:${channel}`,
    async () => {
      const report = await buildReport(deps, site, period)
      return { subject: report.subject, text: reportText(report), webhook: report.payload }
    },
    options,
  )
}

const METRICS = [
  ['visitors', 'Visitors'],
  ['visits', 'Visits'],
  ['pageviews', 'Pageviews'],
  ['bounceRate', 'Bounce rate'],
  ['avgDuration', 'Visit duration'],
] as const
type Metric = (typeof METRICS)[number][0]

interface SiteReport {
  subject: string
  site: Site
  period: Period
  metrics: Record<Metric, { current: number; previous: number; change: number | null }>
  topPages: { value: string; visitors: number; pageviews: number }[]
  topSources: { value: string; visitors: number }[]
  payload: { event: string } & Record<string, unknown>
}

const TOP_ROWS = 10

async function buildReport(deps: DeliveryDeps, site: Site, period: Period): Promise<SiteReport> {
  const params = (from: Temporal.PlainDate, to: Temporal.PlainDate) =>
    reportParams.parse({
      site_id: site.id,
      range: 'custom',
      from: from.toString(),
      to: to.toString(),
      source: reportSource(site),
      limit: TOP_ROWS,
    })
  const [current, previous, pages, sources] = await Promise.all([
    totals(deps, site, params(period.from, period.to)),
    totals(deps, site, params(period.previousFrom, period.previousTo)),
    breakdown(deps, site, { ...params(period.from, period.to), property: 'path' }),
    breakdown(deps, site, { ...params(period.from, period.to), property: 'source' }),
  ])
  const metrics = Object.fromEntries(
    METRICS.map(([name]) => {
      const now = current.totals[name]
      const before = previous.totals[name]
      // bounce rate is a fraction already: its change is the difference in points, the others relative
      const change = now === null || before === null ? null : name === 'bounceRate' ? now - before : before ? (now - before) / before : null
      return [name, { current: now, previous: before, change }]
    }),
  ) as SiteReport['metrics']
  const topPages = pages.results.map((r) => ({ value: r.value, visitors: r.visitors, pageviews: r.pageviews ?? 0 }))
  const topSources = sources.results.map((r) => ({ value: r.value, visitors: r.visitors }))
  const label = period.kind === 'weekly' ? 'Weekly' : 'Monthly'
  return {
    subject: `${label} report for ${site.domain}: ${period.from} to ${period.to}`,
    site,
    period,
    metrics,
    topPages,
    topSources,
    payload: {
      event: `report.${period.kind}`,
      site: { id: site.id, domain: site.domain, timezone: site.timezone },
      source: current.source,
      period: { from: period.from.toString(), to: period.to.toString() },
      previousPeriod: { from: period.previousFrom.toString(), to: period.previousTo.toString() },
      metrics,
      topPages,
      topSources,
    },
  }
}

const formatDuration = (seconds: number) => `${Math.floor(seconds / 60)}m ${String(Math.round(seconds % 60)).padStart(2, '0')}s`
const formatValue = (metric: Metric, value: number) =>
  metric === 'bounceRate' ? `${Math.round(value * 100)}%` : metric === 'avgDuration' ? formatDuration(value) : value.toLocaleString('en-US')
const formatChange = (metric: Metric, change: number | null) => {
  if (change === null) return 'new'
  const sign = change > 0 ? '+' : change < 0 ? '-' : '±'
  return metric === 'bounceRate' ? `${sign}${Math.abs(Math.round(change * 100))} pts` : `${sign}${Math.abs(Math.round(change * 100))}%`
}

/** The e-mail body: the numbers against the period before, then the top pages and sources. */
export function reportText(report: SiteReport): string {
  const { period, site } = report
  const lines = [
    `${report.subject}`,
    `${period.from} to ${period.to} (${site.timezone}), compared with ${period.previousFrom} to ${period.previousTo}`,
    '',
    ...METRICS.map(([name, label]) => {
      const m = report.metrics[name]
      return `${label.padEnd(16)}${formatValue(name, m.current).padStart(12)}   ${formatChange(name, m.change)} (was ${formatValue(name, m.previous)})`
    }),
    '',
    'Top pages',
    ...(report.topPages.length ? report.topPages.map((p) => `  ${p.value}  ${p.visitors.toLocaleString('en-US')} visitors`) : ['  none']),
    '',
    'Top sources',
    ...(report.topSources.length
      ? report.topSources.map((s) => `  ${s.value || '(direct)'}  ${s.visitors.toLocaleString('en-US')} visitors`)
      : ['  none']),
    '',
    `You receive this because your address is a recipient of ${site.domain}'s reports; remove it in the site's alert settings.`,
  ]
  return lines.join('\n')
}
