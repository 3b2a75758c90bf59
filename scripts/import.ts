import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { SingleBar } from 'cli-progress'
import { Command } from 'commander'
import { UserError } from '../lib/core/errors'
import { runCli } from '../lib/runtime/failure'
import { dataDir, openNodeStores } from '../lib/runtime/node'
import { FileQuarantine } from '../lib/ingest/quarantine-node'
import { join } from 'node:path'
import { dbipGeo } from '../lib/ingest/geo-node'
import { runImport } from '../lib/ingest/import'
import { inTimeOrder, orderCheck } from '../lib/ingest/import-order-node'
import { defaultImportThreads, parseInWorkers } from '../lib/ingest/import-workers-node'
import { previousImport } from '../lib/operations/imports'
import { importPlausibleZip, readPlausibleFile } from '../lib/plausible/csv-import-node'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'

/** Lines read from the first ones on whose site a file is looked for in the imports done. */
const SITE_LINES = 1000

const readLines = (input: NodeJS.ReadableStream) => createInterface({ input, crlfDelay: Infinity })

/** Hashes lines as they pass, each with its newline: a file and the same content on standard input hash alike. */
function hashing(lines: AsyncIterable<string>, see?: (line: string) => void) {
  const hash = createHash('sha256')
  const snippetIds = new Set<string>()
  let read = 0
  let digest: string | null = null
  return {
    snippetIds,
    digest: () => digest,
    lines: (async function* () {
      for await (const line of lines) {
        hash.update(line).update('\n')
        see?.(line)
        if (read++ < SITE_LINES) {
          const site = /"site"\s*:\s*"([^"]+)"/.exec(line)?.[1]
          if (site) snippetIds.add(site)
        }
        yield line
      }
      digest = hash.digest('hex')
    })(),
  }
}

/** --plausible: a Plausible export stored as the site's imported history (docs/import.md). */
async function plausibleExport(file: string | undefined, site: string | undefined) {
  if (!file || !site) throw new UserError('--plausible and --site go together: npm run import -- --plausible export.zip --site <id>')
  const zip = await readPlausibleFile(file)
  const stores = await openNodeStores(process.env, { viaRunningServer: true, engine: 'import' })
  try {
    const result = await importPlausibleZip(stores, zip, site)
    process.stdout.write(`${JSON.stringify(result)}\n`)
  } finally {
    await stores.close()
  }
}

