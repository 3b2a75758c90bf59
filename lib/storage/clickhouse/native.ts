/*
 * Rows written in ClickHouse's binary formats. Native is a block of columns, each with its name
 * and type, the values of one column after another in the engine's own layout: the engine takes
 * such a column into memory nearly as it is, where text (JSONEachRow) has every value parsed.
 * RowBinary is the same values row after row. Only the types the event tables hold are written; a
 * value the text path would read differently (a lone surrogate, a number that is not finite, a date
 * that does not exist) makes the whole result null, and the caller sends those rows as text, as
 * before. Sent through a file (chdb.ts), neither format cost the engine less than
 * JSONCompactEachRow with the views on events (docs/performance.md), so they are what
 * `bench:engine-insert --format` compares, not the default.
 */

/** A column of a table, as `system.columns` names it. */
export interface NativeColumn {
  name: string
  type: string
}

/** A growing buffer of little-endian values. */
class Writer {
  buf = Buffer.allocUnsafe(1 << 16)
  at = 0

  room(n: number) {
    if (this.at + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.at + n) size *= 2
    const bigger = Buffer.allocUnsafe(size)
    this.buf.copy(bigger, 0, 0, this.at)
    this.buf = bigger
  }

  varint(n: number) {
    this.room(10)
    while (n >= 0x80) {
      this.buf[this.at++] = (n & 0x7f) | 0x80
      n = Math.floor(n / 0x80)
    }
    this.buf[this.at++] = n
  }

  /**
   * Text as UTF-8 behind its length; false, writing nothing, for text with a lone surrogate, which
   * UTF-8 cannot hold (the text path refuses its row, and the quarantine sets it aside).
   */
  text(s: string): boolean {
    const n = s.length
    // short ASCII, the common case, without a call into the runtime
    if (n < 64) {
      this.room(n + 1)
      const start = this.at
      let i = 0
      for (; i < n; i++) {
        const c = s.charCodeAt(i)
        if (c >= 0x80) break
        this.buf[start + 1 + i] = c
      }
      if (i === n) {
        this.buf[start] = n
        this.at = start + 1 + n
        return true
      }
    }
    if (!s.isWellFormed()) return false
    const bytes = Buffer.byteLength(s, 'utf8')
    this.varint(bytes)
    this.room(bytes)
    this.at += this.buf.write(s, this.at, bytes, 'utf8')
    return true
  }
}

/** 2^64, past the largest UInt64. */
const UINT64_END = 1n << 64n
const UINT64 = /^\d{1,20}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** DateTime64(3) text as `clickhouseTime` writes it. */
const TIME = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3})$/
/** Decimal text as the hit checks take it (lib/ingest/hit.ts), and as String(number) writes most amounts. */
const DECIMAL = /^(-?)(\d{1,14})(?:\.(\d+))?$/
/** DateTime64's range. */
const MIN_TIME = Date.UTC(1900, 0, 1)
const END_TIME = Date.UTC(2300, 0, 1)

/** Writes one value in its binary layout (RowBinary's, and Native's for all but maps); false when it is not one this type is written for. */
type ValueWriter = (w: Writer, v: unknown) => boolean

function unsigned(bytes: 1 | 2 | 4): ValueWriter {
  const max = 2 ** (8 * bytes)
  return (w, v) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v >= max) return false
    w.room(bytes)
    w.at = bytes === 1 ? w.buf.writeUInt8(v, w.at) : bytes === 2 ? w.buf.writeUInt16LE(v, w.at) : w.buf.writeUInt32LE(v, w.at)
    return true
  }
}

function float(bytes: 4 | 8): ValueWriter {
  return (w, v) => {
    // JSON writes NaN and Infinity as null, which the text path stores as 0
    if (typeof v !== 'number' || !Number.isFinite(v)) return false
    w.room(bytes)
    w.at = bytes === 4 ? w.buf.writeFloatLE(v, w.at) : w.buf.writeDoubleLE(v, w.at)
    return true
  }
}

/** A UInt64 sent as decimal text (64-bit ids do not fit a JavaScript number). */
const uint64: ValueWriter = (w, v) => {
  if (typeof v !== 'string' || !UINT64.test(v)) return false
  const n = BigInt(v)
  if (n >= UINT64_END) return false
  w.room(8)
  w.at = w.buf.writeBigUInt64LE(n, w.at)
  return true
}

/** A UUID is two UInt64 halves, each little-endian: the first eight bytes of its text's hex, then the last. */
const uuid: ValueWriter = (w, v) => {
  if (typeof v !== 'string' || !UUID.test(v)) return false
  const hex = v.replace(/-/g, '')
  w.room(16)
  w.at = w.buf.writeBigUInt64LE(BigInt(`0x${hex.slice(0, 16)}`), w.at)
  w.at = w.buf.writeBigUInt64LE(BigInt(`0x${hex.slice(16)}`), w.at)
  return true
}

