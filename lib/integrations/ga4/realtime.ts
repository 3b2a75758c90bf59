import { ApiError } from '../../errors'
import type { GoogleDeps } from '../google/session'
import type { GoogleConfig } from '../google/config'
import type { Site } from '../../sites/sites'
import { GOOGLE_NOT_CONFIGURED } from '../google/config'
import { GoogleError } from '../google/oauth'
import { GoogleSession } from '../google/session'
import { runRealtimeReport } from './client'
import type { Query } from '../../reports/query/model'
import { type ResolvedRange, rangeView } from '../../reports/query/range'
import { type BreakdownRow, shapeSeries } from '../../reports/query/shape'

/**
 * The live numbers of a ga4 site, from GA4's Realtime API (`:runRealtimeReport`): active users
 * and views over the last 5 and 30 minutes (distinct users over each window, asked as one
 * minute range each) and per minute (`minutesAgo`). Kept for the live count's 10 seconds, so
 * badges and dashboards polling a site share one set of calls.
 */

export interface Ga4Live {
  /** Active users and views of the last 5 minutes. */
  now: { activeUsers: number; views: number }
  halfHour: { activeUsers: number; views: number }
  /** Index = minutes ago (0: the current minute), 30 entries. */
  perMinute: { activeUsers: number; views: number }[]
}

const LIVE_SECONDS = 10
const METRICS = [{ name: 'activeUsers' }, { name: 'screenPageViews' }]

/** What the live reads need: the Google connection's, and the live count's cache (lib/sites/public-live.ts, named by its shape here). */
export type Ga4LiveDeps = Omit<GoogleDeps, 'google'> & {
  google?: GoogleConfig
  liveCache: {
    get(key: string): Promise<{ body: Record<string, unknown>; ttl: number } | undefined>
    put(key: string, answer: { body: Record<string, unknown>; ttl: number }): Promise<void>
  }
}

const number = (value: string | undefined) => Number(value ?? 0) || 0

export async function ga4Live(services: Ga4LiveDeps, site: Site): Promise<Ga4Live> {
  const key = `ga4-live|${site.id}`
  const cached = await services.liveCache.get(key)
  if (cached) return cached.body as unknown as Ga4Live
  const google = services.google
  if (!google) throw new ApiError(409, `the site reads ga4, and ${GOOGLE_NOT_CONFIGURED}`)
  const connection = await services.repositories.google.get(site.id)
  if (!connection?.ga4) throw new ApiError(409, "the site's GA4 property is not connected: bind one with PATCH /sites/{site_id}/ga4")
  if (connection.status !== 'connected') throw new ApiError(409, connection.reason ?? 'the Google connection needs connecting again')
  const session = new GoogleSession({ ...services, google }, connection)
  const propertyId = connection.ga4.propertyId
  const window = (startMinutesAgo: number) =>
    runRealtimeReport(session, google.dataUrl, propertyId, {
      minuteRanges: [{ startMinutesAgo, endMinutesAgo: 0 }],
      metrics: METRICS,
      returnPropertyQuota: true,
    })
  try {
    // the first call refreshes the access token if it must; the other two reuse it
    const five = await window(4)
    const [thirty, series] = await Promise.all([
      window(29),
      runRealtimeReport(session, google.dataUrl, propertyId, {
        minuteRanges: [{ startMinutesAgo: 29, endMinutesAgo: 0 }],
        dimensions: [{ name: 'minutesAgo' }],
        metrics: METRICS,
        limit: 100,
      }),
    ])
    const total = (answer: typeof five) => ({
      activeUsers: number(answer.rows?.[0]?.metricValues?.[0]?.value),
      views: number(answer.rows?.[0]?.metricValues?.[1]?.value),
    })
    const perMinute = Array.from({ length: 30 }, () => ({ activeUsers: 0, views: 0 }))
    for (const row of series.rows ?? []) {
      const ago = Number(row.dimensionValues?.[0]?.value)
      if (Number.isInteger(ago) && ago >= 0 && ago < 30)
        perMinute[ago] = { activeUsers: number(row.metricValues?.[0]?.value), views: number(row.metricValues?.[1]?.value) }
    }
    const live: Ga4Live = { now: total(five), halfHour: total(thirty), perMinute }
    await services.liveCache.put(key, { body: live as unknown as Record<string, unknown>, ttl: LIVE_SECONDS })
    return live
  } catch (err) {
    if (err instanceof GoogleError) throw new ApiError(err.grantRevoked ? 409 : 503, `GA4's Realtime API: ${err.message}`)
    throw err
  }
}

/**
 * The realtime read of a ga4 site in the shapes of the first-party one: visitors of the last 5 and
 * 30 minutes, the minute series of the last 30 (visits there are GA4's active users: its Realtime
 * API counts no sessions), and no pages or sources (it reports neither paths nor traffic sources).
 */
export async function ga4RealtimeReads(services: Ga4LiveDeps, site: Site, query: Query, minutes: ResolvedRange, now: Date) {
  if (query.filters.length) throw new ApiError(400, "filters: GA4's Realtime API takes none of this read's filters; ask without filters")
  const live = await ga4Live(services, site)
  const minute = Math.floor(now.getTime() / 60_000) * 60
  const rows = live.perMinute.map((m, ago) => ({
    bucket: minute - ago * 60,
    visitors: m.activeUsers,
    visits: m.activeUsers,
    pageviews: m.views,
  }))
  return [
    { visitors: live.now.activeUsers },
    { visitors: live.halfHour.activeUsers },
    shapeSeries(minutes, rows),
    [] as BreakdownRow[],
    [] as BreakdownRow[],
  ] as const
}

/** The public live count of a ga4-primary site's live windows: 5 minutes (with halfHour) or 30. */
export async function ga4LiveCounts(services: Ga4LiveDeps, site: Site, range: ResolvedRange): Promise<Record<string, unknown>> {
  const live = await ga4Live(services, site)
  const view = rangeView(range)
  const window = range.name === '30m' ? live.halfHour : live.now
  return {
    site: site.snippetId,
    range: range.name,
    from: view.from,
    to: view.to,
    visitors: window.activeUsers,
    // GA4's Realtime API counts no sessions: a live window's visits are its active users
    visits: window.activeUsers,
    pageviews: window.views,
    ...(range.name === '30m' ? {} : { halfHour: live.halfHour.activeUsers }),
  }
}
