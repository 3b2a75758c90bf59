import type { Hono } from 'hono'
import { describeZodError } from '../lib/registry'
import { ApiError } from '../lib/errors'
import { DISTINCT_WINDOWS_PER_MINUTE, type LiveAnswer, NOT_FOUND, dialAdmits, isLive, liveCounts, liveParams, liveWindow } from '../lib/public-live'
import { firstEventAt } from '../lib/query/prepare'
import { rangeView, resolveRange } from '../lib/query/range'
import type { Services } from '../lib/services'
import { TRACKER_FILES } from '../lib/tracker/bundle.generated'

/**
 * The keyless public live count and its badge script. Polled by every visitor of every page with
 * a badge: answers are cached for their TTL, concurrent misses share one engine query, and
 * unknown, unpublished and out-of-dial questions all get the same 404.
 */
export function mountPublic(app: Hono, services: Services) {
  const coalesce = services.sharedProcess === true
  const inflight = new Map<string, Promise<LiveAnswer>>()
  // a site's first event bounds `all`; it moves only when older data is imported
  const firstEvents = new Map<string, { at: Date | null; until: number }>()
  const firstEvent = async (siteId: string) => {
    const cached = firstEvents.get(siteId)
    if (cached && cached.until > Date.now()) return cached.at
    const at = await firstEventAt(services.olap, siteId)
    if (firstEvents.size > 10_000) firstEvents.clear()
    firstEvents.set(siteId, { at, until: Date.now() + 60_000 })
    return at
  }

  // answers are serialized once per cache entry, and sent without re-merging headers
  const serialized = new WeakMap<LiveAnswer, string>()
  const answer = (live: LiveAnswer) => {
    let text = serialized.get(live)
    if (text === undefined) serialized.set(live, (text = JSON.stringify(live.body)))
    return new Response(text, {
      headers: { 'Content-Type': 'application/json', 'Cache-Control': `public, max-age=${live.ttl}`, 'Access-Control-Allow-Origin': '*' },
    })
  }

  app.get('/api/public/live', async (c) => {
    c.header('Access-Control-Allow-Origin', '*')
    // the question as asked, under the site's current dial: a repeat within the TTL is answered
    // before validation and range arithmetic (it was valid and admitted when first answered)
    const query = new URL(c.req.url).searchParams
    const snippet = query.get('site')
    const site = snippet ? await services.sites.bySnippet(snippet) : null
    const asked = site && `asked|${site.id}|${site.sharing.publicCounts}|${site.sharing.publicCountsDial}|${query.get('range') ?? ''}|${query.get('from') ?? ''}|${query.get('to') ?? ''}`
    const repeat = asked ? await services.liveCache.get(asked) : undefined
    if (repeat) return answer(repeat)

    const parsed = liveParams.safeParse(c.req.query())
    if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'query'))
    const params = parsed.data
    const now = services.now()
    // a bad range or missing custom dates is 400 whatever the site
    resolveRange({ range: params.range ?? '5m', from: params.from, to: params.to }, 'UTC', now)
    if (!site || !site.sharing.publicCounts || !asked) throw NOT_FOUND
    const range = liveWindow(params, site, now, params.range === 'all' ? await firstEvent(site.id) : null)
    if (!dialAdmits(site.sharing.publicCountsDial, range, now)) throw NOT_FOUND

    // live windows move every instant: their question is the window name; periods are day-aligned
    const view = rangeView(range)
    const key = isLive(range.name) ? `${site.id}|${range.name === 'realtime' ? '5m' : range.name}` : `${site.id}|${view.from}|${view.to}`
    const shared = () => (coalesce ? inflight.get(key) : undefined)
    let pending = shared()
    if (pending) return answer(await pending)
    const cached = await services.liveCache.get(key)
    if (cached) {
      await services.liveCache.put(asked, cached)
      return answer(cached)
    }
    // checked again with no await in between: every concurrent miss joins the first one's work
    pending = shared()
    if (pending) return answer(await pending)
    const work = (async () => {
      const count = await services.store.countLiveWindow(site.id, Math.floor(now.getTime() / 60_000))
      if (count > DISTINCT_WINDOWS_PER_MINUTE) throw new ApiError(429, 'too many distinct windows asked of this site this minute; cached windows are still served', { 'Retry-After': '60' })
      const live = await liveCounts(services.olap, site, range, now)
      await Promise.all([services.liveCache.put(key, live), services.liveCache.put(asked, live)])
      return live
    })()
    if (coalesce) {
      inflight.set(key, work)
      work.finally(() => inflight.delete(key)).catch(() => {})
    }
    return answer(await work)
  })

  app.get('/live.js', (c) => {
    c.header('Cache-Control', 'public, max-age=3600, stale-while-revalidate=86400')
    c.header('Access-Control-Allow-Origin', '*')
    c.header('Content-Type', 'application/javascript; charset=utf-8')
    return c.body(TRACKER_FILES.live.code)
  })
}
