import { once } from 'node:events'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { NumberedLine } from './import'

/**
 * Raw hits in time order, for an import that forgets the visits no later hit can extend
 * (docs/import.md): a file is checked as it is hashed, and one out of order, or standard input,
 * is sorted by timestamp in bounded memory: runs of lines sorted in memory and written to
 * temporary files, then merged.
 */

/** Lines sorted in memory at once: about 40 MB of demo hits. */
const RUN_LINES = 100_000

/** A line's timestamp in epoch milliseconds; -Infinity for a line without one (rejected by the import wherever it comes). */
export function hitTime(text: string): number {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return Number.NEGATIVE_INFINITY
  }
  const timestamp = (json as { timestamp?: unknown } | null)?.timestamp
  const at = typeof timestamp === 'string' ? new Date(timestamp).getTime() : Number.NaN
  return Number.isNaN(at) ? Number.NEGATIVE_INFINITY : at
}

/** Follows lines to tell whether every timestamp is at or after those before it. */
export function orderCheck() {
  let newest = Number.NEGATIVE_INFINITY
  let firstOutOfOrder: number | null = null
  let line = 0
  return {
    see(text: string) {
      line++
      const at = hitTime(text)
      if (at === Number.NEGATIVE_INFINITY) return
      if (at < newest) firstOutOfOrder ??= line
      else newest = at
    },
    /** The first line older than one before it, or null when the lines are in time order. */
    get firstOutOfOrder() {
      return firstOutOfOrder
    },
  }
}

interface Keyed {
  at: number
  line: number
  text: string
}

const byTime = (a: Keyed, b: Keyed) => a.at - b.at || a.line - b.line

/** Writes a sorted run as `at \t line \t text` lines. */
async function writeRun(path: string, run: Keyed[]) {
  const out = createWriteStream(path)
  for (const { at, line, text } of run) if (!out.write(`${at}\t${line}\t${text}\n`)) await once(out, 'drain')
  out.end()
  await once(out, 'finish')
}

async function* readRun(path: string): AsyncGenerator<Keyed> {
  for await (const row of createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY })) {
    const a = row.indexOf('\t')
    const b = row.indexOf('\t', a + 1)
    yield { at: Number(row.slice(0, a)), line: Number(row.slice(a + 1, b)), text: row.slice(b + 1) }
  }
}

/**
 * The lines sorted by timestamp (then by their order in the input), each with its line number in
 * the input. At most `runLines` lines are held at once; more are sorted in runs written under a
 * temporary folder (in `dir`, the system's by default), removed when the lines are read.
 */
export async function* inTimeOrder(
  lines: AsyncIterable<string>,
  options: { dir?: string; runLines?: number; onRun?: (linesRead: number) => void } = {},
): AsyncGenerator<NumberedLine> {
  const runLines = options.runLines ?? RUN_LINES
  let folder: string | null = null
  const runs: string[] = []
  let run: Keyed[] = []
  let line = 0
  try {
    for await (const text of lines) {
      line++
      run.push({ at: hitTime(text), line, text })
      if (run.length >= runLines) {
        folder ??= await mkdtemp(join(options.dir ?? tmpdir(), 'import-sort-'))
        const path = join(folder, `run-${runs.length}`)
        await writeRun(path, run.sort(byTime))
        runs.push(path)
        run = []
        options.onRun?.(line)
      }
    }
    run.sort(byTime)
    if (!runs.length) {
      for (const { line, text } of run) yield [line, text]
      return
    }
    // a k-way merge: the in-memory rest is one more run; the smallest head goes next
    const sources: AsyncGenerator<Keyed>[] = [
      ...runs.map(readRun),
      (async function* () {
        yield* run
      })(),
    ]
    const heads: (Keyed | null)[] = await Promise.all(sources.map(async (source) => (await source.next()).value ?? null))
    for (;;) {
      let next = -1
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i]
        if (head && (next < 0 || byTime(head, heads[next]!) < 0)) next = i
      }
      if (next < 0) break
      const { line, text } = heads[next]!
      heads[next] = (await sources[next].next()).value ?? null
      yield [line, text]
    }
  } finally {
    if (folder) await rm(folder, { recursive: true, force: true })
  }
}
