import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { ApiError } from '../lib/errors'
import { RANGES } from '../lib/reports/dimensions'
import { credentialHash } from '../lib/accounts/auth'
import type { ApiKeyRecord } from '../lib/accounts/keys'
import { type Endpoint, GROUPS, type Group, defineEndpoint, pathParamNames } from './endpoint'
import { admit, asApiError, identify, invoke } from './invoke'
import { toolList } from './tool-schemas'

/** The tools a key may see: reads for every key, writes for write keys, org-wide tools not for site-bound keys. */
export function toolsFor(endpoints: Endpoint[], key: Pick<ApiKeyRecord, 'scope' | 'siteId'>) {
  return endpoints.filter((e) => isTool(e) && (e.scope === 'read' || key.scope === 'write') && !(e.orgWide && key.siteId))
}

const isTool = (e: Endpoint) => e.tool !== null && e.scope !== 'public'

/** The toolsets a connection asked for (`?toolsets=reports,behaviour`), or every one. */
export function requestedToolsets(url: string): Set<Group> {
  const asked = new URL(url).searchParams.get('toolsets')
  const known = Object.keys(GROUPS) as Group[]
  if (asked === null) return new Set(known)
  const names = asked.split(',').map((name) => name.trim())
  for (const name of names)
    if (!known.includes(name as Group)) throw new ApiError(400, `toolsets: unknown toolset "${name}"; the toolsets are ${known.join(', ')}`)
  return new Set(names as Group[])
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
  'Web analytics for the sites of one organization. Start with whoami, then list_sites for site ids. ' +
  'Parameters shared by many tools: site_id is a site UUID or its snippet id. range is a named range resolved in the site timezone (default 30d unless the tool says): ' +
  `${RANGES.join(', ')} (pages and changes take no realtime, list_sites no custom); ` +
  'range=custom takes from and to as YYYY-MM-DD (to included). filters is an array of {dimension, operator: is|is_not|contains|matches, value: [strings]} ' +
  '(values OR-ed, filters AND-ed; list_dimensions has the dimensions), or that array as a JSON string. source is standalone or ga4 (default: the site primary source). ' +
  'compare (previous_period, year_over_year, or custom with compare_from and compare_to as YYYY-MM-DD) adds comparison: the compared window, its figures and each change {absolute, relative}, relative null from 0. ' +
  'limit is the most rows to answer (at most 1000; export_report 10000, get_flow 100). A report answers range: {name, from, to, interval, timezone}, the window it read, and source, the source it read. A site that samples adds sampling: {fraction, relativeError} to a read that sampled (its counts are estimates). Counts are integers; bounceRate and other rates are fractions from 0 to 1, not percentages; durations are seconds. ' +
  'A failed call is isError with {status, error} as the REST API answers it.'

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
      'Tools are the endpoints of this API with the same parameters, checks and per-key rate limit; a read key sees the read tools, a write key all of them. A tool call counts one request against the key. toolsets (comma-separated: reports, behaviour, pages, why, settings, team, tracking, meta) offers only those tools.',
    params: z.object({
      toolsets: z
        .string()
        .optional()
        .describe(`Comma-separated toolsets to offer (default all): ${Object.keys(GROUPS).join(', ')}`),
    }),
    validatesOwnInput: true,
    maxBodyBytes: 1024 * 1024,
    body: z.looseObject({ jsonrpc: z.literal('2.0'), method: z.string() }).describe('A JSON-RPC 2.0 message'),
    response: { mediaType: 'application/json', description: 'A JSON-RPC 2.0 answer' },
    async handler(ctx) {
      // read as REST reads it; MCP takes the Authorization header alone
      const presented = await credentialHash(ctx.request)
      if (presented.credential.via !== 'bearer') throw new ApiError(401, 'missing API key: send Authorization: Bearer <API_KEY>')
      const key = await identify(ctx.services, presented)

      const toolsets = requestedToolsets(ctx.request.url)
      const offered = registry().filter((e) => isTool(e) && toolsets.has(e.group ?? 'meta'))
      const visible = toolsFor(offered, key)
      // every tool of the toolsets can be called: one this key may not call answers its 403 as a failed call
      const byTool = new Map(offered.map((e) => [e.tool!, e]))
      const server = new Server(
        { name: 'web-analytics', version: '1.0.0' },
        { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS },
      )
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolList(visible) }))
      server.setRequestHandler(CallToolRequestSchema, async (request) => {
        const endpoint = byTool.get(request.params.name)
        if (!endpoint) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`)
        try {
          const admitted = await admit(ctx.services, endpoint, presented, ctx, key)
          const result = await invoke(endpoint, ctx.withKey(admitted.key), toolInput(endpoint, request.params.arguments ?? {})).finally(
            admitted.done,
          )
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
