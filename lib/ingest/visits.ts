import { clickhouseTime } from '../storage/clickhouse/time'
import type { RowHit } from './item'
import type { VisitsRepository } from './visits-repository'

/** A visit is a run of one visitor's events with no gap longer than this. */
export const VISIT_GAP_MS = 30 * 60 * 1000

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
  readonly first: RowHit
  /** Time of its last hit. */
  readonly until: number
}

/**
 * The batch's hits in time order, grouped into runs: a visitor's hit within the gap of their
 * previous one in this batch surely joins that one's visit, so only a run's first hit may start
 * one. `runOf[i]` is the run of `hits[i]`.
 */
export function groupRuns(batch: readonly RowHit[]): { hits: RowHit[]; runs: Run[]; runOf: number[] } {
  // a stable sort: hits of one time keep the order they came in
  const hits = [...batch].sort((a, b) => a.at - b.at)
  const runs: { first: RowHit; until: number }[] = []
  const runOf: number[] = new Array(hits.length)
  const open = new Map<string, number>()
  hits.forEach((hit, i) => {
    const key = `${hit.siteId}:${hit.visitorId}`
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
export async function assignVisits<Attrs>(
  visits: VisitsRepository,
  runs: readonly Run[],
  attrs: readonly Attrs[],
): Promise<Visit<Attrs>[]> {
  const assigned = await visits.assignRuns(
    runs.map((r, i) => ({
      siteId: r.first.siteId,
      visitorId: r.first.visitorId,
      at: r.first.at,
      until: r.until,
      candidateId: newVisitId(),
      attrs: JSON.stringify(attrs[i]),
    })),
    VISIT_GAP_MS,
  )
  const startedHere = new Map<string, Attrs>()
  return assigned.map((visit, i) => {
    let visitAttrs = visit.attrs ? (JSON.parse(visit.attrs) as Attrs) : startedHere.get(visit.id)
    if (!visitAttrs) startedHere.set(visit.id, (visitAttrs = attrs[i]))
    return { id: visit.id, start: clickhouseTime(visit.start), attrs: visitAttrs }
  })
}
