import type { Temporal } from 'temporal-polyfill'
import type { Site } from '../../sites/sites'
import { visitorsByBucket } from './bucket-rollup'
import { importedVisitorsByBucket } from './imported-days'
import { type Grain, filteredVisitorsByBucketSql } from './compile'
import type { Query } from '../../reports/query/model'
import { execute } from '../../storage/clickhouse/execute'
import { firstEventAt } from '../../reports/query/site-events'
import type { Source } from '../../sites/source'
import { MAD_SCALE, medianAndDeviation } from './robust'
import { type WhyDeps, zoned } from '../../reports/query/window'

/**
 * Hours or days whose visitors are far from the site's own baseline for that hour of the week
 * (or that day of the week): the rule of docs/traffic-changes.md, in one place.
 *
 * - baseline: the visitors of the same site-local hour (or day) in each of the BASELINE_WEEKS
 *   weeks before, an empty one counting 0; weeks before the site's first event are left out, and
 *   a bucket with fewer than MIN_BASELINE_WEEKS of them is not judged
 * - expected: the median of the baseline; spread: 1.4826 × its median absolute deviation, and at
 *   least √expected and at least 1 (so a perfectly steady baseline does not make every extra
 *   visitor news)
 * - up (a spike): visitors − expected ≥ K × spread and ≥ MIN_EXCESS of the grain
 * - down (a drop): expected − visitors ≥ K × spread and ≥ MIN_EXCESS of the grain
 * Consecutive buckets that move the same way are one shift.
 */
export const SHIFT_RULE = {
  baselineWeeks: 8,
  minBaselineWeeks: 3,
  k: 5,
  minExcess: { hour: 10, day: 30 } as Record<Grain, number>,
}

export interface JudgedBucket {
  /** Epoch seconds of the bucket's start. */
  start: number
  end: number
  visitors: number
  expected: number
  /** The baseline buckets used (epoch seconds), newest first. */
  baseline: number[]
  direction: 'up' | 'down' | null
}

export interface Shift {
  direction: 'up' | 'down'
  grain: Grain
  start: number
  end: number
  buckets: JudgedBucket[]
}

const step = (z: Temporal.ZonedDateTime, grain: Grain) => (grain === 'hour' ? z.add({ hours: 1 }) : z.add({ days: 1 }).startOfDay())
const floor = (z: Temporal.ZonedDateTime, grain: Grain) =>
  grain === 'hour' ? z.round({ smallestUnit: 'hour', roundingMode: 'floor' }) : z.startOfDay()

/**
 * The zone's UTC offset in seconds at any instant (epoch seconds) from `from` until `to`: the
 * offset at `from` and each transition after it, looked up once.
 */
export function offsetsOver(from: Temporal.ZonedDateTime, to: Temporal.ZonedDateTime): (at: number) => number {
  const offsets = [{ since: Number.NEGATIVE_INFINITY, offset: from.offsetNanoseconds / 1e9 }]
  for (let z = from.getTimeZoneTransition('next'); z && z.epochMilliseconds < to.epochMilliseconds; z = z.getTimeZoneTransition('next'))
    offsets.push({ since: z.epochMilliseconds / 1000, offset: z.offsetNanoseconds / 1e9 })
  return (at) => {
    let i = offsets.length - 1
    while (offsets[i].since > at) i--
    return offsets[i].offset
  }
}

/** Visitors per bucket under a query's filters, read from events; the baseline starts at the site's first event. */
async function filteredVisitorsByBucket(deps: WhyDeps, site: Site, grain: Grain, query: Query) {
  const [rows, first] = await Promise.all([
    execute<{ bucket: number | string; visitors: number | string }>(deps.clickhouse, filteredVisitorsByBucketSql(query, grain)),
    firstEventAt(deps.clickhouse, site.id),
  ])
  return { rows, first: first?.getTime() ?? null }
}

