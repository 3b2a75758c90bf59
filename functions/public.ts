import { z } from 'zod'
import { LIVE_WINDOWS, type LiveAnswer, liveParams } from '../lib/operations/public-live'
import { publicLiveCount, repeatedLiveCount } from '../lib/operations/public-live-count'
import { TRACKER_FILES } from '../lib/tracker/bundle.generated'
import { SerializedAnswer, defineEndpoint } from './endpoint'

// answers are serialized once per cache entry: a repeat sends the same text and headers
const serialized = new WeakMap<LiveAnswer, SerializedAnswer>()
function answer(live: LiveAnswer) {
  let prepared = serialized.get(live)
  if (prepared === undefined) {
    // Access-Control-Allow-Origin comes from the hot path's transport, as on every /api answer
    const headers = { 'Content-Type': 'application/json', 'Cache-Control': `public, max-age=${live.ttl}` }
    serialized.set(live, (prepared = new SerializedAnswer(JSON.stringify(live.body), headers)))
  }
  return prepared
}

const liveAnswerSchema = z.object({
  site: z.string(),
  range: z.string(),
  from: z.string(),
  to: z.string(),
  visitors: z.number(),
  visits: z.number(),
  pageviews: z.number(),
  halfHour: z.number().optional().describe('Visitors in the last 30 minutes; only on the live count asked without a range'),
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
    hotPath: true,
    // a repeat within the TTL is answered before validation
    validatesOwnInput: true,
    params: z
      .object({
        site: liveParams.shape.site.describe('The public snippet id'),
        range: liveParams.shape.range.describe(`Omit for the live count; ${LIVE_WINDOWS.join(' or ')} for a live window`),
        from: liveParams.shape.from.describe('YYYY-MM-DD, with range=custom'),
        to: liveParams.shape.to.describe('YYYY-MM-DD, with range=custom (included)'),
      })
      .partial(),
    response: liveAnswerSchema,
    handler({ services, request }) {
      // the query alone: parsing the whole URL is a measurable share of a cached answer
      const q = request.url.indexOf('?')
      const query = q < 0 ? '' : request.url.slice(q + 1)
      // a repeat within the TTL is answered at once, without a promise
      const repeat = repeatedLiveCount(services, query)
      return repeat ? answer(repeat) : publicLiveCount(services, new URLSearchParams(query)).then(answer)
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
        headers: {
          'Cache-Control': 'public, max-age=3600, stale-while-revalidate=86400',
          'Access-Control-Allow-Origin': '*',
          'Content-Type': 'application/javascript; charset=utf-8',
        },
      })
    },
  }),
]
