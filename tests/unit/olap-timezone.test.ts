import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CLICKHOUSE_SETTINGS } from '../../lib/storage/clickhouse/client'
import { tempDir } from '../helpers'

/**
 * Bound times are UTC text without a zone, and ClickHouse reads such text in the session's time
 * zone, which by default is the machine's. On a laptop in Berlin, every window was an hour off.
 */
const probe = `
import { EmbeddedClickHouse } from ${JSON.stringify(join(process.cwd(), 'lib/storage/clickhouse/chdb.ts'))}
const clickhouse = new EmbeddedClickHouse(process.env.OLAP_DIR)
const [row] = await clickhouse.query(
  "SELECT toUnixTimestamp64Milli({t:DateTime64(3)}) AS ms, toDateTime64('2026-01-01 00:10:00', 3, 'UTC') >= {t:DateTime64(3)} AS later",
  { t: '2026-01-01 00:30:00.000' },
)
process.stdout.write(JSON.stringify(row))
process.exit(0)
`

describe('the time zone of bound times', () => {
  it('is UTC on the embedded engine, whatever the machine is set to', async () => {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', '--input-type=module', '-e', probe],
        { env: { ...process.env, TZ: 'Europe/Berlin', OLAP_DIR: tempDir('clickhouse-tz') } },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    )
    // 00:30 UTC on 1 January 2026; read in Berlin time it would be 23:30 UTC the day before, and 00:10 UTC later than it
    expect(JSON.parse(out)).toEqual({ ms: String(Date.UTC(2026, 0, 1, 0, 30)), later: 0 })
  })

  it('is UTC on a ClickHouse server, through the session settings every client sends', () => {
    expect(CLICKHOUSE_SETTINGS.session_timezone).toBe('UTC')
  })
})
