import { clickhouseTime } from '../storage/clickhouse/time'
import type { Store } from '../storage/store'
import type { IdentifiedHit } from './identity'

/** A visit is a run of one visitor's events with no gap longer than this. */
export const VISIT_GAP_MS = 30 * 60 * 1000

/** Where the store keeps a visitor's current visit, as `id|start|last|attrs`. */
const visitKey = (siteId: string, visitorId: string) => `sess:${siteId}:${visitorId}`

/**
 * The caller sends runs of a visitor's hits, each within the gap of the one before (time-sorted,
 * so a run's later hits surely join its first one's visit): the script extends or replaces each
 * visitor's visit in order, atomically, with the run's first and last times, and answers one line
 * `id|start|attrs` a run. attrs are sent back only for visits that began before this call: the
 * caller knows the rest. One string keeps the client's JSON deserialization to one attempt, and
 * the ':' in front keeps it from parsing 64-bit ids.
 */
const ASSIGN_VISITS = `
local gap = tonumber(ARGV[1])
local ttl = ARGV[2]
local out = {}
local created = {}
for i, key in ipairs(KEYS) do
  local ts = ARGV[i * 4 - 1]
  local until_ts = ARGV[i * 4]
  local candidate = ARGV[i * 4 + 1]
  local current = redis.call('GET', key)
  local joined = false
  if current then
    local a = string.find(current, '|', 1, true)
    local b = string.find(current, '|', a + 1, true)
    local c = string.find(current, '|', b + 1, true)
    local id = string.sub(current, 1, a - 1)
    local start = string.sub(current, a + 1, b - 1)
    local last = string.sub(current, b + 1, c - 1)
    local t = tonumber(ts)
    if t - tonumber(last) <= gap and t >= tonumber(start) - gap then
      if tonumber(until_ts) > tonumber(last) then last = until_ts end
      local rest = string.sub(current, c + 1)
      redis.call('SET', key, id .. '|' .. start .. '|' .. last .. '|' .. rest, 'PX', ttl)
      if created[id] then rest = '' end
      out[i] = id .. '|' .. start .. '|' .. rest
      joined = true
    end
  end
  if not joined then
    redis.call('SET', key, candidate .. '|' .. ts .. '|' .. until_ts .. '|' .. ARGV[i * 4 + 2], 'PX', ttl)
    created[candidate] = true
    out[i] = candidate .. '|' .. ts .. '|'
  end
end
return ':' .. table.concat(out, '\\n')
`

/**
 * The same algorithm for the embedded store, which runs it natively instead of interpreting the
 * Lua (the contract suite checks both give the same answers). `call` runs one Redis command.
 */
export function assignVisitsNative(keys: string[], args: string[], call: (command: string[]) => unknown): string {
  const gap = Number(args[0])
  const ttl = args[1]
  const created = new Set<string>()
  const out: string[] = []
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]
    const ts = args[index * 4 + 2]
    const until = args[index * 4 + 3]
    const current = call(['GET', key]) as string | null
    if (current) {
      const a = current.indexOf('|')
      const b = current.indexOf('|', a + 1)
      const c = current.indexOf('|', b + 1)
      const id = current.slice(0, a)
      const start = current.slice(a + 1, b)
      let last = current.slice(b + 1, c)
      const t = Number(ts)
      if (t - Number(last) <= gap && t >= Number(start) - gap) {
        if (Number(until) > Number(last)) last = until
        const rest = current.slice(c + 1)
        call(['SET', key, `${id}|${start}|${last}|${rest}`, 'PX', ttl])
        out.push(`${id}|${start}|${created.has(id) ? '' : rest}`)
        continue
      }
    }
    const candidate = args[index * 4 + 4]
    call(['SET', key, `${candidate}|${ts}|${until}|${args[index * 4 + 5]}`, 'PX', ttl])
    created.add(candidate)
    out.push(`${candidate}|${ts}|`)
  }
  return `:${out.join('\n')}`
}

/** Scripts the embedded store may run natively, by their Lua source. */
export const NATIVE_SCRIPTS: [string, typeof assignVisitsNative][] = [[ASSIGN_VISITS, assignVisitsNative]]

