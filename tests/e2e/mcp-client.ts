import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

/**
 * The official MCP SDK client over Streamable HTTP, with the key as a Bearer header; `path` may ask
 * for toolsets; `fetch` (an app's own `request`, say) replaces the network.
 */
export async function mcpClient(
  baseUrl: string,
  key: string,
  path = '/api/mcp',
  fetch?: (url: string | URL, init?: RequestInit) => Promise<Response>,
) {
  const client = new Client({ name: 'test-agent', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(path, baseUrl), { requestInit: { headers: { authorization: `Bearer ${key}` } }, fetch }),
  )
  return client
}
