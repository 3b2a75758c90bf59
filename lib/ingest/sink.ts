import type { UsageRepository } from '../accounts/usage-repository'
import type { VisitsRepository } from './visits-repository'
import type { ClickHouse } from '../storage/clickhouse/types'
import type { RowHit } from './item'
import type { BotRow, EventRow } from './rows'
import { eventRowsOf } from './sessionize'
import { nextTurn } from '../core/turn'
import { ApiError } from '../core/errors'
import { type Quarantine, eventRowsSettingAside, insertSettingAside, isRowRefusal, reasonOf } from './quarantine'

/** Where event rows are inserted: a Null table whose view fills `events` (clickhouse/0004_events_input.sql). */
export const EVENTS_INPUT = 'events_input'

/** siteId -> kind -> count */
export type SiteUsage = Record<string, Record<string, number>>

export interface IngestBatch {
  /** Rows of human hits, made by the ingestor */
  events: EventRow[]
  /** Human hits whose visits and rows are made where the batch is stored (eventRowsOf): the Node server's live hits */
  hits: RowHit[]
  bots: BotRow[]
  /** orgId -> month -> siteId -> kind -> count */
  usage: Map<string, Map<string, SiteUsage>>
}

/** Where processed hits go. A resolved write means the rows will be stored. */
export interface EventSink {
  write(batch: IngestBatch): Promise<void>
  /** Stores everything written so far. */
  flush(): Promise<void>
}

/**
 * A write-ahead log the buffered sink writes through (the Node home's journal.ts): a write
 * resolves once its batch is written to the log's file, so what was acknowledged survives a crash of the process.
 */
export interface WriteAheadLog {
  /** Appends synchronously; the promise resolves once the batch survives the process (refused: a full disk). */
  append(batch: IngestBatch): Promise<void>
  /** Starts a new segment; the rows appended so far are in the sealed ones. */
  seal(): number
  /** Every row of these segments is stored. */
  release(segments: number[]): void
}

const rowsOf = (batch: IngestBatch) => batch.events.length + batch.hits.length + batch.bots.length

/** The stores a batch needs: the engine, the visits its hits join, the usage counters. */
type SinkRepositories = { usage: UsageRepository; visits: VisitsRepository }

export async function addUsage(repositories: { usage: UsageRepository }, usage: IngestBatch['usage']) {
  await Promise.all(
    [...usage].flatMap(([orgId, months]) => [...months].map(([month, counts]) => repositories.usage.add(orgId, month, counts))),
  )
}

async function store(clickhouse: ClickHouse, repositories: SinkRepositories, batch: IngestBatch) {
  const events = [...batch.events, ...(await eventRowsOf(repositories.visits, batch.hits))]
  await Promise.all([clickhouse.insert(EVENTS_INPUT, events), clickhouse.insert('bot_events', batch.bots)])
  await addUsage(repositories, batch.usage)
}

/**
 * Inserts before answering: for Workers, where nothing outlives the request. A batch the store
 * refuses for a value it holds is refused to its sender (400, with the store's reason): nothing
 * was acknowledged, so nothing needs setting aside.
 */
export function directSink(clickhouse: ClickHouse, repositories: SinkRepositories): EventSink {
  return {
    write: (batch) =>
      store(clickhouse, repositories, batch).catch((err) => {
        throw isRowRefusal(err) ? new ApiError(400, `body: the store refused a value of this hit (${reasonOf(err)})`) : err
      }),
    flush: async () => {},
  }
}

/** Counts stored rows of one site in the batch's usage (per site, so the organization's usage breaks down by site). */
export function countUsage(usage: IngestBatch['usage'], orgId: string, siteId: string, timestamp: string, kind: string, n = 1) {
  const month = timestamp.slice(0, 7)
  let months = usage.get(orgId)
  if (!months) usage.set(orgId, (months = new Map()))
  let sites = months.get(month)
  if (!sites) months.set(month, (sites = {}))
  const counts = (sites[siteId] ??= {})
  counts[kind] = (counts[kind] ?? 0) + n
}

export function mergeUsage(into: IngestBatch['usage'], from: IngestBatch['usage']) {
  for (const [orgId, months] of from) {
    for (const [month, sites] of months) {
      for (const [siteId, counts] of Object.entries(sites)) {
        // a month (YYYY-MM) is its own first seven characters, as a timestamp's month is
        for (const [kind, n] of Object.entries(counts)) countUsage(into, orgId, siteId, month, kind, n)
      }
    }
  }
}

