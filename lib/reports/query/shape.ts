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

/*
 * The collector's rows with imported rows added (Stats API v2 `include.imports`): counts are summed,
 * and the rates are derived again from the summed bounces and seconds, never averaged.
 */

/** Totals of collector and imported rows together; events null where the imported read had no custom-event count. */
export function shapeTotalsWithImports(tracked: Row | undefined, imported: Row | undefined, withEvents: boolean): Totals {
  const i = importedFacts(imported, withEvents)
  const parts = [tracked, i]
  const sum = (key: string) => parts.reduce((n, r) => n + numberOf(r?.[key]), 0)
  const factsVisits = sum('facts_visits')
  const seconds = parts.reduce((n, r) => n + numberOf(r?.duration) * numberOf(r?.facts_visits), 0)
  const totals = shapeTotals({
    visitors: sum('visitors'),
    visits: sum('visits'),
    pageviews: sum('pageviews'),
    events: sum('events'),
    facts_visits: factsVisits,
    bounces: sum('bounces'),
    duration: factsVisits ? seconds / factsVisits : 0,
  })
  return withEvents ? totals : { ...totals, events: null }
}

/** The window's buckets with the imported buckets' counts added to the collector's. */
export function shapeSeriesWithImports(range: ResolvedRange, tracked: Row[], imported: Row[]) {
  const byBucket = new Map<number, { visitors: number; visits: number; pageviews: number }>()
  for (const r of [...tracked, ...imported]) {
    const at = numberOf(r.bucket)
    const b = byBucket.get(at) ?? { visitors: 0, visits: 0, pageviews: 0 }
    b.visitors += numberOf(r.visitors)
    b.visits += numberOf(r.visits)
    b.pageviews += numberOf(r.pageviews)
    byBucket.set(at, b)
  }
  return shapeSeries(
    range,
    [...byBucket].map(([bucket, b]) => ({ bucket, ...b })),
  )
}

/**
 * Breakdown rows of collector and imported rows together, matched by value, ordered as the
 * pipeline orders them (visitors, then value) and cut to `limit`.
 */
export function shapeBreakdownWithImports(
  property: string,
  tracked: Row[],
  imported: Row[],
  withEvents: boolean,
  limit: number,
): BreakdownRow[] {
  const byValue = new Map<
    string,
    { visitors: number; visits: number; pageviews: number; events: number; bounces: number; seconds: number }
  >()
  for (const r of [...tracked, ...imported.map((row) => importedFacts(row, withEvents))]) {
    const value = String(r.value)
    const visits = numberOf(r.visits)
    const b = byValue.get(value) ?? { visitors: 0, visits: 0, pageviews: 0, events: 0, bounces: 0, seconds: 0 }
    b.visitors += numberOf(r.visitors)
    b.visits += visits
    b.pageviews += numberOf(r.pageviews)
    b.events += numberOf(r.events)
    b.bounces += numberOf(r.bounce_rate) * visits
    b.seconds += numberOf(r.avg_duration) * visits
    byValue.set(value, b)
  }
  const rows = [...byValue]
    .map(([value, b]) => ({
      value,
      visitors: b.visitors,
      visits: b.visits,
      pageviews: b.pageviews,
      events: b.events,
      bounce_rate: b.visits ? b.bounces / b.visits : 0,
      avg_duration: b.visits ? b.seconds / b.visits : 0,
    }))
    .sort((a, b) => b.visitors - a.visitors || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .slice(0, limit)
  const shaped = shapeBreakdown(property, rows)
  return withEvents ? shaped : shaped.map((row) => ({ ...row, events: null }))
}
