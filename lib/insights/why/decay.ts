import { Temporal } from 'temporal-polyfill'
import { AI_CHANNEL } from '../../ingest/ai-assistants'
import { latestSnapshots, siteChanges } from '../../crawl/changes'
import { execute } from '../../storage/clickhouse/execute'
import { sql } from '../../storage/clickhouse/sql'
import { candidateOf } from './candidates'
import type { Site } from '../../sites/sites'
import { pageChannelVisitsByDaySql, pagePeaksSql } from './compile'
import { round4 } from './robust'
import { sum } from './shifts'
import { dayRowsSql } from './path-days'
import type { WhyDeps } from '../../reports/query/window'
import { importedDayRowsSql } from './imported-days'
import { parseSource } from '../../reports/query/parse'
import type { Source } from '../../sites/source'
import { type PageSearchEvidence, evidenceView, pagesSearchEvidence, searchConnection } from '../search/search'

/**
 * GET /decay: pages whose traffic is fading, as the whole site stands now (no range). Windows are
 * whole site-local days: the current 28 days end yesterday; a page's peak is its best 28
 * consecutive days within the year before. The rule is in DECAY_RULE (docs/traffic-changes.md).
 */
export const DECAY_RULE = {
  windowDays: 28,
  lookbackDays: 365,
  /** The peak must have had this many visits: smaller pages fade by chance. */
  minPeakVisits: 30,
  /** The current 28 days are at most 70% of the peak. */
  minFall: 0.3,
  /** ... and still at most 75% of it once the whole site's change since the peak is taken out. */
  minAdjustedFall: 0.25,
  /** A title, h1 or text change detected since the peak began explains the fall with this confidence (when the page is not removed). */
  contentChangeConfidence: 0.6,
}

/** The changes that make a page's content different: a text change after the peak is a refresh. */
const CONTENT_TYPES = new Set(['title', 'h1', 'text'])

/** What a channel's loss says, by the default channel grouping's names. */
function lossKind(channel: string): string {
  if (channel === 'Organic Search') return 'lost_search'
  if (channel === 'Referral') return 'lost_referral'
  if (channel === 'Organic Social' || channel === 'Organic Video') return 'lost_social'
  if (channel === AI_CHANNEL) return 'lost_ai'
  if (channel === 'Email') return 'lost_email'
  if (channel === 'Direct') return 'lost_direct'
  if (channel.startsWith('Paid') || channel === 'Display') return 'lost_paid'
  return 'lost_other'
}

const day = (d: Temporal.PlainDate) => d.toString()

/** What a ga4 read of decay cannot tell: GA4's pages carry no channel. */
const GA4_NO_CHANNEL = {
  part: 'pages.diagnosis, pages.diagnosis.evidence',
  reason:
    "GA4's imported pages carry no channel, so the channel a page lost its visits from cannot be told (kind channel_unknown); the crawler's page_removed and content_changed still apply",
}

