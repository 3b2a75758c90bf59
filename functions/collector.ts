import { z } from 'zod'
import { ApiError } from '../lib/core/errors'
import { collectBrowserHit } from '../lib/ingest/browser-hit'
import { eventBodySchema } from '../lib/ingest/hit-schema'
import { TRACKER_FILES } from '../lib/tracker/bundle.generated'
import { defineEndpoint } from './endpoint'
import { traceOf } from './request-log'

const javascript = (code: string, cacheControl: string, etag: string) =>
  new Response(code, {
    headers: {
      'Content-Type': 'application/javascript; charset=utf-8',
      'Cache-Control': cacheControl,
      ETag: `"${etag}"`,
      'Access-Control-Allow-Origin': '*',
    },
  })

const files = new Map<string, { path: string; code: string }>(Object.values(TRACKER_FILES).map((f) => [f.path, f]))
const scriptEtag = TRACKER_FILES.script.path.split('.')[1]
const HASHED_FILE = /^[a-z-]+\.[0-9a-f]{12}\.js$/
/** The extensions of Plausible's script names (script.hash.outbound-links.js) that its compatible build has. */
const PLAUSIBLE_EXTENSIONS = new Set([
  'hash',
  'outbound-links',
  'file-downloads',
  'tagged-events',
  'revenue',
  'pageview-props',
  'manual',
  'local',
])
const PLAUSIBLE_FILE = /^script\.([a-z-]+\.)+js$/
/** The one drop answer of Plausible's payload, whatever the reason. */
const PLAUSIBLE_DROPPED = 'not-kept'

const plausibleEtag = TRACKER_FILES.plausible.path.split('.')[1]
const revalidated = 'public, max-age=3600, stale-while-revalidate=86400'

/** The keyless collector: the tracking script and the event endpoint. */
export const collectorEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/js/{file}',
    scope: 'public',
    tool: null,
    summary: "The tracking script (script.js, the URL of the snippet), its content-hashed parts, and Plausible's script names.",
    description:
      "script.js and Plausible's names (script.outbound-links.tagged-events.js and the like: hash, outbound-links, file-downloads, tagged-events, revenue, pageview-props, manual, local) revalidate hourly (ETag); the content-hashed files never change and are cached for a year.",
    params: z.object({
      file: z
        .string()
        .describe(
          'script.js, a Plausible script name such as script.hash.outbound-links.js, or a content-hashed file such as vitals.0123456789ab.js',
        ),
    }),
    response: { mediaType: 'application/javascript', description: 'The script' },
    async handler({ request }, { params }) {
      // the snippet's fixed URL revalidates hourly; the content-hashed copies never change
      if (params.file === 'script.js') {
        // a compressed copy was sent with the weak form of the tag (functions/compression.ts)
        if (request.headers.get('if-none-match')?.replace(/^W\//, '') === `"${scriptEtag}"`) return new Response(null, { status: 304 })
        return javascript(TRACKER_FILES.script.code, revalidated, scriptEtag)
      }
      if (PLAUSIBLE_FILE.test(params.file) && !HASHED_FILE.test(params.file)) {
        const unknown = params.file
          .split('.')
          .slice(1, -1)
          .filter((e) => !PLAUSIBLE_EXTENSIONS.has(e))
        if (unknown.length)
          throw new ApiError(404, `no such script: the extension ${unknown.map((e) => `"${e}"`).join(', ')} is not supported`)
        if (request.headers.get('if-none-match')?.replace(/^W\//, '') === `"${plausibleEtag}"`) return new Response(null, { status: 304 })
        return javascript(TRACKER_FILES.plausible.code, revalidated, plausibleEtag)
      }
      const file = HASHED_FILE.test(params.file) ? files.get(`/js/${params.file}`) : undefined
      if (!file) throw new ApiError(404, 'no such script')
      return javascript(file.code, 'public, max-age=31536000, immutable', file.path.split('.')[1])
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/event',
    scope: 'public',
    tool: null,
    summary:
      "Where the tracking script sends hits: one hit a request, as JSON (text/plain is accepted, for sendBeacon). Also takes Plausible's Events API payload.",
    description:
      "No key: the site is named by its snippet id, or in Plausible's payload by its domain (a comma list records the hit for each site; the visitor's address is the first valid one of X-Forwarded-For). Answers 202 with no body once the hit is accepted; a hit the site does not collect is accepted and dropped, and the answer's X-Dropped header says why: bot, localhost, unknown-hostname (the page is not on the site's domain, a subdomain, its custom domain or an allowed hostname), excluded-ip, excluded-path, kind-off (a switched-off kind), or not-collecting. An event in Plausible's payload that is not kept, for any reason (its domain names no site, or one whose claim is unverified, or any reason above), is answered alike: X-Dropped: not-kept and x-plausible-dropped: 1, so the answer never tells which domains are tracked. At most 64 KB.",
    hotPath: true,
    validatesOwnInput: true,
    body: eventBodySchema,
    status: 202,
    response: { mediaType: null, description: 'Accepted; no body' },
    async handler({ services, request, env }) {
      const { dropped, plausible } = await collectBrowserHit(services, request, env)
      if (!dropped) return undefined
      // a person testing an install sees why in the answer; the log says it in full at LOG_LEVEL=debug
      traceOf(request).debug({ message: 'hit dropped', dropped: dropped.code, reason: dropped.reason })
      // Plausible's payload names its site by domain: every drop is answered alike, so that no answer
      // tells a domain some organization tracks from one nobody does
      const headers: Record<string, string> = plausible
        ? { 'X-Dropped': PLAUSIBLE_DROPPED, 'x-plausible-dropped': '1' }
        : { 'X-Dropped': dropped.code }
      return new Response(null, { status: 202, headers })
    },
  }),
]
