import type { IngestBatch, SiteUsage } from './sink'
import { wellFormedInput } from './well-formed'

/*
 * One line of the event journal (journal.ts): a batch's rows and hits, each table under one list
 * of columns, and its usage counts.
 */

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

const NO_ROWS: Table = [[], []]

/** A batch as one line: its rows and hits under one list of columns each. */
export function encode(batch: IngestBatch): string {
  const usage: JournalLine[2] = []
  for (const [orgId, months] of batch.usage) for (const [month, counts] of months) usage.push([orgId, month, counts])
  return `${JSON.stringify([toTable(batch.events), toTable(batch.bots), usage, toTable(batch.hits)] satisfies JournalLine)}\n`
}

const isTable = (value: unknown): value is Table =>
  Array.isArray(value) &&
  value.length === 2 &&
  Array.isArray(value[0]) &&
  value[0].every((c) => typeof c === 'string') &&
  Array.isArray(value[1]) &&
  value[1].every((row) => Array.isArray(row) && row.length === value[0].length)

const isCounts = (value: unknown): value is Record<string, number> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((n) => Number.isFinite(n))

const isUsage = (value: unknown): value is JournalLine[2] =>
  Array.isArray(value) &&
  value.every(
    (u) =>
      Array.isArray(u) &&
      u.length === 3 &&
      typeof u[0] === 'string' &&
      typeof u[1] === 'string' &&
      typeof u[2] === 'object' &&
      u[2] !== null &&
      Object.values(u[2]).every(isCounts),
  )

/**
 * A line back as its batch, its text repaired as a hit's is where it comes in (lines of older
 * versions may hold lone surrogates); or why it cannot be one. Each hit and row is checked
 * where it is stored (recover.ts).
 */
export function decode(line: string): IngestBatch | string {
  let record: unknown
  try {
    record = JSON.parse(line)
  } catch {
    return 'not valid JSON'
  }
  if (!Array.isArray(record) || record.length < 3 || record.length > 4) return 'not a journal line: expected [events, bots, usage, hits]'
  const [events, bots, usageLines, hits = NO_ROWS] = wellFormedInput(record as JournalLine)
  if (!isTable(events) || !isTable(bots) || !isTable(hits)) return 'not a journal line: a table of rows is malformed'
  if (!isUsage(usageLines)) return 'not a journal line: its usage counts are malformed'
  const usage: IngestBatch['usage'] = new Map()
  for (const [orgId, month, counts] of usageLines) {
    if (!usage.has(orgId)) usage.set(orgId, new Map())
    usage.get(orgId)!.set(month, counts)
  }
  return { events: fromTable(events), hits: fromTable(hits), bots: fromTable(bots), usage }
}