/** DateTime64(3) as milliseconds since the epoch (Int64), from the UTC text of `clickhouseTime`. */
const time: ValueWriter = (w, v) => {
  const m = typeof v === 'string' ? TIME.exec(v) : null
  if (!m || +m[4] > 23 || +m[5] > 59 || +m[6] > 59) return false
  const ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7])
  // a day the text names that does not exist (30 February), or a time out of DateTime64's range, goes as text
  if (!(ms >= MIN_TIME && ms < END_TIME) || new Date(ms).getUTCDate() !== +m[3]) return false
  w.room(8)
  w.at = w.buf.writeBigInt64LE(BigInt(ms), w.at)
  return true
}

/** Decimal64(4) as its value times 10,000 (Int64); further decimals are cut, as the engine cuts them when it reads text. */
const decimal64x4: ValueWriter = (w, v) => {
  const m = typeof v === 'string' ? DECIMAL.exec(v) : null
  if (!m) return false
  const scaled = BigInt(m[2] + (m[3] ?? '').slice(0, 4).padEnd(4, '0'))
  w.room(8)
  w.at = w.buf.writeBigInt64LE(m[1] ? -scaled : scaled, w.at)
  return true
}

const text: ValueWriter = (w, v) => typeof v === 'string' && w.text(v)

const isStringMap = (v: unknown): v is Record<string, string> => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  for (const key in v) if (typeof (v as Record<string, unknown>)[key] !== 'string') return false
  return true
}

/** Map(String, String) in RowBinary: its entry count, then each key and value. */
const stringMap: ValueWriter = (w, v) => {
  if (!isStringMap(v)) return false
  w.varint(Object.keys(v).length)
  for (const key in v) if (!w.text(key) || !w.text(v[key])) return false
  return true
}

const MAP = 'Map(String, String)'

const WRITERS: Record<string, ValueWriter> = {
  String: text,
  UInt8: unsigned(1),
  UInt16: unsigned(2),
  UInt32: unsigned(4),
  UInt64: uint64,
  Float32: float(4),
  Float64: float(8),
  UUID: uuid,
  "DateTime64(3, 'UTC')": time,
  'Decimal(18, 4)': decimal64x4,
  [MAP]: stringMap,
}

/** The type a column's values are written as: a LowCardinality column's values are sent plain, and the insert converts them. */
const sentType = (type: string) => type.replace(/^LowCardinality\((.*)\)$/, '$1')

/** A Native map column: each row's cumulative entry count (UInt64), then every key, then every value. */
function nativeMap(w: Writer, rows: readonly Record<string, unknown>[], name: string): boolean {
  let entries = 0
  w.room(rows.length * 8)
  for (const row of rows) {
    const v = row[name]
    if (!isStringMap(v)) return false
    entries += Object.keys(v).length
    w.at = w.buf.writeBigUInt64LE(BigInt(entries), w.at)
  }
  for (const row of rows) for (const key in row[name] as object) if (!w.text(key)) return false
  for (const row of rows) {
    const map = row[name] as Record<string, string>
    for (const key in map) if (!w.text(map[key])) return false
  }
  return true
}

/** The binary formats rows can be sent in. */
export type BinaryFormat = 'Native' | 'RowBinary'

/** Whether rows of a table with these columns can be sent in a binary format. */
export const binaryWritable = (columns: readonly NativeColumn[]) => columns.every((c) => sentType(c.type) in WRITERS)

/**
 * The rows in a binary format, each holding a value of every column: Native, one block of columns
 * with their names and types (sent as `sentType`); RowBinary, row after row in the columns' order.
 * Null when a value is not one the format can carry as the text path would store it.
 */
export function binaryRows(format: BinaryFormat, columns: readonly NativeColumn[], objects: readonly object[]): Buffer | null {
  const rows = objects as readonly Record<string, unknown>[]
  const w = new Writer()
  const types = columns.map((c) => sentType(c.type))
  const writers = types.map((t) => WRITERS[t])
  if (format === 'RowBinary') {
    for (const row of rows) for (let i = 0; i < columns.length; i++) if (!writers[i](w, row[columns[i].name])) return null
    return w.buf.subarray(0, w.at)
  }
  w.varint(columns.length)
  w.varint(rows.length)
  for (let i = 0; i < columns.length; i++) {
    const { name } = columns[i]
    if (!w.text(name) || !w.text(types[i])) return null
    if (types[i] === MAP) {
      if (!nativeMap(w, rows, name)) return null
    } else for (const row of rows) if (!writers[i](w, row[name])) return null
  }
  return w.buf.subarray(0, w.at)
}
