import type { ClickHouse } from '../storage/clickhouse/types'
import type { Repositories } from '../repositories'
import type { BotRow, EventRow } from './rows'

/** Where event rows are inserted: a Null table whose view fills `events` (clickhouse/0004_events_input.sql). */
export const EVENTS_INPUT = 'events_input'

/** siteId -> kind -> count */
export type SiteUsage = Record<string, Record<string, number>>

export interface IngestBatch {
  events: EventRow[]
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
 * resolves once its rows are on disk, so what was acknowledged survives a crash of the process.
 */
export interface WriteAheadLog {
  /** Appends synchronously; the promise resolves once the batch is durable. */
  append(batch: IngestBatch): Promise<void>
  /** Starts a new segment; the rows appended so far are in the sealed ones. */
  seal(): number
  /** Every row of these segments is stored. */
  release(segments: number[]): void
}

export async function addUsage(repositories: Pick<Repositories, 'usage'>, usage: IngestBatch['usage']) {
  await Promise.all(
    [...usage].flatMap(([orgId, months]) => [...months].map(([month, counts]) => repositories.usage.add(orgId, month, counts))),
  )
}

async function store(clickhouse: ClickHouse, repositories: Pick<Repositories, 'usage'>, batch: IngestBatch) {
  await Promise.all([clickhouse.insert(EVENTS_INPUT, batch.events), clickhouse.insert('bot_events', batch.bots)])
  await addUsage(repositories, batch.usage)
}

/** Inserts before answering: for Workers, where nothing outlives the request. */
export function directSink(clickhouse: ClickHouse, repositories: Pick<Repositories, 'usage'>): EventSink {
  return { write: (batch) => store(clickhouse, repositories, batch), flush: async () => {} }
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

/**
 * Batches rows in memory and inserts them every `intervalMs` or `maxRows` rows, one flush at a
 * time. A failed insert keeps its rows for the next flush, so every accepted row is stored once.
 * With a write-ahead log, a write resolves once its rows are on disk, and the log's segments are
 * released as their rows are stored. The Node server calls close() on SIGTERM before it exits.
 */
export class BufferedSink implements EventSink {
  private pending: IngestBatch = { events: [], bots: [], usage: new Map() }
  /** Sealed segments of the log whose rows are pending (a failed flush puts them back). */
  private sealed: number[] = []
  private flushing: Promise<void> | null = null
  private readonly timer: ReturnType<typeof setInterval>

  constructor(
    private readonly clickhouse: ClickHouse,
    private readonly repositories: Pick<Repositories, 'usage'>,
    private readonly options: { maxRows?: number; intervalMs?: number; log?: WriteAheadLog } = {},
  ) {
    this.timer = setInterval(
      () => void this.flush().catch((err) => console.error('event flush failed; will retry', err)),
      options.intervalMs ?? 200,
    )
    this.timer.unref?.()
  }

  async write(batch: IngestBatch) {
    // appended and taken into pending with no wait in between: a flush seals exactly what it takes
    const durable = this.options.log?.append(batch)
    this.pending.events.push(...batch.events)
    this.pending.bots.push(...batch.bots)
    mergeUsage(this.pending.usage, batch.usage)
    if (this.pending.events.length + this.pending.bots.length >= (this.options.maxRows ?? 20_000)) {
      void this.flush().catch((err) => console.error('event flush failed; will retry', err))
    }
    await durable
  }

  async flush(): Promise<void> {
    while (this.flushing) await this.flushing
    if (!this.pending.events.length && !this.pending.bots.length && !this.pending.usage.size) return
    const batch = this.pending
    this.pending = { events: [], bots: [], usage: new Map() }
    const { log } = this.options
    if (log) this.sealed.push(log.seal())
    const segments = this.sealed
    this.sealed = []
    // a part that fails goes back in front of anything written meanwhile, with the parts not yet
    // tried; parts already stored are not retried (nor replayed from the log), so nothing is stored twice
    this.flushing = (async () => {
      const steps: [store: () => Promise<void>, requeue: () => void][] = [
        [() => this.clickhouse.insert(EVENTS_INPUT, batch.events), () => this.pending.events.unshift(...batch.events)],
        [() => this.clickhouse.insert('bot_events', batch.bots), () => this.pending.bots.unshift(...batch.bots)],
        [() => addUsage(this.repositories, batch.usage), () => mergeUsage(this.pending.usage, batch.usage)],
      ]
      for (let i = 0; i < steps.length; i++) {
        try {
          await steps[i][0]()
        } catch (err) {
          for (const [, requeue] of steps.slice(i)) requeue()
          this.sealed.unshift(...segments)
          throw err
        }
      }
      log?.release(segments)
    })().finally(() => {
      this.flushing = null
    })
    return this.flushing
  }

  async close() {
    clearInterval(this.timer)
    await this.flush()
  }
}
