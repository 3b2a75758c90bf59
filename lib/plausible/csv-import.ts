import type { SourceRepositories } from '../integrations/source-services'
import { CsvError, parse } from 'csv-parse/stream'
import { Unzip, UnzipInflate } from 'fflate'
import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../core/errors'
import { IMPORTED_DIMENSION_COLUMNS, type ImportedColumn } from '../reports/query/ga4-datasets'
import type { SiteDirectory } from '../sites/site-directory'
import type { Site } from '../sites/sites'
import { execute, executeCommand } from '../storage/clickhouse/execute'
import { bind, sql } from '../storage/clickhouse/sql'
import type { ClickHouse } from '../storage/clickhouse/types'

/**
 * Plausible's CSV export (a zip of `imported_*.csv` files, one row per day and value) stored as
 * imported aggregates of source `plausible` (clickhouse/0013_imported_aggregates.sql), under the
 * datasets the GA4 import fills, so the reads of imports take both. The whole zip is read and
 * checked before anything is stored; then it is read again and stored under a newer version, and
 * the rows of every earlier Plausible import of the site are deleted: a re-import replaces.
 * docs/import.md, "Plausible's CSV export", says what is kept of each file.
 */

/** The largest zip taken (the upload's body cap too). */
export const MAX_ZIP_BYTES = 64 * 1024 * 1024
/** The most the files of a zip may hold unzipped, together: a zip that inflates past it is refused as it inflates. */
export const MAX_UNZIPPED_BYTES = 1024 * 1024 * 1024
/** The longest line of a file. */
export const MAX_LINE_BYTES = 64 * 1024
/** Rows stored in one insert. */
const INSERT_ROWS = 10_000
/** The zip is handed to the inflater in slices of this size, so what is unzipped waits in memory a slice at a time. */
const SLICE_BYTES = 64 * 1024

/** One of Plausible's files: the dataset it fills, its text columns (each with the column it is stored in, or null when unread), its counts. */
interface ExportFile {
  dataset: string
  text: Record<string, ImportedColumn | null>
  numbers: string[]
  /** Columns that older exports lack: a missing text column is '', a missing count 0. */
  optional?: string[]
  /** The count that is the file's visits (entry and exit pages count entrances and exits). */
  visits?: string
}

const VISITS = ['visitors', 'visits', 'visit_duration', 'bounces', 'pageviews']
const UTM = ['utm_source', 'utm_medium', 'utm_campaign', 'utm_content', 'utm_term'] as const

/** Plausible's export files by table name, as its CSV importer and exporter name their columns. */
const FILES: Record<string, ExportFile> = {
  imported_visitors: { dataset: 'visitors', text: {}, numbers: VISITS },
  imported_sources: {
    dataset: 'sources',
    text: { source: 'source_name', referrer: 'referrer', ...Object.fromEntries(UTM.map((c) => [c, c])) },
    numbers: VISITS,
    optional: ['referrer', 'utm_source', 'pageviews'],
  },
  imported_pages: {
    dataset: 'pages',
    text: {
      hostname: 'hostname',
      page: 'path',
      exits: null,
      time_on_page: null,
      scroll_depth: null,
      pageleave_visitors: null,
      total_scroll_depth: null,
      total_scroll_depth_visits: null,
      total_time_on_page: null,
      total_time_on_page_visits: null,
    },
    numbers: ['visitors', 'visits', 'pageviews'],
    optional: [
      'visits',
      'exits',
      'time_on_page',
      'scroll_depth',
      'pageleave_visitors',
      'total_scroll_depth',
      'total_scroll_depth_visits',
      'total_time_on_page',
      'total_time_on_page_visits',
    ],
  },
  imported_entry_pages: {
    dataset: 'entry_pages',
    text: { entry_page: 'entry_page' },
    numbers: ['visitors', 'entrances', 'visit_duration', 'bounces', 'pageviews'],
    optional: ['pageviews'],
    visits: 'entrances',
  },
  imported_exit_pages: {
    dataset: 'exit_pages',
    text: { exit_page: 'path' },
    numbers: ['visitors', 'exits', 'visit_duration', 'bounces', 'pageviews'],
    optional: ['visit_duration', 'bounces', 'pageviews'],
    visits: 'exits',
  },
  imported_custom_events: {
    dataset: 'events',
    text: { name: 'event', link_url: null, path: null },
    numbers: ['visitors', 'events'],
    optional: ['link_url', 'path'],
  },
  imported_locations: {
    dataset: 'locations',
    text: { country: 'country', region: 'region', city: null },
    numbers: VISITS,
    optional: ['pageviews'],
  },
  imported_devices: { dataset: 'devices', text: { device: 'device' }, numbers: VISITS, optional: ['pageviews'] },
  imported_browsers: {
    dataset: 'browsers',
    text: { browser: 'browser', browser_version: null },
    numbers: VISITS,
    optional: ['browser_version', 'pageviews'],
  },
  imported_operating_systems: {
    dataset: 'systems',
    text: { operating_system: 'os', operating_system_version: null },
    numbers: VISITS,
    optional: ['operating_system_version', 'pageviews'],
  },
}

