import { Temporal } from 'temporal-polyfill'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { asRolledDays } from '../../reports/query/model'
import { daySpans } from '../../reports/query/range'
import type { Site } from '../../sites/sites'
import { type Grain, bucketVisitorsAndSignaturesSql, bucketVisitorsInsertSql, visitorsByBucketSql } from './compile'
import { type WhyDeps, zoned } from '../../reports/query/window'

/**
 * Distinct visitors per site-local hour or day over [from, to), for the spike rule (shifts.ts).
 * The rule reads eight weeks before the window, so most of what it counts is finished days: those
 * come from rows of the daily rollup (`visitors:hour` and `visitors:day`), stamped with the
 * signature of the day they were built from, as every rollup row is, and read only while it still
 * matches (compile/day-rollups.ts). The first read after a day finished, or changed, builds that
 * day's rows from events, as a filtered read builds its days; today and any day not whole in the
 * window are read from events. The answer is the one events alone give.
 *
 * The read is one statement: the stored rows of the finished days come with the signature each
 * was built from and the days' current signatures beside them, matched here rather than looked
 * up by a statement of their own first; it also says when the site's first event came. Only days
 * found not built (or changed) take two more: their build, and the read of what it built.
 */

/** Days built by one statement, so that a long window (`all`) does not group months of events at once. */
const DAYS_PER_BUILD = 31

type Visitors = { bucket: number | string; visitors: number | string }
type Row = Visitors & { kind: number; d: string; n: string; s: string }

export interface BucketVisitors {
  /** A row per bucket with visitors (bucket: its start in epoch seconds). */
  rows: Visitors[]
  /** The quarter hour of the site's first event (epoch ms); null before any. */
  first: number | null
}

export async function visitorsByBucket(
  deps: WhyDeps,
  site: Site,
  grain: Grain,
  from: Temporal.ZonedDateTime,
  to: Temporal.ZonedDateTime,
): Promise<BucketVisitors> {
  const today = zoned(deps.now().getTime(), site.timezone).startOfDay()
  // the whole finished days of the window: from its first midnight to the last one before both its end and today
  const first = from.equals(from.startOfDay()) ? from : from.add({ days: 1 }).startOfDay()
  const end = Temporal.ZonedDateTime.compare(to, today) < 0 ? to : today
  const last = end.startOfDay()
  const finished = Temporal.ZonedDateTime.compare(first, last) < 0 ? { timezone: site.timezone, from: first, to: last } : null
  // the rest of the window is read from events
  const unrolled = (
    finished
      ? [
          { from, to: first },
          { from: last, to },
        ]
      : [{ from, to }]
  ).filter((span) => Temporal.ZonedDateTime.compare(span.from, span.to) < 0)
  const rows = await execute<Row>(deps.clickhouse, bucketVisitorsAndSignaturesSql(site.id, site.timezone, grain, unrolled, finished))
  const current = new Map<string, string>()
  let firstQuarter: number | null = null
  for (const row of rows) {
    const kind = Number(row.kind)
    if (kind === 2) current.set(row.d, signatureOf(row))
    else if (kind === 3 && Number(row.visitors) > 0) firstQuarter = Number(row.bucket) * 1000
  }
  // a stored row counts while its day's events are still those it was built from
  const counted: Visitors[] = []
  const built = new Set<string>()
  for (const row of rows) {
    const kind = Number(row.kind)
    if (kind === 0) counted.push(row)
    else if (kind === 1 && current.get(row.d) === signatureOf(row)) {
      counted.push(row)
      built.add(row.d)
    }
  }
  const stale = rows.filter((row) => Number(row.kind) === 2 && !built.has(row.d))
  if (stale.length) counted.push(...(await (deps.anonymousReads ? readFromEvents : buildAndRead)(deps, site, grain, stale)))
  return { rows: counted, first: firstQuarter }
}

const signatureOf = (row: { n: string; s: string }) => `${row.n}|${row.s}`

/** The finished days that have no current rows, read from events: an anonymous read builds nothing. */
const readFromEvents = (deps: WhyDeps, site: Site, grain: Grain, stale: Row[]) =>
  execute<Visitors>(
    deps.clickhouse,
    visitorsByBucketSql(site.id, site.timezone, grain, daySpans(asRolledDays(stale).days, site.timezone), asRolledDays([])),
  )

/** Builds the rows of finished days that have none current, then reads them. */
async function buildAndRead(deps: WhyDeps, site: Site, grain: Grain, stale: Row[]): Promise<Visitors[]> {
  const days = [...stale].sort((a, b) => a.d.localeCompare(b.d))
  for (let i = 0; i < days.length; i += DAYS_PER_BUILD) {
    const built = asRolledDays(days.slice(i, i + DAYS_PER_BUILD))
    await executeCommand(
      deps.clickhouse,
      bucketVisitorsInsertSql(site.id, site.timezone, grain, daySpans(built.days, site.timezone), built),
      { bounded: true },
    )
  }
  return execute<Visitors>(deps.clickhouse, visitorsByBucketSql(site.id, site.timezone, grain, [], asRolledDays(days)))
}
