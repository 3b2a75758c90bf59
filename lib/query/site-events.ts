import type { Olap } from '../olap/types'
import { bind, sql } from './compile/sql'
import { execute } from './run'
import { clickhouseTime } from '../olap/time'

/** A site's first event, which bounds the `all` range; null before any. */
export async function firstEventAt(olap: Olap, siteId: string): Promise<Date | null> {
  const [row] = await execute<{ first: string | null }>(
    olap,
    sql`SELECT if(count() = 0, NULL, toString(min(timestamp))) AS first FROM events WHERE site_id = ${bind('UUID', siteId)}`,
  )
  return row?.first ? new Date(`${row.first.replace(' ', 'T')}Z`) : null
}

/** When each site last received an event (ISO), in one query. */
export async function lastEventBySite(olap: Olap, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map()
  const rows = await execute<{ site: string; last: string }>(
    olap,
    sql`SELECT toString(site_id) AS site, toString(max(timestamp)) AS last FROM events WHERE site_id IN ${bind('Array(UUID)', ids)} GROUP BY site_id`,
  )
  return new Map(rows.map((r) => [r.site, `${r.last.replace(' ', 'T')}Z`]))
}

/** A site's first and last event (ISO, null before any) and how many events arrived since `since`. */
export async function siteActivity(olap: Olap, siteId: string, since: Date): Promise<{ firstEventAt: string | null; lastEventAt: string | null; eventsSince: number }> {
  const [row] = await execute<{ n: string; first: string | null; last: string | null; recent: string }>(
    olap,
    sql`SELECT count() AS n, if(n = 0, NULL, toString(min(timestamp))) AS first, if(n = 0, NULL, toString(max(timestamp))) AS last,
      countIf(timestamp >= ${bind('DateTime64(3)', clickhouseTime(since))}) AS recent
      FROM events WHERE site_id = ${bind('UUID', siteId)}`,
  )
  const iso = (text: string | null | undefined) => (text ? `${text.replace(' ', 'T')}Z` : null)
  return { firstEventAt: iso(row?.first), lastEventAt: iso(row?.last), eventsSince: Number(row?.recent ?? 0) }
}