export interface SinkObserver {
  inserted(table: 'events' | 'bots', rows: number, seconds: number, error?: unknown): void
  journaled(rows: number, ok: boolean): void
  /** Rows the store refused for what they hold, set aside in the quarantine. */
  quarantined?(table: 'events' | 'bots', rows: number): void
}

/** The parts of one flush, each stored once: what a failure leaves is retried as it was, under the same tokens. */
interface Attempt {
  steps: { name: 'visits' | 'events' | 'bots' | 'usage'; run: () => Promise<void> }[]
  /** Rows still to be inserted. */
  rows: number
  /** When the oldest of them was written. */
  since: number
  /** Sealed segments of the log whose rows these are: released once every step is done. */
  segments: number[]
}

/** Hits whose rows a flush makes at a time (see the visits step). */
const HITS_AT_A_TIME = 1000

const FIRST_RETRY_MS = 200
const LAST_RETRY_MS = 5_000

/**
 * Batches rows in memory and inserts them every `intervalMs` or `maxRows` rows, one flush at a
 * time. With a write-ahead log, a write resolves once its batch is in the log's file, and the
 * log's segments are released as their rows are stored; a write the log refuses (a full disk) is
 * dropped from the batch and its caller answered 503, so a refused hit is never stored. The Node
 * server calls close() on SIGTERM before it exits.
 *
 * Every row is stored once. A flush makes its hits' rows (their visits: visits.ts), then inserts
 * its events, its bot hits and its usage one after the other; a step that fails (the engine out
 * of disk part-way through its views) is retried, before anything newer, with the same rows
 * under the same deduplication token, so what the engine took the first time is not stored
 * again; steps already done are not retried. Retries back off from 200 ms to 5 s while the
 * failure lasts.
 */
export class BufferedSink implements EventSink {
  /** Written batches not yet taken by a flush, each with whether the log made it durable. */
  private pending: { batch: IngestBatch; durable?: Promise<void>; at: number }[] = []
  private pendingRows = 0
  /** The flush under way, or the one that failed and waits to be retried. */
  private current: Attempt | null = null
  /** What a failed flush left, tried first by the next one. */
  private retry: Attempt | null = null
  private flushing: Promise<void> | null = null
  private failures = 0
  private retryAt = 0
  private lastFailure: { at: number; message: string } | null = null
  private readonly timer: ReturnType<typeof setInterval>

  constructor(
    private readonly clickhouse: ClickHouse,
    private readonly repositories: SinkRepositories,
    private readonly options: {
      maxRows?: number
      intervalMs?: number
      log?: WriteAheadLog
      /** Told of each insert, stored or failed, and of each write the log took or refused (metrics). */
      observe?: SinkObserver
      /** Where rows the store refuses for what they hold are set aside; without it such a batch is retried like an outage. */
      quarantine?: Quarantine
    } = {},
  ) {
    this.timer = setInterval(() => {
      if (Date.now() < this.retryAt) return
      void this.flush().catch((err) => console.error('event flush failed; will retry', err))
    }, options.intervalMs ?? 200)
    this.timer.unref?.()
  }

  /** Rows written and not yet stored (those of a failed flush included), and since when the oldest waits. */
  get backlog() {
    const current = this.current ?? this.retry
    return { rows: this.pendingRows + (current?.rows ?? 0), oldestAt: current?.since ?? this.pending[0]?.at ?? null }
  }

  /** The last failure of a flush, while it is not followed by a flush that stored everything; null when all went well. */
  get lastError(): { at: number; message: string } | null {
    return this.lastFailure
  }

  async write(batch: IngestBatch) {
    // appended and taken into pending with no wait in between: a flush seals exactly what it takes
    const durable = this.options.log?.append(batch)
    const entry = { batch, durable, at: Date.now() }
    this.pending.push(entry)
    this.pendingRows += rowsOf(batch)
    if (this.pendingRows >= (this.options.maxRows ?? 20_000) && Date.now() >= this.retryAt) {
      void this.flush().catch((err) => console.error('event flush failed; will retry', err))
    }
    const rows = rowsOf(batch)
    try {
      await durable
      if (durable) this.options.observe?.journaled(rows, true)
    } catch (err) {
      this.options.observe?.journaled(rows, false)
      // refused: out of the batch unless a flush took it (which leaves out what the log refused)
      const i = this.pending.indexOf(entry)
      if (i >= 0) {
        this.pending.splice(i, 1)
        this.pendingRows -= rows
      }
      throw err
    }
  }