const program = new Command('import')
  .description(
    "Load raw hits (NDJSON) through the collector's enrichment and sessionization, with their own timestamps, or a Plausible CSV export (--plausible). Works while the server runs. The formats, what is refused and how usage is counted: docs/import.md.",
  )
  .option('--file <path>', 'NDJSON file (default: standard input)')
  .option('--force', 'import a file even though the same content was imported before (its hits are then stored twice)')
  .option('--plausible <zip>', 'a Plausible CSV export (the zip of imported_*.csv files) to import into --site, replacing its earlier one')
  .option('--site <id>', 'with --plausible: the site, by its id or snippet id')
  .option(
    '--threads <n>',
    `worker threads that parse and enrich the lines (default: one per core but two, here ${defaultImportThreads()}); 0 parses on the main thread`,
  )
  .addHelpText('after', '\nSee docs/import.md for the format of a line and examples.')
  .action(async (opts: { file?: string; force?: boolean; threads?: string; plausible?: string; site?: string }) => {
    if (opts.plausible || opts.site) return await plausibleExport(opts.plausible, opts.site)
    const threads = opts.threads === undefined ? defaultImportThreads() : Number(opts.threads)
    if (!Number.isInteger(threads) || threads < 0) throw new UserError(`--threads is ${opts.threads}: a whole number, 0 or more`)
    // a file that cannot be read is told before the stores are opened
    const total = opts.file ? (await stat(opts.file)).size : 0
    const tty = process.stderr.isTTY
    const phase = (text: string) => tty && process.stderr.write(`${text}\n`)
    // a file is hashed before anything is stored, so that one imported already is refused, and
    // its order is checked: one out of time order is sorted as it is read (docs/import.md)
    let fileHash: { digest: () => string | null; snippetIds: Set<string> } | null = null
    let sorting = !opts.file
    if (opts.file) {
      phase('checking the file against the imports done, and its time order')
      const order = orderCheck()
      const pass = hashing(readLines(createReadStream(opts.file)), order.see)
      let lines = 0
      for await (const _ of pass.lines) lines++
      sorting = order.firstOutOfOrder !== null
      phase(
        sorting
          ? `${lines} lines, checked; line ${order.firstOutOfOrder} is older than a line before it: the hits are sorted by time first`
          : `${lines} lines, checked, in time order`,
      )
      fileHash = pass
    }
    // an engine of its own is set for bulk inserts, with bounded memory (lib/storage/clickhouse/chdb.ts)
    const stores = await openNodeStores(process.env, { viaRunningServer: true, engine: 'import' })
    try {
      const hash = fileHash?.digest()
      const earlier = hash && !opts.force ? await previousImport(stores.repositories, fileHash!.snippetIds, hash) : null
      if (earlier)
        throw new UserError(
          `this file was imported already (${earlier.run.rows} rows into ${earlier.domain} on ${earlier.run.startedAt.slice(0, 10)}): importing it again would count its hits twice; pass --force to import it anyway`,
        )
      const input = opts.file ? createReadStream(opts.file) : process.stdin
      const read = hashing(readLines(input))
      // standard input cannot be checked before it is read: it is always sorted
      if (sorting) phase(opts.file ? 'sorting by time' : 'reading standard input and sorting it by time')
      const lines = sorting ? inTimeOrder(read.lines, { onRun: (n) => phase(`sorting by time: ${n} lines read`) }) : read.lines
      let bar: SingleBar | null = null
      let reading = false
      const startReading = () => {
        reading = true
        bar = tty && total ? new SingleBar({ format: 'reading [{bar}] {percentage}% | {lines} lines', stream: process.stderr }) : null
        if (!bar) phase('reading')
        bar?.start(total, 0, { lines: 0 })
      }
      if (!sorting) startReading()
      const result = await runImport(
        lines,
        {
          clickhouse: stores.clickhouse,
          repositories: stores.repositories,
          geo: dbipGeo({ database: 'file' }),
          // rows the store refuses are set aside where the server's are (npm run -s admin -- quarantine list)
          quarantine: new FileQuarantine(join(dataDir(process.env), 'quarantine')),
        },
        ({ bytes, lines }) => {
          if (!reading) startReading()
          bar?.update(Math.min(bytes, total), { lines })
        },
        {
          contentHash: read.digest,
          inTimeOrder: true,
          parse: threads ? parseInWorkers(threads) : undefined,
          onStoring: () => {
            bar?.stop()
            phase('storing the last rows')
          },
        },
      )
      for (const { line, error } of result.errors) process.stderr.write(`line ${line}: ${error}\n`)
      if (result.rejected > result.errors.length)
        process.stderr.write(`... and ${result.rejected - result.errors.length} more rejected lines\n`)
      // days the hits landed in are rebuilt now rather than at the server's next refresh
      if (result.imported) {
        phase('rolling up days')
        await refreshRollups(stores.clickhouse, stores.repositories, new Date(), ROLLUP_ALL_DAYS)
      }
      if (result.quarantined)
        process.stderr.write(`${result.quarantined} rows the store refused were set aside: npm run -s admin -- quarantine list\n`)
      process.stdout.write(`${JSON.stringify({ imported: result.imported, rejected: result.rejected })}\n`)
      if (result.rejected && !result.imported)
        throw new UserError(`all ${result.rejected} lines were rejected and nothing was imported: see docs/import.md for the format`)
    } finally {
      await stores.close()
    }
  })
await runCli(program)
