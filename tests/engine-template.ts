import { EmbeddedClickHouse } from '../lib/storage/clickhouse/chdb'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'

/**
 * Makes the migrated engine folder a test run copies for each test file (tests/global-setup.ts):
 * run in a process of its own, as the engine takes one folder per process.
 */
const dir = process.argv[2]
if (!dir) throw new Error('usage: tsx tests/engine-template.ts <folder>')
const clickhouse = new EmbeddedClickHouse(dir)
await migrate(clickhouse, loadMigrations())
await clickhouse.close()
