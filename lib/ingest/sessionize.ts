import type { RowHit } from './item'
import { type EventRow, errorFingerprints, eventRow, visitAttrs } from './rows'
import { assignVisits, groupRuns } from './visits'
import type { VisitsRepository } from './visits-repository'

/**
 * The rows of a batch's hits, in time order: each run's visit (one script call for the batch),
 * with the attributes of its first hit (user agent, referrer, campaign, place). Made by the
 * ingestor for imports and Workers, and by the sink that stores the batch for the Node server's
 * live hits, whose requests end once the hits are journaled.
 */
export async function eventRowsOf(visits: VisitsRepository, batch: readonly RowHit[]): Promise<EventRow[]> {
  if (!batch.length) return []
  const { hits, runs, runOf } = groupRuns(batch)
  const urls = hits.map((h) => new URL(h.hit.url))
  // a run's first hit is the first of the hits (in time order) that belong to it
  const firstHit: number[] = []
  runOf.forEach((r, i) => (firstHit[r] ??= i))
  const attrs = runs.map((r, n) => visitAttrs(r.first, urls[firstHit[n]]))
  const assigned = await assignVisits(visits, runs, attrs)
  const fingerprints = await errorFingerprints(hits)
  return hits.map((h, i) => eventRow(h, urls[i], assigned[runOf[i]], fingerprints[i]))
}