export async function decay(deps: WhyDeps, site: Site, params: { limit?: number; source?: Source }) {
  const source = parseSource(params, site)
  const today = Temporal.Instant.fromEpochMilliseconds(deps.now().getTime()).toZonedDateTimeISO(site.timezone).toPlainDate()
  const currentTo = today
  const currentFrom = today.subtract({ days: DECAY_RULE.windowDays })
  const lookbackFrom = today.subtract({ days: DECAY_RULE.lookbackDays })
  const firstPeakEnd = lookbackFrom.add({ days: DECAY_RULE.windowDays - 1 })
  const windows = {
    current: { from: day(currentFrom), to: day(currentTo.subtract({ days: 1 })) },
    lookback: { from: day(lookbackFrom), to: day(currentTo.subtract({ days: 1 })) },
  }
  const zonedStart = (d: Temporal.PlainDate) => d.toZonedDateTime({ timeZone: site.timezone })
  const base = {
    source,
    timezone: site.timezone,
    windows,
    rule: DECAY_RULE,
    ...(source === 'ga4' ? { notAvailable: [GA4_NO_CHANNEL] } : {}),
  }

  const rows =
    source === 'ga4'
      ? importedDayRowsSql(site.id, lookbackFrom, currentTo)
      : await dayRowsSql(deps.clickhouse, site.id, site.timezone, zonedStart(lookbackFrom), zonedStart(currentTo))
  const [peaks, siteDays] = await Promise.all([
    execute<{ pathname: string; peak: number | string; peak_end: string; current: number | string }>(
      deps.clickhouse,
      pagePeaksSql(rows.paths, day(currentFrom), day(firstPeakEnd), DECAY_RULE.minPeakVisits),
    ),
    execute<{ day: string; visits: number | string }>(deps.clickhouse, sql`SELECT toString(day) AS day, visits FROM (${rows.site})`),
  ])
  const siteByDay = new Map(siteDays.map((r) => [String(r.day).slice(0, 10), Number(r.visits)]))
  // the days of the lookback once, with running totals, so a 28-day sum is a difference
  const days: string[] = []
  for (let d = lookbackFrom; Temporal.PlainDate.compare(d, currentTo) < 0; d = d.add({ days: 1 })) days.push(day(d))
  const indexOf = new Map(days.map((d, i) => [d, i]))
  const running = [0]
  for (const d of days) running.push(running[running.length - 1] + (siteByDay.get(d) ?? 0))
  /** The site's visits over the 28 days ending on day `end` (YYYY-MM-DD, included). */
  const siteOver = (end: string) => {
    const i = indexOf.get(end)!
    return running[i + 1] - running[Math.max(0, i + 1 - DECAY_RULE.windowDays)]
  }
  const yesterday = days[days.length - 1]
  const siteCurrent = siteOver(yesterday)
  let sitePeak = { visits: 0, end: null as string | null }
  for (let i = indexOf.get(day(firstPeakEnd))!; i < days.length; i++) {
    const v = siteOver(days[i])
    if (v > 0 && v >= sitePeak.visits) sitePeak = { visits: v, end: days[i] }
  }
  const windowStart = (end: string) => days[indexOf.get(end)! - (DECAY_RULE.windowDays - 1)]

  const fading = peaks
    .map((r) => {
      const peak = Number(r.peak)
      const current = Number(r.current)
      const peakTo = String(r.peak_end).slice(0, 10)
      const siteAtPeak = siteOver(peakTo)
      const siteChange = siteAtPeak ? siteCurrent / siteAtPeak - 1 : null
      const ratio = current / peak
      const adjustedChange = siteChange !== null && siteChange > -1 ? ratio / (1 + siteChange) - 1 : null
      return {
        path: r.pathname,
        peak,
        peakFrom: windowStart(peakTo),
        peakTo,
        current,
        change: round4(ratio - 1),
        siteChange: siteChange === null ? null : round4(siteChange),
        adjustedChange: adjustedChange === null ? null : round4(adjustedChange),
        lost: peak - current,
      }
    })
    .filter(
      (p) =>
        p.current <= (1 - DECAY_RULE.minFall) * p.peak && (p.adjustedChange === null || p.adjustedChange <= -DECAY_RULE.minAdjustedFall),
    )
    .sort((a, b) => b.lost - a.lost || (a.path < b.path ? -1 : 1))
    .slice(0, Math.min(1000, Math.max(1, params.limit ?? 100)))

  // the diagnosis: which channel the lost visits came from (the collector's visits only)
  const channelRows =
    fading.length && source === 'standalone'
      ? await execute<{ pathname: string; channel: string; day: string; visits: number | string }>(
          deps.clickhouse,
          pageChannelVisitsByDaySql(
            site.id,
            site.timezone,
            fading.map((p) => p.path),
            zonedStart(Temporal.PlainDate.from(fading.map((p) => p.peakFrom).sort()[0])),
            zonedStart(currentTo),
          ),
        )
      : []
  // the crawler's view: removed pages and content changes since each peak began
  const earliestPeak = fading.length ? zonedStart(Temporal.PlainDate.from(fading.map((p) => p.peakFrom).sort()[0])).epochMilliseconds : 0
  const [latest, changes] = fading.length
    ? await Promise.all([
        latestSnapshots(deps.clickhouse, site.id),
        siteChanges(deps.clickhouse, site.id, new Date(earliestPeak), new Date(deps.now().getTime() + 1)),
      ])
    : [new Map(), []]
  // what Search Console saw of each fading page, its peak against the current 28 days: lost rank, or lost demand
  const search = new Map<string, PageSearchEvidence | undefined>()
  if (searchConnection(site))
    await Promise.all(
      fading.map(async (p) => {
        const spans = {
          previous: { from: p.peakFrom, to: day(Temporal.PlainDate.from(p.peakTo).add({ days: 1 })) },
          current: { from: windows.current.from, to: day(currentTo) },
        }
        search.set(p.path, (await pagesSearchEvidence(deps, site.id, spans, { paths: [p.path] })).get(p.path))
      }),
    )
  return {
    available: true,
    ...base,
    site: {
      current: siteCurrent,
      peak: sitePeak.visits,
      peakFrom: sitePeak.end ? windowStart(sitePeak.end) : null,
      peakTo: sitePeak.end,
      change: sitePeak.visits ? round4(siteCurrent / sitePeak.visits - 1) : null,
    },
    pages: fading.map((p) => {
      const rows = channelRows.filter((r) => r.pathname === p.path)
      const channels = [...new Set(rows.map((r) => r.channel))].map((channel) => {
        const of = rows.filter((r) => r.channel === channel)
        const peak = sum(of.filter((r) => r.day >= p.peakFrom && r.day <= p.peakTo).map((r) => Number(r.visits)))
        const current = sum(of.filter((r) => r.day >= windows.current.from && r.day <= windows.current.to).map((r) => Number(r.visits)))
        return {
          kind: 'channel_loss' as const,
          channel,
          peak,
          current,
          lost: peak - current,
          share: round4(Math.min(1, Math.max(0, (peak - current) / p.lost))),
        }
      })
      const evidence = channels
        .filter((c) => c.lost > 0)
        .sort((a, b) => b.lost - a.lost || (a.channel < b.channel ? -1 : 1))
        .slice(0, 3)
      const top = evidence[0]
      const peakStart = zonedStart(Temporal.PlainDate.from(p.peakFrom)).epochMilliseconds
      const peakEnd = zonedStart(Temporal.PlainDate.from(p.peakTo).add({ days: 1 })).epochMilliseconds
      const since = changes
        .filter((c) => c.scope === 'page' && c.path === p.path && Date.parse(c.detectedAt) >= peakStart && CONTENT_TYPES.has(c.type))
        .reverse()
      const snapshot = latest.get(p.path)
      const removed = !!snapshot && (snapshot.removed || snapshot.status === 404 || snapshot.status === 410)
      const diagnosis = removed
        ? { kind: 'page_removed', confidence: 1, evidence }
        : since.length
          ? { kind: 'content_changed', confidence: DECAY_RULE.contentChangeConfidence, evidence }
          : p.current === 0
            ? { kind: 'no_visits', confidence: 1, evidence }
            : source === 'ga4'
              ? { kind: 'channel_unknown', confidence: 0, evidence }
              : top
                ? { kind: lossKind(top.channel), confidence: top.share, evidence }
                : { kind: 'lost_other', confidence: 0, evidence }
      const refreshed = since.some((c) => c.type === 'text' && Date.parse(c.detectedAt) >= peakEnd)
      return { ...p, diagnosis, contentChanges: since.map(candidateOf), refreshed, search: evidenceView(search.get(p.path)) }
    }),
  }
}
