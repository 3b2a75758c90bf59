import type { DomainRepositories } from '../sites/domain-services'
import { missingKindField, parseHit } from './hit'
import { type SiteTally, recordImportRuns, tally } from '../sites/imports'
import type { ClickHouse } from '../storage/clickhouse/types'
import { SiteDirectory } from '../sites/site-directory'
import type { GeoLookup } from './geo'
import type { IngestItem } from './item'
import { Ingestor } from './pipeline'
import type { Quarantine } from './quarantine'
import { BufferedSink } from './sink'
import type { ImportVisits } from './visits-repository'
import { VISIT_GAP_MS } from './visits'
import { nextTurn } from '../core/turn'

export interface ImportResult {
  imported: number
  rejected: number
  /** The first rejected lines, with why. */
  errors: { line: number; error: string }[]
  /** Per site reached: rows stored and rejected, and the period they cover. */
  bySite: Map<string, SiteTally>
  /** Rows the store refused for what they hold, set aside in the quarantine (counted in `imported`: they are kept there). */
  quarantined: number
}

const CHUNK = 5000
/** Lines parsed at a time (here or on a worker thread). */
export const PARSE_BATCH = 1000
/** Rows of one insert of an import: smaller inserts keep the embedded engine's memory lower (about 150 MB less than 50,000 at the peak), at some cost in speed. */
const SINK_ROWS = 10_000

/** A raw-hit line to an ingest item still without its site, or the reason it cannot be one. */
export function parseImportLine(text: string): Omit<IngestItem, 'site'> | string {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return 'not valid JSON'
  }
  const hit = parseHit(json, 'import')
  if (typeof hit === 'string') return hit
  if (!hit.timestamp) return 'timestamp: required in an import'
  if (!hit.ip) return 'ip: required in an import'
  if (!hit.userAgent) return 'userAgent: required in an import'
  const missing = missingKindField(hit)
  if (missing) return missing
  return { hit, ip: hit.ip, userAgent: hit.userAgent, receivedAt: new Date(hit.timestamp), source: 'import' }
}

/** A line of the input with its number in the input, for input read in another order (import-order-node.ts). */
export type NumberedLine = readonly [line: number, text: string]

/** A line read: its number in the input, its length in bytes (with its newline), and its item, why it is refused, or null when blank. */
export interface ParsedLine {
  line: number
  bytes: number
  item: Omit<IngestItem, 'site'> | string | null
}

/** Turns the input's lines into parsed lines, a batch at a time, in the input's order: here, or on worker threads (import-workers-node.ts). */
export type LineParser = (lines: AsyncIterable<string | NumberedLine> | Iterable<string | NumberedLine>) => AsyncIterable<ParsedLine[]>

/** Lines of the input in batches, each with its number: its own, or its place in the input. */
export async function* numberedBatches(
  lines: AsyncIterable<string | NumberedLine> | Iterable<string | NumberedLine>,
  size: number,
): AsyncGenerator<NumberedLine[]> {
  let batch: NumberedLine[] = []
  let lineNumber = 0
  for await (const input of lines) {
    if (typeof input === 'string') batch.push([++lineNumber, input])
    else batch.push(input)
    if (batch.length >= size) {
      yield batch
      batch = []
    }
  }
  if (batch.length) yield batch
}

/** A batch of lines parsed. */
export function parseBatch(batch: readonly NumberedLine[]): ParsedLine[] {
  return batch.map(([line, text]) => ({ line, bytes: text.length + 1, item: text.trim() ? parseImportLine(text) : null }))
}

/** Parses the lines on this thread, as they are read. */
export async function* parseHere(
  lines: AsyncIterable<string | NumberedLine> | Iterable<string | NumberedLine>,
): AsyncGenerator<ParsedLine[]> {
  for await (const batch of numberedBatches(lines, PARSE_BATCH)) yield parseBatch(batch)
}

/**
 * Loads NDJSON raw hits through the same enrichment and sessionization as live traffic,
 * with each hit's own timestamp. Bad lines are reported and skipped; the rest are stored.
 */
