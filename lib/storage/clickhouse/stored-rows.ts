import type { ClickHouse } from './types'

/**
 * The columns that tell one stored row from another, as text. An event's visitor id, not its
 * session id: the id is journaled with the hit, while its visit is assigned again from the visits
 * store when the rows are made, so a replay after that visit expired makes another session id.
 */
const IDENTITY = {
  events: ['site_id', 'visitor_id', 'timestamp', 'kind', 'name', 'pathname'],
  bot_events: ['site_id', 'timestamp', 'user_agent', 'pathname', 'bot_name'],
} as const

/** The rows of `rows` not yet in `table`, counted: two equal rows journaled and one stored leave one. */
export async function notYetStored<Row extends { site_id: string; timestamp: string }>(
  clickhouse: ClickHouse,
  table: keyof typeof IDENTITY,
  rows: Row[],
): Promise<Row[]> {
  if (!rows.length) return []
  const identity = IDENTITY[table]
  const identityOf = (row: Record<string, unknown>) => identity.map((column) => String(row[column])).join('\u0000')
  const times = rows.map((r) => r.timestamp).sort()
  const stored = await clickhouse.query<{ id: string; n: string }>(
    `SELECT concatWithSeparator('\\0', ${identity.map((c) => `toString(${c})`).join(', ')}) AS id, count() AS n FROM ${table}
     WHERE site_id IN {sites:Array(UUID)} AND timestamp >= {from:DateTime64(3)} AND timestamp <= {to:DateTime64(3)}
     GROUP BY id`,
    { sites: [...new Set(rows.map((r) => r.site_id))], from: times[0], to: times[times.length - 1] },
  )
  const left = new Map(stored.map((s) => [s.id, Number(s.n)]))
  return rows.filter((row) => {
    const id = identityOf(row as unknown as Record<string, unknown>)
    const n = left.get(id) ?? 0
    if (n === 0) return true
    left.set(id, n - 1)
    return false
  })
}
