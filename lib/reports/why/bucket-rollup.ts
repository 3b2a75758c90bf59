import { Temporal } from 'temporal-polyfill'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { signaturesAndBuilt } from '../query/compile/day-rollups'
import { type SignatureRow, daysOnDemand } from '../query/plan'
import { type RolledDays, asRolledDays } from '../query/model'
import { daySpans } from '../query/range'
import type { Site } from '../../sites/sites'
import { type Grain, bucketVisitorsInsertSql, bucketVisitorsProperty, visitorsByBucketSql } from './compile'
import { type WhyDeps, zoned } from './window'

/**
 * Distinct visitors per site-local hour or day over [from, to), for the spike rule (shifts.ts).
 * The rule reads eight weeks before the window, so most of what it counts is finished days: those
 * come from rows of the daily rollup (`visitors:hour` and `visitors:day`), stamped with the
 * signature of the day they were built from, as every rollup row is, and read only while it still
 * matches (compile/day-rollups.ts). The first read after a day finished, or changed, builds that
 * day's rows from events, as a filtered read builds its days; today and any day not whole in the
 * window are read from events. The answer is the one events alone give.
 */

/** Days built by one statement, so that a long window (`all`) does not group months of events at once. */
const DAYS_PER_BUILD = 31

type Visitors = { bucket: number | string; visitors: number | string }

export async function visitorsByBucket(
  deps: WhyDeps,
  site: Site,
  grain: Grain,
  from: Temporal.ZonedDateTime,
  to: Temporal.ZonedDateTime,
): Promise<Visitors[]> {
  const today = zoned(deps.now().getTime(), site.timezone).startOfDay()
  // the whole finished days of the window: from its first midnight to the last one before both its end and today
  const first = from.equals(from.startOfDay()) ? from : from.add({ days: 1 }).startOfDay()
  const end = Temporal.ZonedDateTime.compare(to, today) < 0 ? to : today
  const last = end.startOfDay()
  if (Temporal.ZonedDateTime.compare(first, last) >= 0) return read(deps, site, grain, from, to, asRolledDays([]))
  const property = bucketVisitorsProperty(grain)
  const window = { timezone: site.timezone, from: first, to: last }
  const rows = await execute<SignatureRow>(deps.clickhouse, signaturesAndBuilt(site.id, window, property, false))
  // the lookup holds only the window's finished days: every one is taken from the rollup
  const { missing, rolled } = daysOnDemand(rows, last.toPlainDate().toString())
  for (let i = 0; i < missing.length; i += DAYS_PER_BUILD) {
    const days = asRolledDays(missing.slice(i, i + DAYS_PER_BUILD))
    await executeCommand(deps.clickhouse, bucketVisitorsInsertSql(site.id, site.timezone, grain, daySpans(days.days, site.timezone), days))
  }
  return read(deps, site, grain, from, to, rolled)
}

/** The rows: the rolled days from the rollup, the rest of [from, to) from events. */
function read(deps: WhyDeps, site: Site, grain: Grain, from: Temporal.ZonedDateTime, to: Temporal.ZonedDateTime, rolled: RolledDays) {
  const unrolled: { from: Temporal.ZonedDateTime; to: Temporal.ZonedDateTime }[] = []
  let at = from
  for (const span of daySpans(rolled.days, site.timezone)) {
    if (Temporal.ZonedDateTime.compare(at, span.from) < 0) unrolled.push({ from: at, to: span.from })
    at = span.to
  }
  if (Temporal.ZonedDateTime.compare(at, to) < 0) unrolled.push({ from: at, to })
  return execute<Visitors>(deps.clickhouse, visitorsByBucketSql(site.id, site.timezone, grain, unrolled, rolled))
}