/** Every bucket starting in [from, to), judged against its baseline (under the query's filters, when given). */
export async function judgeBuckets(
  deps: WhyDeps,
  site: Site,
  grain: Grain,
  from: Temporal.ZonedDateTime,
  to: Temporal.ZonedDateTime,
  source: Source = 'standalone',
  filtered: Query | null = null,
): Promise<JudgedBucket[]> {
  const start = floor(from, grain)
  const scanFrom = start.subtract({ weeks: SHIFT_RULE.baselineWeeks })
  const { rows, first } = filtered
    ? await filteredVisitorsByBucket(deps, site, grain, { ...filtered, range: { ...filtered.range, from: scanFrom, to } })
    : source === 'ga4'
      ? await importedVisitorsByBucket(deps, site, grain, scanFrom, to)
      : await visitorsByBucket(deps, site, grain, scanFrom, to)
  if (first === null) return []
  const firstBucket = floor(zoned(first, site.timezone), grain).epochMilliseconds / 1000
  const visitors = new Map(rows.map((r) => [Number(r.bucket), Number(r.visitors)]))
  // every bucket of the scan by its local wall-clock start, so that "the same hour a week before"
  // is a lookup (Temporal arithmetic per sample costs more than the query)
  const byWall = new Map<number, number>()
  const window: { at: number; wall: number; end: number }[] = []
  const add = (at: number, wall: number, end: number) => {
    if (!byWall.has(wall)) byWall.set(wall, at)
    if (at >= start.epochMilliseconds / 1000) window.push({ at, wall, end })
  }
  if (grain === 'hour') {
    // an hour is 3600 s of exact time: plain arithmetic, with the zone's offsets found once (Temporal per hour cost ~0.1 ms)
    const offsetAt = offsetsOver(scanFrom, to)
    const last = to.epochMilliseconds / 1000
    for (let at = scanFrom.epochMilliseconds / 1000; at < last && window.length < 50_000; at += 3600) add(at, at + offsetAt(at), at + 3600)
  } else {
    for (let b = scanFrom; b.epochMilliseconds < to.epochMilliseconds && window.length < 50_000; ) {
      const next = step(b, grain)
      const at = b.epochMilliseconds / 1000
      add(at, at + b.offsetNanoseconds / 1e9, next.epochMilliseconds / 1000)
      b = next
    }
  }
  const judged: JudgedBucket[] = []
  for (const { at, wall, end } of window) {
    const baseline: number[] = []
    for (let week = 1; week <= SHIFT_RULE.baselineWeeks; week++) {
      const s = byWall.get(wall - week * 7 * 86_400)
      if (s !== undefined && s >= firstBucket) baseline.push(s)
    }
    const count = visitors.get(at) ?? 0
    if (at < firstBucket || baseline.length < SHIFT_RULE.minBaselineWeeks) continue
    const samples = baseline.map((s) => visitors.get(s) ?? 0)
    const { median: expected, deviation } = medianAndDeviation(samples)
    const spread = Math.max(MAD_SCALE * deviation, Math.sqrt(expected), 1)
    const margin = Math.max(SHIFT_RULE.k * spread, SHIFT_RULE.minExcess[grain])
    const direction = count - expected >= margin ? 'up' : expected - count >= margin ? 'down' : null
    judged.push({ start: at, end, visitors: count, expected, baseline, direction })
  }
  return judged
}

/** Runs of consecutive buckets moving the same way, oldest first. */
export function shiftsOf(judged: readonly JudgedBucket[], grain: Grain, direction: 'up' | 'down'): Shift[] {
  const shifts: Shift[] = []
  for (const bucket of judged) {
    if (bucket.direction !== direction) continue
    const last = shifts[shifts.length - 1]
    if (last && last.end === bucket.start) {
      last.buckets.push(bucket)
      last.end = bucket.end
    } else shifts.push({ direction, grain, start: bucket.start, end: bucket.end, buckets: [bucket] })
  }
  return shifts
}

/** A shift's id: stable, from the site, the grain and the start of its first bucket. */
export async function shiftId(siteId: string, grain: Grain, start: number): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${siteId}:${grain}:${start}`)))
  const hash = [...digest.slice(0, 4)].map((b) => b.toString(16).padStart(2, '0')).join('')
  return `${grain === 'hour' ? 'h' : 'd'}${start}-${hash}`
}

/** The grain and start of an id, or null for text that is not one. */
export function parseShiftId(id: string): { grain: Grain; start: number } | null {
  const match = /^([hd])(\d{9,11})-[0-9a-f]{8}$/.exec(id)
  return match ? { grain: match[1] === 'h' ? 'hour' : 'day', start: Number(match[2]) } : null
}

export const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0)
