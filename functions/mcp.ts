import {
  ProtocolError,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
  Server,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  hostHeaderValidationResponse,
  isLegacyRequest,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  originValidationResponse,
} from '@modelcontextprotocol/server'
import { z } from 'zod'
import { ApiError } from '../lib/core/errors'
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

const MCP_SERVER = { name: 'web-analytics', title: 'Web analytics', version: '1.0.0' }

/** The revisions /api/mcp serves: 2026-07-28, and those the SDK serves to clients that open with `initialize`. */
export const MCP_REVISIONS = ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS]

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
      'Protocol revision 2026-07-28 (no handshake; MCP-Protocol-Version, Mcp-Method and Mcp-Name headers that match the body) and the revisions before it (initialize first), chosen by the request. Tools are the endpoints of this API with the same parameters, checks and per-key rate limit; a read key sees the read tools, a write key all of them. A tool call counts one request against the key. toolsets (comma-separated: reports, behaviour, pages, why, settings, team, tracking, meta) offers only those tools.',
    params: z.object({
      toolsets: z
        .string()
        .optional()
        .describe(`Comma-separated toolsets to offer (default all): ${Object.keys(GROUPS).join(', ')}`),
    }),
    validatesOwnInput: true,
    maxBodyBytes: MAX_BODY_BYTES,
    body: z.looseObject({ jsonrpc: z.literal('2.0'), method: z.string() }).describe('A JSON-RPC 2.0 message'),
    response: { mediaType: 'application/json', description: 'A JSON-RPC 2.0 answer' },
    async handler(ctx) {
      const rebound = reboundLocalRequest(ctx.request, ctx.services.publicUrl)
      if (rebound) return rebound
      // read as REST reads it; MCP takes the Authorization header alone
      const presented = await credentialHash(ctx.request)
      if (presented.credential.via !== 'bearer') throw new ApiError(401, 'missing API key: send Authorization: Bearer <API_KEY>')
      const key = await identify(ctx.services, presented)

      const toolsets = requestedToolsets(ctx.request.url)
      const offered = registry().filter((e) => isTool(e) && toolsets.has(e.group ?? 'meta'))
      const visible = toolsFor(offered, key)
      // every tool of the toolsets can be called: one this key may not call answers its 403 as a failed call
      const byTool = new Map(offered.map((e) => [e.tool!, e]))
      const server = () => {
        const server = new Server(MCP_SERVER, { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS })
        server.setRequestHandler('tools/list', async () => ({ tools: toolList(visible) }))
        server.setRequestHandler('tools/call', async (request) => {
          const endpoint = byTool.get(request.params.name)
          if (!endpoint) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool ${request.params.name}`)
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
        return server
      }
      return serveMcp(ctx.request, server)
    },
  })
}

const MAX_BODY_BYTES = 1024 * 1024

/**
 * One MCP request answered by the SDK: a 2026-07-28 request (its `_meta` envelope and headers) by
 * its per-request handler, which checks the headers against the body; a 2025-era request (with or
 * without `initialize` before it) by a stateless transport that answers JSON. Both serve a fresh
 * server from the same factory, so the tools are declared once.
 */
async function serveMcp(request: Request, server: () => Server): Promise<Response> {
  if (await isLegacyRequest(request, undefined, { maxRequestBodySize: MAX_BODY_BYTES })) {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    await server().connect(transport)
    return transport.handleRequest(request)
  }
  return createMcpHandler(server, { legacy: 'reject', responseMode: 'json', maxRequestBodySize: MAX_BODY_BYTES }).fetch(request)
}

/**
 * DNS rebinding: a server whose own origin is this machine (the local server of `npm start`)
 * answers only requests that name this machine as their Host and, from a browser, as their Origin;
 * a page of another site rebound to 127.0.0.1 gets 403. A server reached by a public name says so
 * with PUBLIC_URL, and is not checked here (its keys are no cookies a page could ride on).
 */
function reboundLocalRequest(request: Request, publicUrl: string | undefined): Response | undefined {
  const local = localhostAllowedHostnames()
  if (!publicUrl || !local.includes(new URL(publicUrl).hostname)) return undefined
  return hostHeaderValidationResponse(request, local) ?? originValidationResponse(request, localhostAllowedOrigins())
}

const CARD_MEDIA_TYPE = 'application/mcp-server-card+json'

/** Discovery documents are public, read from anywhere, and change with a deploy at most. */
const DISCOVERY_HEADERS = { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=3600' }

/**
 * What a client reads before it connects (the Server Card extension of MCP): the MCP server card
 * at the place the extension reserves for it, `<MCP URL>/server-card`, and the site's catalog of
 * cards at `/.well-known/mcp/catalog.json`. The card names the endpoint, its revisions, the key it
 * takes and the toolsets; the tools themselves are what tools/list answers.
 */
export const mcpDiscoveryEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/mcp/server-card',
    scope: 'public',
    tool: null,
    summary: 'The MCP server card: the endpoint, the protocol revisions it serves, the key it takes and its toolsets.',
    response: { mediaType: CARD_MEDIA_TYPE, description: 'An MCP server card' },
    async handler({ baseUrl }) {
      const toolsets = Object.entries(GROUPS).map(([name, title]) => `${name} (${title.toLowerCase()})`)
      const card = {
        $schema: 'https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json',
        name: `${reverseDns(baseUrl)}/${MCP_SERVER.name}`,
        version: MCP_SERVER.version,
        title: MCP_SERVER.title,
        description: 'Reports, visitor behaviour, page changes and settings of the sites of one organization.',
        remotes: [
          {
            type: 'streamable-http',
            url: `${baseUrl}/api/mcp`,
            headers: [
              {
                name: 'Authorization',
                description: 'An API key of the organization: a read key lists the read tools, a write key every tool',
                isRequired: true,
                isSecret: true,
                value: 'Bearer {api_key}',
                variables: { api_key: { description: 'The API key (wak_...)', isRequired: true, isSecret: true } },
              },
            ],
            supportedProtocolVersions: MCP_REVISIONS,
          },
        ],
        _meta: {
          toolsets: `?toolsets= with a comma-separated list offers only their tools (default all): ${toolsets.join(', ')}`,
        },
      }
      return new Response(JSON.stringify(card), { headers: { 'content-type': CARD_MEDIA_TYPE, ...DISCOVERY_HEADERS } })
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/.well-known/mcp/catalog.json',
    scope: 'public',
    tool: null,
    summary: "The site's MCP catalog: where the card of its one MCP server is.",
    response: z.object({
      specVersion: z.string(),
      entries: z.array(z.object({ identifier: z.string(), displayName: z.string(), type: z.literal(CARD_MEDIA_TYPE), url: z.string() })),
    }),
    async handler({ baseUrl }) {
      const catalog = {
        specVersion: 'draft',
        entries: [
          {
            identifier: `urn:air:${new URL(baseUrl).hostname}:${MCP_SERVER.name}`,
            displayName: MCP_SERVER.title,
            type: CARD_MEDIA_TYPE,
            url: `${baseUrl}/api/mcp/server-card`,
          },
        ],
      }
      return Response.json(catalog, { headers: DISCOVERY_HEADERS })
    },
  }),
]

/** The host of an origin in reverse-DNS order, as a server card names its server: analytics.example.com is com.example.analytics. */
const reverseDns = (origin: string) => new URL(origin).hostname.split('.').reverse().join('.')