export async function importHits(
  lines: AsyncIterable<string | NumberedLine> | Iterable<string | NumberedLine>,
  ingestor: Ingestor,
  onProgress?: (done: { lines: number; bytes: number }) => void,
  /** Filled as the import goes, so a caller still has what was stored when it fails. */
  result: ImportResult = { imported: 0, rejected: 0, errors: [], bySite: new Map(), quarantined: 0 },
  options: {
    /**
     * The ingestor's visits, when the lines come in time order: after each chunk, the visits no
     * later hit can extend are forgotten, so memory stays bounded; a line older than hits already
     * read fails the import rather than split a visit that was forgotten.
     */
    visits?: ImportVisits
    /** Awaited after each chunk (the CLI waits there while the engine is behind). */
    afterChunk?: () => Promise<void>
    /** Where lines are parsed: on this thread by default. */
    parse?: LineParser
  } = {},
): Promise<ImportResult> {
  let chunk: { line: number; item: Omit<IngestItem, 'site'> }[] = []
  let read = 0
  let bytes = 0
  /** The newest hit read, and the newest when visits were last forgotten (epoch ms). */
  let newest = Number.NEGATIVE_INFINITY
  let forgotAt = Number.NEGATIVE_INFINITY
  const { visits } = options
  const reject = (line: number, error: string) => {
    result.rejected++
    if (result.errors.length < 1000) result.errors.push({ line, error })
  }
  const flush = async () => {
    const sites = await ingestor.sites.bySnippets(chunk.map((c) => c.item.hit.site))
    // literals rather than spreads, which cost more than a microsecond a hit
    const items = chunk.map(({ item: { hit, ip, userAgent, receivedAt, source } }) => ({
      hit,
      site: sites.get(hit.site)!,
      ip,
      userAgent,
      receivedAt,
      source,
    }))
    const outcomes = await ingestor.ingest(items)
    outcomes.forEach((outcome, i) => {
      const site = items[i].site
      if (outcome.status === 'stored') {
        result.imported++
        tally(result.bySite, site.id, items[i].receivedAt)
        return
      }
      reject(chunk[i].line, outcome.status === 'rejected' ? outcome.error : `dropped: ${outcome.reason}`)
      if (site) tally(result.bySite, site.id, null)
    })
    chunk = []
    onProgress?.({ lines: read, bytes })
    // no later hit (at newest or after) can extend a visit whose last hit is more than the gap before it
    if (visits) {
      await visits.forgetBefore(newest - VISIT_GAP_MS)
      forgotAt = newest
    }
    await options.afterChunk?.()
    // a turn of the event loop: the sink sees its finished insert and starts the next one while
    // the next chunk is enriched (promises alone would keep it waiting until the import ends)
    await nextTurn()
  }
  for await (const parsed of (options.parse ?? parseHere)(lines)) {
    for (const { line, bytes: size, item } of parsed) {
      read++
      bytes += size
      if (item === null) continue
      if (typeof item === 'string') reject(line, item)
      else {
        const at = item.receivedAt.getTime()
        if (visits && at < forgotAt)
          throw new Error(
            `line ${line}: ${item.hit.timestamp} is older than hits imported before it: hits must come in time order for the visits they extend to be remembered`,
          )
        if (at > newest) newest = at
        chunk.push({ line, item })
      }
      if (chunk.length >= CHUNK) await flush()
    }
  }
  if (chunk.length) await flush()
  // lines read in another order than the input's are named in the input's
  result.errors.sort((a, b) => a.line - b.line)
  return result
}

/**
 * An import with its own ingestor and buffered sink, as the CLIs run it: inserts go to the engine
 * while the next chunks are enriched, and everything is stored before it returns. Each site it
 * reached records the run (rows, period, state), listed by GET /sites/{id}/imports.
 */
export async function runImport(
  lines: AsyncIterable<string | NumberedLine> | Iterable<string | NumberedLine>,
  deps: { clickhouse: ClickHouse; repositories: DomainRepositories; geo?: GeoLookup; quarantine?: Quarantine },
  onProgress?: (done: { lines: number; bytes: number }) => void,
  options: {
    /** The content's hash, recorded with the run (read once the lines are read: standard input is hashed as it goes). */
    contentHash?: () => string | null
    /** Called when every line is read and the last rows are being stored. */
    onStoring?: () => void
    /** The lines come in time order (import-order-node.ts): visits are forgotten as the import goes, and memory stays bounded. */
    inTimeOrder?: boolean
    /** Where lines are parsed: on this thread by default, on worker threads with import-workers-node.ts. */
    parse?: LineParser
  } = {},
): Promise<ImportResult> {
  // an insert starts as soon as the one before is done, with up to SINK_ROWS rows
  const result: ImportResult = { imported: 0, rejected: 0, errors: [], bySite: new Map(), quarantined: 0 }
  const sink = new BufferedSink(deps.clickhouse, deps.repositories, {
    maxRows: SINK_ROWS,
    intervalMs: 100,
    quarantine: deps.quarantine,
    observe: { inserted() {}, journaled() {}, quarantined: (_table, rows) => void (result.quarantined += rows) },
  })
  const visits = options.inTimeOrder ? deps.repositories.visits.forImport() : undefined
  const ingestor = new Ingestor({
    sites: new SiteDirectory(deps.repositories.sites),
    repositories: visits ? { salts: deps.repositories.salts, visits } : deps.repositories,
    sink,
    geo: deps.geo,
    now: () => new Date(),
  })
  const startedAt = new Date()
  let error: string | null = null
  try {
    await importHits(lines, ingestor, onProgress, result, {
      visits,
      parse: options.parse,
      // enrichment is faster than the engine's inserts: rows wait in memory for two inserts at most
      afterChunk: async () => {
        if (sink.backlog.rows >= 2 * SINK_ROWS) await sink.flush()
      },
    })
    options.onStoring?.()
    await sink.close()
    return result
  } catch (err) {
    error = String((err as Error)?.message ?? err)
    await sink.close().catch(() => {})
    throw err
  } finally {
    await recordImportRuns(deps.repositories, result.bySite, {
      startedAt,
      finishedAt: new Date(),
      error,
      contentHash: options.contentHash?.() ?? null,
    })
  }
}