/** A run of one visitor's hits, each within the visit gap of the one before, as the script takes it. */
export interface RunRequest {
  siteId: string
  visitorId: string
  /** Time of the run's first hit, epoch milliseconds. */
  at: number
  /** Time of its last hit (`at` for a run of one). */
  until: number
  /** The id to use if the run starts a visit; unique per call. */
  candidateId: string
  /** Visit-scoped attributes of the run's first hit, kept if it starts the visit. */
  attrs: string
}

/**
 * Assigns each run to a visit, in order, in one script call: a run whose first hit is within
 * `gapMs` of the visitor's last one joins that visit, otherwise it starts a new one with its
 * candidate id. attrs are those stored, for a visit begun before this call.
 */
export async function assignRuns(store: Store, runs: RunRequest[], gapMs: number): Promise<{ id: string; start: number; attrs: string | null }[]> {
  if (!runs.length) return []
  const args = [String(gapMs), String(gapMs * 4)]
  for (const r of runs) args.push(String(r.at), String(r.until), r.candidateId, r.attrs)
  const out = String(await store.runScript(ASSIGN_VISITS, runs.map((r) => visitKey(r.siteId, r.visitorId)), args))
  return out
    .slice(1)
    .split('\n')
    .map((line) => {
      const a = line.indexOf('|')
      const b = line.indexOf('|', a + 1)
      const attrs = line.slice(b + 1)
      return { id: line.slice(0, a), start: Number(line.slice(a + 1, b)), attrs: attrs || null }
    })
}

let pool = new Uint8Array(0)
let poolAt = 0
/** A random non-zero UInt64 as a decimal string, from a pool refilled 8 KiB at a time. */
function newVisitId(): string {
  if (poolAt + 8 > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(8192))
    poolAt = 0
  }
  const view = new DataView(pool.buffer, poolAt, 8)
  poolAt += 8
  const value = (BigInt(view.getUint32(0)) << 32n) | BigInt(view.getUint32(4))
  return (value || 1n).toString()
}

/** A visitor's hits in a batch, each within the visit gap of the one before. */
export interface Run {
  readonly first: IdentifiedHit
  /** Time of its last hit. */
  readonly until: number
}

/**
 * The batch's hits in time order, grouped into runs: a visitor's hit within the gap of their
 * previous one in this batch surely joins that one's visit, so only a run's first hit may start
 * one. `runOf[i]` is the run of `hits[i]`.
 */
export function groupRuns(batch: readonly IdentifiedHit[]): { hits: IdentifiedHit[]; runs: Run[]; runOf: number[] } {
  const hits = [...batch].sort((a, b) => a.at - b.at || a.index - b.index)
  const runs: { first: IdentifiedHit; until: number }[] = []
  const runOf: number[] = new Array(hits.length)
  const open = new Map<string, number>()
  hits.forEach((hit, i) => {
    const key = `${hit.site.id}:${hit.visitorId}`
    let r = open.get(key)
    if (r !== undefined && hit.at - runs[r].until <= VISIT_GAP_MS) runs[r].until = hit.at
    else {
      r = runs.push({ first: hit, until: hit.at }) - 1
      open.set(key, r)
    }
    runOf[i] = r
  })
  return { hits, runs, runOf }
}

/** The visit a run belongs to, with the visit's attributes: those of its first hit. */
export interface Visit<Attrs> {
  readonly id: string
  /** DateTime64 text of the visit's first hit. */
  readonly start: string
  readonly attrs: Attrs
}

/**
 * The visit of each run, given the attributes each run's first hit would give a visit it starts.
 * A visit begun in this batch takes those of its first run here; an older one, the stored ones.
 */
export async function assignVisits<Attrs>(store: Store, runs: readonly Run[], attrs: readonly Attrs[]): Promise<Visit<Attrs>[]> {
  const assigned = await assignRuns(
    store,
    runs.map((r, i) => ({ siteId: r.first.site.id, visitorId: r.first.visitorId, at: r.first.at, until: r.until, candidateId: newVisitId(), attrs: JSON.stringify(attrs[i]) })),
    VISIT_GAP_MS,
  )
  const startedHere = new Map<string, Attrs>()
  return assigned.map((visit, i) => {
    let visitAttrs = visit.attrs ? (JSON.parse(visit.attrs) as Attrs) : startedHere.get(visit.id)
    if (!visitAttrs) startedHere.set(visit.id, (visitAttrs = attrs[i]))
    return { id: visit.id, start: clickhouseTime(visit.start), attrs: visitAttrs }
  })
}
