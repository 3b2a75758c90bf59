import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { ApiError } from '../lib/errors'
import { credentialHash } from '../lib/accounts/auth'
import type { ApiKeyRecord } from '../lib/accounts/keys'
import { type Endpoint, defineEndpoint, isJsonAnswer, pathParamNames } from './endpoint'
import { admit, asApiError, identify, invoke } from './invoke'
import { outputSchema, toolInputSchema } from './openapi'

/** The tools a key may see: reads for every key, writes for write keys, org-wide tools not for site-bound keys. */
export function toolsFor(endpoints: Endpoint[], key: Pick<ApiKeyRecord, 'scope' | 'siteId'>) {
  return endpoints.filter(
    (e) => e.tool !== null && e.scope !== 'public' && (e.scope === 'read' || key.scope === 'write') && !(e.orgWide && key.siteId),
  )
}

/**
 * A tool's arguments as the endpoint takes them: path and query parameters as the strings a URL
 * would carry, the rest as the JSON body.
 */
export function toolInput(endpoint: Endpoint, args: Record<string, unknown>): { params: Record<string, unknown>; body?: unknown } {
  const paramNames = new Set([...pathParamNames(endpoint.path), ...Object.keys(endpoint.params?.shape ?? {})])
  const params: Record<string, unknown> = {}
  const body: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined) continue
    if (paramNames.has(name) || !endpoint.body) params[name] = typeof value === 'string' ? value : JSON.stringify(value)
    else body[name] = value
  }
  return { params, body: endpoint.body ? body : undefined }
}

const MCP_INSTRUCTIONS =
  'Web analytics for the sites of one organization. Start with whoami, then list_sites for site ids (a UUID or the snippet id both work as site_id). ' +
  'Counts are integers; bounceRate is a fraction from 0 to 1, not a percentage; durations are seconds. Relative ranges resolve in the site timezone.'

/** A failed call's structured content: the status and message the REST call would answer. */
const TOOL_ERROR = {
  type: 'object',
  properties: { status: { type: 'integer' }, error: { type: 'string' } },
  required: ['status', 'error'],
  additionalProperties: false,
}

/** What a tool's structured content is: the endpoint's answer, or the error of a failed call. */
function toolOutputSchema(endpoint: Endpoint) {
  if (!isJsonAnswer(endpoint.response)) return undefined
  return { type: 'object' as const, anyOf: [outputSchema(endpoint.response), TOOL_ERROR] }
}

/**
 * The MCP tool server at /api/mcp: stateless Streamable HTTP with JSON responses, one tool per
 * registered endpoint. The key is looked up once per request; each tool call is then admitted
 * (scope, one request against the key's budget) and invoked like the REST call.
 */
export function mcpEndpoint(registry: () => Endpoint[]) {
  return defineEndpoint({
    method: 'POST',
    path: '/api/mcp',
    scope: 'public',
    tool: null,
    summary: 'The MCP tool server: stateless Streamable HTTP, JSON-RPC over POST, one tool per endpoint. Authorization: Bearer <API_KEY>.',
    description:
      'Tools are the endpoints of this API with the same parameters, checks and per-key rate limit; a read key sees the read tools, a write key all of them. A tool call counts one request against the key.',
    validatesOwnInput: true,
    maxBodyBytes: 1024 * 1024,
    body: z.looseObject({ jsonrpc: z.literal('2.0'), method: z.string() }).describe('A JSON-RPC 2.0 message'),
    response: { mediaType: 'application/json', description: 'A JSON-RPC 2.0 answer' },
    async handler(ctx) {
      // read as REST reads it; MCP takes the Authorization header alone
      const presented = await credentialHash(ctx.request)
      if (presented.credential.via !== 'bearer') throw new ApiError(401, 'missing API key: send Authorization: Bearer <API_KEY>')
      const key = await identify(ctx.services, presented)

      const visible = toolsFor(registry(), key)
      const byTool = new Map(visible.map((e) => [e.tool!, e]))
      const server = new Server(
        { name: 'web-analytics', version: '1.0.0' },
        { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS },
      )
      server.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: visible.map((e) => ({
          name: e.tool!,
          description: e.description ?? e.summary,
          inputSchema: toolInputSchema(e) as { type: 'object'; properties: Record<string, object> },
          outputSchema: toolOutputSchema(e),
          annotations: { readOnlyHint: e.method === 'GET', destructiveHint: e.method === 'DELETE', idempotentHint: e.method !== 'POST' },
        })),
      }))
      server.setRequestHandler(CallToolRequestSchema, async (request) => {
        const endpoint = byTool.get(request.params.name)
        if (!endpoint) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name} for this key`)
        try {
          const admitted = await admit(ctx.services, endpoint, presented, ctx, key)
          const result = await invoke(endpoint, ctx.withKey(admitted.key), toolInput(endpoint, request.params.arguments ?? {}))
          return {
            content: [{ type: 'text' as const, text: JSON.stringify(result) }],
            structuredContent: result as Record<string, unknown>,
          }
        } catch (err) {
          const failure = asApiError(err, ctx.request)
          return {
            isError: true,
            content: [{ type: 'text' as const, text: `${failure.status}: ${failure.message}` }],
            structuredContent: { status: failure.status, error: failure.message },
          }
        }
      })
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      await server.connect(transport)
      return transport.handleRequest(ctx.request)
    },
  })
}
