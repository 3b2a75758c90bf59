import { z } from 'zod'
import { type Endpoint, GROUPS, isJsonAnswer, pathParamNames } from './endpoint'

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[] }

/** JSON Schema of what a client sends (input side of transforms and defaults). */
export function inputSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema
  return tidy(rest, false) as JsonSchema
}

/** JSON Schema of what a client receives, with examples a reader recognises. */
export function outputSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema
  return tidy(rest, true) as JsonSchema
}

/**
 * The example of a number by the name of its field, for the answers the reference page shows:
 * without one a generated example is 0, or the bound of the range.
 */
const NUMBER_EXAMPLES: Record<string, number> = {
  visitors: 1240,
  visits: 1583,
  pageviews: 4127,
  events: 312,
  bounceRate: 0.42,
  avgDuration: 74.5,
  viewsPerVisit: 2.6,
  conversions: 48,
  conversionRate: 0.031,
  revenue: 1250.5,
  samples: 860,
  score: 87.5,
  good: 0.78,
  needsImprovement: 0.15,
  poor: 0.07,
  share: 0.24,
  count: 37,
  pages: 58,
  percentile: 75,
}

/** The same for a few strings a reader would otherwise see as "string". */
const STRING_EXAMPLES: Record<string, string> = { domain: 'example.com', timezone: 'Europe/Berlin', path: '/pricing' }

/**
 * Zod's ±2^53-1 bounds of a plain integer say nothing a reader needs and make generated examples
 * absurd (visitors: 9007199254740991): dropped. Answers get examples by field name.
 */
function tidy(schema: unknown, examples: boolean, name?: string): unknown {
  if (Array.isArray(schema)) return schema.map((item) => tidy(item, examples, name))
  if (typeof schema !== 'object' || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if ((key === 'minimum' || key === 'maximum') && Math.abs(value as number) === Number.MAX_SAFE_INTEGER) continue
    out[key] =
      key === 'properties'
        ? Object.fromEntries(Object.entries(value as object).map(([field, inner]) => [field, tidy(inner, examples, field)]))
        : tidy(value, examples, key === 'anyOf' || key === 'oneOf' || key === 'items' ? name : undefined)
  }
  const numeric = [out.type].flat().some((type) => type === 'number' || type === 'integer')
  if (examples && numeric && name && name in NUMBER_EXAMPLES && out.example === undefined) out.example = NUMBER_EXAMPLES[name]
  if (examples && out.type === 'string' && !out.enum && name && name in STRING_EXAMPLES && out.example === undefined)
    out.example = STRING_EXAMPLES[name]
  return out
}

/** Path, query and body parameters merged into one object schema: what an MCP tool takes. */
export function toolInputSchema(endpoint: Endpoint): JsonSchema {
  const params = endpoint.params ? inputSchema(endpoint.params) : { type: 'object', properties: {} }
  const body = endpoint.body ? inputSchema(endpoint.body) : { properties: {}, required: [] }
  return {
    type: 'object',
    properties: { ...params.properties, ...body.properties },
    required: [...new Set([...(params.required ?? []), ...(body.required ?? [])])],
  }
}

/** The machine-readable index at GET /api/v1. */
export function endpointIndex(endpoints: Endpoint[]) {
  return {
    version: 'v1',
    authentication: 'Authorization: Bearer <API_KEY> (or x-api-key). read keys call every GET; write keys also change state.',
    openapi: '/api/v1/openapi.json',
    mcp: '/api/mcp',
    endpoints: endpoints.map((e) => ({
      method: e.method,
      path: e.path,
      scope: e.scope,
      tool: e.tool,
      summary: e.summary,
      description: e.description ?? e.summary,
      parameters: e.params ? inputSchema(e.params) : null,
      body: e.body ? inputSchema(e.body) : null,
      status: e.status ?? 200,
      response: isJsonAnswer(e.response)
        ? outputSchema(e.response)
        : { mediaType: e.response.mediaType, description: e.response.description },
    })),
  }
}

