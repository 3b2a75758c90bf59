import { z } from 'zod'
import { ApiError } from '../lib/core/errors'
import { storesHealth } from '../lib/storage/health'
import { COLLECTOR_STALL_SECONDS } from '../lib/ingest/recover'
import { collectorEndpoints } from './collector'
import { alertEndpoints } from './v1/alerts'
import { memberEndpoints } from './v1/members'
import { installEndpoints } from './v1/install'
import { customDomainEndpoints } from './v1/custom-domain'
import { type Endpoint, type Group, defineEndpoint } from './endpoint'
import { mcpDiscoveryEndpoints, mcpEndpoint } from './mcp'
import { endpointIndex, openApiDocument } from './openapi'
import { publicEndpoints } from './public'
import { annotationEndpoints } from './v1/annotations'
import { funnelEndpoints } from './v1/funnels'
import { referencePageEndpoints } from './reference-page'
import { behaviourEndpoints } from './v1/behaviour'
import { heatmapEndpoints } from './v1/heatmap'
import { vitalEndpoints } from './v1/vitals'
import { crawlEndpoints } from './v1/crawl'
import { geoEndpoints } from './v1/geo'
import { aiEndpoints } from './v1/ai'
import { goalEndpoints } from './v1/goals'
import { importEndpoints } from './v1/imports'
import { ga4Endpoints } from './v1/ga4'
import { searchConsoleEndpoints } from './v1/search-console'
import { journeyEndpoints } from './v1/journeys'
import { ingestEndpoints } from './v1/ingest'
import { metaEndpoints } from './v1/meta'
import { orgEndpoints } from './v1/org'
import { reportEndpoints } from './v1/reports'
import { searchEndpoints } from './v1/search'
import { segmentEndpoints } from './v1/segments'
import { siteFactEndpoints } from './v1/site-facts'
import { siteEndpoints } from './v1/sites'
import { whyEndpoints } from './v1/why'
import { backlinkEndpoints } from './v1/backlinks'
import { plausibleQueryEndpoints } from './v2/query'

const collectorSchema = z
  .object({
    status: z.enum(['ok', 'stalled']),
    pendingRows: z.number().int().describe('Rows acknowledged and not yet stored'),
    oldestPendingSeconds: z.number().int().describe('How long the oldest of them has waited'),
    lastInsertError: z
      .object({ at: z.string(), message: z.string() })
      .optional()
      .describe('The last failure to store them, while no flush since stored everything'),
    quarantined: z.number().int().describe('Entries set aside in the quarantine (npm run -s admin -- quarantine list)'),
  })
  .describe(`The Node server's collector: stalled once an acknowledged hit has waited more than ${COLLECTOR_STALL_SECONDS} s to be stored`)

const healthSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  clickhouse: z.enum(['ok', 'unavailable']),
  keyValue: z.enum(['ok', 'unavailable']),
  failingSince: z
    .object({ clickhouse: z.string().optional(), keyValue: z.string().optional() })
    .optional()
    .describe('When this instance first saw each failing store fail (ISO 8601)'),
  collector: collectorSchema.optional(),
})

const readySchema = z.object({
  ready: z.boolean(),
  phase: z
    .enum(['migrating', 'replaying', 'demo', 'ready'])
    .describe(
      'migrating: schema migrations run; replaying: the journal of the previous run is stored; demo: a first start makes the demo (its traffic, rollups and crawls)',
    ),
  collector: collectorSchema.optional(),
})

/** The endpoints of one group (a section of the reference page, an MCP toolset), each keeping a group its declaration names. */
const inGroup = <E extends Endpoint>(group: Group, list: E[]) => list.map((e) => ({ ...e, group: e.group ?? group }))

