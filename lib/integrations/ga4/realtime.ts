import { ApiError } from '../../errors'
import type { GoogleDeps } from '../google/session'
import type { GoogleConfig } from '../google/config'
import type { Site } from '../../sites/sites'
import { GOOGLE_NOT_CONFIGURED } from '../google/config'
import { GoogleError } from '../google/oauth'
import { GoogleSession } from '../google/session'
import { runRealtimeReport } from './client'
import { GA4_AUTOMATIC_EVENTS, normalizeValue } from './datasets'
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

/** The site's GA4 property and a session to ask its Realtime API with; a 409 naming what is missing. */
async function liveSession(services: Ga4LiveDeps, site: Site) {
  const google = services.google
  if (!google) throw new ApiError(409, `the site reads ga4, and ${GOOGLE_NOT_CONFIGURED}`)
  const connection = await services.repositories.google.get(site.id)
  if (!connection?.ga4) throw new ApiError(409, "the site's GA4 property is not connected: bind one with PATCH /sites/{site_id}/ga4")
  if (connection.status !== 'connected') throw new ApiError(409, connection.reason ?? 'the Google connection needs connecting again')
  const session = new GoogleSession({ ...services, google }, connection)
  const propertyId = connection.ga4.propertyId
  return (request: Parameters<typeof runRealtimeReport>[3]) => runRealtimeReport(session, google.dataUrl, propertyId, request)
}

/** An answer built from the Realtime API, kept for the live count's 10 seconds; Google's refusals as the API's errors. */
async function cachedLive<T>(services: Ga4LiveDeps, key: string, build: () => Promise<T>): Promise<T> {
  const cached = await services.liveCache.get(key)
  if (cached) return cached.body as unknown as T
  try {
    const answer = await build()
    await services.liveCache.put(key, { body: answer as unknown as Record<string, unknown>, ttl: LIVE_SECONDS })
    return answer
  } catch (err) {
    if (err instanceof GoogleError) throw new ApiError(err.grantRevoked ? 409 : 503, `GA4's Realtime API: ${err.message}`)
    throw err
  }
}

export async function ga4Live(services: Ga4LiveDeps, site: Site): Promise<Ga4Live> {
  return cachedLive(services, `ga4-live|${site.id}`, async () => {
    const ask = await liveSession(services, site)
    const window = (startMinutesAgo: number) =>
      ask({ minuteRanges: [{ startMinutesAgo, endMinutesAgo: 0 }], metrics: METRICS, returnPropertyQuota: true })
    // the first call refreshes the access token if it must; the other two reuse it
    const five = await window(4)
    const [thirty, series] = await Promise.all([
      window(29),
      ask({
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
    return { now: total(five), halfHour: total(thirty), perMinute }
  })
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
export async function ga4RealtimeReads(services: Ga4LiveDeps, site: Site, query: Query, minutes: ResolvedRange, now: Date) {
  refuseFilters(query)
  const live = await ga4Live(services, site)
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
export async function ga4RealtimeTotals(services: Ga4LiveDeps, site: Site, query: Query) {
  refuseFilters(query)
  const { now } = await ga4Live(services, site)
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
export async function ga4RealtimeSeries(services: Ga4LiveDeps, site: Site, query: Query, now: Date) {
  refuseFilters(query)
  return liveSeries(await ga4Live(services, site), query.range, now)
}

/** The Realtime API dimension of each property a realtime breakdown of the ga4 source takes, and the imported column whose values it matches. */
const LIVE_PROPERTIES: Record<string, { ga4: string; column: string }> = {
  country: { ga4: 'countryId', column: 'country' },
  city: { ga4: 'city', column: 'city' },
  device: { ga4: 'deviceCategory', column: 'device' },
  event: { ga4: 'eventName', column: 'event' },
}

/**
 * A breakdown of `range=realtime` on a ga4 read: active users and views of the last 5 minutes per
 * value of the property, from the Realtime API (which has countries, cities, devices and event
 * names, but no pages or traffic sources). Values are named as the import names them.
 */
export async function ga4RealtimeBreakdown(services: Ga4LiveDeps, site: Site, query: Query, property: string): Promise<BreakdownRow[]> {
  refuseFilters(query)
  const live = LIVE_PROPERTIES[property]
  if (!live)
    throw new ApiError(
      400,
      `property: GA4's Realtime API reports no ${property}; a realtime breakdown of the ga4 source takes ${Object.keys(LIVE_PROPERTIES).join(', ')}`,
    )
  const rows = await cachedLive(services, `ga4-live|${site.id}|${property}`, async () => {
    const ask = await liveSession(services, site)
    const answer = await ask({
      minuteRanges: [{ startMinutesAgo: 4, endMinutesAgo: 0 }],
      dimensions: [{ name: live.ga4 }],
      metrics: [...METRICS, { name: 'eventCount' }],
      limit: 10_000,
    })
    // values that name alike once normalized ('(not set)' is no value) are one row
    const byValue = new Map<string, { visitors: number; pageviews: number; events: number }>()
    for (const row of answer.rows ?? []) {
      const value = normalizeValue(live.column, row.dimensionValues?.[0]?.value ?? '')
      const [users, views, events] = (row.metricValues ?? []).map((m) => number(m.value))
      const sum = byValue.get(value) ?? { visitors: 0, pageviews: 0, events: 0 }
      byValue.set(value, {
        visitors: sum.visitors + (users ?? 0),
        pageviews: sum.pageviews + (views ?? 0),
        events: sum.events + (events ?? 0),
      })
    }
    return [...byValue].map(([value, sums]) => ({ value, ...sums }))
  })
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
