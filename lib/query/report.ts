import type { Olap } from '../olap/types'
import { type Query, compileBreakdown, compileStats, compileTimeseries, hasEngagement } from './compile'
import { runReport } from './prepare'
import { type RolledDays, buckets } from './range'
import { rolledDays, seriesUsesRollup, usesRollup } from './rollup'

/**
 * The rolled-up days of a window, looked up once per resolved range and site: the reads of one
 * request (an export's every breakdown, totals and series) share the range object and the lookup.
 */
const rolledByRange = new WeakMap<object, Map<string, Promise<RolledDays>>>()
function rolledFor(olap: Olap, query: Query): Promise<RolledDays> {
  let bySite = rolledByRange.get(query.range)
  if (!bySite) rolledByRange.set(query.range, (bySite = new Map()))
  let days = bySite.get(query.siteId)
  if (!days) bySite.set(query.siteId, (days = rolledDays(olap, query)))
  return days
}

const num = (v: unknown) => Number(v ?? 0)
const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits

export interface Totals {
  visitors: number
  visits: number
  pageviews: number
  bounceRate: number
  avgDuration: number
  viewsPerVisit: number
  events: number
}

export const ZERO_TOTALS: Totals = { visitors: 0, visits: 0, pageviews: 0, bounceRate: 0, avgDuration: 0, viewsPerVisit: 0, events: 0 }

/** Runs the compiled reports and shapes their rows: the run-and-shape stage of the pipeline. */
export async function totals(olap: Olap, query: Query): Promise<Totals> {
  const rolled = usesRollup(query) ? await rolledFor(olap, query) : undefined
  const [row] = await runReport<Record<string, unknown>>(olap, compileStats(query, rolled))
  const visits = num(row?.visits)
  const factsVisits = num(row?.facts_visits)
  return {
    visitors: num(row?.visitors),
    visits,
    pageviews: num(row?.pageviews),
    bounceRate: factsVisits ? round(num(row?.bounces) / factsVisits, 4) : 0,
    avgDuration: Math.round(num(row?.duration)),
    viewsPerVisit: visits ? round(num(row?.pageviews) / visits, 2) : 0,
    events: num(row?.events),
  }
}

/** Continuous buckets over the window; empty ones are zeros. */
export async function series(olap: Olap | null, query: Query) {
  const rolled = olap && seriesUsesRollup(query) ? await rolledFor(olap, query) : undefined
  const rows = olap ? await runReport<Record<string, unknown>>(olap, compileTimeseries(query, rolled)) : []
  const byBucket = new Map(rows.map((r) => [num(r.bucket), r]))
  return buckets(query.range).map(({ epoch, label }) => {
    const r = byBucket.get(epoch)
    return { timestamp: label, visitors: num(r?.visitors), visits: num(r?.visits), pageviews: num(r?.pageviews) }
  })
}

export async function breakdown(olap: Olap, query: Query, property: string) {
  const rolled = usesRollup(query, property) ? await rolledFor(olap, query) : undefined
  const rows = await runReport<Record<string, unknown>>(olap, compileBreakdown(query, property, rolled))
  if (property === 'goal') {
    return rows.map((r) => {
      const visitors = num(r.visitors)
      const row: Record<string, unknown> = {
        value: r.value,
        visitors,
        events: num(r.events),
        conversions: num(r.events),
        conversionRate: num(r.total_visitors) ? round(visitors / num(r.total_visitors), 4) : 0,
      }
      if (r.currency) row.revenue = { amount: round(num(r.revenue), 2), currency: r.currency }
      return row
    })
  }
  const engagement = hasEngagement(property)
  return rows.map((r) => {
    const row: Record<string, unknown> = { value: r.value, visitors: num(r.visitors), visits: num(r.visits), pageviews: num(r.pageviews), events: num(r.events) }
    if (engagement) {
      row.bounceRate = round(num(r.bounce_rate), 4)
      row.avgDuration = Math.round(num(r.avg_duration))
    }
    return row
  })
}