/** Every endpoint but MCP's own (which lists the others), each with its declared type. */
const declared = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1',
    group: 'meta',
    scope: 'public',
    tool: null,
    summary: 'This index: every endpoint with its method, path, scope, description, parameters and answer as JSON Schema.',
    response: z.object({
      version: z.string(),
      authentication: z.string(),
      openapi: z.string(),
      mcp: z.string(),
      endpoints: z.array(
        z.object({
          method: z.string(),
          path: z.string(),
          scope: z.enum(['public', 'read', 'write']),
          tool: z.string().nullable(),
          summary: z.string(),
          description: z.string(),
          parameters: z.record(z.string(), z.unknown()).nullable(),
          body: z.record(z.string(), z.unknown()).nullable(),
          status: z.number(),
          response: z.record(z.string(), z.unknown()),
        }),
      ),
    }),
    async handler() {
      return endpointIndex(endpoints)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/openapi.json',
    group: 'meta',
    scope: 'public',
    tool: null,
    summary: 'The OpenAPI 3.1 document of this API.',
    response: z.looseObject({ openapi: z.literal('3.1.0'), paths: z.record(z.string(), z.unknown()) }),
    async handler({ baseUrl }) {
      return openApiDocument(endpoints, baseUrl)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/health',
    group: 'meta',
    scope: 'public',
    tool: null,
    summary:
      'Whether ClickHouse and the key/value store answer and acknowledged hits are being stored: 200 when all is well, 503 otherwise, naming the failing store and since when, or the stalled collector with its last error.',
    response: healthSchema,
    async handler({ services }) {
      const stores = await storesHealth(services, services.now())
      const collector = services.collector?.()
      const health = collector ? { ...stores, collector } : stores
      if (collector?.status === 'stalled') health.status = 'degraded'
      return health.status === 'ok' ? health : Response.json(health, { status: 503 })
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/ready',
    group: 'meta',
    scope: 'public',
    tool: null,
    summary:
      'Whether this instance takes traffic: 503 while it applies its migrations or stores the journal of hits its previous run left, 200 after.',
    description:
      'For a load balancer or an orchestrator (a readiness probe); /health says whether the stores answer. While the migrations are applied every other request answers 503 with Retry-After; while the journal is stored the instance serves, and its reads may miss the hits of the previous run. A stalled collector is reported here too, without taking the instance out of service: it still journals every hit it acknowledges, and /health answers 503 for it.',
    response: readySchema,
    async handler({ services }) {
      const readiness = services.readiness?.() ?? { ready: true, phase: 'ready' as const }
      const collector = services.collector?.()
      const answer = collector ? { ...readiness, collector } : readiness
      return readiness.ready ? answer : Response.json(answer, { status: 503 })
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/metrics',
    group: 'meta',
    scope: 'public',
    tool: null,
    summary: 'Operations metrics in the Prometheus text format, for a scraper holding METRICS_TOKEN (the Node server only).',
    description:
      "Off unless the Node server has METRICS_TOKEN set: then a scraper sends it as `Authorization: Bearer <token>` (401 without it). Requests by route, status and duration; hits accepted, journaled, stored and dropped by reason; the journal depth and age; ClickHouse insert and query durations; key/value latency and errors; job runs and failures. Workers answer 404: their requests are in Cloudflare's own analytics.",
    response: { mediaType: 'text/plain; version=0.0.4', description: 'Prometheus text exposition format' },
    async handler({ services, request }) {
      const { metrics } = services
      if (!metrics) throw new ApiError(404, 'metrics are off: the Node server serves them at /metrics when METRICS_TOKEN is set')
      if (!(await metrics.admits(request)))
        throw new ApiError(401, 'metrics need METRICS_TOKEN as a Bearer token: Authorization: Bearer <token>')
      const { contentType, body } = await metrics.render()
      return new Response(body, { headers: { 'Content-Type': contentType, 'Cache-Control': 'no-store' } })
    },
  }),
  ...inGroup('meta', metaEndpoints),
  ...inGroup('team', [...orgEndpoints, ...memberEndpoints]),
  ...inGroup('settings', [
    ...siteEndpoints,
    ...ingestEndpoints,
    ...alertEndpoints,
    ...installEndpoints,
    ...customDomainEndpoints,
    ...siteFactEndpoints,
    ...importEndpoints,
    ...ga4Endpoints,
    ...searchConsoleEndpoints,
  ]),
  ...inGroup('reports', [
    ...reportEndpoints,
    ...goalEndpoints,
    ...funnelEndpoints,
    ...segmentEndpoints,
    ...vitalEndpoints,
    ...geoEndpoints,
    ...aiEndpoints,
    ...searchEndpoints,
    ...plausibleQueryEndpoints,
  ]),
  ...inGroup('why', [...annotationEndpoints, ...whyEndpoints, ...backlinkEndpoints]),
  ...inGroup('behaviour', [...behaviourEndpoints, ...heatmapEndpoints, ...journeyEndpoints]),
  ...inGroup('pages', crawlEndpoints),
  ...inGroup('tracking', [...collectorEndpoints, ...publicEndpoints]),
]

/**
 * The one endpoint registry: the REST routes, the index, the OpenAPI document and the MCP tools
 * all come from it. Keyless routes (the collector, the public count, MCP, health) are declared
 * here too, as `public` endpoints.
 */
export const endpoints: Endpoint[] = [
  ...declared,
  ...inGroup('meta', [mcpEndpoint(() => endpoints), ...mcpDiscoveryEndpoints, ...referencePageEndpoints]),
]

/** The registry's endpoints as declared: a method and path name one, and with it the type of its answer. */
export type Registered = (typeof declared)[number]
