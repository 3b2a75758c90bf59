import type { Site } from '../../sites/sites'
import { execute } from '../../storage/clickhouse/execute'
import { bind, sql } from '../../storage/clickhouse/sql'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { queryWindow } from './compile/scope'
import type { Query, Sample } from './model'
import { chTime } from './range'

/* Sampling by visitor, opt-in per site: what a read samples and how its answer says so (the Sample type, model.ts). */

/** The window's events, from the quarter-hour counts of events (`quarters`) (the quarters it overlaps): about a hundred rows a day. */
export const windowEventsSql = (query: Pick<Query, 'siteId' | 'range'>) =>
  sql`SELECT sum(events) AS n FROM quarters
WHERE site_id = ${bind('UUID', query.siteId)}
  AND quarter > ${bind('DateTime64(3)', chTime(query.range.from.epochMilliseconds - 15 * 60_000))}
  AND quarter < ${bind('DateTime64(3)', chTime(query.range.to.epochMilliseconds))}`

/**
 * The sample of a query's reads, or none: the site has no threshold, the window holds no more
 * events than it, or the window is a live one (read from recent_events, a short range already).
 */
export async function sampleOf(clickhouse: ClickHouse, site: Pick<Site, 'tracking'>, query: Query): Promise<Sample | undefined> {
  // sites saved before the setting existed have none
  const threshold = site.tracking.samplingThreshold ?? null
  if (threshold === null || queryWindow(query).table !== 'events') return undefined
  const [row] = await execute<{ n: string }>(clickhouse, windowEventsSql(query))
  const events = Number(row?.n ?? 0)
  return events > threshold ? { denominator: Math.ceil(events / threshold) } : undefined
}

/** The columns of read rows that count (visitors, visits, views, sums): scaled by the sample's n. Rates and means are not. */
const COUNTS = [
  'visitors',
  'visits',
  'pageviews',
  'events',
  'facts_visits',
  'bounces',
  'duration_ms',
  'reports',
  'scroll_sum',
  'engaged_ms_sum',
]

/** A sampled read's rows with their counts multiplied by n: each is an estimate of the whole's. */
export function scaleCounts<Row>(rows: Row[], denominator: number): Row[] {
  return rows.map((row) => {
    const scaled = { ...row } as Record<string, unknown>
    for (const column of COUNTS) if (column in scaled) scaled[column] = Number(scaled[column]) * denominator
    return scaled as Row
  })
}

/** z of a two-sided 95% interval. */
const Z95 = 1.96

/**
 * What an answer says of its sample: the fraction read, and the relative margin of error (95%) of
 * its largest visitor figure (the totals, the busiest bucket, the top row). An estimate of V visitors
 * from a sample of fraction p of them is off by z·√((1 − p)·V/p) at most, 19 times in 20: relative,
 * z·√((n − 1)/V). A smaller figure's margin is larger (docs/api.md, Sampling). Undefined when nothing
 * was sampled (no field); the margin is null when the figure is 0.
 */
export function samplingView(sample: Sample | undefined, sampled: boolean, largestVisitors: number) {
  if (!sample || !sampled) return undefined
  const n = sample.denominator
  return {
    fraction: Math.round((1 / n) * 1e6) / 1e6,
    relativeError: largestVisitors > 0 ? Math.round(Z95 * Math.sqrt((n - 1) / largestVisitors) * 1e4) / 1e4 : null,
  }
}
