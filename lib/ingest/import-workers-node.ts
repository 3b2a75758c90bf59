import { createRequire } from 'node:module'
import { availableParallelism } from 'node:os'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { type LineParser, type NumberedLine, PARSE_BATCH, type ParsedLine, numberedBatches } from './import'

/**
 * The import's parsing and enrichment on worker threads: each worker parses a batch of lines
 * (JSON, the format's checks) and works out what depends on the hit alone (whether it is a bot,
 * its browser, OS and device, its referrer's source and medium), while the main thread screens,
 * places, identifies, assigns visits, builds rows and stores them. Batches go to the workers in
 * turn and come back in the input's order, a few ahead of what the import has taken. The place
 * of an address is looked up on the main thread, where one copy of the IP database (63 MB) serves
 * every lookup, each address once. Nothing here writes to disk: raw addresses stay in memory.
 */

/**
 * Worker threads by default: one per core but two, for the main thread and the engine's inserts
 * and merges. On two cores there are none: a worker there takes CPU from those two and adds its
 * own memory (about 60 MB), for no gain in speed.
 */
export const defaultImportThreads = () => Math.max(0, availableParallelism() - 2)

/** Batches on their way per worker: one being parsed, one waiting, so a worker never idles for the main thread. */
const IN_FLIGHT_PER_WORKER = 2

interface Pending {
  resolve(parsed: ParsedLine[]): void
  reject(err: unknown): void
}

/**
 * The worker's code is TypeScript like the rest: it is loaded through tsx's API (a worker started on
 * a .ts file does not take the loader the command runs under on Node 20).
 */
const TSX_API = pathToFileURL(
  createRequire(import.meta.url)
    .resolve('tsx/esm/api')
    .replace(/\.cjs$/, '.mjs'),
).href
const WORKER_CODE = `import(${JSON.stringify(TSX_API)}).then(({ tsImport }) => tsImport(${JSON.stringify(
  new URL('./import-worker-node.ts', import.meta.url).href,
)}, ${JSON.stringify(import.meta.url)}))`

function startWorker() {
  const worker = new Worker(WORKER_CODE, { eval: true })
  const waiting: Pending[] = []
  const fail = (err: unknown) => {
    for (const pending of waiting.splice(0)) pending.reject(err)
  }
  worker.on('message', (parsed: ParsedLine[]) => waiting.shift()?.resolve(parsed))
  worker.on('error', fail)
  worker.on('exit', (code) => fail(new Error(`an import worker thread stopped (exit code ${code})`)))
  return {
    parse(batch: NumberedLine[]): Promise<ParsedLine[]> {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject })
        worker.postMessage(batch)
      })
    },
    stop: () => worker.terminate(),
  }
}

/** A LineParser on `threads` worker threads, started when the lines are first read and stopped when they end (or the import stops). */
export function parseInWorkers(threads = defaultImportThreads()): LineParser {
  if (!Number.isInteger(threads) || threads < 1) throw new Error(`import worker threads: a whole number of at least 1, not ${threads}`)
  return async function* (lines) {
    const workers = Array.from({ length: threads }, startWorker)
    // the batches sent, oldest first: each worker answers its own in order, so the queue is the input's order
    const queue: Promise<ParsedLine[]>[] = []
    let next = 0
    try {
      for await (const batch of numberedBatches(lines, PARSE_BATCH)) {
        const sent = workers[next++ % threads].parse(batch)
        // a failure is seen when its batch is awaited, not as an unhandled rejection before
        sent.catch(() => {})
        queue.push(sent)
        if (queue.length >= threads * IN_FLIGHT_PER_WORKER) yield await queue.shift()!
      }
      while (queue.length) yield await queue.shift()!
    } finally {
      await Promise.all(workers.map((w) => w.stop()))
    }
  }
}
