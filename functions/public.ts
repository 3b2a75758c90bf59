import { z } from 'zod'
import { ApiError } from '../lib/errors'
import { DISTINCT_WINDOWS_PER_MINUTE, LIVE_WINDOWS, type LiveAnswer, NOT_FOUND, dialAdmits, isLive, liveCounts, liveParams, liveWindow } from '../lib/sites/public-live'
import { firstEventAt } from '../lib/reports/query/site-events'
import { rangeView, resolveRange } from '../lib/reports/query/range'
import type { Services } from '../lib/services'
import { TRACKER_FILES } from '../lib/tracker/bundle.generated'
import { defineEndpoint, describeZodError } from './endpoint'

/** Per set of services: concurrent misses in flight, and each site's first event (it bounds `all`). */
const perServices = new WeakMap<Services, { inflight: Map<string, Promise<LiveAnswer>>; firstEvents: Map<string, { at: Date | null; until: number }> }>()

function liveState(services: Services) {
  let state = perServices.get(services)
  if (!state) perServices.set(services, (state = { inflight: new Map(), firstEvents: new Map() }))
  return state
}

// a site's first event bounds `all`; it moves only when older data is imported
async function firstEvent(services: Services, siteId: string) {
  const { firstEvents } = liveState(services)
  const cached = firstEvents.get(siteId)
  if (cached && cached.until > Date.now()) return cached.at
  const at = await firstEventAt(services.olap, siteId)
  if (firstEvents.size > 10_000) firstEvents.clear()
  firstEvents.set(siteId, { at, until: Date.now() + 60_000 })
  return at
}

/** The answer under the range name that was asked: an equal window may be cached under another name (ytd and year). */
function asAsked(live: LiveAnswer, name: string): LiveAnswer {
  return live.body.range === name ? live : { ...live, body: { ...live.body, range: name } }
}

// answers are serialized once per cache entry, and sent without re-merging headers
const serialized = new WeakMap<LiveAnswer, string>()
function answer(live: LiveAnswer) {
  let text = serialized.get(live)
  if (text === undefined) serialized.set(live, (text = JSON.stringify(live.body)))
  return new Response(text, {
    headers: { 'Content-Type': 'application/json', 'Cache-Control': `public, max-age=${live.ttl}`, 'Access-Control-Allow-Origin': '*' },
  })
}

const liveAnswerSchema = z.object({
  site: z.string(),
  range: z.string(),
  from: z.string(),
  to: z.string(),
  visitors: z.number(),
  visits: z.number(),
  pageviews: z.number(),
  halfHour: z.number().optional().describe('Visitors in the last 30 minutes; live counts only'),
})

/**
 * The keyless public live count and its badge script. Polled by every visitor of every page with
 * a badge: answers are cached for their TTL, concurrent misses share one engine query, and
 * unknown, unpublished and out-of-dial questions all get the same 404.
 */
export const publicEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/public/live',
    scope: 'public',
    tool: null,
    summary: "A site's public visitor count: live (the last 5 minutes, plus halfHour) or a period, humans only, from the primary source.",
    description:
      'No key. The site must publish its counts (publicCounts), and its dial (publicCountsDial) bounds the windows it answers; unknown, unpublished and out-of-dial questions are the same 404. Cached 10 s (live) or 60 s (periods). A site answers a limited number of distinct uncached windows a minute (429 past it; cached windows are still served).',
    // a repeat within the TTL is answered before validation
    validatesOwnInput: true,
    params: z.object({
      site: liveParams.shape.site.describe('The public snippet id'),
      range: liveParams.shape.range.describe(`Omit for the live count; ${LIVE_WINDOWS.join(' or ')} for a live window`),
      from: liveParams.shape.from.describe('YYYY-MM-DD, with range=custom'),
      to: liveParams.shape.to.describe('YYYY-MM-DD, with range=custom (included)'),
    }).partial(),
    response: liveAnswerSchema,
    async handler({ services, request }) {
      const coalesce = services.sharedProcess === true
      const { inflight } = liveState(services)
      // the question as asked, under the site's current dial: a repeat within the TTL is answered
      // before validation and range arithmetic (it was valid and admitted when first answered)
      const query = new URL(request.url).searchParams
      const snippet = query.get('site')
      const site = snippet ? await services.sites.bySnippet(snippet) : null
      const asked = site && `asked|${site.id}|${site.sharing.publicCounts}|${site.sharing.publicCountsDial}|${query.get('range') ?? ''}|${query.get('from') ?? ''}|${query.get('to') ?? ''}`
      const repeat = asked ? await services.liveCache.get(asked) : undefined
      if (repeat) return answer(repeat)

      const parsed = liveParams.safeParse(Object.fromEntries(query))
      if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'query'))
      const params = parsed.data
      const now = services.now()
      // a bad range or missing custom dates is 400 whatever the site
      resolveRange({ range: params.range ?? '5m', from: params.from, to: params.to }, 'UTC', now)
      if (!site || !site.sharing.publicCounts || !asked) throw NOT_FOUND
      const range = liveWindow(params, site, now, params.range === 'all' ? await firstEvent(services, site.id) : null)
      if (!dialAdmits(site.sharing.publicCountsDial, range, now)) throw NOT_FOUND

      // live windows move every instant: their question is the window name; periods are day-aligned
      const view = rangeView(range)
      const key = isLive(range.name) ? `${site.id}|${range.name === 'realtime' ? '5m' : range.name}` : `${site.id}|${view.from}|${view.to}`
      const shared = () => (coalesce ? inflight.get(key) : undefined)
      let pending = shared()
      if (pending) return answer(asAsked(await pending, range.name))
      const cached = await services.liveCache.get(key)
      if (cached) {
        const named = asAsked(cached, range.name)
        await services.liveCache.put(asked, named)
        return answer(named)
      }
      // checked again with no await in between: every concurrent miss joins the first one's work
      pending = shared()
      if (pending) return answer(asAsked(await pending, range.name))
      const work = (async () => {
        // the live windows are the badge's own question: asking many other windows never shuts it off
        if (!isLive(range.name)) {
          const count = await services.store.countLiveWindow(site.id, Math.floor(now.getTime() / 60_000))
          const retryAfter = String(60 - Math.floor((now.getTime() % 60_000) / 1000))
          if (count > DISTINCT_WINDOWS_PER_MINUTE) throw new ApiError(429, 'too many distinct windows asked of this site this minute; cached windows are still served', { 'Retry-After': retryAfter })
        }
        const live = await liveCounts(services.olap, site, range, now)
        await Promise.all([services.liveCache.put(key, live), services.liveCache.put(asked, live)])
        return live
      })()
      if (coalesce) {
        inflight.set(key, work)
        work.finally(() => inflight.delete(key)).catch(() => {})
      }
      return answer(await work)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/live.js',
    scope: 'public',
    tool: null,
    summary: 'The badge script: fills elements with data-svc-live="<snippet id>" with the public count.',
    response: { mediaType: 'application/javascript', description: 'The script' },
    async handler() {
      return new Response(TRACKER_FILES.live.code, {
        headers: { 'Cache-Control': 'public, max-age=3600, stale-while-revalidate=86400', 'Access-Control-Allow-Origin': '*', 'Content-Type': 'application/javascript; charset=utf-8' },
      })
    },
  }),
]
