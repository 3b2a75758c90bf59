import type { UsageRepository } from '../accounts/usage-repository'
import type { VisitsRepository } from './visits-repository'
import { notYetStored } from '../storage/clickhouse/stored-rows'
import type { ClickHouse } from '../storage/clickhouse/types'
import type { RowHit } from './item'
import { type Quarantine, eventRowsSettingAside, insertSettingAside } from './quarantine'
import type { BotRow, EventRow } from './rows'
import { decode } from './journal-line'
import { type BufferedSink, EVENTS_INPUT, type IngestBatch, addUsage } from './sink'
import { wellFormedInput } from './well-formed'

/*
 * Storing what was written down earlier and read back: the journal's segments at start, and the
 * quarantine's entries an operator hands back. Such input was not made by this process, so each
 * hit and row is checked first: what cannot be stored is set aside with the reason, and the rest
 * is stored; nothing here is retried for ever in front of the others.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,9})?$/

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** What is wrong with a hit read back, or null when its rows can be made. */
export function rowHitProblem(value: unknown): string | null {
  if (!isObject(value)) return 'a hit: expected an object'
  const hit = value as Partial<Record<keyof RowHit, unknown>>
  if (typeof hit.siteId !== 'string' || !UUID.test(hit.siteId)) return 'a hit: siteId is not a UUID'
  if (typeof hit.at !== 'number' || !Number.isFinite(hit.at) || Number.isNaN(new Date(hit.at).getTime())) return 'a hit: at is not a time'
  if (typeof hit.visitorId !== 'string' || typeof hit.kind !== 'string' || typeof hit.pathname !== 'string')
    return 'a hit: visitorId, kind and pathname must be strings'
  if (typeof hit.userAgent !== 'string') return 'a hit: userAgent must be a string'
  if (!Array.isArray(hit.capturedQueryParams) || !hit.capturedQueryParams.every((p) => typeof p === 'string'))
    return 'a hit: capturedQueryParams must be a list of strings'
  if (hit.geo !== null && hit.geo !== undefined && !isObject(hit.geo)) return 'a hit: geo must be an object or null'
  if (!isObject(hit.hit) || typeof hit.hit.url !== 'string' || !URL.canParse(hit.hit.url)) return 'a hit: its url is not a URL'
  return null
}

/** What is wrong with an event or bot row read back, or null when the store can be asked whether it holds it. */
export function rowProblem(value: unknown): string | null {
  if (!isObject(value)) return 'a row: expected an object'
  if (typeof value.site_id !== 'string' || !UUID.test(value.site_id)) return 'a row: site_id is not a UUID'
  if (typeof value.timestamp !== 'string' || !TIME.test(value.timestamp)) return 'a row: timestamp is not a time'
  return null
}

type RecoverRepositories = { usage: UsageRepository; visits: VisitsRepository }

/** Splits what passes a check from what does not; the latter is set aside under `id`. */
function checked<T>(
  items: readonly unknown[],
  problemOf: (item: unknown) => string | null,
  setAside: (items: unknown[], reason: string) => void,
): T[] {
  const good: T[] = []
  const bad: unknown[] = []
  let reason = ''
  for (const item of items) {
    const problem = problemOf(item)
    if (problem === null) good.push(item as T)
    else {
      bad.push(item)
      reason ||= problem
    }
  }
  if (bad.length) setAside(bad, reason)
  return good
}

/**
 * Stores a batch read back (`id` names where it came from, for the quarantine): the rows the
 * store does not hold yet (a crash between two steps of a flush stores no row twice), its hits'
 * rows, and its usage. Returns how many rows were stored. An outage throws, for the caller to try
 * again; every other failure sets its hits or rows aside.
 */
