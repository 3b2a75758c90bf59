import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Context, Hono } from 'hono'
import { sha256Hex } from '../lib/keys'
import { ApiError } from '../lib/errors'
import type { ApiKeyRecord } from '../lib/keys'
import { toolInputSchema } from '../lib/openapi'
import { type Endpoint, pathParamNames } from '../lib/registry'
import type { Services } from '../lib/services'

/** The tools a key may see: reads for every key, writes for write keys, org-wide tools not for site-bound keys. */
export function toolsFor(endpoints: Endpoint[], key: Pick<ApiKeyRecord, 'scope' | 'siteId'>) {
  return endpoints.filter(
    (e) => e.tool !== null && e.scope !== 'public' && (e.scope === 'read' || key.scope === 'write') && !(e.orgWide && key.siteId),
  )
}

/** Turns a tool call into the HTTP request of its endpoint: path parameters, query string, JSON body. */
export function toolRequest(endpoint: Endpoint, args: Record<string, unknown>, origin: string, bearer: string): Request {
  const inPath = new Set(pathParamNames(endpoint.path))
  const paramNames = new Set(Object.keys(endpoint.params?.shape ?? {}))
  const path = endpoint.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(args[name] ?? '')))
  const url = new URL(path, origin)
  const body: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(args)) {
    if (inPath.has(name) || value === undefined) continue
    if (paramNames.has(name) || !endpoint.body) url.searchParams.set(name, typeof value === 'string' ? value : JSON.stringify(value))
    else body[name] = value
  }
  return new Request(url, {
    method: endpoint.method,
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: endpoint.body ? JSON.stringify(body) : undefined,
  })
}

const MCP_INSTRUCTIONS =
  'Web analytics for the sites of one organization. Start with whoami, then list_sites for site ids (a UUID or the snippet id both work as site_id). ' +
  'Counts are integers; bounceRate is a fraction from 0 to 1, not a percentage; durations are seconds. Relative ranges resolve in the site timezone.'

/**
 * The MCP tool server at /api/mcp: stateless Streamable HTTP with JSON responses, one tool per
 * registered endpoint. A tool call is dispatched through the same app as a REST call with the
 * caller's key, so validation, site checks and the per-key rate limit are the endpoint's own.
 */
export function mountMcp(app: Hono, endpoints: Endpoint[], services: Services) {
  const byTool = new Map(endpoints.filter((e) => e.tool).map((e) => [e.tool!, e]))

  app.on(['GET', 'DELETE'], '/api/mcp', (c) => {
    c.header('Allow', 'POST')
    return c.json({ error: 'the MCP endpoint is stateless: send JSON-RPC with POST' }, 405)
  })

  app.post('/api/mcp', async (c) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')?.[1]
    if (!bearer) throw new ApiError(401, 'missing API key: send Authorization: Bearer <API_KEY>')
    const key = await services.store.getApiKeyByHash(await sha256Hex(bearer))
    if (!key) throw new ApiError(401, 'invalid API key')

    const visible = toolsFor(endpoints, key)
    const server = new Server({ name: 'web-analytics', version: '1.0.0' }, { capabilities: { tools: {} }, instructions: MCP_INSTRUCTIONS })
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: visible.map((e) => ({
        name: e.tool!,
        description: e.description ?? e.summary,
        inputSchema: toolInputSchema(e) as { type: 'object'; properties: Record<string, object> },
        annotations: { readOnlyHint: e.method === 'GET', destructiveHint: e.method === 'DELETE', idempotentHint: e.method !== 'POST' },
      })),
    }))
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const endpoint = byTool.get(request.params.name)
      if (!endpoint || !visible.includes(endpoint)) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name} for this key`)
      const response = await app.fetch(toolRequest(endpoint, request.params.arguments ?? {}, new URL(c.req.url).origin, bearer), c.env, executionContext(c))
      const text = await response.text()
      const json = text ? JSON.parse(text) : {}
      if (!response.ok) {
        return { isError: true, content: [{ type: 'text' as const, text: `${response.status}: ${json.error ?? text}` }], structuredContent: { status: response.status, error: json.error ?? text } }
      }
      return { content: [{ type: 'text' as const, text }], structuredContent: json }
    })
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    await server.connect(transport)
    return transport.handleRequest(c.req.raw)
  })
}

function executionContext(c: Context) {
  try {
    return c.executionCtx
  } catch {
    return undefined
  }
}
