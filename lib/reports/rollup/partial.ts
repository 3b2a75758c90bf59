import { Temporal } from 'temporal-polyfill'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { partialRollupInsertSql } from '../query/compile/rollup-build'
import { during, siteIs } from '../query/compile/scope'
import { bind, sql } from '../../storage/clickhouse/sql'
import { ROLLED_PROPERTIES } from '../dimensions'
import { type PartialDay, TOTALS } from '../query/model'
import { type ResolvedRange, chTime } from '../query/range'
import { execute, executeCommand, inBackground } from '../../storage/clickhouse/execute'
import { rolledDays } from '../query/run'

/**
 * The partial rollup of today (migration 0011): the daily rollup covers finished days, so an
 * unfiltered read of a window ending today read all of today from events, most of its cost late
 * in a busy day. Here the visits of today that began before a cutoff, and have all ended, are
 * rolled up like a finished day (visitors as sets, to merge with the later visits' at read time),
 * and reads take only the visits begun since the cutoff from events.
 *
 * A visit ends after 30 minutes without an event: one whose last event is older than SETTLED_MS
 * gets no more live events. The cutoff is the quarter hour at or before both that time and the
 * start of every visit still open, so every visit begun before it is over. A late event of such a
 * visit (a journal replay, an import) changes the signature of the visits begun before the cutoff,
 * and reads go back to events for that day until the next build.
 */

/** A visit whose last event is older than this is over: visits end after 30 minutes without an event. */
const SETTLED_MS = 35 * 60_000
/** A build stands until the cutoff can move this much further: the later visits read from events stay under about an hour and a half of traffic. */
const REBUILD_AFTER_MS = 30 * 60_000
const QUARTER_MS = 15 * 60_000

/**
 * Builds today's partial rollup of a site when there is none current or its cutoff can move by
 * REBUILD_AFTER_MS. Returns the cutoff built, or null when nothing was built.
 */
export async function refreshPartial(clickhouse: ClickHouse, siteId: string, timezone: string, now: Date): Promise<string | null> {
  const dayStart = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(timezone).startOfDay()
  const dayEnd = dayStart.add({ days: 1 }).startOfDay()
  const [open] = await execute<{ open: string; start: string }>(
    clickhouse,
    sql`SELECT count() AS open, toUnixTimestamp64Milli(min(start)) AS start FROM (
  SELECT session_id, min(session_start) AS start, max(end) AS last FROM sessions
  WHERE ${siteIs(siteId)} AND ${during('session_start', dayStart.epochMilliseconds, dayEnd.epochMilliseconds)}
  GROUP BY session_id
) WHERE last >= ${bind('DateTime64(3)', chTime(now.getTime() - SETTLED_MS))}`,
  )
  const settled = Math.min(now.getTime() - SETTLED_MS, Number(open?.open) ? Number(open.start) : Number.POSITIVE_INFINITY)
  const cutoff = Math.floor(settled / QUARTER_MS) * QUARTER_MS
  if (cutoff <= dayStart.epochMilliseconds) return null
  const range: ResolvedRange = { name: 'today', timezone, from: dayStart, to: dayEnd, interval: 'hour' }
  const current = (await rolledDays(clickhouse, { siteId, range })).partial
  if (current && cutoff - Date.parse(`${current.before.replace(' ', 'T')}Z`) < REBUILD_AFTER_MS) return null
  // the signature is read before the events: an event landing in between makes the rows mismatch, never stale
  const [signature] = await execute<{ n: string; s: string }>(
    clickhouse,
    sql`SELECT sum(visit_events) AS n, sum(visit_session_sum) AS s FROM quarters
  WHERE ${siteIs(siteId)} AND quarter >= ${bind('DateTime64(3)', chTime(dayStart))} AND quarter < ${bind('DateTime64(3)', chTime(cutoff))}`,
  )
  if (!Number(signature?.n)) return null
  const partial: PartialDay = {
    day: dayStart.toPlainDate().toString(),
    from: chTime(dayStart),
    to: chTime(dayEnd),
    before: chTime(cutoff),
    events: signature.n,
    sum: signature.s,
  }
  // the totals row last: its presence marks the build complete
  for (const property of [...ROLLED_PROPERTIES, TOTALS])
    await executeCommand(clickhouse, inBackground(partialRollupInsertSql(siteId, timezone, property, partial)))
  return partial.before
}
