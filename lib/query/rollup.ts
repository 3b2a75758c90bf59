import { Temporal } from 'temporal-polyfill'
import type { Olap } from '../olap/types'
import type { Store } from '../store'
import { type Query, TOTALS, compileRollup } from './compile'
import { type ResolvedRange, type RolledDays, ROLLUP_VERSION, chTime, daySpans, wholeDays } from './range'

/**
 * The daily rollup: per site, site-local day, property and value, the finished numbers of a
 * breakdown (visitors, visits, pageviews, custom events, bounces, summed duration) in
 * `day_rollups`, plus the day's totals under the property ''.
 *
 * Unfiltered reads over whole days (the dashboard) would otherwise group every event of the window
 * by value and by visit; at a million events that is most of a second for pages. Visitor ids
 * rotate at the site-local midnight and a visit ends with them, so the visitors and visits of
 * different site-local days are different: a window of whole days is the sum of its days. Finished
 * days are therefore rolled up once and summed at read time; only today (and any day not rolled
 * up) is read from events.
 *
 * Each rolled day carries a signature of the events it was built from: the day's event count and
 * session-id sum, from the quarter-hour counts of event_quarters. A read uses a day's rows only
 * while the day's current signature still matches, so a late hit or an import into a rolled day
 * sends that day back to events until the next refresh rebuilds it, and rows of another timezone
 * or rollup version never match. Nothing is served stale.
 */

/** The properties rolled up: the day's totals and the dashboard's unfiltered breakdowns. */
export const ROLLED_PROPERTIES = [
  'path', 'entry_page', 'exit_page', 'hostname', 'source', 'channel', 'referrer', 'utm_source', 'utm_medium', 'utm_campaign',
  'country', 'browser', 'os', 'device', 'screen_class',
] as const

/** How far back a routine refresh looks, and a full one (at start, after an import, daily). */
export const ROLLUP_RECENT_DAYS = 3
export const ROLLUP_ALL_DAYS = 800
/** Days built by one statement: bounds its groups, and on the embedded engine (one query at a time) how long a read can wait behind it. */
const DAYS_PER_STATEMENT = 7

const SIGNATURES = `
SELECT toDate(quarter, {tz:String}) AS day, sum(events) AS n, sum(session_sum) AS s
FROM event_quarters
WHERE site_id = {site:UUID} AND quarter >= {from:DateTime64(3)} AND quarter < {to:DateTime64(3)}
GROUP BY day`
// the totals row of a day is written last: its presence says every property of the day is built
const ROLLED = `(SELECT DISTINCT day, day_events AS n, day_sum AS s FROM day_rollups
  WHERE site_id = {site:UUID} AND timezone = {tz:String} AND version = {version:UInt16} AND property = ''
    AND day >= {fromDay:Date} AND day < {toDay:Date}) AS rolled`

const windowParams = (siteId: string, range: Pick<ResolvedRange, 'from' | 'to' | 'timezone'>) => ({
  site: siteId,
  tz: range.timezone,
  version: ROLLUP_VERSION,
  from: chTime(range.from),
  to: chTime(range.to),
  fromDay: range.from.toPlainDate().toString(),
  toDay: range.to.toPlainDate().toString(),
})

/** Day signature rows (day, event count, session-id sum) as the arrays reads and builds bind. */
const asRolledDays = (rows: { d: string; n: string; s: string }[]): RolledDays => ({ days: rows.map((r) => r.d), events: rows.map((r) => r.n), sums: rows.map((r) => r.s) })

/** Reads that may use the rollup: no filters, whole site-local days, and totals or a rolled property. */
export const usesRollup = (query: Query, property: string = TOTALS) =>
  !query.filters.length && wholeDays(query.range) && (property === TOTALS || (ROLLED_PROPERTIES as readonly string[]).includes(property))

/** Series that may use it: those of day or month buckets (a rolled day is one bucket or part of one). */
export const seriesUsesRollup = (query: Query) => usesRollup(query) && (query.range.interval === 'day' || query.range.interval === 'month')

/** The days of the query's window whose rollup rows match the day's current signature. */
export async function rolledDays(olap: Olap, query: Query): Promise<RolledDays> {
  // both sides in one statement, matched here: cheaper on the engine than a join
  const rows = await olap.query<{ rolled: number; d: string; n: string; s: string }>(
    `SELECT 0 AS rolled, toString(day) AS d, n, s FROM (${SIGNATURES}) UNION ALL SELECT 1, toString(day), n, s FROM ${ROLLED}`,
    windowParams(query.siteId, query.range),
  )
  const built = new Set(rows.filter((r) => r.rolled).map((r) => `${r.d}|${r.n}|${r.s}`))
  return asRolledDays(rows.filter((r) => !r.rolled && built.has(`${r.d}|${r.n}|${r.s}`)).sort((a, b) => a.d.localeCompare(b.d)))
}

/**
 * Builds the rollup of every finished day in the last `lookbackDays` whose rows are missing or no
 * longer match, for each site with events in that span. Returns the number of days built.
 */
export async function refreshRollups(olap: Olap, store: Store, now: Date, lookbackDays: number): Promise<number> {
  const since = Temporal.Instant.fromEpochMilliseconds(now.getTime() - (lookbackDays + 1) * 86_400_000)
  const sites = await olap.query<{ site: string }>('SELECT DISTINCT toString(site_id) AS site FROM event_quarters WHERE quarter >= {since:DateTime64(3)}', {
    since: chTime(since),
  })
  let built = 0
  for (const { site: siteId } of sites) {
    const site = await store.getSite(siteId)
    if (!site) continue
    const today = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).startOfDay()
    const window = { timezone: site.timezone, from: today.subtract({ days: lookbackDays }).startOfDay(), to: today }
    // the signatures are read before the events: a hit landing in between makes the rows mismatch, never stale
    const stale = await olap.query<{ d: string; n: string; s: string }>(
      `SELECT toString(day) AS d, n, s FROM (${SIGNATURES}) AS sig LEFT ANTI JOIN ${ROLLED} USING (day, n, s) ORDER BY day`,
      windowParams(siteId, window),
    )
    for (let i = 0; i < stale.length; i += DAYS_PER_STATEMENT) {
      const chunk = asRolledDays(stale.slice(i, i + DAYS_PER_STATEMENT))
      await buildDays(olap, siteId, site.timezone, chunk)
      built += chunk.days.length
    }
  }
  return built
}

/** Builds every property of the given days, totals last, then drops rows of earlier builds of them. */
async function buildDays(olap: Olap, siteId: string, timezone: string, days: RolledDays) {
  const spans = daySpans(days.days, timezone)
  for (const property of [...ROLLED_PROPERTIES, TOTALS]) {
    const compiled = compileRollup(siteId, timezone, property, spans, days)
    await olap.command(compiled.sql, compiled.params)
  }
  // rows of another signature, timezone or version are never read; drop them when there are any
  const garbage = `site_id = {site:UUID} AND day IN {days:Array(Date)}
    AND NOT (timezone = {tz:String} AND version = {version:UInt16} AND (day, toString(day_events), toString(day_sum)) IN arrayZip({days:Array(Date)}, {events:Array(String)}, {sums:Array(String)}))`
  const params = { site: siteId, tz: timezone, version: ROLLUP_VERSION, ...days }
  const [old] = await olap.query<{ n: string }>(`SELECT count() AS n FROM day_rollups WHERE ${garbage}`, params)
  if (Number(old?.n)) await olap.command(`ALTER TABLE day_rollups DELETE WHERE ${garbage}`, params)
}
