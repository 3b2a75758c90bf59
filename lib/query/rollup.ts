import { Temporal } from 'temporal-polyfill'
import type { Olap } from '../olap/types'
import type { Store } from '../store'
import { type Query, compilePageRollup } from './compile'
import { type ResolvedRange, type RolledDays, chTime, wholeDays } from './range'

/**
 * The page rollup: per site, site-local day and path, the finished numbers of the path breakdown
 * (visitors, visits, pageviews, custom events, bounces, summed duration), in `page_days`.
 *
 * A breakdown by path groups every event of the window by path and by visit; at a million events
 * that is most of a second. Visitor ids rotate at the site-local midnight and a visit ends with
 * them, so visitors and visits of different site-local days are different: a window of whole days
 * is the sum of its days. Finished days are therefore rolled up once and summed at read time, and
 * only today (and any day not rolled up) is read from events.
 *
 * Each rolled day carries a signature of the events it was built from: the day's event count and
 * session-id sum, read from the quarter-hour counts of event_quarters. A read uses a day's rows only where today's signature of that day still matches, so a
 * late hit or an import into a rolled day sends that day back to events until the next refresh
 * rebuilds it, and a changed timezone matches no rows at all. Nothing is ever served stale.
 */

/** How far back a routine refresh looks, and a full one (at start, after an import, daily). */
export const ROLLUP_RECENT_DAYS = 3
export const ROLLUP_ALL_DAYS = 800

const SIGNATURES = `
SELECT toDate(quarter, {tz:String}) AS day, sum(events) AS n, sum(session_sum) AS s
FROM event_quarters
WHERE site_id = {site:UUID} AND quarter >= {from:DateTime64(3)} AND quarter < {to:DateTime64(3)}
GROUP BY day`
const ROLLED = `(SELECT DISTINCT day, day_events AS n, day_sum AS s FROM page_days
  WHERE site_id = {site:UUID} AND timezone = {tz:String} AND day >= {fromDay:Date} AND day < {toDay:Date}) AS rolled`

const windowParams = (siteId: string, range: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>) => ({
  site: siteId,
  tz: range.timezone,
  from: chTime(range.from),
  to: chTime(range.to),
  fromDay: range.from.toPlainDate().toString(),
  toDay: range.to.toPlainDate().toString(),
})

/** Reads that may use the rollup: the path breakdown without filters over whole site-local days. */
export const usesPageRollup = (query: Query, property: string) => property === 'path' && !query.filters.length && wholeDays(query.range)

/** The days of the query's window whose rollup rows match the day's current signature. */
export async function rolledDays(olap: Olap, query: Query): Promise<RolledDays> {
  const rows = await olap.query<{ d: string; n: string; s: string }>(
    `SELECT toString(day) AS d, n, s FROM (${SIGNATURES}) AS sig INNER JOIN ${ROLLED} USING (day, n, s) ORDER BY day`,
    windowParams(query.siteId, query.range),
  )
  return { days: rows.map((r) => r.d), events: rows.map((r) => r.n), sums: rows.map((r) => r.s) }
}

/**
 * Builds the rollup of every finished day in the last `lookbackDays` whose rows are missing or no
 * longer match, for each site with visits in that span. Returns the days built.
 */
export async function refreshPageRollups(olap: Olap, store: Store, now: Date, lookbackDays: number): Promise<number> {
  const since = new Date(now.getTime() - (lookbackDays + 1) * 86_400_000)
  const sites = await olap.query<{ site: string }>('SELECT DISTINCT toString(site_id) AS site FROM event_quarters WHERE quarter >= {since:DateTime64(3)}', { since: since.toISOString().replace('T', ' ').replace('Z', '') })
  let built = 0
  for (const { site: siteId } of sites) {
    const site = await store.getSite(siteId)
    if (!site) continue
    const today = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).startOfDay()
    const window = { timezone: site.timezone, from: today.subtract({ days: lookbackDays }).startOfDay(), to: today }
    const stale = await olap.query<{ d: string }>(`SELECT toString(day) AS d FROM (${SIGNATURES}) AS sig LEFT ANTI JOIN ${ROLLED} USING (day, n, s) ORDER BY day`, windowParams(siteId, window))
    for (const { d: day } of stale) built += (await rollupDay(olap, siteId, site.timezone, day)) ? 1 : 0
  }
  return built
}

/** Rebuilds one finished day of a site and drops the rows of earlier builds of it. */
export async function rollupDay(olap: Olap, siteId: string, timezone: string, day: string): Promise<boolean> {
  const from = Temporal.PlainDate.from(day).toZonedDateTime({ timeZone: timezone })
  const span = { timezone, from, to: from.add({ days: 1 }).startOfDay() }
  const params = windowParams(siteId, span)
  // the signature is read before the events: a hit landing in between makes the rows mismatch, never stale
  const [sig] = await olap.query<{ n: string; s: string }>(SIGNATURES, params)
  // rows of earlier builds (another signature or timezone) are never read; drop them when there are any
  const garbage = { ...params, n: sig?.n ?? '0', s: sig?.s ?? '0' }
  const keep = 'site_id = {site:UUID} AND day = {fromDay:Date} AND NOT (timezone = {tz:String} AND day_events = {n:UInt64} AND day_sum = {s:UInt64})'
  const [old] = await olap.query<{ n: string }>(`SELECT count() AS n FROM page_days WHERE ${keep}`, garbage)
  if (Number(old?.n)) await olap.command(`ALTER TABLE page_days DELETE WHERE ${keep}`, garbage)
  if (!sig) return false
  const compiled = compilePageRollup(siteId, { ...span, day, events: sig.n, sum: sig.s }, timezone)
  await olap.command(compiled.sql, compiled.params)
  return true
}
