import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { SingleBar } from 'cli-progress'
import { Command } from 'commander'
import { openNodeStores } from '../lib/home/node'
import { dbipGeo } from '../lib/ingest/geo-node'
import { runImport } from '../lib/ingest/import'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/rollup/refresh'

const program = new Command('import')
  .description('Load raw hits (NDJSON, docs/architecture.md) through the collector\'s enrichment and sessionization, with their own timestamps. Works while the server runs.')
  .option('--file <path>', 'NDJSON file (default: standard input)')
  .action(async (opts: { file?: string }) => {
    const stores = await openNodeStores(process.env, { viaRunningServer: true })
    const input = opts.file ? createReadStream(opts.file) : process.stdin
    const total = opts.file ? (await stat(opts.file)).size : 0
    const bar = process.stderr.isTTY && total ? new SingleBar({ format: 'importing [{bar}] {percentage}% | {lines} lines', stream: process.stderr }) : null
    bar?.start(total, 0, { lines: 0 })
    try {
      const lines = createInterface({ input, crlfDelay: Infinity })
      const result = await runImport(lines, { olap: stores.olap, store: stores.store, geo: dbipGeo() }, ({ bytes, lines }) => bar?.update(Math.min(bytes, total), { lines }))
      bar?.stop()
      for (const { line, error } of result.errors) process.stderr.write(`line ${line}: ${error}\n`)
      if (result.rejected > result.errors.length) process.stderr.write(`... and ${result.rejected - result.errors.length} more rejected lines\n`)
      // days the hits landed in are rebuilt now rather than at the server's next refresh
      if (result.imported) await refreshRollups(stores.olap, stores.store, new Date(), ROLLUP_ALL_DAYS)
      process.stdout.write(`${JSON.stringify({ imported: result.imported, rejected: result.rejected })}\n`)
    } finally {
      await stores.close()
    }
  })
await program.parseAsync(process.argv)
