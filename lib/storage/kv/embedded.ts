import {
  chmodSync,
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { getKeyIndexes, hasFlag } from '@ioredis/commands'
import { StoreUnavailableError } from '../errors'
import { runLuaScript } from './lua'
import type { CommandResult, RawRedis, RedisCommand } from './raw'

type Value = { type: 'string'; value: string } | { type: 'hash'; value: Map<string, string> } | { type: 'set'; value: Set<string> }
type Entry = Value & { expireAt?: number }
type Serialized = { t: Value['type']; v: string | [string, string][] | string[]; x?: number }

class RedisError extends Error {}
const wrongType = () => new RedisError('WRONGTYPE Operation against a key holding the wrong kind of value')
const notInteger = () => new RedisError('ERR value is not an integer or out of range')

function toInt(value: string | number | undefined): number {
  const n = Number(value)
  if (value === undefined || value === '' || !Number.isSafeInteger(n)) throw notInteger()
  return n
}

/**
 * The embedded key/value store: a subset of Redis commands, in process, persisted to an
 * append-only log of key states under DATA_DIR. Every write reaches the file (write(2))
 * before the command returns, so a process killed after a 2xx loses nothing; the log is
 * compacted into a snapshot at open.
 *
 * A write the log cannot take (a full disk) changes nothing: the keys the command names are put
 * back as they were, the part of the line written is cut off, and the command fails with
 * StoreUnavailableError (answered 503), so a write answered with an error is not kept.
 */
export class EmbeddedRedis implements RawRedis {
  private data = new Map<string, Entry>()
  private scripts = new Map<string, string>()
  private nativeScripts = new Map<string, (keys: string[], args: string[], call: (command: string[]) => unknown) => unknown>()
  private fd: number | null = null
  private file = ''
  /** Bytes of the last snapshot, and appended since: the log is rewritten when it outgrows the data. */
  private snapshotBytes = 0
  private appendedBytes = 0
  /** Bytes of whole lines in the log: a failed append is cut back to this. */
  private fileBytes = 0

  constructor(private readonly options: { dir?: string; now?: () => number; fsync?: boolean; compactAfterBytes?: number } = {}) {
    if (options.dir) this.open(options.dir)
  }

  private now() {
    return this.options.now ? this.options.now() : Date.now()
  }

  private open(dir: string) {
    // the log holds proxy secrets and daily salts: only the owner may read it
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    chmodSync(dir, 0o700)
    const file = join(dir, 'kv.log')
    if (existsSync(file)) {
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (!line) continue
        let record: [string, Serialized | null]
        try {
          record = JSON.parse(line)
        } catch {
          continue // a torn last line from a crash mid-write: that command never returned
        }
        if (record[1] === null) this.data.delete(record[0])
        else this.data.set(record[0], deserialize(record[1]))
      }
    }
    this.file = file
    try {
      this.snapshot()
    } catch {
      // no room to compact (a full disk): go on appending to the log as it is
      this.fd = openSync(file, 'a', 0o600)
      this.fileBytes = fstatSync(this.fd).size
    }
  }

  /** Rewrites the log as one line per live key, atomically (write, fsync, rename); a failure leaves the log as it was. */
  private snapshot() {
    const tmp = `${this.file}.tmp`
    const now = this.now()
    let bytes = 0
    let out: number | null = null
    try {
      out = openSync(tmp, 'w', 0o600)
      for (const [key, entry] of this.data) {
        if (entry.expireAt !== undefined && entry.expireAt <= now) {
          this.data.delete(key)
          continue
        }
        const line = Buffer.from(`${JSON.stringify([key, serialize(entry)])}\n`)
        if (writeSync(out, line) !== line.length) throw Object.assign(new Error('ENOSPC: short write'), { code: 'ENOSPC' })
        bytes += line.length
      }
      fsyncSync(out)
    } catch (err) {
      if (out !== null) closeSync(out)
      rmSync(tmp, { force: true })
      throw err
    }
    closeSync(out)
    if (this.fd !== null) closeSync(this.fd)
    renameSync(tmp, this.file)
    this.fd = openSync(this.file, 'a', 0o600)
    this.snapshotBytes = bytes
    this.fileBytes = bytes
    this.appendedBytes = 0
  }

  private persist(keys: string[]) {
    if (this.fd === null) return
    let lines = ''
    for (const key of keys) {
      const entry = this.data.get(key)
      lines += `${JSON.stringify([key, entry ? serialize(entry) : null])}\n`
    }
    const bytes = Buffer.from(lines)
    try {
      if (writeSync(this.fd, bytes) !== bytes.length) throw Object.assign(new Error('ENOSPC: short write'), { code: 'ENOSPC' })
      if (this.options.fsync) fsyncSync(this.fd)
    } catch (err) {
      try {
        ftruncateSync(this.fd, this.fileBytes)
      } catch {}
      throw new StoreUnavailableError('key/value store', 5, { cause: err })
    }
    this.fileBytes += bytes.length
    this.appendedBytes += bytes.length
    // the visit cache rewrites its keys all day: compact once the appended part outgrows the data
    if (this.appendedBytes > Math.max(this.options.compactAfterBytes ?? 64 * 1024 * 1024, 4 * this.snapshotBytes)) {
      try {
        this.snapshot()
      } catch {
        // no room to compact now: the log stays as it is, and the next write tries again
      }
    }
  }

  /** The keys a command names, as they are now: put back if its write cannot be logged. */
  private before(command: RedisCommand): Map<string, Entry | undefined> | null {
    if (this.fd === null) return null
    const [name, ...args] = command.map(String)
    const lower = name.toLowerCase()
    if (lower === 'flushall') return new Map(this.data)
    let indexes: number[]
    try {
      // reads change nothing: only writes and scripts are worth a copy
      if (lower !== 'eval' && lower !== 'evalsha' && !hasFlag(lower, 'write')) return null
      indexes = getKeyIndexes(lower, args)
    } catch {
      return null
    }
    const saved = new Map<string, Entry | undefined>()
    for (const i of indexes) saved.set(args[i], clone(this.data.get(args[i])))
    return saved
  }

  private get(key: string): Entry | undefined {
    const entry = this.data.get(key)
    if (entry?.expireAt !== undefined && entry.expireAt <= this.now()) {
      this.data.delete(key)
      return undefined
    }
    return entry
  }

  private typed<T extends Value['type']>(key: string, type: T): Extract<Entry, { type: T }> | undefined {
    const entry = this.get(key)
    if (entry && entry.type !== type) throw wrongType()
    return entry as Extract<Entry, { type: T }> | undefined
  }

  private hash(key: string, create: true): Map<string, string>
  private hash(key: string, create?: false): Map<string, string> | undefined
  private hash(key: string, create = false) {
    const entry = this.typed(key, 'hash')
    if (entry || !create) return entry?.value
    const value = new Map<string, string>()
    this.data.set(key, { type: 'hash', value })
    return value
  }

  private set(key: string, create: true): Set<string>
  private set(key: string, create?: false): Set<string> | undefined
  private set(key: string, create = false) {
    const entry = this.typed(key, 'set')
    if (entry || !create) return entry?.value
    const value = new Set<string>()
    this.data.set(key, { type: 'set', value })
    return value
  }

  private dropIfEmpty(key: string) {
    const entry = this.data.get(key)
    if (entry && entry.type !== 'string' && entry.value.size === 0) this.data.delete(key)
  }

  private incrBy(key: string, by: number) {
    const entry = this.typed(key, 'string')
    const next = (entry ? toInt(entry.value) : 0) + by
    this.data.set(key, { type: 'string', value: String(next), expireAt: entry?.expireAt })
    return next
  }

  private expireAt(key: string, at: number) {
    const entry = this.get(key)
    if (!entry) return 0
    if (at <= this.now()) this.data.delete(key)
    else entry.expireAt = at
    return 1
  }

  /** Runs one command synchronously; returns the reply and the keys it wrote. */
  private run(command: RedisCommand): { reply: unknown; wrote: string[] } {
    const [rawName, ...rawArgs] = command
    const name = String(rawName).toUpperCase()
    const args = rawArgs.map(String)
    const [key] = args
    const arity = (min: number) => {
      if (args.length < min) throw new RedisError(`ERR wrong number of arguments for '${name.toLowerCase()}' command`)
    }
    switch (name) {
      case 'PING':
        return { reply: 'PONG', wrote: [] }
      case 'GET': {
        arity(1)
        return { reply: this.typed(key, 'string')?.value ?? null, wrote: [] }
      }
      case 'MGET': {
        arity(1)
        return {
          reply: args.map((k) => {
            const e = this.get(k)
            return e?.type === 'string' ? e.value : null
          }),
          wrote: [],
        }
      }
      case 'SET': {
        arity(2)
        let expireAt: number | undefined
        let mode: 'NX' | 'XX' | undefined
        let keepTtl = false
        for (let i = 2; i < args.length; i++) {
          const option = args[i].toUpperCase()
          if (option === 'NX' || option === 'XX') mode = option
          else if (option === 'EX') expireAt = this.now() + toInt(args[++i]) * 1000
          else if (option === 'PX') expireAt = this.now() + toInt(args[++i])
          else if (option === 'PXAT') expireAt = toInt(args[++i])
          else if (option === 'KEEPTTL') keepTtl = true
          else throw new RedisError('ERR syntax error')
        }
        const existing = this.get(key)
        if ((mode === 'NX' && existing) || (mode === 'XX' && !existing)) return { reply: null, wrote: [] }
        if (keepTtl) expireAt = existing?.expireAt
        this.data.set(key, { type: 'string', value: args[1], expireAt })
        return { reply: 'OK', wrote: [key] }
      }
      case 'DEL': {
        arity(1)
        let removed = 0
        for (const k of args) if (this.get(k) && this.data.delete(k)) removed++
        return { reply: removed, wrote: args }
      }
      case 'EXISTS':
        arity(1)
        return { reply: args.filter((k) => this.get(k)).length, wrote: [] }
      case 'INCR':
        arity(1)
        return { reply: this.incrBy(key, 1), wrote: [key] }
      case 'INCRBY':
        arity(2)
        return { reply: this.incrBy(key, toInt(args[1])), wrote: [key] }
      case 'DECRBY':
        arity(2)
        return { reply: this.incrBy(key, -toInt(args[1])), wrote: [key] }
      case 'EXPIRE':
        arity(2)
        return { reply: this.expireAt(key, this.now() + toInt(args[1]) * 1000), wrote: [key] }
      case 'PEXPIRE':
        arity(2)
        return { reply: this.expireAt(key, this.now() + toInt(args[1])), wrote: [key] }
      case 'PEXPIREAT':
        arity(2)
        return { reply: this.expireAt(key, toInt(args[1])), wrote: [key] }
      case 'TTL':
      case 'PTTL': {
        arity(1)
        const entry = this.get(key)
        if (!entry) return { reply: -2, wrote: [] }
        if (entry.expireAt === undefined) return { reply: -1, wrote: [] }
        const ms = entry.expireAt - this.now()
        return { reply: name === 'TTL' ? Math.ceil(ms / 1000) : ms, wrote: [] }
      }
      case 'HSET': {
        if (args.length < 3 || args.length % 2 === 0) throw new RedisError("ERR wrong number of arguments for 'hset' command")
        const hash = this.hash(key, true)
        let added = 0
        for (let i = 1; i < args.length; i += 2) {
          if (!hash.has(args[i])) added++
          hash.set(args[i], args[i + 1])
        }
        return { reply: added, wrote: [key] }
      }
      case 'HSETNX': {
        arity(3)
        const hash = this.hash(key, true)
        if (hash.has(args[1])) return { reply: 0, wrote: [] }
        hash.set(args[1], args[2])
        return { reply: 1, wrote: [key] }
      }
      case 'HGET':
        arity(2)
        return { reply: this.hash(key)?.get(args[1]) ?? null, wrote: [] }
      case 'HMGET': {
        arity(2)
        const hash = this.hash(key)
        return { reply: args.slice(1).map((f) => hash?.get(f) ?? null), wrote: [] }
      }
      case 'HGETALL':
        arity(1)
        return { reply: [...(this.hash(key) ?? [])].flat(), wrote: [] }
      case 'HDEL': {
        arity(2)
        const hash = this.hash(key)
        let removed = 0
        for (const f of args.slice(1)) if (hash?.delete(f)) removed++
        this.dropIfEmpty(key)
        return { reply: removed, wrote: [key] }
      }
      case 'HINCRBY': {
        arity(3)
        const hash = this.hash(key, true)
        const next = (hash.has(args[1]) ? toInt(hash.get(args[1])) : 0) + toInt(args[2])
        hash.set(args[1], String(next))
        return { reply: next, wrote: [key] }
      }
      case 'HLEN':
        arity(1)
        return { reply: this.hash(key)?.size ?? 0, wrote: [] }
      case 'SADD': {
        arity(2)
        const set = this.set(key, true)
        let added = 0
        for (const m of args.slice(1)) if (!set.has(m) && set.add(m)) added++
        return { reply: added, wrote: [key] }
      }
      case 'SREM': {
        arity(2)
        const set = this.set(key)
        let removed = 0
        for (const m of args.slice(1)) if (set?.delete(m)) removed++
        this.dropIfEmpty(key)
        return { reply: removed, wrote: [key] }
      }
      case 'SMEMBERS':
        arity(1)
        return { reply: [...(this.set(key) ?? [])], wrote: [] }
      case 'SISMEMBER':
        arity(2)
        return { reply: this.set(key)?.has(args[1]) ? 1 : 0, wrote: [] }
      case 'SCARD':
        arity(1)
        return { reply: this.set(key)?.size ?? 0, wrote: [] }
      case 'SCRIPT': {
        if (args[0]?.toUpperCase() !== 'LOAD' || args.length !== 2) throw new RedisError('ERR only SCRIPT LOAD is supported')
        return { reply: this.loadScript(args[1]), wrote: [] }
      }
      case 'EVAL':
      case 'EVALSHA': {
        arity(2)
        const sha = name === 'EVAL' ? this.loadScript(args[0]) : args[0].toLowerCase()
        const script = this.scripts.get(sha)
        if (script === undefined) throw new RedisError('NOSCRIPT No matching script. Please use EVAL.')
        const numKeys = toInt(args[1])
        if (numKeys < 0 || numKeys > args.length - 2) throw new RedisError("ERR Number of keys can't be greater than number of args")
        // each redis.call inside runs and persists like a top-level command
        const native = this.nativeScripts.get(sha)
        const run =
          native ?? ((keys: string[], argv: string[], call: (command: string[]) => unknown) => runLuaScript(script, keys, argv, call))
        // the script's writes reach the log together, once it has run
        const wrote = new Set<string>()
        const reply = run(args.slice(2, 2 + numKeys), args.slice(2 + numKeys), (command) => {
          const result = this.run(command)
          for (const key of result.wrote) wrote.add(key)
          return result.reply
        })
        return { reply, wrote: [...wrote] }
      }
      case 'FLUSHALL': {
        const keys = [...this.data.keys()]
        this.data.clear()
        return { reply: 'OK', wrote: keys }
      }
      default:
        throw new RedisError(`ERR unknown command '${name.toLowerCase()}'`)
    }
  }

  /**
   * Runs a script natively in JavaScript instead of interpreting its Lua: for the hot scripts of
   * this service, whose Lua and JavaScript forms the contract suite holds to the same answers.
   */
  defineNativeScript(lua: string, native: (keys: string[], args: string[], call: (command: string[]) => unknown) => unknown) {
    this.nativeScripts.set(this.loadScript(lua), native)
  }

  private loadScript(script: string) {
    const sha = createHash('sha1').update(script).digest('hex')
    this.scripts.set(sha, script)
    return sha
  }

  /** Logs what commands wrote; if the log cannot take it, puts back the keys as they were before. */
  private persistOrUndo(wrote: string[], saved: Map<string, Entry | undefined> | null) {
    try {
      this.persist(wrote)
    } catch (err) {
      for (const [key, entry] of saved ?? []) entry ? this.data.set(key, entry) : this.data.delete(key)
      throw err
    }
  }

  private execSync(command: RedisCommand): unknown {
    const saved = this.before(command)
    const { reply, wrote } = this.run(command)
    if (wrote.length) this.persistOrUndo(wrote, saved)
    return reply
  }

  async exec(command: RedisCommand) {
    return this.execSync(command)
  }

  async pipeline(commands: RedisCommand[]): Promise<CommandResult[]> {
    return commands.map((command) => {
      try {
        return { result: this.execSync(command) }
      } catch (err) {
        // an outage is no reply to the command: it fails the whole call (503)
        if (err instanceof StoreUnavailableError) throw err
        return { error: (err as Error).message }
      }
    })
  }

  /**
   * Commands run back to back on one thread, so nothing interleaves: the transaction is atomic.
   * Their writes reach the log as one append, or (a full disk) none of them is kept.
   */
  async transaction(commands: RedisCommand[]): Promise<CommandResult[]> {
    const saved = new Map<string, Entry | undefined>()
    const wrote = new Set<string>()
    const results = commands.map((command): CommandResult => {
      for (const [key, entry] of this.before(command) ?? []) if (!saved.has(key)) saved.set(key, entry)
      try {
        const result = this.run(command)
        for (const key of result.wrote) wrote.add(key)
        return { result: result.reply }
      } catch (err) {
        return { error: (err as Error).message }
      }
    })
    if (wrote.size) this.persistOrUndo([...wrote], saved)
    return results
  }

  async close() {
    if (this.fd !== null) closeSync(this.fd)
    this.fd = null
  }
}

function clone(entry: Entry | undefined): Entry | undefined {
  if (!entry || entry.type === 'string') return entry && { ...entry }
  return entry.type === 'hash'
    ? { type: 'hash', value: new Map(entry.value), expireAt: entry.expireAt }
    : { type: 'set', value: new Set(entry.value), expireAt: entry.expireAt }
}

function serialize(entry: Entry): Serialized {
  const v = entry.type === 'string' ? entry.value : entry.type === 'hash' ? [...entry.value] : [...entry.value]
  return entry.expireAt === undefined ? { t: entry.type, v } : { t: entry.type, v, x: entry.expireAt }
}

function deserialize(s: Serialized): Entry {
  const expireAt = s.x
  if (s.t === 'string') return { type: 'string', value: s.v as string, expireAt }
  if (s.t === 'hash') return { type: 'hash', value: new Map(s.v as [string, string][]), expireAt }
  return { type: 'set', value: new Set(s.v as string[]), expireAt }
}
