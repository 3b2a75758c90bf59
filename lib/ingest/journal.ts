import type { DomainRepositories } from '../sites/domain-services'
import { closeSync, fdatasync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import type { ClickHouse } from '../storage/clickhouse/types'
import { StoreUnavailableError } from '../storage/errors'
import type { Quarantine } from './quarantine'
import { FileQuarantine } from './quarantine-node'
import { storeRecovered } from './recover'
import { type IngestBatch, type WriteAheadLog, mergeUsage } from './sink'
import { decode, encode } from './journal-line'

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

const segmentFile = (dir: string, n: number) => join(dir, `${n}.log`)

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

  private constructor(
    private readonly dir: string,
    private readonly quarantine: Quarantine,
  ) {
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
    repositories: Pick<DomainRepositories, 'usage' | 'visits'>,
    quarantine?: Quarantine,
  ): Promise<{ journal: Journal; replayed: number }> {
    const journal = Journal.create(dir, quarantine)
    return { journal, replayed: await journal.replay(clickhouse, repositories) }
  }

  /**
   * Opens the journal in `dir` for appends at once; what an earlier process left is stored by
   * `replay`, and what of it cannot be stored goes to `quarantine` (by default a folder inside `dir`).
   */
  static create(dir: string, quarantine?: Quarantine): Journal {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return new Journal(dir, quarantine ?? new FileQuarantine(join(dir, 'quarantine')))
  }

  /** Whether segments of an earlier process wait to be stored. */
  get replaying() {
    return this.leftover.length > 0
  }

  /**
   * Stores the rows of the segments an earlier process left (those it did not insert), oldest first,
   * and deletes each once stored; returns how many rows it stored. A line that cannot be read, a
   * hit or row that cannot be stored, is set aside in the quarantine with the reason, and the rest
   * of its segment is stored. An outage leaves the segments not yet stored for the next call.
   */
  async replay(clickhouse: ClickHouse, repositories: Pick<DomainRepositories, 'usage' | 'visits'>): Promise<number> {
    const dir = this.dir
    let replayed = 0
    while (this.leftover.length) {
      const n = this.leftover[0]
      const text = readFileSync(segmentFile(dir, n), 'utf8')
      // the piece after the last newline is a write that never returned: never acknowledged
      const lines = text.split('\n').slice(0, -1)
      const batch: IngestBatch = { events: [], hits: [], bots: [], usage: new Map() }
      const source = `journal-${n}-${createHash('sha256').update(text).digest('hex').slice(0, 12)}`
      lines.forEach((line, i) => {
        if (!line.trim()) return
        const decoded = decode(line)
        if (typeof decoded === 'string')
          return this.quarantine.setAside(`${source}-line-${i + 1}`, { kind: 'line', line, segment: n }, decoded)
        for (const row of decoded.events) batch.events.push(row)
        for (const hit of decoded.hits) batch.hits.push(hit)
        for (const row of decoded.bots) batch.bots.push(row)
        mergeUsage(batch.usage, decoded.usage)
      })
      // the hits join the visits the store holds: those a flush cut short by the crash assigned already, so their rows come out the same
      replayed += await storeRecovered(clickhouse, repositories, this.quarantine, batch, source)
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
