import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>

/**
 * The official MCP SDK client (v1, protocol 2025-11-25 and older: `initialize` first) over
 * Streamable HTTP, with the key as a Bearer header; `path` may ask for toolsets; `fetch` (an
 * app's own `request`, say) replaces the network.
 */
export async function mcpClient(baseUrl: string, key: string, path = '/api/mcp', fetch?: Fetch) {
  const client = new Client({ name: 'test-agent', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(path, baseUrl), { requestInit: { headers: { authorization: `Bearer ${key}` } }, fetch }),
  )
  return client
}

/**
 * The SDK's v2 client on protocol 2026-07-28: no handshake, every request stateless with its
 * `_meta` envelope and headers. `auto` first asks `server/discover` which revisions the server
 * serves, as a client that does not know the server does; otherwise the revision is pinned.
 */
export async function mcpClientV2(baseUrl: string, key: string, path = '/api/mcp', mode: 'auto' | 'pin' = 'pin', fetch?: Fetch) {
  const client = new ClientV2(
    { name: 'test-agent', version: '2.0.0' },
    { versionNegotiation: { mode: mode === 'auto' ? 'auto' : { pin: '2026-07-28' } } },
  )
  await client.connect(new TransportV2(new URL(path, baseUrl), { requestInit: { headers: { authorization: `Bearer ${key}` } }, fetch }))
  return client
}