/** A file's table from its name: `imported_visitors_20240101_20241231.csv`, or without the prefix or the dates, in any folder. */
function tableOf(name: string): string | null {
  const match = /^(?:.*\/)?(?:imported_)?([a-z_]+?)(?:_\d{8}_\d{8})?\.csv$/.exec(name)
  const table = match && `imported_${match[1]}`
  return table && FILES[table] ? table : null
}

/** Plausible's screen classes as the collector names devices. */
const DEVICES: Record<string, string> = { Laptop: 'Desktop' }

function storedValue(column: ImportedColumn, value: string) {
  if (value === '(not set)') return ''
  if (column === 'country') return value.toUpperCase()
  if (column === 'device') return DEVICES[value] ?? value
  return value
}

/** A refusal naming the file and the line. */
const refused = (file: string, line: number | null, what: string) =>
  new ApiError(400, `${file}${line === null ? '' : ` line ${line}`}: ${what}`)

const utf8 = new TextDecoder('utf-8', { fatal: true })
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/

/** A field as text: valid UTF-8 (an encoded lone surrogate is not) without control characters. */
function textOf(file: string, line: number, column: string, bytes: Uint8Array): string {
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw refused(file, line, `${column} is not valid UTF-8 text`)
  }
  if (CONTROL.test(text)) throw refused(file, line, `${column} holds a control character`)
  return text
}

const MAX_COUNT = 1e15

function countOf(file: string, line: number, column: string, text: string): number {
  if (!/^\d{1,16}$/.test(text) || Number(text) > MAX_COUNT)
    throw refused(file, line, `${column} is ${JSON.stringify(text.slice(0, 40))}, not a whole number from 0 to ${MAX_COUNT}`)
  return Number(text)
}

function dayOf(file: string, line: number, text: string): string {
  let day: Temporal.PlainDate | null = null
  try {
    if (/^\d{4}-\d{2}-\d{2}$/.test(text)) day = Temporal.PlainDate.from(text, { overflow: 'reject' })
  } catch {}
  if (!day || day.year < 1970 || day.year > 2100)
    throw refused(file, line, `date is ${JSON.stringify(text.slice(0, 40))}, not a day written YYYY-MM-DD`)
  return day.toString()
}

type Row = Record<string, string | number>

/**
 * Reads one file's lines into rows of `imported_aggregates`. Rows whose stored values are alike
 * (a browser's versions, an event's links) are summed: the rows of a day come together, as
 * Plausible writes them, and a day's rows are handed on when the next day starts.
 */
class FileRows {
  private columns: Map<string, number> | null = null
  private day = ''
  private readonly byKey = new Map<string, Row>()
  rows = 0
  first = ''
  last = ''

  constructor(
    readonly name: string,
    private readonly spec: ExportFile,
    private readonly base: { site_id: string; version: number },
    private readonly emit: (rows: Row[]) => Promise<void>,
  ) {}