const SECTION_DESCRIPTIONS: Record<keyof typeof GROUPS, string> = {
  reports: 'Visitors, pageviews and the rest by range, breakdowns, goals, funnels, segments, places and web vitals.',
  behaviour: 'What visitors do: clicks, errors, custom properties, flows, journeys and the live activity tape.',
  pages: 'The page inventory from the crawler, detected changes with word diffs, launches, fading pages and one page in detail.',
  why: 'Anomalies, spikes and their sources, chart markers and annotations.',
  settings: 'Sites and their settings, install checks, ingest keys, custom domains, reports and alerts, imports.',
  team: 'The organization, its members and invitations, its API keys.',
  tracking: 'What the tracker and servers send, and the public live count: no key needed.',
  meta: 'Who a key is, the vocabulary of dimensions, this index, the OpenAPI document, health and the MCP server.',
}

const errorResponse = (description: string, example: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { error: example } } },
})

/** An OpenAPI 3.1 document from the same declarations. */
export function openApiDocument(endpoints: Endpoint[], serverUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const e of endpoints) {
    const inPath = new Set(pathParamNames(e.path))
    const params = e.params ? inputSchema(e.params) : { properties: {}, required: [] }
    const required = new Set(params.required ?? [])
    const parameters = Object.entries(params.properties ?? {}).map(([name, schema]) => ({
      name,
      in: inPath.has(name) ? 'path' : 'query',
      required: inPath.has(name) || required.has(name),
      description: typeof schema.description === 'string' ? schema.description : undefined,
      schema,
    }))
    const success = String(e.status ?? 200)
    const answer = isJsonAnswer(e.response)
      ? { description: 'Success', content: { 'application/json': { schema: outputSchema(e.response) } } }
      : {
          description: e.response.description,
          ...(e.response.mediaType ? { content: { [e.response.mediaType]: { schema: { type: 'string' } } } } : {}),
        }
    paths[e.path] ??= {}
    paths[e.path][e.method.toLowerCase()] = {
      operationId: e.tool ?? `${e.method.toLowerCase()}_${e.path.replace(/\W+/g, '_').replace(/^_|_$/g, '')}`,
      summary: e.summary,
      description: e.description ?? e.summary,
      tags: [GROUPS[e.group ?? 'meta']],
      ...(e.scope === 'public' ? { security: [] } : { 'x-scope': e.scope }),
      parameters,
      ...(e.body ? { requestBody: { required: true, content: { 'application/json': { schema: inputSchema(e.body) } } } } : {}),
      responses: {
        [success]: answer,
        '400': errorResponse('Bad input; the message names the parameter', 'range: must be one of realtime, today, yesterday, 7d, ...'),
        ...(e.scope === 'public'
          ? {}
          : {
              '401': errorResponse('Missing or invalid key', 'missing API key: send Authorization: Bearer <API_KEY>'),
              '403': errorResponse('Key scope too small', 'this endpoint needs a write-scoped key; this key is read-only'),
              '404': errorResponse('Site not found for this key', 'site not found'),
              '429': errorResponse(
                'Rate limited; see Retry-After and RateLimit-* headers',
                'rate limit exceeded: 600 requests per minute for this key',
              ),
            }),
      },
    }
  }
  return {
    openapi: '3.1.0' as const,
    info: { title: 'Web analytics API', version: '1.0.0', description: 'Reporting and settings API. Every error is {"error": "..."}.' },
    servers: [{ url: serverUrl }],
    // the sections in the order people come for them (Swagger UI follows this order)
    tags: Object.entries(GROUPS).map(([toolset, name]) => ({ name, description: SECTION_DESCRIPTIONS[toolset as keyof typeof GROUPS] })),
    security: [{ bearer: [] }, { apiKeyHeader: [] }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key' },
      },
      schemas: { Error: { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } },
    },
    paths,
  }
}
