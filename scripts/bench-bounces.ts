import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BOUNCED, VISIT_COUNTS, visitAttributeRows } from '../lib/reports/query/compile/visits'
import { EmbeddedClickHouse } from '../lib/storage/clickhouse/chdb'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { type Fragment, bind, raw, render, sql } from '../lib/storage/clickhouse/sql'

/**
 * What counting bounces over interactive custom events costs the reads of the sessions rollup, in
 * rows and bytes read (counts that do not depend on the machine's load). VISITS visits of one
 * pageview and two custom events are stored before migration 0019 (their sessions parts have no
 * interactive_events column) and as many after it, half of those with both events non-interactive.
 * Each read runs as the code builds it (after) and with the bounce counted over all custom events
 * (before, the same text with `ie` taken out), and prints its rows and bytes read and its bounces:
 * after, VISITS / 2 (the later visits with only non-interactive events); before, 0.
 *
 *   npx tsx scripts/bench-bounces.ts [VISITS]
 */
const VISITS = Number(process.argv[2] ?? 100_000)
const SITE = '6f1f1e7e-0000-4000-8000-000000000001'
const DAY = '2026-11-20'

/** VISITS visits from `firstSession` on, 3 events each (pageview, 2 custom); `nonInteractive` SQL over the visit number. */
const visitsSql = (firstSession: number, nonInteractive: string) => `
INSERT INTO events_input (site_id, timestamp, name, kind, visitor_id, session_id, session_start, pathname${nonInteractive ? ', non_interactive' : ''})
SELECT '${SITE}', start, if(number % 3 = 0, 'pageview', 'Play'), if(number % 3 = 0, 'pageview', 'custom'), visit, visit, start, '/'${nonInteractive ? `, ${nonInteractive}` : ''}
FROM (SELECT number, intDiv(number, 3) + ${firstSession} AS visit, toDateTime64('${DAY} 00:00:00', 3) + toIntervalSecond(intDiv(number, 3) % 80000) AS start
      FROM numbers(${VISITS * 3}))`

const dir = await mkdtemp(join(tmpdir(), 'bench-bounces-'))
const clickhouse = new EmbeddedClickHouse(join(dir, 'clickhouse'))
try {
  const migrations = loadMigrations()
  await migrate(
    clickhouse,
    migrations.filter((m) => m.version < 19),
  )
  await clickhouse.command(visitsSql(1, ''))
  await migrate(clickhouse, migrations)
  await clickhouse.command(visitsSql(1 + VISITS, 'intDiv(number, 3) % 2'))

  const began = sql`session_start >= ${bind('DateTime64(3)', `${DAY} 00:00:00`)} AND session_start < ${bind('DateTime64(3)', `${DAY} 23:59:59.999`)}`
  const site = sql`site_id = ${bind('UUID', SITE)}`
  const reads: [string, Fragment][] = [
    // a day's totals and visit attributes from the sessions rollup (daily totals, unrolled days)
    ['visit rows', visitAttributeRows(SITE, raw('toDate(session_start)'), began, [])],
    // the totals read's visits under visit filters only (stats.ts, the sessions plan): bounces, no event count
    [
      'visit totals',
      sql`SELECT count() AS visits, countIf(${BOUNCED}) AS bounces FROM (SELECT session_id, ${VISIT_COUNTS} FROM sessions WHERE ${site} AND ${began} GROUP BY session_id)`,
    ],
  ]
  const before = (text: string) =>
    text.replace(', sum(interactive_events) AS ie', '').replaceAll('pv <= 1 AND ie = 0', 'pv <= 1 AND ce = 0')
  for (const [name, fragment] of reads) {
    const after = render(fragment)
    for (const [version, text] of [
      ['before', before(after.sql)],
      ['after', after.sql],
    ]) {
      const answer = JSON.parse(new TextDecoder().decode(await clickhouse.raw(text, after.params as Record<string, string>, 'JSON')))
      const { rows_read, bytes_read } = answer.statistics
      process.stdout.write(
        `${JSON.stringify({ read: name, version, visits: VISITS * 2, rowsRead: rows_read, bytesRead: bytes_read, bounces: Number(answer.data[0].bounces) })}\n`,
      )
    }
  }
} finally {
  await clickhouse.close()
  await rm(dir, { recursive: true, force: true })
}