  async line(fields: Uint8Array[], line: number) {
    if (!this.columns) return this.header(fields, line)
    const value = (column: string) => {
      const at = this.columns!.get(column)
      return at === undefined ? '' : textOf(this.name, line, column, fields[at])
    }
    const day = dayOf(this.name, line, value('date'))
    if (day < this.day)
      throw refused(
        this.name,
        line,
        `the day ${day} comes after rows of ${this.day}: the rows must be in date order, as Plausible writes them`,
      )
    if (day !== this.day) await this.endDay()
    this.day = day
    const row: Row = { ...this.base, source: 'plausible', dataset: this.spec.dataset, date: day, hour: 0 }
    for (const column of IMPORTED_DIMENSION_COLUMNS) row[column] = ''
    for (const [name, column] of Object.entries(this.spec.text)) if (column) row[column] = storedValue(column, value(name))
    const n = (column: string) => (this.columns!.has(column) ? countOf(this.name, line, column, value(column)) : 0)
    const visits = n(this.spec.visits ?? 'visits')
    const counts = {
      visitors: n('visitors'),
      visits,
      engaged_visits: this.spec.numbers.includes('bounces') ? Math.max(0, visits - n('bounces')) : visits,
      pageviews: n('pageviews'),
      engagement_seconds: n('visit_duration'),
      events: n('events'),
    }
    const key = IMPORTED_DIMENSION_COLUMNS.map((c) => row[c]).join('\u0000')
    const seen = this.byKey.get(key)
    if (seen) for (const [column, count] of Object.entries(counts)) (seen[column] as number) += count
    else this.byKey.set(key, Object.assign(row, counts))
    this.rows++
    this.first ||= day
    this.last = day
  }

  private header(fields: Uint8Array[], line: number) {
    const names = fields.map((f, i) => textOf(this.name, line, `column ${i + 1}`, f).trim())
    const known = new Set(['date', ...Object.keys(this.spec.text), ...this.spec.numbers])
    const unknown = names.find((n) => !known.has(n))
    if (unknown !== undefined)
      throw refused(
        this.name,
        line,
        `the column ${JSON.stringify(unknown.slice(0, 60))} is not one of this file's (${[...known].join(', ')})`,
      )
    const twice = names.find((n, i) => names.indexOf(n) !== i)
    if (twice) throw refused(this.name, line, `the column ${twice} is there twice`)
    const missing = [...known].find((n) => !names.includes(n) && !this.spec.optional?.includes(n))
    if (missing) throw refused(this.name, line, `the column ${missing} is missing (the header names ${names.join(', ')})`)
    this.columns = new Map(names.map((n, i) => [n, i]))
  }

  private async endDay() {
    if (this.byKey.size) await this.emit([...this.byKey.values()])
    this.byKey.clear()
  }

  async end() {
    if (!this.columns) throw refused(this.name, null, 'the file is empty: it has no header line')
    await this.endDay()
  }
}

/** Why csv-parse refused a line, in a sentence. */
function csvRefusal(file: string, err: CsvError & { lines?: number }) {
  const line = err.lines ?? null
  switch (err.code) {
    case 'CSV_MAX_RECORD_SIZE':
      return refused(file, line, `a line is longer than ${MAX_LINE_BYTES} bytes`)
    case 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH':
      return refused(file, line, 'the line has a different number of values than the header')
    case 'CSV_QUOTE_NOT_CLOSED':
      return refused(file, line, 'a quoted value is not closed before the end of the file')
    default:
      return refused(file, line, `not CSV as Plausible writes it (${err.message.replace(/\.$/, '')})`)
  }
}

/** A CSV parser fed a file's chunks as they are unzipped, handing each line's fields to `lines` in order. */
function csvReader(file: string, lines: (fields: Uint8Array[], line: number) => Promise<void>) {
  const parser = parse({ encoding: null, info: true, max_record_size: MAX_LINE_BYTES, skip_empty_lines: true })
  const writer = parser.writable.getWriter()
  let failure: unknown = null
  let started = false
  const reading = (async () => {
    const reader = parser.readable.getReader()
    try {
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        const { record, info } = next.value as unknown as { record: Uint8Array[]; info: { lines: number } }
        await lines(record, info.lines)
      }
    } catch (err) {
      failure = err instanceof CsvError ? csvRefusal(file, err) : err
      await reader.cancel().catch(() => {})
      throw failure
    }
  })()
  reading.catch(() => {})
  const step = async (work: Promise<void>) => {
    try {
      await work
    } catch (err) {
      await reading.catch(() => {})
      throw failure ?? (err instanceof CsvError ? csvRefusal(file, err) : err)
    }
  }
  return {
    write: (chunk: Uint8Array) => {
      // a UTF-8 byte order mark is left out here: csv-parse would answer text rather than the bytes checked as UTF-8
      const bom = !started && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf ? 3 : 0
      started = true
      return step(writer.write(Buffer.from(chunk.buffer, chunk.byteOffset + bom, chunk.byteLength - bom)))
    },
    end: async () => {
      await step(writer.close())
      await step(reading)
    },
  }
}

