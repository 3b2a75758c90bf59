import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { SingleBar } from 'cli-progress'
import { Command } from 'commander'
import { UserError } from '../lib/runtime/env'
import { runCli } from '../lib/runtime/failure'
import { openNodeStores } from '../lib/runtime/node'
import { dbipGeo } from '../lib/ingest/geo-node'
import { runImport } from '../lib/ingest/import'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'

const program = new Command('import')
  .description(
    "Load raw hits (NDJSON, docs/architecture.md) through the collector's enrichment and sessionization, with their own timestamps. Works while the server runs.",
  )
  .option('--file <path>', 'NDJSON file (default: standard input)')
  .action(async (opts: { file?: string }) => {
    // a file that cannot be read is told before the stores are opened
    const total = opts.file ? (await stat(opts.file)).size : 0
    const stores = await openNodeStores(process.env, { viaRunningServer: true })
    const input = opts.file ? createReadStream(opts.file) : process.stdin
    const bar =
      process.stderr.isTTY && total
        ? new SingleBar({ format: 'importing [{bar}] {percentage}% | {lines} lines', stream: process.stderr })
        : null
    bar?.start(total, 0, { lines: 0 })
    try {
      const lines = createInterface({ input, crlfDelay: Infinity })
      const result = await runImport(
        lines,
        { clickhouse: stores.clickhouse, repositories: stores.repositories, geo: dbipGeo() },
        ({ bytes, lines }) => bar?.update(Math.min(bytes, total), { lines }),
      )
      bar?.stop()
      for (const { line, error } of result.errors) process.stderr.write(`line ${line}: ${error}\n`)
      if (result.rejected > result.errors.length)
        process.stderr.write(`... and ${result.rejected - result.errors.length} more rejected lines\n`)
      // days the hits landed in are rebuilt now rather than at the server's next refresh
      if (result.imported) await refreshRollups(stores.clickhouse, stores.repositories, new Date(), ROLLUP_ALL_DAYS)
      process.stdout.write(`${JSON.stringify({ imported: result.imported, rejected: result.rejected })}\n`)
      if (result.rejected && !result.imported)
        throw new UserError(`all ${result.rejected} lines were rejected and nothing was imported: see docs/import.md for the format`)
    } finally {
      await stores.close()
    }
  })
await runCli(program)
