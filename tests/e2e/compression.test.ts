import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { mcpClient } from './mcp-client'
import { type RunningServer, demoKeys, startServer } from './server-process'

describe('the Node server compresses what it serves', () => {
  const env = { DATA_DIR: tempDir('compression'), REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', SKIP_DEMO_TRAFFIC: '1' }
  let server: RunningServer
  let keys: ReturnType<typeof demoKeys>

  beforeAll(async () => {
    server = await startServer(env)
    keys = demoKeys(server.output())
  })
  afterAll(() => server?.stop())

  // fetch decodes the body and keeps the Content-Encoding header, so both can be checked
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, { headers })

  it('JSON answers, gzip or deflate as the client accepts, and plain when it accepts neither', async () => {
    const plain = await get('/api/v1/openapi.json', { 'accept-encoding': 'identity' })
    expect(plain.headers.get('content-encoding')).toBeNull()
    const document = await plain.json()
    const gzipped = await get('/api/v1/openapi.json', { 'accept-encoding': 'gzip' })
    expect(gzipped.headers.get('content-encoding')).toBe('gzip')
    expect(gzipped.headers.get('vary')).toMatch(/accept-encoding/i)
    expect(await gzipped.json()).toEqual(document)
    const deflated = await get('/api/v1/openapi.json', { 'accept-encoding': 'deflate' })
    expect(deflated.headers.get('content-encoding')).toBe('deflate')
    expect(await deflated.json()).toEqual(document)
    // a keyed read too
    const sites = await get('/api/v1/sites', { authorization: `Bearer ${keys.readKey}`, 'accept-encoding': 'gzip' })
    expect(sites.status).toBe(200)
    expect(sites.headers.get('content-encoding')).toBe('gzip')
    expect((await sites.json()).sites[0].id).toBe(keys.site)
  })

  it('script.js, still revalidated by its (now weak) ETag', async () => {
    const script = await get('/js/script.js', { 'accept-encoding': 'gzip' })
    expect(script.headers.get('content-encoding')).toBe('gzip')
    expect(await script.text()).toContain('data-site')
    const etag = script.headers.get('etag')!
    expect(etag).toMatch(/^W\/"/)
    expect((await get('/js/script.js', { 'accept-encoding': 'gzip', 'if-none-match': etag })).status).toBe(304)
  })

  it('the MCP tool list, and the SDK client works over it', async () => {
    const res = await fetch(`${server.url}/api/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${keys.writeKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'accept-encoding': 'gzip',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-encoding')).toBe('gzip')
    const listed = (await res.json()).result.tools as { name: string }[]
    expect(listed.length).toBeGreaterThan(10)
    const client = await mcpClient(server.url, keys.readKey)
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('get_site')
    const site = await client.callTool({ name: 'get_site', arguments: { site_id: keys.site } })
    expect(site.isError).toBeFalsy()
    await client.close()
  })

  it('the collector, its empty 202 and its body cap work as before', async () => {
    expect(await (await get('/health', { 'accept-encoding': 'gzip' })).json()).toMatchObject({ status: 'ok' })
    const sites = await (await get('/api/v1/sites', { authorization: `Bearer ${keys.readKey}` })).json()
    const { snippetId, domain } = sites.sites[0]
    const hit = await fetch(`${server.url}/api/event`, {
      method: 'POST',
      headers: { 'accept-encoding': 'gzip', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36' },
      body: JSON.stringify({ site: snippetId, name: 'pageview', url: `https://${domain}/compressed` }),
    })
    expect(hit.status).toBe(202)
    expect(hit.headers.get('content-encoding')).toBeNull()
    expect(await hit.text()).toBe('')
    const huge = await fetch(`${server.url}/api/event`, {
      method: 'POST',
      headers: { 'accept-encoding': 'gzip' },
      body: 'x'.repeat(70_000),
    })
    expect(huge.status).toBe(413)
    expect((await huge.json()).error).toMatch(/larger than/)
  })
})
