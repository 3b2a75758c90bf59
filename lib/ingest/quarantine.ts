import { StoreUnavailableError, isOutOfSpace } from '../storage/errors'
import type { ClickHouse } from '../storage/clickhouse/types'
import type { RowHit } from './item'
import type { EventRow } from './rows'
import { eventRowsOf } from './sessionize'
import type { VisitsRepository } from './visits-repository'

/*
 * Acknowledged rows the store still refuses, set aside where an operator sees them instead of
 * being retried for ever in front of every later row. Nothing in the quarantine is deleted but by
 * an operator (`npm run -s admin -- quarantine drop`); `retry` hands an entry back to the server.
 */

/** What was set aside: rows a table refused, hits whose rows could not be made, or a journal line that could not be read. */
export type QuarantinedContent =
  | { kind: 'rows'; table: string; rows: object[] }
  | { kind: 'hits'; hits: RowHit[] }
  | { kind: 'line'; line: string; segment: number }

export type QuarantineEntry = QuarantinedContent & {
  id: string
  /** When it was set aside, ISO 8601 */
  at: string
  /** Why, in the store's words */
  reason: string
  /** How many times an operator handed it back and it was refused again */
  retries: number
}

export interface Quarantine {
  /**
   * Keeps an entry durably before it returns: a row set aside is as safe as one stored. The same
   * `id` set aside twice (a flush retried after an outage) is one entry.
   */
  setAside(id: string, content: QuarantinedContent, reason: string, retries?: number): void
  /** Entries waiting, for /metrics and /health. */
  count(): number
  /** Entries an operator handed back for another try; each stays handed back until `settled`. */
  takeRetries(): QuarantineEntry[]
  /** An entry taken back is done with: stored, or set aside again under its own id. */
  settled(id: string): void
}

/*
 * ClickHouse's codes for a value it cannot take (a parse, a type, a range): the row is at fault,
 * not the store, so the rest of its batch is stored without it. Any other failure (a network
 * error, a full disk, memory, too many parts, a table not there yet) is an outage: the batch waits
 * and is retried whole.
 */
const ROW_REFUSALS = new Set([
  6, // CANNOT_PARSE_TEXT
  16, // NO_SUCH_COLUMN_IN_TABLE (a row of an older journal with a column the table no longer has)
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE (a lone surrogate)
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  32, // ATTEMPT_TO_READ_AFTER_EOF
  33, // CANNOT_READ_ALL_DATA
  36, // BAD_ARGUMENTS
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  43, // ILLEGAL_TYPE_OF_ARGUMENT
  53, // TYPE_MISMATCH
  69, // ARGUMENT_OUT_OF_BOUND
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER
  117, // INCORRECT_DATA
  128, // TOO_LARGE_ARRAY_SIZE
  130, // CANNOT_READ_ARRAY_FROM_TEXT
  131, // TOO_LARGE_STRING_SIZE
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  395, // FUNCTION_THROW_IF_VALUE_IS_NON_ZERO
  691, // UNKNOWN_ELEMENT_OF_ENUM
])

/** The ClickHouse error code of a failure: the embedded engine's `clickhouseCode`, the HTTP clients' `code` text, or the message's `Code: N.` */
function clickhouseCode(err: unknown): number | null {
  const e = err as { clickhouseCode?: unknown; code?: unknown; message?: unknown } | null
  if (!e || typeof e !== 'object') return null
  if (typeof e.clickhouseCode === 'number') return e.clickhouseCode
  if (typeof e.code === 'string' && /^\d+$/.test(e.code)) return Number(e.code)
  const match = typeof e.message === 'string' ? /\bCode: (\d+)\./.exec(e.message) : null
  return match ? Number(match[1]) : null
}

/** Whether the store refused an insert for a value a row holds (rather than being unable to take any). */
export function isRowRefusal(err: unknown): boolean {
  if (err instanceof StoreUnavailableError || isOutOfSpace(err)) return false
  const code = clickhouseCode(err)
  return code !== null && ROW_REFUSALS.has(code)
}

/** The first line of a failure's message: what the quarantine says of it. */
export const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 1000)

/**
 * Inserts rows; when the store refuses them for what a row holds, halves the batch until each
 * refused row is alone, stores the rest, and sets the refused rows aside. Each part goes under a
 * token made from the batch's and its place, so a retry after an outage part-way stores no part
 * twice and sets no row aside twice. An outage (anything but a row refusal) throws, for the caller
 * to retry. Returns how many rows were set aside.
 *
 * A refusal while the values are parsed (every row refusal seen: bad escapes, dates, numbers)
 * stores nothing of the insert. One raised in a view after other views took the block would
 * leave those rows in them once more when the parts are stored.
 */
export async function insertSettingAside(
  clickhouse: ClickHouse,
  table: string,
  rows: readonly object[],
  options: { token: string; background?: boolean; quarantine?: Quarantine; inserted?: (rows: number) => void },
): Promise<number> {
  if (!rows.length) return 0
  try {
    await clickhouse.insert(table, rows, { token: options.token, background: options.background })
    options.inserted?.(rows.length)
    return 0
  } catch (err) {
    if (!options.quarantine || !isRowRefusal(err)) throw err
    if (rows.length === 1) {
      options.quarantine.setAside(options.token, { kind: 'rows', table, rows: [...rows] }, reasonOf(err))
      return 1
    }
    const half = Math.ceil(rows.length / 2)
    const first = await insertSettingAside(clickhouse, table, rows.slice(0, half), { ...options, token: `${options.token}.0` })
    const second = await insertSettingAside(clickhouse, table, rows.slice(half), { ...options, token: `${options.token}.1` })
    return first + second
  }
}

/**
 * An outage of the key/value store, or a refusal of its own (out of memory, read-only, loading):
 * trouble of the store the visits are in, never of a hit. Bad values in a hit fail as JavaScript errors.
 */
const isStoreTrouble = (err: unknown) =>
  err instanceof StoreUnavailableError || ['UpstashError', 'ReplyError'].includes((err as Error | null)?.name ?? '')

/** The hits' rows; a hit whose row cannot be made (a value no check foresaw) is set aside alone, and the others' rows are made. */
export async function eventRowsSettingAside(visits: VisitsRepository, hits: RowHit[], quarantine: Quarantine, id: string) {
  try {
    return await eventRowsOf(visits, hits)
  } catch (err) {
    if (isStoreTrouble(err)) throw err
  }
  const rows: EventRow[] = []
  const failed: { hit: RowHit; i: number; err: unknown }[] = []
  for (const [i, hit] of hits.entries()) {
    try {
      rows.push(...(await eventRowsOf(visits, [hit])))
    } catch (err) {
      if (isStoreTrouble(err)) throw err
      failed.push({ hit, i, err })
    }
  }
  // every hit of several failing alone is the store failing, not the hits: the batch waits
  if (hits.length > 1 && failed.length === hits.length) throw failed[0].err
  for (const { hit, i, err } of failed) quarantine.setAside(`${id}-hit-${i}`, { kind: 'hits', hits: [hit] }, reasonOf(err))
  return rows
}
