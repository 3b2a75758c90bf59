import { Command } from 'commander'
import { runCli } from '../lib/runtime/failure'
import { openNodeStores } from '../lib/runtime/node'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'

const program = new Command('migrate')
  .description('Apply the numbered ClickHouse migrations under clickhouse/ that are not yet recorded in schema_migrations.')
  .option('--cluster <name>', 'create tables ON CLUSTER with Replicated engines (default: $CLICKHOUSE_CLUSTER)')
  .action(async (opts: { cluster?: string }) => {
    const stores = await openNodeStores(process.env, { viaRunningServer: true })
    try {
      const applied = await migrate(stores.clickhouse, loadMigrations(), opts.cluster ?? process.env.CLICKHOUSE_CLUSTER)
      process.stdout.write(
        `${JSON.stringify({ clickhouse: stores.describe.clickhouse, applied: applied.map((m) => `${String(m.version).padStart(4, '0')}_${m.name}`) })}\n`,
      )
    } finally {
      await stores.close()
    }
  })
await runCli(program)