  async flush(): Promise<void> {
    while (this.flushing) await this.flushing
    if (!this.retry && !this.pending.length) return
    this.flushing = this.run().finally(() => {
      this.flushing = null
    })
    return this.flushing
  }

  private async run() {
    // what an earlier flush left first, as it was; then a new attempt of what was written since
    if (this.retry) {
      const retry = this.retry
      this.retry = null
      await this.attempt(retry)
    }
    if (!this.pending.length) return
    const taken = this.pending
    this.pending = []
    this.pendingRows = 0
    const { log } = this.options
    const segments = log ? [log.seal()] : []
    // a batch the log refused was answered 503: it is not stored
    const settled = await Promise.allSettled(taken.map((t) => t.durable))
    const batch: IngestBatch = { events: [], hits: [], bots: [], usage: new Map() }
    taken.forEach(({ batch: b }, i) => {
      if (settled[i].status === 'rejected') return
      for (const row of b.events) batch.events.push(row)
      for (const hit of b.hits) batch.hits.push(hit)
      batch.bots.push(...b.bots)
      mergeUsage(batch.usage, b.usage)
    })
    const token = crypto.randomUUID()
    const events = batch.events
    let rowsMade = 0
    const attempt: Attempt = {
      steps: [
        // the hits' visits and rows, once: a retry inserts the same rows, and goes on from the
        // first hit without its row. A thousand hits at a time, with a turn of the event loop
        // between: a second's worth of the collector's hits made in one go held its requests for
        // tens of milliseconds. A visit's hits in two of them join it as hits of two flushes do.
        {
          name: 'visits',
          run: async () => {
            while (rowsMade < batch.hits.length) {
              if (rowsMade > 0) await nextTurn()
              const hits = batch.hits.slice(rowsMade, rowsMade + HITS_AT_A_TIME)
              const { quarantine } = this.options
              const made = quarantine
                ? await eventRowsSettingAside(this.repositories.visits, hits, quarantine, `${token}-hits-${rowsMade}`)
                : await eventRowsOf(this.repositories.visits, hits)
              for (const row of made) events.push(row)
              rowsMade += hits.length
            }
          },
        },
        {
          name: 'events',
          run: async () => {
            await this.insert('events', EVENTS_INPUT, events, `${token}:events`)
            attempt.rows -= events.length
          },
        },
        {
          name: 'bots',
          run: async () => {
            await this.insert('bots', 'bot_events', batch.bots, `${token}:bots`)
            attempt.rows -= batch.bots.length
          },
        },
        { name: 'usage', run: () => addUsage(this.repositories, batch.usage) },
      ],
      rows: rowsOf(batch),
      since: taken[0].at,
      segments,
    }
    await this.attempt(attempt)
  }

  /** A refused row is set aside (quarantine.ts) and the rest of its batch stored; an outage fails the step, to be retried. */
  private async insert(step: 'events' | 'bots', table: string, rows: object[], token: string) {
    if (!rows.length) return
    const started = performance.now()
    const { observe, quarantine } = this.options
    try {
      const setAside = await insertSettingAside(this.clickhouse, table, rows, { token, background: true, quarantine })
      if (setAside) observe?.quarantined?.(step, setAside)
      observe?.inserted(step, rows.length - setAside, (performance.now() - started) / 1000)
    } catch (err) {
      observe?.inserted(step, rows.length, (performance.now() - started) / 1000, err)
      throw err
    }
  }

  /** Runs the steps left in order; a failure keeps the rest (its own included) for the next flush. */
  private async attempt(attempt: Attempt) {
    this.current = attempt
    while (attempt.steps.length) {
      try {
        await attempt.steps[0].run()
      } catch (err) {
        this.current = null
        this.retry = attempt
        this.failures++
        this.lastFailure = { at: Date.now(), message: reasonOf(err) }
        this.retryAt = Date.now() + Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failures - 1))
        throw err
      }
      attempt.steps.shift()
    }
    this.current = null
    this.failures = 0
    this.retryAt = 0
    this.lastFailure = null
    this.options.log?.release(attempt.segments)
  }

  /** Stops the timer and stores what is pending; a failure (a store still down) leaves it in the log for the next start. */
  async close() {
    clearInterval(this.timer)
    await this.flush()
  }
}
