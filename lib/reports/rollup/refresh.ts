import type { DomainRepositories } from '../../sites/domain-services'
import { Temporal } from 'temporal-polyfill'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { staleDays } from '../query/compile/day-rollups'
import { rollupInsertSql } from '../query/compile/rollup-build'
import { GEO_GRANULARITIES, geoRollupInsertSql } from '../query/compile/geo'
import { bind, sql } from '../../storage/clickhouse/sql'
import { ROLLED_PROPERTIES } from '../dimensions'
import { type RolledDays, TOTALS, asRolledDays } from '../query/model'
import { chTime, daySpans } from '../query/range'
import { execute, executeCommand, inBackground } from '../../storage/clickhouse/execute'
import { refreshAiRollups } from '../ai/rollup'
import { refreshClickRollups } from './clicks'
import { refreshErrorRollups } from './errors'
import { refreshFlowRollups } from './flow'
import { refreshFunnelRollups } from '../query/funnels'
import { buildBatches, dropOutdatedRows } from './outdated'
import { refreshPartial } from './partial'

/**
 * The daily rollup's batch job. Unfiltered reads over whole days (the dashboard) would otherwise
 * group every event of the window by value and by visit; at a million events that is most of a
 * second for pages. Visitor ids rotate at the site-local midnight and a visit ends with them, so
 * a window of whole days is the sum of its days: finished days are rolled up once into
 * day_rollups (see lib/reports/query/compile/day-rollups.ts for the rows and their signatures) and summed
 * at read time; only today, and any day not rolled up or changed since, is read from events:
 * of today, with a current partial rollup (lib/reports/rollup/partial.ts), only the visits begun since its cutoff.
 */

/** How far back a routine refresh looks, and a full one (at start, after an import, daily). */
export const ROLLUP_RECENT_DAYS = 3
export const ROLLUP_ALL_DAYS = 800

/**
 * Builds the rollup of every finished day in the last `lookbackDays` whose rows are missing or no
 * longer match, for each site with events in that span, site by site: a site that fails (a bad
 * timezone, say) is logged and skipped, and the others are still built. Returns the number of days built.
 */
export async function refreshRollups(
  clickhouse: ClickHouse,
  repositories: Pick<DomainRepositories, 'sites' | 'funnels' | 'goals'>,
  now: Date,
  lookbackDays: number,
  log: (message: string) => void = console.error,
): Promise<number> {
  const since = Temporal.Instant.fromEpochMilliseconds(now.getTime() - (lookbackDays + 1) * 86_400_000)
  const sites = await execute<{ site: string }>(
    clickhouse,
    sql`SELECT DISTINCT toString(site_id) AS site FROM quarters WHERE events > 0 AND quarter >= ${bind('DateTime64(3)', chTime(since))}`,
  )
  let built = 0
  for (const { site } of sites) {
    try {
      built += await refreshSite(clickhouse, repositories, site, now, lookbackDays)
    } catch (err) {
      log(`daily rollup of site ${site} failed: ${(err as Error).message}`)
    }
  }
  return built
}

async function refreshSite(
  clickhouse: ClickHouse,
  repositories: Pick<DomainRepositories, 'sites' | 'funnels' | 'goals'>,
  siteId: string,
  now: Date,
  lookbackDays: number,
): Promise<number> {
  const site = await repositories.sites.get(siteId)
  if (!site) return 0
  const today = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).startOfDay()
  const window = { timezone: site.timezone, from: today.subtract({ days: lookbackDays }).startOfDay(), to: today }
  // the signatures are read before the events: a hit landing in between makes the rows mismatch, never stale
  const stale = await execute<{ d: string; n: string; s: string }>(clickhouse, staleDays(siteId, window))
  let built = 0
  for (const batch of buildBatches(stale)) {
    const chunk = asRolledDays(batch)
    await buildDays(clickhouse, siteId, site.timezone, chunk)
    built += chunk.days.length
  }
  // and today's visits that have ended (lib/reports/rollup/partial.ts)
  await refreshPartial(clickhouse, siteId, site.timezone, now)
  // the behaviour flow's own rollup of the finished days (lib/reports/rollup/flow.ts)
  await refreshFlowRollups(clickhouse, siteId, window)
  // and the clicks read's (lib/reports/rollup/clicks.ts)
  await refreshClickRollups(clickhouse, siteId, window)
  // and the AI visibility read's (lib/reports/ai/rollup.ts)
  await refreshAiRollups(clickhouse, siteId, window)
  // and the errors read's (lib/reports/rollup/errors.ts)
  await refreshErrorRollups(clickhouse, siteId, window)
  // and the saved funnels' levels, which their first read would otherwise build (query/funnels.ts)
  await refreshFunnelRollups(clickhouse, repositories, siteId, window, now)
  return built
}

/** Builds every property of the given days (and places), totals last, then drops rows of earlier builds of them. */
export async function buildDays(clickhouse: ClickHouse, siteId: string, timezone: string, days: RolledDays) {
  const spans = daySpans(days.days, timezone)
  for (const property of ROLLED_PROPERTIES)
    await executeCommand(clickhouse, inBackground(rollupInsertSql(siteId, timezone, property, spans, days)))
  for (const granularity of GEO_GRANULARITIES)
    await executeCommand(clickhouse, inBackground(geoRollupInsertSql(siteId, timezone, granularity, spans, days)))
  await executeCommand(clickhouse, inBackground(rollupInsertSql(siteId, timezone, TOTALS, spans, days)))
  await dropOutdatedRows(clickhouse, 'day_rollups', siteId, timezone, days)
}