/**
 * Walks the zip's files in order, unzipping each as a stream and handing its chunks on. A zip
 * that inflates past MAX_UNZIPPED_BYTES is refused as it inflates, whatever sizes it declares.
 */
async function walkZip(
  zip: Uint8Array,
  onFile: (name: string) => { write(chunk: Uint8Array): Promise<void>; end(): Promise<void> } | null,
) {
  if (zip.length < 4 || zip[0] !== 0x50 || zip[1] !== 0x4b)
    throw new ApiError(400, "the upload is not a zip file (Plausible's export is one)")
  // the files are read from their own headers, front to back; the zip's end record says how many there are
  const files = filesInZip(zip)
  if (files === null) throw new ApiError(400, 'the zip file is cut short: it has no end record (download the export again)')
  let seen = 0
  // what the files say they hold, and what they were found to hold as they inflate
  let declared = 0
  let unzipped = 0
  let unzipFailure: unknown = null
  const tooLarge = (name: string) =>
    new ApiError(400, `${name}: the zip's files hold more than ${MAX_UNZIPPED_BYTES / 2 ** 20} MB unzipped, more than an import takes`)
  const chunks: { name: string; chunk: Uint8Array; final: boolean }[] = []
  const unzip = new Unzip((file) => {
    seen++
    if ((declared += file.originalSize ?? 0) > MAX_UNZIPPED_BYTES) {
      unzipFailure ??= tooLarge(file.name)
      return
    }
    file.ondata = (err, chunk, final) => {
      if (unzipFailure) return
      if (err) unzipFailure = new ApiError(400, `${file.name}: cannot be unzipped (${err.message})`)
      else if ((unzipped += chunk.length) > MAX_UNZIPPED_BYTES) unzipFailure = tooLarge(file.name)
      else chunks.push({ name: file.name, chunk, final })
    }
    file.start()
  })
  unzip.register(UnzipInflate)
  let current = null as { name: string; sink: ReturnType<typeof onFile>; ended: boolean } | null
  for (let at = 0; at < zip.length; at += SLICE_BYTES) {
    try {
      unzip.push(zip.subarray(at, at + SLICE_BYTES), at + SLICE_BYTES >= zip.length)
    } catch (err) {
      throw new ApiError(400, `${current ? `${current.name}: ` : ''}the zip file cannot be read (${(err as Error).message})`)
    }
    if (unzipFailure) throw unzipFailure
    for (const { name, chunk, final } of chunks.splice(0)) {
      if (current?.name !== name) current = { name, sink: onFile(name), ended: false }
      if (chunk.length) await current.sink?.write(chunk)
      if (final) await current.sink?.end()
      current.ended = final
    }
  }
  if (current && !current.ended) throw new ApiError(400, `${current.name}: the zip file is cut short before the end of this file`)
  if (seen !== files) throw new ApiError(400, `the zip file is damaged: its end record lists ${files} files, ${seen} could be read`)
}

/** The number of files the zip's end-of-central-directory record lists; null without one (the zip is cut short). */
function filesInZip(zip: Uint8Array): number | null {
  // the record is the last 22 bytes, before a comment of up to 65,535 bytes
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 0xffff); at--)
    if (zip[at] === 0x50 && zip[at + 1] === 0x4b && zip[at + 2] === 0x05 && zip[at + 3] === 0x06) return zip[at + 10] | (zip[at + 11] << 8)
  return null
}

export interface PlausibleImportResult {
  /** Lines read of every file. */
  lines: number
  /** Rows stored (a day's alike values summed into one). */
  rows: number
  /** The first and last day of the imported visitors. */
  from: string
  to: string
  files: string[]
}

/**
 * Reads the whole zip; `store` takes each day's rows of each file (nothing in a check). Refuses a
 * file that is not Plausible's, a bad line (naming the file and the line), a zip bomb.
 */
