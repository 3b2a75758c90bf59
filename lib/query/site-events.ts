import type { Olap } from '../olap/types'
import { bind, sql } from './compile/sql'
import { execute } from './run'

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
