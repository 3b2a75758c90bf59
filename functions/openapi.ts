import { z } from 'zod'
import { type Endpoint, isJsonAnswer, pathParamNames } from './endpoint'

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[] }

/** JSON Schema of what a client sends (input side of transforms and defaults). */
export function inputSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema
  return rest
}

/** JSON Schema of what a client receives. */
export function outputSchema(schema: z.ZodType): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema
  return rest
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

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
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
      tags: [e.path.startsWith('/api/v1') ? e.path.split('/')[3] || 'index' : 'public'],
      ...(e.scope === 'public' ? { security: [] } : { 'x-scope': e.scope }),
      parameters,
      ...(e.body ? { requestBody: { required: true, content: { 'application/json': { schema: inputSchema(e.body) } } } } : {}),
      responses: {
        [success]: answer,
        '400': errorResponse('Bad input; the message names the parameter'),
        ...(e.scope === 'public'
          ? {}
          : {
              '401': errorResponse('Missing or invalid key'),
              '403': errorResponse('Key scope too small'),
              '404': errorResponse('Site not found for this key'),
              '429': errorResponse('Rate limited; see Retry-After and RateLimit-* headers'),
            }),
      },
    }
  }
  return {
    openapi: '3.1.0' as const,
    info: { title: 'Web analytics API', version: '1.0.0', description: 'Reporting and settings API. Every error is {"error": "..."}.' },
    servers: [{ url: serverUrl }],
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
