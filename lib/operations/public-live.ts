import { Temporal } from 'temporal-polyfill'
import { z } from 'zod'
import { RANGES } from '../reports/dimensions'
import { ApiError } from '../core/errors'
import type { ClickHouse } from '../storage/clickhouse/types'
import { type ResolvedRange, type WindowName, rangeView, resolveRange } from '../reports/query/range'
import { windowTotals } from '../reports/query/reports'
import type { Site } from '../sites/sites'

export const LIVE_WINDOWS = ['5m', '30m'] as const
export const liveParams = z.object({
  site: z.string({ message: 'required: the site snippet id' }).min(1, 'required: the site snippet id').max(64),
  range: z.enum([...RANGES, ...LIVE_WINDOWS], { message: `must be one of ${[...RANGES, ...LIVE_WINDOWS].join(', ')}` }).optional(),
  from: z.string().optional(),
  to: z.string().optional(),
})
export type LiveParams = z.infer<typeof liveParams>

/** Distinct uncached windows a site answers fresh each minute; past it, 429 (cached windows are still served). */
export const DISTINCT_WINDOWS_PER_MINUTE = 30
export const LIVE_TTL_SECONDS = 10
export const PERIOD_TTL_SECONDS = 60

export const isLive = (range: WindowName) => range === '5m' || range === '30m' || range === 'realtime'

/**
 * The site's dial bounds the window by its real start and length (docs/tracker.md):
 * live admits only the live windows; 30d windows starting at most 30 site-local days before
 * today; year windows starting less than a calendar year before today; all admits everything.
 */
export function dialAdmits(dial: Site['sharing']['publicCountsDial'], range: ResolvedRange, now: Date): boolean {
  if (dial === 'all') return true
  const at = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(range.timezone)
  const minutes = range.from.until(range.to, { largestUnit: 'minutes' }).total({ unit: 'minutes' })
  const live = minutes <= 30 && Math.abs(range.to.epochMilliseconds - now.getTime()) < 60_000
  if (live) return true
  if (dial === 'live') return false
  const today = at.startOfDay()
  const earliest = dial === '30d' ? today.subtract({ days: 30 }) : today.subtract({ years: 1 })
  const cmp = Temporal.ZonedDateTime.compare(range.from, earliest)
  return dial === '30d' ? cmp >= 0 : cmp > 0
}

export interface LiveAnswer {
  body: Record<string, unknown>
  ttl: number
}

/** Resolves the window; a bad range or missing custom dates is 400 before anything about the site is read. */
export function liveWindow(params: LiveParams, site: Site, now: Date, firstEventAt: Date | null = null): ResolvedRange {
  return resolveRange({ range: params.range ?? '5m', from: params.from, to: params.to }, site.timezone, now, { firstEventAt })
}

/** Counts the window from the primary source, humans only (bots are never in `events`). */
export async function liveCounts(clickhouse: ClickHouse, site: Site, range: ResolvedRange, now: Date): Promise<LiveAnswer> {
  const counts = await windowTotals(clickhouse, site, range, now)
  const view = rangeView(range)
  const body: Record<string, unknown> = {
    site: site.snippetId,
    range: range.name,
    from: view.from,
    to: view.to,
    visitors: counts.visitors,
    visits: counts.visits,
    pageviews: counts.pageviews,
  }
  if (range.name === '5m' || range.name === 'realtime') {
    const half = resolveRange({ range: '30m' }, site.timezone, now)
    body.halfHour = (await windowTotals(clickhouse, site, half, now)).visitors
  }
  return { body, ttl: isLive(range.name) ? LIVE_TTL_SECONDS : PERIOD_TTL_SECONDS }
}

export const NOT_FOUND = new ApiError(404, 'not found')

/** Where answers of the public count are kept for their TTL: in process on Node, the Cache API on Workers. */
export interface LiveCache {
  get(key: string): Promise<LiveAnswer | undefined>
  put(key: string, answer: LiveAnswer): Promise<void>
  /** The same as `get` without waiting, where the cache can tell at once (in process). */
  peek?(key: string): LiveAnswer | undefined
}

export function memoryLiveCache(now: () => number = Date.now): LiveCache {
  const entries = new Map<string, { answer: LiveAnswer; expires: number }>()
  const peek = (key: string) => {
    const entry = entries.get(key)
    if (!entry) return undefined
    if (entry.expires <= now()) {
      entries.delete(key)
      return undefined
    }
    return entry.answer
  }
  return {
    peek,
    get: async (key) => peek(key),
    async put(key, answer) {
      if (entries.size > 50_000) entries.clear()
      entries.set(key, { answer, expires: now() + answer.ttl * 1000 })
    },
  }
}
