import { hasEngagement, holdsGoal } from '../dimensions'
import { type ResolvedRange, buckets } from './range'

/** A number from a result cell: 64-bit integers come back as strings, missing cells as zero. */
const numberOf = (v: unknown) => Number(v ?? 0)
const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits

/** How every read answers a fraction (a rate, a share, a conversion, CLS): to 4 decimals. */
export const fraction = (v: number) => round(v, 4)
/** How every read answers milliseconds (a vital's percentile, a timing): to 1 decimal. */
export const milliseconds = (v: number) => round(v, 1)
/** A web vital's value as answered: CLS is a unitless score (a fraction's 4 decimals), the others milliseconds. */
export const vitalValue = (name: string, v: number) => (name === 'CLS' ? fraction(v) : milliseconds(v))

export interface Totals {
  visitors: number
  visits: number
  pageviews: number
  bounceRate: number
  avgDuration: number
  viewsPerVisit: number
  /** Custom events; null on a ga4 read whose dataset cannot tell GA4's automatic events apart (plan.ts, ImportedPlan). */
  events: number | null
}

export const ZERO_TOTALS: Totals = { visitors: 0, visits: 0, pageviews: 0, bounceRate: 0, avgDuration: 0, viewsPerVisit: 0, events: 0 }

type Row = Record<string, unknown>

/** A breakdown row: goal rows carry conversions instead of visits and pageviews; engagement dimensions their rates. */
export interface BreakdownRow {
  value: string
  visitors: number
  visits?: number
  pageviews?: number
  events: number | null
  bounceRate?: number
  avgDuration?: number
  conversions?: number
  conversionRate?: number
  revenue?: { amount: number; currency: string }
}

/** The totals row as the API reports it: rates over the visits they are about, rounded. */
export function shapeTotals(row: Row | undefined): Totals {
  const visits = numberOf(row?.visits)
  const factsVisits = numberOf(row?.facts_visits)
  return {
    visitors: numberOf(row?.visitors),
    visits,
    pageviews: numberOf(row?.pageviews),
    bounceRate: factsVisits ? fraction(numberOf(row?.bounces) / factsVisits) : 0,
    avgDuration: Math.round(numberOf(row?.duration)),
    viewsPerVisit: visits ? round(numberOf(row?.pageviews) / visits, 2) : 0,
    events: numberOf(row?.events),
  }
}

/** Continuous buckets over the window; empty ones are zeros. */
export function shapeSeries(range: ResolvedRange, rows: Row[]) {
  const byBucket = new Map(rows.map((r) => [numberOf(r.bucket), r]))
  return buckets(range).map(({ epoch, label }) => {
    const r = byBucket.get(epoch)
    return { timestamp: label, visitors: numberOf(r?.visitors), visits: numberOf(r?.visits), pageviews: numberOf(r?.pageviews) }
  })
}

/** Breakdown rows: goal rows carry conversions, engagement properties their rates (bot hits have none). */
export function shapeBreakdown(property: string, rows: Row[], engagement = hasEngagement(property)): BreakdownRow[] {
  if (holdsGoal(property)) {
    return rows.map((r) => {
      const visitors = numberOf(r.visitors)
      const row: BreakdownRow = {
        value: String(r.value),
        visitors,
        events: numberOf(r.events),
        conversions: numberOf(r.events),
        conversionRate: numberOf(r.total_visitors) ? fraction(visitors / numberOf(r.total_visitors)) : 0,
      }
      if (r.currency) row.revenue = { amount: round(numberOf(r.revenue), 2), currency: String(r.currency) }
      return row
    })
  }
  return rows.map((r) => {
    const row: BreakdownRow = {
      value: String(r.value),
      visitors: numberOf(r.visitors),
      visits: numberOf(r.visits),
      pageviews: numberOf(r.pageviews),
      events: numberOf(r.events),
    }
    if (engagement) {
      row.bounceRate = fraction(numberOf(r.bounce_rate))
      row.avgDuration = Math.round(numberOf(r.avg_duration))
    }
    return row
  })
}

/**
 * Imported sums (compile/imported.ts) as the collector's rows: bounces are the sessions GA4 did not
 * count as engaged, duration the engagement seconds per session; `events` is null where the read
 * had no custom-event count.
 */
function importedFacts(r: Row | undefined, withEvents: boolean): Row {
  const visits = numberOf(r?.visits)
  const bounces = Math.max(0, visits - numberOf(r?.engaged))
  const duration = visits ? numberOf(r?.seconds) / visits : 0
  return {
    ...r,
    facts_visits: visits,
    bounces,
    duration,
    bounce_rate: visits ? bounces / visits : 0,
    avg_duration: duration,
    events: withEvents ? numberOf(r?.events) : null,
  }
}

export function shapeImportedTotals(row: Row | undefined, withEvents: boolean): Totals {
  return { ...shapeTotals(importedFacts(row, withEvents)), events: withEvents ? numberOf(row?.events) : null }
}

export function shapeImportedBreakdown(property: string, rows: Row[], withEvents: boolean): BreakdownRow[] {
  return shapeBreakdown(
    property,
    rows.map((r) => importedFacts(r, withEvents)),
  ).map((row) => (withEvents ? row : { ...row, events: null }))
}
