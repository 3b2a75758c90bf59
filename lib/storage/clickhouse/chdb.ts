import { mkdirSync, rmSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Session } from 'chdb'
import { StoreUnavailableError, isOutOfSpace } from '../errors'
import type { ClickHouse, CommandOptions, InsertOptions, QueryParams, ReadOptions } from './types'
import { SESSION_TIMEZONE, insertToken, sameKeys } from './client'
import { BACKGROUND_PRIORITY, DEFAULT_READ_TIME_LIMIT_MS, withTimeLimit } from './execute'
import { nextTurn } from '../../core/turn'
import { type BinaryFormat, type NativeColumn, binaryRows, binaryWritable } from './native'

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_.]*$/
const COLUMN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * How rows are sent to the engine: as text, JSONCompactEachRow (the default; JSONEachRow for rows
 * whose keys differ), or in a binary format, Native or RowBinary, written to a file in the data
 * folder that an INSERT ... SELECT FROM file() reads (the binding takes text formats alone as an
 * insert's body). `bench:engine-insert --format` measures each beside the others: the binary
 * formats cost the engine no less than JSONCompactEachRow with the views on events
 * (docs/performance.md), so the text stays the default.
 */
export type InsertFormat = BinaryFormat | 'JSONCompactEachRow' | 'JSONEachRow'

function parseRows<Row>(text: string): Row[] {
  const rows: Row[] = []
  for (const line of text.split('\n')) if (line) rows.push(JSON.parse(line) as Row)
  return rows
}

/** Rows written to JSON at a time, between which other work runs (the collector's requests). */
const ROWS_AT_A_TIME = 1000

/** The most reads kept for reuse between two writes (ReadOptions.reuseMs): the oldest leaves first. */
const KEPT_READS = 256

/**
 * Rows sharing their keys as JSONCompactEachRow (arrays separated by commas), written a thousand at
 * a time with a turn of the event loop between: a second's worth of the collector's rows written in
 * one call held its requests for tens of milliseconds, which was its p99.
 */
async function compactRows(rows: readonly object[]): Promise<string> {
  if (rows.length <= ROWS_AT_A_TIME) return JSON.stringify(rows.map((r) => Object.values(r))).slice(1, -1)
  const parts: string[] = []
  for (let i = 0; i < rows.length; i += ROWS_AT_A_TIME) {
    if (i > 0) await nextTurn()
    parts.push(JSON.stringify(rows.slice(i, i + ROWS_AT_A_TIME).map((r) => Object.values(r))).slice(1, -1))
  }
  return parts.join(',')
}

/** A full disk is an outage of the engine, answered 503 until space returns; any other failure passes as it is. */
async function withSpace<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    if (isOutOfSpace(err)) throw new StoreUnavailableError('ClickHouse', 5, { cause: err })
    throw err
  }
}

/**
 * How a process sets its engine: `server` (the default) for reads; `import` for a process that
 * only inserts and must stay small (the import command). The engine's memory there is mostly its
 * inserts and merges: each statement runs on one thread and inserts on one, the marks and primary
 * index caches stay small (the import reads next to nothing), and merges go column by column in
 * small blocks and stop at parts of 64 MB (the server merges further once it runs again). These
 * apply to that process alone: the data folder keeps no setting of it.
 */
export type EngineProfile = 'server' | 'import'

const IMPORT_ENGINE_CONFIG = fileURLToPath(new URL('./import-engine.xml', import.meta.url))
const importEngineArgs = () => ['--max_threads=1', '--max_insert_threads=1', `--config-file=${IMPORT_ENGINE_CONFIG}`]

/** The embedded ClickHouse engine, in process, with data under `dir`. One process per folder. */
export class EmbeddedClickHouse implements ClickHouse {
  readonly session: Session
  /** How long one read may run (ms): the engine stops it past this (execute.ts). */
  readonly readTimeLimitMs: number
  /** How rows are sent; a test sets it to compare formats on the one engine of its process. */
  insertFormat: InsertFormat
  /** Where the rows of a binary insert wait for the engine to read them, a file an insert; made on the first, removed at start (one process per folder). */
  private readonly insertsDir: string
  /** Each table's columns and types, read once. */
  private readonly columns = new Map<string, Promise<Map<string, string>>>()

