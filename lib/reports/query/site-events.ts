import { Temporal } from 'temporal-polyfill'
import type { Site } from '../../sites/sites'
import { firstImportedDaySql } from './compile/imported'
import type { ImportOrigins } from './plan'
import { clickhouseTime } from '../../storage/clickhouse/time'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { during } from './compile/scope'
import { bind, sql } from '../../storage/clickhouse/sql'
import { execute } from '../../storage/clickhouse/execute'

/**
 * When sites had their first and last event, exactly, without a scan of their history:
 * `quarters` (fed by a view, one row per site and quarter hour, removed with the site's events)
 * gives the UTC days of each site's first and last event, and events, ordered by site and UTC day
 * first, is read on those two days only. Sites without events are absent.
 */
export async function eventEdges(clickhouse: ClickHouse, ids: string[]): Promise<Map<string, { first: string; last: string }>> {
  if (!ids.length) return new Map()
  const rows = await execute<{ site: string; first: string; last: string }>(
    clickhouse,
    sql`SELECT toString(site_id) AS site, toString(min(timestamp)) AS first, toString(max(timestamp)) AS last FROM events
WHERE (site_id, toDate(timestamp)) IN (
  SELECT site_id, arrayJoin([toDate(min(quarter)), toDate(max(quarter))]) FROM quarters WHERE site_id IN ${bind('Array(UUID)', ids)} AND events > 0 GROUP BY site_id
)
GROUP BY site_id`,
  )
  const iso = (text: string) => `${text.replace(' ', 'T')}Z`
  return new Map(rows.map((r) => [r.site, { first: iso(r.first), last: iso(r.last) }]))
}

/** A site's first event, which bounds the `all` range; null before any. */
export async function firstEventAt(clickhouse: ClickHouse, siteId: string): Promise<Date | null> {
  const first = (await eventEdges(clickhouse, [siteId])).get(siteId)?.first
  return first ? new Date(first) : null
}

/** The start of the first site-local day a site has imported data for (GA4's, or any product's), which bounds the `all` range of a read of imports; null before any. */
export async function firstImportedAt(
  clickhouse: ClickHouse,
  site: Pick<Site, 'id' | 'timezone'>,
  origins: ImportOrigins = 'ga4',
): Promise<Date | null> {
  const [row] = await execute<{ first: string; n: string }>(clickhouse, firstImportedDaySql(site.id, origins))
  if (!row || !Number(row.n)) return null
  return new Date(Temporal.PlainDate.from(row.first).toZonedDateTime({ timeZone: site.timezone }).epochMilliseconds)
}

/** When each site last received an event (ISO), in one query. */
export async function lastEventBySite(clickhouse: ClickHouse, ids: string[]): Promise<Map<string, string>> {
  return new Map([...(await eventEdges(clickhouse, ids))].map(([site, edges]) => [site, edges.last]))
}

const QUARTER_MS = 15 * 60_000

/**
 * A site's first and last event (ISO, null before any) and how many events arrived since `since`:
 * the quarter hours wholly after it from `quarters`, the part of a quarter before them from events.
 */
export async function siteActivity(
  clickhouse: ClickHouse,
  siteId: string,
  since: Date,
): Promise<{ firstEventAt: string | null; lastEventAt: string | null; eventsSince: number }> {
  const whole = Math.ceil(since.getTime() / QUARTER_MS) * QUARTER_MS
  const site = bind('UUID', siteId)
  const [[counts], edges] = await Promise.all([
    execute<{ n: string }>(
      clickhouse,
      sql`SELECT (SELECT sum(events) FROM quarters WHERE site_id = ${site} AND quarter >= ${bind('DateTime64(3)', clickhouseTime(whole))})
        + (SELECT count() FROM events WHERE site_id = ${site} AND ${during('timestamp', since.getTime(), whole)}) AS n`,
    ),
    eventEdges(clickhouse, [siteId]),
  ])
  const found = edges.get(siteId)
  return { firstEventAt: found?.first ?? null, lastEventAt: found?.last ?? null, eventsSince: Number(counts?.n ?? 0) }
}