async function readExport(zip: Uint8Array, base: { site_id: string; version: number }, store: (rows: Row[]) => Promise<void>) {
  const files = new Map<string, FileRows>()
  await walkZip(zip, (name) => {
    if (name.endsWith('/') || name.startsWith('__MACOSX/')) return null
    const table = tableOf(name)
    if (!table)
      throw new ApiError(
        400,
        `${name}: not a file of Plausible's export (its files are ${Object.keys(FILES)
          .map((t) => `${t}_YYYYMMDD_YYYYMMDD.csv`)
          .join(', ')})`,
      )
    if (files.has(table)) throw new ApiError(400, `${name}: the zip holds a second ${table} file (${files.get(table)!.name})`)
    const rows = new FileRows(name, FILES[table], base, store)
    files.set(table, rows)
    const reader = csvReader(name, (fields, line) => rows.line(fields, line))
    return { write: reader.write, end: async () => (await reader.end(), await rows.end()) }
  })
  const visitors = files.get('imported_visitors')
  if (!visitors) throw new ApiError(400, 'the zip has no imported_visitors file: it is not a Plausible export, or not a whole one')
  if (!visitors.rows) throw new ApiError(400, `${visitors.name}: no days: there is nothing to import`)
  return {
    lines: [...files.values()].reduce((n, f) => n + f.rows, 0),
    from: visitors.first,
    to: visitors.last,
    files: [...files.values()].map((f) => f.name),
  }
}

/** Reads the whole zip and stores nothing: a bad file is refused (ApiError 400) as the import refuses it. */
export async function checkPlausibleExport(zip: Uint8Array) {
  if (zip.length > MAX_ZIP_BYTES) throw new ApiError(400, `the zip is larger than ${MAX_ZIP_BYTES / 2 ** 20} MB`)
  return readExport(zip, { site_id: '', version: 0 }, async () => {})
}

export interface PlausibleImportDeps {
  clickhouse: ClickHouse
  repositories: Pick<SourceRepositories, 'importRuns'>
  sites: Pick<SiteDirectory, 'update'>
  now(): Date
}

const plausibleRows = (siteId: string) => sql`site_id = ${bind('UUID', siteId)} AND source = 'plausible'`

/**
 * Imports a Plausible export into a site: checked whole first (a 400 naming the file and line),
 * then stored under a version newer than every earlier Plausible import's, whose rows are then
 * deleted. Listed among the site's imports, and its days recorded on the site.
 */
export async function importPlausibleExport(deps: PlausibleImportDeps, site: Site, zip: Uint8Array): Promise<PlausibleImportResult> {
  await checkPlausibleExport(zip)
  const startedAt = deps.now()
  const [latest] = await execute<{ version: string }>(
    deps.clickhouse,
    sql`SELECT max(version) AS version FROM imported_aggregates WHERE ${plausibleRows(site.id)}`,
  )
  const version = Math.max(startedAt.getTime(), Number(latest?.version ?? 0) + 1)
  const base = { site_id: site.id, version }
  let pending: Row[] = []
  let rows = 0
  const flush = async () => {
    if (pending.length) await deps.clickhouse.insert('imported_aggregates', pending)
    rows += pending.length
    pending = []
  }
  const read = await readExport(zip, base, async (day) => {
    for (const row of day) pending.push(row)
    if (pending.length >= INSERT_ROWS) await flush()
  })
  await flush()
  const older = sql`${plausibleRows(site.id)} AND version < ${bind('UInt64', version)}`
  const [any] = await execute<{ found: number }>(deps.clickhouse, sql`SELECT 1 AS found FROM imported_aggregates WHERE ${older} LIMIT 1`)
  if (any) await executeCommand(deps.clickhouse, sql`DELETE FROM imported_aggregates WHERE ${older}`)
  const finishedAt = deps.now().toISOString()
  await deps.repositories.importRuns.save(site.id, {
    id: crypto.randomUUID(),
    kind: 'plausible',
    state: 'completed',
    startedAt: startedAt.toISOString(),
    finishedAt,
    rows,
    rejected: 0,
    from: read.from,
    to: read.to,
    error: null,
  })
  await deps.sites.update(site.id, (current) => ({
    ...current,
    imports: [
      ...current.imports.filter((p) => p.source !== 'plausible'),
      { source: 'plausible', from: read.from, to: read.to, importedAt: finishedAt },
    ],
  }))
  return { ...read, rows }
}