  constructor(dir: string, options: { profile?: EngineProfile; readTimeLimitMs?: number; insertFormat?: InsertFormat } = {}) {
    mkdirSync(dir, { recursive: true })
    this.readTimeLimitMs = options.readTimeLimitMs ?? DEFAULT_READ_TIME_LIMIT_MS
    this.insertFormat = options.insertFormat ?? 'JSONCompactEachRow'
    this.insertsDir = join(dir, 'inserts')
    rmSync(this.insertsDir, { recursive: true, force: true })
    this.session = new Session(dir, {
      // every statement runs at the highest priority unless it says it is background work (execute.ts)
      connectionArgs: [
        '--output_format_json_quote_64bit_integers=1',
        `--session_timezone=${SESSION_TIMEZONE}`,
        '--priority=1',
        ...(options.profile === 'import' ? importEngineArgs() : []),
      ],
    })
  }

  /**
   * Runs SQL as the ClickHouse HTTP interface would; the local endpoint serves this. Any statement
   * may write, so it counts as a write: no read asked after it takes an answer from before it.
   */
  async raw(sql: string, params: QueryParams = {}, format = 'TabSeparated'): Promise<Uint8Array> {
    try {
      return await this.run(sql, params, format)
    } finally {
      this.wrote()
    }
  }

  private async run(sql: string, params: QueryParams, format: string): Promise<Uint8Array> {
    const result = await withSpace(() =>
      Object.keys(params).length ? this.session.queryBindAsync(sql, params, { format }) : this.session.queryAsync(sql, { format }),
    )
    return result.bytes()
  }

  /** A write finished: reads asked from now on share nothing with reads asked before. */
  private wrote() {
    this.writes++
    this.kept.clear()
  }

  /** The reads running now, by their statement and parameters (query), and the writes finished before them. */
  private readonly running = new Map<string, Promise<Uint8Array>>()
  /** Writes (commands and inserts) finished so far: a read asked after a write never takes the answer of one begun before it. */
  private writes = 0
  /** Reads asked with `reuseMs` since the last write, by the same key, with when they were asked. */
  private readonly kept = new Map<string, { at: number; bytes: Promise<Uint8Array> }>()

  /**
   * A read. The engine runs statements with parameters one at a time (chdb binds them process-wide),
   * so a read asked while the same statement with the same parameters is running takes that
   * statement's answer instead of queueing a second run: the dashboard's panels, loaded at once,
   * each look up the same rolled days of the window. Each caller parses its own rows. A read asked
   * with `reuseMs` may take the answer of the same read asked that recently, when no write has
   * finished since (ReadOptions); a failed read is not kept.
   */
  async query<Row>(sql: string, params: QueryParams = {}, options: ReadOptions = {}): Promise<Row[]> {
    const key = `${this.writes}\u0000${sql}\u0000${JSON.stringify(params, (_, v) => (typeof v === 'bigint' ? `${v}n` : v))}`
    const now = Date.now()
    const kept = options.reuseMs ? this.kept.get(key) : undefined
    let bytes = kept && now - kept.at <= options.reuseMs! ? kept.bytes : this.running.get(key)
    if (!bytes) {
      const asked = (bytes = this.run(withTimeLimit(sql, this.readTimeLimitMs), params, 'JSONEachRow'))
      this.running.set(key, asked)
      const done = () => this.running.delete(key)
      asked.then(done, done)
      if (options.reuseMs) {
        if (this.kept.size >= KEPT_READS) this.kept.delete(this.kept.keys().next().value!)
        this.kept.set(key, { at: now, bytes: asked })
        asked.catch(() => this.kept.get(key)?.bytes === asked && this.kept.delete(key))
      }
    }
    return parseRows<Row>(new TextDecoder().decode(await bytes))
  }

  async command(sql: string, params: QueryParams = {}, options: CommandOptions = {}) {
    try {
      await this.run(options.bounded ? withTimeLimit(sql, this.readTimeLimitMs) : sql, params, 'TabSeparated')
    } finally {
      this.wrote()
    }
  }

