import type { OperationServices } from './operation-services'
import { ApiError, describeZodError } from '../core/errors'
import { firstEventAt } from '../reports/query/site-events'
import { rangeView, resolveRange } from '../reports/query/range'
import type { Site } from '../sites/sites'
import { ga4LiveCounts } from '../integrations/ga4/realtime'
import {
  DISTINCT_WINDOWS_PER_MINUTE,
  LIVE_TTL_SECONDS,
  type LiveAnswer,
  NOT_FOUND,
  dialAdmits,
  isLive,
  liveCounts,
  liveParams,
  liveWindow,
} from './public-live'

/** A query as a repeat reads it: its snippet, and its cache key under the site's settings when it was first read. */
interface AskedQuery {
  snippet: string
  siteId: string
  publicCounts: boolean
  dial: string
  key: string
}

/** Per set of services: concurrent misses in flight, each site's first event (it bounds `all`), and the queries repeats asked. */
const perServices = new WeakMap<
  OperationServices,
  {
    inflight: Map<string, Promise<LiveAnswer>>
    firstEvents: Map<string, { at: Date | null; until: number }>
    askedQueries: Map<string, AskedQuery>
  }
>()

function liveState(services: OperationServices) {
  let state = perServices.get(services)
  if (!state) perServices.set(services, (state = { inflight: new Map(), firstEvents: new Map(), askedQueries: new Map() }))
  return state
}

// a site's first event bounds `all`; it moves only when older data is imported
async function firstEvent(services: OperationServices, siteId: string) {
  const { firstEvents } = liveState(services)
  const cached = firstEvents.get(siteId)
  if (cached && cached.until > Date.now()) return cached.at
  const at = await firstEventAt(services.clickhouse, siteId)
  if (firstEvents.size > 10_000) firstEvents.clear()
  firstEvents.set(siteId, { at, until: Date.now() + 60_000 })
  return at
}

/** The answer under the range name that was asked: an equal window may be cached under another name (ytd and year). */
function asAsked(live: LiveAnswer, name: string, explicitRange: boolean): LiveAnswer {
  // halfHour rides on the live count asked without a range only (spec 4.7 rule 2): an explicit
  // range, 5m and realtime too, answers that window alone
  const dropHalfHour = explicitRange && 'halfHour' in live.body
  if (live.body.range === name && !dropHalfHour) return live
  const { halfHour, ...rest } = live.body
  return { ...live, body: { ...rest, range: name, ...(dropHalfHour || halfHour === undefined ? {} : { halfHour }) } }
}

/**
 * The question as asked, under the site's current dial: a repeat within the TTL is answered
 * before validation and range arithmetic (it was valid and admitted when first answered).
 */
const askedKey = (site: Site, query: URLSearchParams) =>
  `asked|${site.id}|${site.sharing.publicCounts}|${site.sharing.publicCountsDial}|${query.get('range') ?? ''}|${query.get('from') ?? ''}|${query.get('to') ?? ''}`

/**
 * The cached answer to a repeat, when the site's record and the answer are both at hand without
 * waiting (in process on Node); undefined otherwise, and publicLiveCount answers. Answered this
 * way, the request is served in the turn it came in: no promise between the request and its write.
 * `query` is the URL's query as sent: a query read before is not parsed again, nor its key made
 * again, while the site's settings are those it was read under.
 */
export function repeatedLiveCount(services: OperationServices, query: string): LiveAnswer | undefined {
  if (!services.liveCache.peek) return undefined
  const { askedQueries } = liveState(services)
  let asked = askedQueries.get(query)
  let site = asked && services.sites.cachedBySnippet(asked.snippet)
  if (
    !asked ||
    !site ||
    site.id !== asked.siteId ||
    site.sharing.publicCounts !== asked.publicCounts ||
    site.sharing.publicCountsDial !== asked.dial
  ) {
    const params = new URLSearchParams(query)
    const snippet = params.get('site')
    site = snippet ? services.sites.cachedBySnippet(snippet) : undefined
    if (!snippet || !site) return undefined
    const { publicCounts, publicCountsDial: dial } = site.sharing
    asked = { snippet, siteId: site.id, publicCounts, dial, key: askedKey(site, params) }
    if (askedQueries.size > 10_000) askedQueries.clear()
    askedQueries.set(query, asked)
  }
  return services.liveCache.peek(asked.key)
}

/**
 * GET /api/public/live: a site's public count for the question `query` asks. Polled by every
 * visitor of every page with a badge: answers are cached for their TTL, concurrent misses share
 * one engine query, and unknown, unpublished and out-of-dial questions all get the same 404.
 */
export async function publicLiveCount(services: OperationServices, query: URLSearchParams): Promise<LiveAnswer> {
  const coalesce = services.sharedProcess === true
  const { inflight } = liveState(services)
  const snippet = query.get('site')
  const site = snippet ? await services.sites.bySnippet(snippet) : null
  const asked = site && askedKey(site, query)
  const repeat = asked ? await services.liveCache.get(asked) : undefined
  if (repeat) return repeat

  const parsed = liveParams.safeParse(Object.fromEntries(query))
  if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'query'))
  const params = parsed.data
  const now = services.now()
  // a bad range or missing custom dates is 400 whatever the site
  resolveRange({ range: params.range ?? '5m', from: params.from, to: params.to }, 'UTC', now)
  if (!site?.sharing.publicCounts || !asked) throw NOT_FOUND
  const range = liveWindow(params, site, now, params.range === 'all' ? await firstEvent(services, site.id) : null)
  if (!dialAdmits(site.sharing.publicCountsDial, range, now)) throw NOT_FOUND

  // live windows move every instant: their question is the window name; periods are day-aligned
  const view = rangeView(range)
  const key = isLive(range.name) ? `${site.id}|${range.name === 'realtime' ? '5m' : range.name}` : `${site.id}|${view.from}|${view.to}`
  const shared = () => (coalesce ? inflight.get(key) : undefined)
  let pending = shared()
  const explicitRange = params.range !== undefined
  if (pending) return asAsked(await pending, range.name, explicitRange)
  const cached = await services.liveCache.get(key)
  if (cached) {
    const named = asAsked(cached, range.name, explicitRange)
    await services.liveCache.put(asked, named)
    return named
  }
  // checked again with no await in between: every concurrent miss joins the first one's work
  pending = shared()
  if (pending) return asAsked(await pending, range.name, explicitRange)
  const work = (async () => {
    // the live windows are the badge's own question: asking many other windows never shuts it off
    if (!isLive(range.name)) {
      const count = await services.repositories.liveWindows.count(site.id, Math.floor(now.getTime() / 60_000))
      const retryAfter = String(60 - Math.floor((now.getTime() % 60_000) / 1000))
      if (count > DISTINCT_WINDOWS_PER_MINUTE)
        throw new ApiError(429, 'too many distinct windows asked of this site this minute; cached windows are still served', {
          'Retry-After': retryAfter,
        })
    }
    // a ga4-primary site's live windows come from GA4's Realtime API
    const live =
      site.primarySource === 'ga4' && isLive(range.name)
        ? { body: await ga4LiveCounts(services, site, range), ttl: LIVE_TTL_SECONDS }
        : await liveCounts(services.clickhouse, site, range, now)
    // the shared window keeps halfHour for the callers that ask without a range
    await Promise.all([services.liveCache.put(key, live), services.liveCache.put(asked, asAsked(live, range.name, explicitRange))])
    return live
  })()
  if (coalesce) {
    inflight.set(key, work)
    work.finally(() => inflight.delete(key)).catch(() => {})
  }
  return asAsked(await work, range.name, explicitRange)
}
