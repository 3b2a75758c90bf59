import { ApiError } from '../../core/errors'
import type { GoogleDeps } from '../google/session'
import type { GoogleConfig } from '../google/config'
import type { Site } from '../../sites/sites'
import { GOOGLE_NOT_CONFIGURED } from '../google/config'
import { GoogleError } from '../google/oauth'
import { GoogleSession } from '../google/session'
import { runRealtimeReport } from './client'
import { normalizeValue } from '../../reports/query/ga4-datasets'
import type { Ga4Live, LiveRow, LiveSource } from '../../reports/query/ga4-live'
import { type ResolvedRange, rangeView } from '../../reports/query/range'

/**
 * The live numbers of a ga4 site, from GA4's Realtime API (`:runRealtimeReport`): active users
 * and views over the last 5 and 30 minutes (distinct users over each window, asked as one
 * minute range each) and per minute (`minutesAgo`). Kept for the live count's 10 seconds, so
 * badges and dashboards polling a site share one set of calls.
 */

const LIVE_SECONDS = 10
const METRICS = [{ name: 'activeUsers' }, { name: 'screenPageViews' }]

/** What the live reads need: the Google connection's, and the live count's cache (lib/operations/public-live.ts, named by its shape here). */
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

async function ga4Live(services: Ga4LiveDeps, site: Site): Promise<Ga4Live> {
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

/** The Realtime API dimension of each property a realtime breakdown of the ga4 source takes, and the imported column whose values it matches. */
const LIVE_PROPERTIES: Record<string, { ga4: string; column: string }> = {
  country: { ga4: 'countryId', column: 'country' },
  city: { ga4: 'city', column: 'city' },
  device: { ga4: 'deviceCategory', column: 'device' },
  event: { ga4: 'eventName', column: 'event' },
}

/**
 * The rows of a realtime breakdown of a ga4 read: active users and views of the last 5 minutes per
 * value of the property, from the Realtime API (which has countries, cities, devices and event
 * names, but no pages or traffic sources). Values are named as the import names them.
 */
async function liveBreakdown(services: Ga4LiveDeps, site: Site, property: string): Promise<LiveRow[]> {
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
  return rows
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

/** GA4's Realtime API as the reports read it (the port of lib/reports/query/ga4-live.ts), over the app's services. */
export function ga4LiveSource(services: Ga4LiveDeps): LiveSource {
  return { live: (site) => ga4Live(services, site), breakdown: (site, property) => liveBreakdown(services, site, property) }
}
