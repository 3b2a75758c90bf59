import { closeSync, fdatasync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { notYetStored } from '../storage/clickhouse/stored-rows'
import type { ClickHouse } from '../storage/clickhouse/types'
import { StoreUnavailableError } from '../storage/errors'
import type { Repositories } from '../repositories'
import { EVENTS_INPUT, type IngestBatch, type SiteUsage, type WriteAheadLog, addUsage, mergeUsage } from './sink'
import { eventRowsOf } from './sessionize'

/**
 * The write-ahead journal of the Node home: a batch of rows is written to the journal file
 * (write(2), into the kernel's page cache) before the hits in it are acknowledged, so a 202
 * survives the process being killed (`kill -9`), as the embedded key/value store's writes do.
 * The file is fdatasync'ed in the background as soon as the write returns, one sync covering every
 * line written while the one before ran: a crash of the machine itself (power, kernel) loses at
 * most the lines of the sync under way, a few milliseconds' worth. Waiting for that sync before
 * answering would bound the collector by the disk's sync latency per round of requests.
 * The buffered sink still inserts in batches (every second on the Node server); the journal's
 * segments are deleted once their rows are stored, and at start every segment left behind is
 * replayed.
 *
 * A segment is `<n>.log`, one JSON line per append. A replay stores only the event and bot rows
 * the engine does not hold yet (lib/storage/clickhouse/stored-rows.ts), so a crash between two steps of a flush
 * stores no row twice. Usage counters are added last and cannot be checked that way: a crash in
 * the moment between adding them and deleting the segment counts that flush's usage twice (never
 * less than once). A torn last line is a write that never returned: never acknowledged.
 *
 * A write that fails (a full disk) is cut off the segment again and its batch is refused with
 * StoreUnavailableError (answered 503): a batch refused is never replayed, and a torn line never
 * glues itself to the next one.
 */

interface Segment {
  n: number
  fd: number
  /** Bytes of whole lines in the file: a failed write is cut back to this. */
  size: number
  /** A background fdatasync runs; `dirty`: lines were written since it started. */
  syncing: boolean
  dirty: boolean
  sealed: boolean
}

/** Rows as their values under one list of columns: a batch's rows share their shape, and naming every field of every row was most of the journal's cost. */
type Table = [columns: string[], rows: unknown[][]]
/** One line: rows, and the hits whose visits and rows are made when they are stored (none in lines of older versions). */
type JournalLine = [events: Table, bots: Table, usage: [orgId: string, month: string, bySite: SiteUsage][], hits?: Table]

function toTable(rows: readonly object[]): Table {
  if (!rows.length) return [[], []]
  const columns = Object.keys(rows[0])
  return [columns, rows.map((row) => columns.map((column) => (row as Record<string, unknown>)[column]))]
}

function fromTable<Row>([columns, rows]: Table): Row[] {
  return rows.map((values) => {
    const row: Record<string, unknown> = {}
    for (let i = 0; i < columns.length; i++) row[columns[i]] = values[i]
    return row as Row
  })
}

const segmentFile = (dir: string, n: number) => join(dir, `${n}.log`)

const NO_ROWS: Table = [[], []]

/** A batch as one line: its rows and hits under one list of columns each. */
function encode(batch: IngestBatch): string {
  const usage: JournalLine[2] = []
  for (const [orgId, months] of batch.usage) for (const [month, counts] of months) usage.push([orgId, month, counts])
  return `${JSON.stringify([toTable(batch.events), toTable(batch.bots), usage, toTable(batch.hits)] satisfies JournalLine)}\n`
}

function decode(line: string): IngestBatch | null {
  let record: JournalLine
  try {
    record = JSON.parse(line)
  } catch {
    return null
  }
  const usage: IngestBatch['usage'] = new Map()
  for (const [orgId, month, counts] of record[2]) {
    if (!usage.has(orgId)) usage.set(orgId, new Map())
    usage.get(orgId)!.set(month, counts)
  }
  return { events: fromTable(record[0]), hits: fromTable(record[3] ?? NO_ROWS), bots: fromTable(record[1]), usage }
}

function segmentNumbers(dir: string): number[] {
  return readdirSync(dir)
    .map((name) => /^(\d+)\.log$/.exec(name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b)
}

/** A journal that cannot write is an outage: the hit is refused (503) and the client sends it again. */
const unavailable = (err: unknown) => new StoreUnavailableError('event journal', 5, { cause: err })

export class Journal implements WriteAheadLog {
  private current: Segment
  private next: number
  /** Segments an earlier process left behind, not yet replayed. */
  private leftover: number[]

  private constructor(private readonly dir: string) {
    const existing = segmentNumbers(dir)
    this.leftover = existing
    this.next = (existing.at(-1) ?? 0) + 1
    this.current = this.open()
  }

  /**
   * Opens the journal in `dir`, first storing whatever an earlier process journaled and did not
   * get to insert. Returns the journal and how many rows the replay stored.
   */
  static async open(
    dir: string,
    clickhouse: ClickHouse,
    repositories: Pick<Repositories, 'usage' | 'visits'>,
  ): Promise<{ journal: Journal; replayed: number }> {
    const journal = Journal.create(dir)
    return { journal, replayed: await journal.replay(clickhouse, repositories) }
  }

  /** Opens the journal in `dir` for appends at once; what an earlier process left is stored by `replay`. */
  static create(dir: string): Journal {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return new Journal(dir)
  }

  /** Whether segments of an earlier process wait to be stored. */
  get replaying() {
    return this.leftover.length > 0
  }

  /**
   * Stores the rows of the segments an earlier process left (those it did not insert), oldest first,
   * and deletes each once stored; returns how many rows it stored. A failure leaves the segments
   * not yet stored for the next call.
   */
  async replay(clickhouse: ClickHouse, repositories: Pick<Repositories, 'usage' | 'visits'>): Promise<number> {
    const dir = this.dir
    let replayed = 0
    while (this.leftover.length) {
      const n = this.leftover[0]
      const batches = readFileSync(segmentFile(dir, n), 'utf8')
        .split('\n')
        .map(decode)
        .filter((b): b is IngestBatch => b !== null)
      const usage: IngestBatch['usage'] = new Map()
      for (const b of batches) mergeUsage(usage, b.usage)
      // the hits join the visits the store holds: those a flush cut short by the crash assigned already, so their rows come out the same
      const rows = [
        ...batches.flatMap((b) => b.events),
        ...(await eventRowsOf(
          repositories.visits,
          batches.flatMap((b) => b.hits),
        )),
      ]
      // rows an insert stored before the crash are found in the table: only the others are inserted
      const events = await notYetStored(clickhouse, 'events', rows)
      if (events.length) await clickhouse.insert(EVENTS_INPUT, events)
      const bots = await notYetStored(
        clickhouse,
        'bot_events',
        batches.flatMap((b) => b.bots),
      )
      if (bots.length) await clickhouse.insert('bot_events', bots)
      await addUsage(repositories, usage)
      replayed += events.length + bots.length
      rmSync(segmentFile(dir, n), { force: true })
      this.leftover.shift()
    }
    return replayed
  }

  private open(): Segment {
    const n = this.next++
    const fd = openSync(segmentFile(this.dir, n), 'a', 0o600)
    return { n, fd, size: fstatSync(fd).size, syncing: false, dirty: false, sealed: false }
  }

  /**
   * Writes a batch to the current segment as one line; resolves at once when the write succeeded
   * (the line survives the process), and is refused (StoreUnavailableError) when it did not.
   */
  append(batch: IngestBatch): Promise<void> {
    const segment = this.current
    // written as the string it is: a Buffer of it first would be one more copy of every line
    const line = encode(batch)
    const bytes = Buffer.byteLength(line)
    try {
      // a short write (the disk filled part-way) is a failed one
      const written = writeSync(segment.fd, line)
      if (written !== bytes) throw Object.assign(new Error(`ENOSPC: wrote ${written} of ${bytes} bytes`), { code: 'ENOSPC' })
    } catch (err) {
      // what the failed write left in the file goes: the batch is refused
      try {
        ftruncateSync(segment.fd, segment.size)
      } catch {}
      return Promise.reject(unavailable(err))
    }
    segment.size += bytes
    segment.dirty = true
    this.sync(segment)
    return Promise.resolve()
  }

  /** One fdatasync at a time per segment, for every line written before it started; a sealed segment is closed after its last. */
  private sync(segment: Segment): void {
    if (segment.syncing) return
    if (!segment.dirty) {
      if (segment.sealed) closeSync(segment.fd)
      return
    }
    segment.syncing = true
    segment.dirty = false
    fdatasync(segment.fd, (err) => {
      segment.syncing = false
      // the lines are in the page cache and were acknowledged: a failed sync is retried with the next
      if (err) {
        segment.dirty = true
        console.error('event journal: fdatasync failed; trying again with the next sync', err)
        if (segment.sealed) return void setTimeout(() => this.sync(segment), 1000).unref()
        return
      }
      this.sync(segment)
    })
  }

  /**
   * Closes the current segment and starts a new one; returns the closed segment's number. Called
   * as a flush takes the pending rows, with no wait in between: the rows it takes are exactly those
   * of the segments sealed so far.
   */
  seal(): number {
    const sealed = this.current
    sealed.sealed = true
    this.current = this.open()
    this.sync(sealed)
    return sealed.n
  }

  /** Every row of these segments is stored: they are no longer needed. */
  release(segments: number[]) {
    // at once, not later: a segment still here at the next start would add its usage again
    for (const n of segments) rmSync(segmentFile(this.dir, n), { force: true })
  }

  /** Closes the current segment (the rows in it are stored by the caller's last flush). */
  close() {
    this.release([this.seal()])
  }
}
