import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { GA4_AUTOMATIC_EVENTS } from './ga4-datasets'
import type { Query } from './model'
import type { ResolvedRange } from './range'
import { type BreakdownRow, shapeSeries } from './shape'

/**
 * The realtime reads of a ga4 site (spec 4.1 rule 2) in the shapes of the first-party ones, from
 * GA4's Realtime API. The API is reached through a port, `LiveSource`, which the Google
 * integration implements (lib/integrations/ga4/realtime.ts) and the app's services carry.
 */

/** The live numbers of a ga4 site. */
export interface Ga4Live {
  /** Active users and views of the last 5 minutes. */
  now: { activeUsers: number; views: number }
  halfHour: { activeUsers: number; views: number }
  /** Index = minutes ago (0: the current minute), 30 entries. */
  perMinute: { activeUsers: number; views: number }[]
}

/** One value of a realtime breakdown: GA4's active users, views and events of the last 5 minutes. */
export interface LiveRow {
  value: string
  visitors: number
  pageviews: number
  events: number
}

/** GA4's Realtime API, as the reports need it: its errors are already the API's (409, 503, 400). */
export interface LiveSource {
  live(site: Site): Promise<Ga4Live>
  /** A 400 for a property the Realtime API does not report. */
  breakdown(site: Site, property: string): Promise<LiveRow[]>
}

/** GA4's Realtime API answers no read under filters. */
function refuseFilters(query: Query) {
  if (query.filters.length) throw new ApiError(400, "filters: GA4's Realtime API takes none of this read's filters; ask without filters")
}

/**
 * The realtime read of a ga4 site in the shapes of the first-party one: visitors of the last 5 and
 * 30 minutes, the minute series of the last 30 (visits there are GA4's active users: its Realtime
 * API counts no sessions), and no pages or sources (it reports neither paths nor traffic sources).
 */
export async function ga4RealtimeReads(source: LiveSource, site: Site, query: Query, minutes: ResolvedRange, now: Date) {
  refuseFilters(query)
  const live = await source.live(site)
  return [
    { visitors: live.now.activeUsers },
    { visitors: live.halfHour.activeUsers },
    liveSeries(live, minutes, now),
    [] as BreakdownRow[],
    [] as BreakdownRow[],
  ] as const
}

/** The minute series of the last 30 minutes; a minute's visits are its active users (the Realtime API counts no sessions). */
function liveSeries(live: Ga4Live, minutes: ResolvedRange, now: Date) {
  const minute = Math.floor(now.getTime() / 60_000) * 60
  const rows = live.perMinute.map((m, ago) => ({
    bucket: minute - ago * 60,
    visitors: m.activeUsers,
    visits: m.activeUsers,
    pageviews: m.views,
  }))
  return shapeSeries(minutes, rows)
}

/**
 * The totals of `range=realtime` on a ga4 read (the last 5 minutes): active users as visitors and
 * visits, views as pageviews. GA4's Realtime API reports no sessions, engagement or event kinds,
 * so bounce rate, visit duration and custom events are null.
 */
export async function ga4RealtimeTotals(source: LiveSource, site: Site, query: Query) {
  refuseFilters(query)
  const { now } = await source.live(site)
  return {
    visitors: now.activeUsers,
    visits: now.activeUsers,
    pageviews: now.views,
    bounceRate: null,
    avgDuration: null,
    viewsPerVisit: now.activeUsers ? Math.round((now.views / now.activeUsers) * 100) / 100 : 0,
    events: null,
  }
}

/** The timeseries of `range=realtime` on a ga4 read: the last 30 minutes, a bucket a minute. */
export async function ga4RealtimeSeries(source: LiveSource, site: Site, query: Query, now: Date) {
  refuseFilters(query)
  return liveSeries(await source.live(site), query.range, now)
}

/**
 * A breakdown of `range=realtime` on a ga4 read: active users and views of the last 5 minutes per
 * value of the property; automatic events count no custom events.
 */
export async function ga4RealtimeBreakdown(source: LiveSource, site: Site, query: Query, property: string): Promise<BreakdownRow[]> {
  refuseFilters(query)
  const rows = await source.breakdown(site, property)
  const automatic = new Set<string>(GA4_AUTOMATIC_EVENTS)
  return rows
    .filter((r) => r.value !== '')
    .map((r) => ({
      value: r.value,
      visitors: r.visitors,
      visits: r.visitors,
      pageviews: r.pageviews,
      events: property === 'event' ? (automatic.has(r.value) ? 0 : r.events) : null,
    }))
    .sort((a, b) => b.visitors - a.visitors || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .slice(0, query.limit)
}
