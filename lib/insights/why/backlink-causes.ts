import { type BacklinkEvent, backlinkEvents, targetPath } from '../../backlinks/reads'
import type { ClickHouse } from '../../storage/clickhouse/types'

/**
 * Backlinks as causes of a page's traffic moving (docs/traffic-changes.md): a link to the page
 * that was lost (or gained) near the shift, from the snapshots' events. A lost dofollow link
 * weighs BACKLINK_CAUSE_RULE.dofollow, any other link `other`, less for each day before the shift
 * as crawler changes do; when the referring domain's own visits explain the move (the source
 * shift of the same domain), the cause takes that confidence, and ranks before the source shift
 * it names.
 */
export const BACKLINK_CAUSE_RULE = { leadDays: 7, lagDays: 2, dofollow: 0.6, other: 0.3, decayPerDay: 0.1, floor: 0.3 }

const DAY_MS = 86_400_000
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/** A backlink event as evidence (anomalies' candidates, page detail's causes). */
export const backlinkEvidenceOf = (e: BacklinkEvent) => ({
  kind: e.kind === 'lost' ? ('backlink_lost' as const) : ('backlink_gained' as const),
  day: e.day,
  event: e.kind,
  reason: e.reason,
  from: e.from,
  to: e.to,
  domain: e.domain,
  anchor: e.anchor,
  rel: e.rel,
  visits: e.visits,
  foundBy: e.foundBy,
})

/** The events of links to `path` in the UTC days of [fromMs, toMs], newest first. */
export async function pageBacklinkEvents(clickhouse: ClickHouse, siteId: string, fromMs: number, toMs: number, path?: string) {
  const events = await backlinkEvents(clickhouse, siteId, utcDay(fromMs), utcDay(toMs))
  return path === undefined ? events : events.filter((e) => targetPath(e.to) === path)
}

/** The backlink causes of a page's shift starting at `shiftStartMs`, given the source shift found (if any). */
export async function backlinkCauses(
  clickhouse: ClickHouse,
  siteId: string,
  path: string,
  shift: { startMs: number; direction: 'up' | 'down' },
  sourceShift: { source: string; confidence: number } | null,
) {
  const rule = BACKLINK_CAUSE_RULE
  const events = await pageBacklinkEvents(
    clickhouse,
    siteId,
    shift.startMs - rule.leadDays * DAY_MS,
    shift.startMs + rule.lagDays * DAY_MS - 1,
    path,
  )
  return events
    .filter((e) => (shift.direction === 'down' ? e.kind === 'lost' : e.kind !== 'lost'))
    .map((e) => {
      const daysEarly = Math.max(0, (shift.startMs - DAY_MS - Date.parse(`${e.day}T00:00:00Z`)) / DAY_MS)
      const proximity = Math.max(rule.floor, 1 - rule.decayPerDay * Math.ceil(daysEarly))
      const base = (e.rel === 'dofollow' || e.reason === 'nofollow' ? rule.dofollow : rule.other) * proximity
      const explained = sourceShift && sourceShift.source.toLowerCase().replace(/^www\./, '') === e.domain ? sourceShift.confidence : 0
      const evidence = backlinkEvidenceOf(e)
      return {
        kind: evidence.kind,
        confidence: Math.round(Math.max(base, explained) * 10_000) / 10_000,
        summary: `${e.kind === 'lost' ? `a link from ${e.from} was lost (${e.reason ?? 'gone'})` : `a link from ${e.from} appeared`} on ${e.day}`,
        evidence,
      }
    })
}
