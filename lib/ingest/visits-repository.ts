import type { Redis } from '@upstash/redis'

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

/**
 * Deletes the visits of these keys whose last hit is before ARGV[1] (epoch ms), and answers how
 * many it deleted: a visit extended since by another writer (its last hit later) is kept.
 */
const FORGET_VISITS = `
local before = tonumber(ARGV[1])
local n = 0
for _, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  if current then
    local a = string.find(current, '|', 1, true)
    local b = string.find(current, '|', a + 1, true)
    local c = string.find(current, '|', b + 1, true)
    if tonumber(string.sub(current, b + 1, c - 1)) < before then
      redis.call('DEL', key)
      n = n + 1
    end
  end
end
return n
`

/** FORGET_VISITS, natively for the embedded store. */
export function forgetVisitsNative(keys: string[], args: string[], call: (command: string[]) => unknown): number {
  const before = Number(args[0])
  let n = 0
  for (const key of keys) {
    const current = call(['GET', key]) as string | null
    if (!current) continue
    const b = current.indexOf('|', current.indexOf('|') + 1)
    if (Number(current.slice(b + 1, current.indexOf('|', b + 1))) < before) {
      call(['DEL', key])
      n++
    }
  }
  return n
}

type NativeScript = (keys: string[], args: string[], call: (command: string[]) => unknown) => unknown

/** Scripts the embedded store may run natively, by their Lua source. */
export const NATIVE_SCRIPTS: [string, NativeScript][] = [
  [ASSIGN_VISITS, assignVisitsNative],
  [FORGET_VISITS, forgetVisitsNative],
]

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

/** Each visitor's current visit, kept for four visit gaps after its last hit. */
export class VisitsRepository {
  private assignScript?: ReturnType<Redis['createScript']>
  private forgetScript?: ReturnType<Redis['createScript']>

  constructor(private readonly kv: Redis) {}

  /**
   * Keeps each page view's running total of engaged milliseconds (`key` names the visitor's page):
   * an entry with `ms` adds to it and answers the total, one without starts the page's total anew
   * (a new view of the page) and answers 0. In order. Plausible's tracker reports the time since its
   * last report; our engagement reports carry the total so far. A total is forgotten 30 minutes after its last report.
   */
  async runEngagedTime(entries: { key: string; ms?: number }[]): Promise<number[]> {
    if (!entries.length) return []
    const tx = this.kv.multi()
    // where each entry's total is among the answers: an addition answers first, then its expiry
    const at: number[] = []
    let answer = 0
    for (const { key, ms } of entries) {
      at.push(answer)
      if (ms === undefined) tx.del(`engaged:${key}`)
      else tx.incrby(`engaged:${key}`, ms).pexpire(`engaged:${key}`, 30 * 60_000)
      answer += ms === undefined ? 1 : 2
    }
    const answers = (await tx.exec()) as unknown[]
    return entries.map((e, i) => (e.ms === undefined ? 0 : Number(answers[at[i]])))
  }

  /**
   * Assigns each run to a visit, in order, in one script call: a run whose first hit is within
   * `gapMs` of the visitor's last one joins that visit, otherwise it starts a new one with its
   * candidate id. attrs are those stored, for a visit begun before this call.
   */
  async assignRuns(runs: RunRequest[], gapMs: number): Promise<{ id: string; start: number; attrs: string | null }[]> {
    if (!runs.length) return []
    const args = [String(gapMs), String(gapMs * 4)]
    for (const r of runs) args.push(String(r.at), String(r.until), r.candidateId, r.attrs)
    // sent by its SHA after the first call; the embedded store may run it natively (NATIVE_SCRIPTS)
    this.assignScript ??= this.kv.createScript(ASSIGN_VISITS)
    const out = String(
      await this.assignScript.exec(
        runs.map((r) => visitKey(r.siteId, r.visitorId)),
        args,
      ),
    )
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

  /** The same store, as an import of hits in time order uses it (ImportVisits). */
  forImport(): ImportVisits {
    return new ImportVisits(this.kv)
  }

  /** Deletes the visits of these visitors whose last hit is before `before` (epoch ms); answers how many. */
  async forget(visitors: readonly { siteId: string; visitorId: string }[], before: number): Promise<number> {
    if (!visitors.length) return 0
    this.forgetScript ??= this.kv.createScript(FORGET_VISITS)
    return Number(
      await this.forgetScript.exec(
        visitors.map((v) => visitKey(v.siteId, v.visitorId)),
        [String(before)],
      ),
    )
  }
}

/** Visitors forgotten in one script call at most. */
const FORGET_BATCH = 5000

/**
 * The visits of an import of hits in time order: the store keeps a visit for four gaps of real
 * time, but an import reads hours of history a second, so it would hold every visit it has seen.
 * This one remembers when each visit it assigned last had a hit, and forgets (deletes from the
 * store) those whose last hit is more than the gap older than the newest hit read: no later hit
 * of a file in time order can extend them.
 */
export class ImportVisits extends VisitsRepository {
  /** Visitor key to the visitor and the last hit of their visit. */
  private readonly lastHits = new Map<string, { siteId: string; visitorId: string; last: number }>()

  override async assignRuns(runs: RunRequest[], gapMs: number) {
    const assigned = await super.assignRuns(runs, gapMs)
    for (const run of runs) {
      const key = visitKey(run.siteId, run.visitorId)
      const known = this.lastHits.get(key)
      if (known) known.last = Math.max(known.last, run.until)
      else this.lastHits.set(key, { siteId: run.siteId, visitorId: run.visitorId, last: run.until })
    }
    return assigned
  }

  /** Visits remembered: those not forgotten yet. */
  get remembered() {
    return this.lastHits.size
  }

  /** Forgets the visits whose last hit is before `before` (epoch ms); answers how many the store deleted. */
  async forgetBefore(before: number): Promise<number> {
    // every visit is looked at: those remembered are the visits of the last gap, few next to the file
    const visitors: { siteId: string; visitorId: string }[] = []
    for (const [key, visit] of this.lastHits) {
      if (visit.last >= before) continue
      this.lastHits.delete(key)
      visitors.push(visit)
    }
    let forgotten = 0
    for (let i = 0; i < visitors.length; i += FORGET_BATCH) forgotten += await this.forget(visitors.slice(i, i + FORGET_BATCH), before)
    return forgotten
  }
}