export async function storeRecovered(
  clickhouse: ClickHouse,
  repositories: RecoverRepositories,
  quarantine: Quarantine,
  batch: IngestBatch,
  id: string,
): Promise<number> {
  const hits = checked<RowHit>(batch.hits, rowHitProblem, (bad, reason) =>
    quarantine.setAside(`${id}-hits`, { kind: 'hits', hits: bad as RowHit[] }, reason),
  )
  const made = await eventRowsSettingAside(repositories.visits, hits, quarantine, id)
  const setAsideRows = (table: string) => (bad: unknown[], reason: string) =>
    quarantine.setAside(`${id}-${table}`, { kind: 'rows', table, rows: bad as object[] }, reason)
  const events = checked<EventRow>([...batch.events, ...made], rowProblem, setAsideRows(EVENTS_INPUT))
  const bots = checked<BotRow>(batch.bots, rowProblem, setAsideRows('bot_events'))
  // a fresh token each time: what an earlier try stored is found by notYetStored, not by its token
  const token = `${id}-${crypto.randomUUID().slice(0, 8)}`
  let stored = 0
  const newEvents = await notYetStored(clickhouse, 'events', events)
  stored += newEvents.length - (await insertSettingAside(clickhouse, EVENTS_INPUT, newEvents, { token: `${token}-events`, quarantine }))
  const newBots = await notYetStored(clickhouse, 'bot_events', bots)
  stored += newBots.length - (await insertSettingAside(clickhouse, 'bot_events', newBots, { token: `${token}-bots`, quarantine }))
  await addUsage(repositories, batch.usage)
  return stored
}

/**
 * Stores the entries an operator handed back (`admin quarantine retry`), their text repaired as a
 * hit's is where it comes in: what is stored leaves the quarantine, and what is refused again is
 * set aside again under the entry's id, its retries counted. Returns how many rows were stored.
 */
export async function retryQuarantined(clickhouse: ClickHouse, repositories: RecoverRepositories, quarantine: Quarantine): Promise<number> {
  let stored = 0
  for (const entry of quarantine.takeRetries()) {
    // each part refused again is an entry of its own, under an id no other entry has
    const again: Quarantine = {
      ...quarantine,
      setAside: (_id, content, reason) =>
        quarantine.setAside(`${entry.id}.r${entry.retries + 1}.${crypto.randomUUID().slice(0, 8)}`, content, reason, entry.retries + 1),
    }
    const batch: IngestBatch = { events: [], hits: [], bots: [], usage: new Map() }
    if (entry.kind === 'line') {
      const decoded = decode(entry.line)
      if (typeof decoded === 'string') again.setAside(entry.id, entry, decoded)
      else Object.assign(batch, decoded)
    } else if (entry.kind === 'hits') {
      batch.hits = wellFormedInput(entry.hits)
    } else if (entry.table === EVENTS_INPUT || entry.table === 'bot_events') {
      batch[entry.table === EVENTS_INPUT ? 'events' : 'bots'] = wellFormedInput(entry.rows) as never[]
    } else {
      again.setAside(entry.id, entry, `rows of an unknown table ${entry.table}`)
    }
    stored += await storeRecovered(clickhouse, repositories, again, batch, `retry-${entry.id}`)
    quarantine.settled(entry.id)
  }
  return stored
}

/**
 * The collector's state: hits acknowledged and not yet stored, how long the oldest has waited,
 * the last failure to store, and the rows set aside. Stalled once the oldest has waited longer
 * than COLLECTOR_STALL_SECONDS: /health then answers 503.
 */
export interface CollectorHealth {
  status: 'ok' | 'stalled'
  pendingRows: number
  oldestPendingSeconds: number
  lastInsertError?: { at: string; message: string }
  quarantined: number
}

/** How long an acknowledged hit may wait to be stored before the collector counts as stalled. */
export const COLLECTOR_STALL_SECONDS = 60

/**
 * The collector's state (/health, /ready): what the sink holds and since when, the journal's
 * replay while it runs, the last failure of either, and the quarantine's entries.
 */
export function collectorHealth(
  sink: { backlog: { rows: number; oldestAt: number | null }; lastError: BufferedSink['lastError'] },
  quarantine: Pick<Quarantine, 'count'>,
  replay: { since: number; error?: { at: number; message: string } } | null,
  now: number,
): CollectorHealth {
  const { rows, oldestAt } = sink.backlog
  // a replay that is only long is not a stall: one that keeps failing is
  const since = Math.min(oldestAt ?? now, replay?.error ? replay.since : now)
  const error = sink.lastError ?? replay?.error
  const oldestPendingSeconds = Math.max(0, Math.round((now - since) / 1000))
  return {
    status: oldestPendingSeconds > COLLECTOR_STALL_SECONDS ? 'stalled' : 'ok',
    pendingRows: rows,
    oldestPendingSeconds,
    ...(error ? { lastInsertError: { at: new Date(error.at).toISOString(), message: error.message } } : {}),
    quarantined: quarantine.count(),
  }
}