  async insert(table: string, rows: readonly object[], options: InsertOptions = {}) {
    try {
      await this.insertRows(table, rows, options)
    } finally {
      this.wrote()
    }
  }

  private async insertRows(table: string, rows: readonly object[], options: InsertOptions) {
    if (!rows.length) return
    if (!TABLE_NAME.test(table)) throw new Error(`bad table name ${table}`)
    // the same rows retried under the same token are stored once, in the table and in its views
    const settings = { insert_deduplication_token: insertToken(options), ...(options.background ? { priority: BACKGROUND_PRIORITY } : {}) }
    const columns = Object.keys(rows[0])
    const shared = rows.every((row) => sameKeys(row, columns))
    const format = this.insertFormat
    if (shared && (format === 'Native' || format === 'RowBinary')) {
      if (await this.insertBinary(format, table, columns, rows, settings)) return
    }
    // rows built from one literal share their keys in order: sent as arrays under one column list,
    // they are smaller to write and to parse; anything else goes as objects. JSONCompactEachRow
    // reads rows separated by commas (compactRows).
    if (shared && format !== 'JSONEachRow') {
      const values = await compactRows(rows)
      await withSpace(() => this.session.insert({ table, values, format: 'JSONCompactEachRow', columns, settings }))
    } else {
      const values = rows.map((r) => JSON.stringify(r)).join('\n')
      await withSpace(() => this.session.insert({ table, values, format: 'JSONEachRow', settings }))
    }
  }

  /**
   * Inserts rows sharing their keys in a binary format, through a file the insert reads; false,
   * having sent nothing, when a key is not a column of the table or a value is not one the format
   * carries as text would store it (the caller then sends them as text, which stores or refuses
   * them as before).
   */
  private async insertBinary(
    format: BinaryFormat,
    table: string,
    keys: string[],
    rows: readonly object[],
    settings: { insert_deduplication_token: string; priority?: number },
  ): Promise<boolean> {
    const types = await this.columnTypes(table)
    const columns: NativeColumn[] = []
    for (const name of keys) {
      const type = types.get(name)
      if (!type || !COLUMN_NAME.test(name)) return false
      columns.push({ name, type })
    }
    if (!binaryWritable(columns)) return false
    const data = binaryRows(format, columns, rows)
    if (!data) return false
    const file = join(this.insertsDir, `${crypto.randomUUID()}.bin`)
    // RowBinary names no types: the columns' own (a LowCardinality column's values are read plain)
    const params: QueryParams = { file, token: settings.insert_deduplication_token }
    let source = "file({file:String}, 'Native')"
    if (format === 'RowBinary') {
      source = "file({file:String}, 'RowBinary', {structure:String})"
      params.structure = columns.map((c) => `${c.name} ${c.type}`).join(', ')
    }
    let priority = ''
    if (settings.priority !== undefined) {
      priority = ', priority = {priority:UInt64}'
      params.priority = settings.priority
    }
    try {
      // a full disk refuses the file as it would the parts: an outage (withSpace)
      await withSpace(async () => {
        await mkdir(this.insertsDir, { recursive: true })
        await writeFile(file, data)
      })
      await this.run(
        `INSERT INTO ${table} (${keys.join(', ')}) SETTINGS insert_deduplication_token = {token:String}${priority} SELECT * FROM ${source}`,
        params,
        'TabSeparated',
      )
    } catch (err) {
      this.columns.delete(table)
      throw err
    } finally {
      await rm(file, { force: true })
    }
    return true
  }

  /** A table's columns and their types; read again after a failed insert, in case the table changed. */
  private columnTypes(table: string): Promise<Map<string, string>> {
    let types = this.columns.get(table)
    if (!types) {
      types = this.query<{ name: string; type: string }>(
        'SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = {table:String}',
        { table },
      ).then((rows) => new Map(rows.map((r) => [r.name, r.type])))
      types.catch(() => this.columns.delete(table))
      this.columns.set(table, types)
    }
    return types
  }

  async close() {
    this.session.close()
  }
}
