import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { endpoints } from '../../functions/registry'
import { tempDir } from '../helpers'
import { CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/client'
import { mcpClient, mcpClientV2 } from './mcp-client'
import { type RunningServer, cli, startServer, demoKeys } from './server-process'

const readTools = endpoints
  .filter((e) => e.tool && e.scope === 'read')
  .map((e) => e.tool!)
  .sort()
const allTools = endpoints
  .filter((e) => e.tool && e.scope !== 'public')
  .map((e) => e.tool!)
  .sort()

describe('the MCP tool server on a real server process', () => {
  const env = { DATA_DIR: tempDir('mcp'), REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '' }
  let server: RunningServer
  let readKey = ''
  let writeKey = ''
  let siteId = ''

  beforeAll(async () => {
    server = await startServer(env)
    ;({ readKey, writeKey, site: siteId } = demoKeys(server.output()))
  })
  afterAll(() => server?.stop())

  it('a read key lists only read tools; a write key lists all of them', async () => {
    const reader = await mcpClient(server.url, readKey)
    const listed = (await reader.listTools()).tools
    expect(listed.map((t) => t.name).sort()).toEqual(readTools)
    expect(readTools).toEqual(expect.arrayContaining(['whoami', 'list_sites', 'get_site', 'list_dimensions', 'list_api_keys']))
    const patch = listed.find((t) => t.name === 'get_site')!
    expect(patch.inputSchema).toMatchObject({ type: 'object', required: ['site_id'] })
    expect(patch.annotations).toMatchObject({ readOnlyHint: true })
    const writer = await mcpClient(server.url, writeKey)
    expect((await writer.listTools()).tools.map((t) => t.name).sort()).toEqual(allTools)
    expect(allTools).toEqual(expect.arrayContaining(['update_site_settings', 'create_site', 'delete_site', 'revoke_api_key']))
    await reader.close()
    await writer.close()
  })

  it('a tool call returns what the REST call returns, as text and as structured content', async () => {
    const client = await mcpClient(server.url, readKey)
    const result = await client.callTool({ name: 'get_site', arguments: { site_id: siteId } })
    const rest = await (await fetch(`${server.url}/api/v1/sites/${siteId}`, { headers: { authorization: `Bearer ${readKey}` } })).json()
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toEqual(rest)
    expect(JSON.parse((result.content as { text: string }[])[0].text)).toEqual(rest)
    // get_stats returns the same numbers as GET /api/v1/stats (the demo site has 30 days of traffic)
    const stats = await client.callTool({
      name: 'get_stats',
      arguments: { site_id: siteId, range: '30d', filters: [{ dimension: 'device', operator: 'is', value: ['Mobile'] }] },
    })
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'device', operator: 'is', value: ['Mobile'] }]))
    const restStats = await (
      await fetch(`${server.url}/api/v1/stats?site_id=${siteId}&range=30d&filters=${filters}`, {
        headers: { authorization: `Bearer ${readKey}` },
      })
    ).json()
    expect(stats.structuredContent).toEqual(restStats)
    expect(restStats.totals.visitors).toBeGreaterThan(0)
    // compare through a tool's parameters: the SDK checks the answer against the tool's outputSchema
    const compared = await client.callTool({
      name: 'get_breakdown',
      arguments: { site_id: siteId, range: '7d', property: 'source', compare: 'previous_period' },
    })
    const restCompared = await (
      await fetch(`${server.url}/api/v1/breakdown?site_id=${siteId}&range=7d&property=source&compare=previous_period`, {
        headers: { authorization: `Bearer ${readKey}` },
      })
    ).json()
    expect(compared.isError).toBeFalsy()
    expect(compared.structuredContent).toEqual(restCompared)
    expect(restCompared.comparison.mode).toBe('previous_period')
    expect(restCompared.results[0].change.visitors).toEqual(expect.objectContaining({ absolute: expect.any(Number) }))
    const me = await client.callTool({ name: 'whoami', arguments: {} })
    expect(me.structuredContent).toMatchObject({ key: { scope: 'read' } })
    await client.close()
  })

  it('the v1 client (2025-11-25) and the v2 client (2026-07-28) get the same tools and the same answers', async () => {
    const v1 = await mcpClient(server.url, readKey)
    const v2 = await mcpClientV2(server.url, readKey)
    expect(v1.getServerVersion()).toMatchObject({ name: 'web-analytics' })
    expect(v2.getProtocolEra()).toBe('modern')
    expect(v2.getNegotiatedProtocolVersion()).toBe('2026-07-28')
    expect(v2.getInstructions()).toBe(v1.getInstructions())
    const tools = (await v1.listTools()).tools
    expect((await v2.listTools()).tools).toEqual(tools)
    expect(tools.map((t) => t.name).sort()).toEqual(readTools)
    const filters = [{ dimension: 'device', operator: 'is', value: ['Mobile'] }]
    const calls = [
      { name: 'get_site', arguments: { site_id: siteId } },
      { name: 'get_stats', arguments: { site_id: siteId, range: '7d', filters } },
      { name: 'get_breakdown', arguments: { site_id: siteId, range: '7d', property: 'source', compare: 'previous_period' } },
      { name: 'get_site', arguments: { site_id: 'zzzzzzzzzz' } },
      { name: 'update_site_settings', arguments: { site_id: siteId, includeBots: true } },
    ]
    const rest = [
      `/api/v1/sites/${siteId}`,
      `/api/v1/stats?site_id=${siteId}&range=7d&filters=${encodeURIComponent(JSON.stringify(filters))}`,
      `/api/v1/breakdown?site_id=${siteId}&range=7d&property=source&compare=previous_period`,
    ]
    for (const [i, call] of calls.entries()) {
      const old = await v1.callTool(call)
      const modern = await v2.callTool(call)
      expect(modern.structuredContent, call.name).toEqual(old.structuredContent)
      expect(modern.content, call.name).toEqual(old.content)
      expect(modern.isError ?? false, call.name).toBe(old.isError ?? false)
      if (rest[i]) {
        const answer = await fetch(`${server.url}${rest[i]}`, { headers: { authorization: `Bearer ${readKey}` } })
        expect(modern.structuredContent, call.name).toEqual(await answer.json())
      }
    }
    expect((await v2.callTool(calls[3])).structuredContent).toEqual({ status: 404, error: 'site not found' })
    expect((await v2.callTool(calls[4])).structuredContent).toMatchObject({ status: 403 })
    await expect(v2.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/unknown tool/)
    // a client that does not know the server asks server/discover first, and is offered 2026-07-28
    const auto = await mcpClientV2(server.url, readKey, '/api/mcp?toolsets=meta', 'auto')
    expect(auto.getDiscoverResult()?.supportedVersions).toEqual(['2026-07-28'])
    expect((await auto.listTools()).tools.map((t) => t.name).sort()).toEqual(['list_dimensions', 'whoami'])
    for (const client of [v1, v2, auto]) await client.close()
  })

  it('2026-07-28 on the wire: headers that disagree with the body are refused, and no session is made', async () => {
    const meta = { [PROTOCOL_VERSION_META_KEY]: '2026-07-28', [CLIENT_CAPABILITIES_META_KEY]: {} }
    const post = (headers: Record<string, string>, body: object) =>
      fetch(`${server.url}/api/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${readKey}`,
          'mcp-protocol-version': '2026-07-28',
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, ...body }),
      })
    const call = { method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: meta } }
    const answered = await post({ 'mcp-method': 'tools/call', 'mcp-name': 'whoami' }, call)
    expect(answered.status).toBe(200)
    expect(answered.headers.get('mcp-session-id')).toBeNull()
    expect((await answered.json()).result.structuredContent).toMatchObject({ key: { scope: 'read' } })
    // the method or the tool named in a header is not the body's: 400 with the revision's error, and nothing is called
    for (const headers of [
      { 'mcp-method': 'tools/list', 'mcp-name': 'whoami' },
      { 'mcp-method': 'tools/call', 'mcp-name': 'list_sites' },
    ]) {
      const refused = await post(headers, call)
      expect(refused.status).toBe(400)
      expect((await refused.json()).error).toMatchObject({ code: -32020 })
    }
    // a revision the server does not serve is named as such, with the ones it does
    const unknown = await post(
      { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
      { method: 'tools/list', params: { _meta: { ...meta, [PROTOCOL_VERSION_META_KEY]: '2099-01-01' } } },
    )
    expect(unknown.status).toBe(400)
    expect((await unknown.json()).error.data.supported).toEqual(expect.arrayContaining(['2026-07-28']))
    // the handshake of the old revisions is no method of the new one
    const handshake = await post({ 'mcp-method': 'initialize' }, { method: 'initialize', params: { _meta: meta } })
    expect(handshake.status).toBe(404)
    expect((await handshake.json()).error).toMatchObject({ code: -32601 })
  })

  it('a client finds the server from the site: the catalog names the card, the card the endpoint, its revisions and its key', async () => {
    const catalog = await fetch(`${server.url}/.well-known/mcp/catalog.json`)
    expect(catalog.headers.get('access-control-allow-origin')).toBe('*')
    const { entries } = await catalog.json()
    expect(entries).toEqual([
      {
        identifier: 'urn:air:127.0.0.1:web-analytics',
        displayName: 'Web analytics',
        type: 'application/mcp-server-card+json',
        url: `${server.url}/api/mcp/server-card`,
      },
    ])
    const answer = await fetch(entries[0].url, { headers: { accept: 'application/mcp-server-card+json' } })
    expect(answer.headers.get('content-type')).toBe('application/mcp-server-card+json')
    const card = await answer.json()
    expect(card).toMatchObject({ name: '1.0.0.127/web-analytics', version: '1.0.0', title: 'Web analytics' })
    expect(card.description.length).toBeLessThanOrEqual(100)
    const [remote] = card.remotes
    expect(remote).toMatchObject({ type: 'streamable-http', url: `${server.url}/api/mcp` })
    expect(remote.supportedProtocolVersions).toEqual(expect.arrayContaining(['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']))
    expect(remote.headers).toEqual([
      expect.objectContaining({ name: 'Authorization', value: 'Bearer {api_key}', isRequired: true, isSecret: true }),
    ])
    expect(card._meta.toolsets).toMatch(/reports \(reports\), behaviour .* meta \(meta\)$/)
    // what the card says is what the server does: the revisions it names, with the key it describes
    const v2 = await mcpClientV2(remote.url, readKey)
    expect(v2.getServerVersion()).toMatchObject({ name: 'web-analytics', version: card.version, title: card.title })
    await v2.close()
  })

  it('a write tool called with a read key is a failed call saying it needs a write key', async () => {
    const client = await mcpClient(server.url, readKey)
    const refused = await client.callTool({ name: 'update_site_settings', arguments: { site_id: siteId, includeBots: true } })
    expect(refused.isError).toBe(true)
    expect(refused.structuredContent).toEqual({ status: 403, error: expect.stringMatching(/needs a write-scoped key/) })
    expect((refused.content as { text: string }[])[0].text).toMatch(/^403: .*write/)
    // a name that is no tool at all stays a protocol error
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/unknown tool/)
    const site = await (await fetch(`${server.url}/api/v1/sites/${siteId}`, { headers: { authorization: `Bearer ${readKey}` } })).json()
    expect(site.tracking.includeBots).toBe(false)
    await client.close()
  })

  it('write tools change things through the same validation, and errors name the field', async () => {
    const client = await mcpClient(server.url, writeKey)
    const bad = await client.callTool({ name: 'update_site_settings', arguments: { site_id: siteId, includeBots: 'yes' } })
    expect(bad.isError).toBe(true)
    expect((bad.content as { text: string }[])[0].text).toMatch(/^400: includeBots/)
    expect(bad.structuredContent).toMatchObject({ status: 400 })
    const unknown = await client.callTool({ name: 'update_site_settings', arguments: { site_id: siteId, colour: 'red' } })
    expect((unknown.content as { text: string }[])[0].text).toMatch(/colour/)
    const good = await client.callTool({
      name: 'update_site_settings',
      arguments: { site_id: siteId, includeBots: true, excludedPaths: ['/admin/*'] },
    })
    expect(good.structuredContent).toMatchObject({ tracking: { includeBots: true, excludedPaths: ['/admin/*'] } })
    const created = await client.callTool({ name: 'create_site', arguments: { domain: 'agent.example.com', timezone: 'Europe/Rome' } })
    expect(created.structuredContent).toMatchObject({ domain: 'agent.example.com', timezone: 'Europe/Rome' })
    await client.close()
  })

  it('an unknown or foreign site gives the same answer as over REST', async () => {
    const client = await mcpClient(server.url, readKey)
    const other = await cli('admin', ['org', 'create', '--name', 'Other'], env)
    const otherKey = await cli('admin', ['key', 'create', '--org', other.id, '--name', 'o', '--scope', 'write'], env)
    const foreign = await (
      await fetch(`${server.url}/api/v1/sites`, {
        method: 'POST',
        headers: { authorization: `Bearer ${otherKey.key}` },
        body: JSON.stringify({ domain: 'foreign.example.com' }),
      })
    ).json()
    for (const id of ['00000000-0000-4000-8000-000000000000', foreign.id, foreign.snippetId]) {
      const rest = await fetch(`${server.url}/api/v1/sites/${id}`, { headers: { authorization: `Bearer ${readKey}` } })
      const tool = await client.callTool({ name: 'get_site', arguments: { site_id: id } })
      expect(tool.isError).toBe(true)
      expect(tool.structuredContent).toEqual({ status: rest.status, error: (await rest.json()).error })
      expect(tool.structuredContent).toEqual({ status: 404, error: 'site not found' })
    }
    await client.close()
  })

  it("a write key's tool list is under 60 KB of JSON, in portable JSON Schema the SDK client takes without a warning", async () => {
    const listed = await fetch(`${server.url}/api/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${writeKey}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    const text = await listed.text()
    const tools = JSON.parse(text).result.tools as { name: string; description: string; inputSchema: object; outputSchema?: object }[]
    expect(tools.map((t) => t.name).sort()).toEqual(allTools)
    // was 241,343 bytes: 65 tools, get_vitals alone with a 20 KB output schema; then 57,994; 47,831 for 65
    // tools; about 54 KB with the GA4 and Search Console tools; 57.3 KB for 78 tools with heatmaps, AI
    // visibility and comparisons. The bound is 60 KB: past it, a client's context pays for tools it may not use
    // (toolsets let a connection ask for fewer)
    expect(Buffer.byteLength(text)).toBeLessThan(60_000)
    // 2026-07-28 answers the same tools, with its cache hints and the server's name added
    const modern = await fetch(`${server.url}/api/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${writeKey}`,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { [PROTOCOL_VERSION_META_KEY]: '2026-07-28', [CLIENT_CAPABILITIES_META_KEY]: {} } },
      }),
    })
    const modernText = await modern.text()
    expect(JSON.parse(modernText).result).toMatchObject({ tools, ttlMs: 0, cacheScope: 'private' })
    expect(Buffer.byteLength(modernText)).toBeLessThan(60_000)
    for (const tool of tools) {
      expect(tool.description, tool.name).toMatch(/^[A-Z][\s\S]*?\./)
      // 600 until get_ga4_connection gained connectNote (609): why a key that may not connect gets no connectUrl
      expect(JSON.stringify(tool.outputSchema ?? {}).length, tool.name).toBeLessThanOrEqual(640)
    }
    // no list of types (["string", "null"]) and no const: anyOf and enum say the same to every client
    const schemas = JSON.stringify(tools.map((t) => [t.inputSchema, t.outputSchema]))
    expect(schemas).not.toMatch(/"type":\[/)
    expect(schemas).not.toContain('"const"')
    // a title, and what a client may assume: reads only read, deletes and revocations destroy, a repeated update changes nothing more
    const byName = new Map(tools.map((t) => [t.name, t as typeof t & { title: string; annotations: Record<string, boolean> }]))
    expect(byName.get('list_api_keys')!.title).toBe('List API keys')
    for (const e of endpoints.filter((e) => e.tool && e.scope !== 'public'))
      expect(byName.get(e.tool!)!.annotations.readOnlyHint ?? false, e.tool!).toBe(e.method === 'GET')
    expect(byName.get('get_stats')!.annotations).toEqual({ readOnlyHint: true })
    for (const name of ['delete_site', 'revoke_api_key', 'remove_member'])
      expect(byName.get(name)!.annotations, name).toEqual({ destructiveHint: true, idempotentHint: true })
    expect(byName.get('rotate_ingest_key')!.annotations).toEqual({ destructiveHint: true })
    expect(byName.get('update_site_settings')!.annotations).toEqual({ destructiveHint: false, idempotentHint: true })
    expect(byName.get('create_goal')!.annotations).toEqual({ destructiveHint: false })
    // only the formats of JSON Schema itself: no cidrv4, cidrv6, e164, ...
    const formats = new Set<string>()
    JSON.stringify(tools, (key, value) => (key === 'format' && formats.add(value), value))
    expect(
      [...formats].filter((f) => !['date-time', 'date', 'time', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uuid'].includes(f)),
    ).toEqual([])

    const printed: string[] = []
    const spies = (['log', 'info', 'warn', 'error'] as const).map((level) =>
      vi.spyOn(console, level).mockImplementation((...args) => void printed.push(args.join(' '))),
    )
    try {
      const client = await mcpClient(server.url, writeKey)
      await client.listTools()
      // every read tool with just a site: the SDK client checks each answer, or each failure, against its outputSchema
      for (const name of readTools) {
        const result = await client.callTool({ name, arguments: { site_id: siteId } })
        if (result.isError) expect(result.structuredContent, name).toEqual({ status: expect.any(Number), error: expect.any(String) })
      }
      await client.close()
    } finally {
      for (const spy of spies) spy.mockRestore()
    }
    expect(printed).toEqual([])
  }, 60_000)

  it('a connection may ask for toolsets; an unknown toolset is a 400 naming it', async () => {
    const client = await mcpClient(server.url, writeKey, '/api/mcp?toolsets=reports,behaviour')
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).toEqual(expect.arrayContaining(['get_stats', 'get_breakdown', 'get_vitals', 'create_goal', 'get_clicks', 'get_journeys']))
    for (const other of ['list_sites', 'whoami', 'list_pages', 'get_spikes', 'list_members', 'update_site_settings'])
      expect(names).not.toContain(other)
    expect(names.length).toBeLessThan(allTools.length / 2)
    // a tool outside the toolsets is not offered on this connection
    await expect(client.callTool({ name: 'list_sites', arguments: {} })).rejects.toThrow(/unknown tool/)
    await client.close()
    const team = await mcpClient(server.url, readKey, '/api/mcp?toolsets=team')
    expect((await team.listTools()).tools.map((t) => t.name).sort()).toEqual(['get_organization', 'list_api_keys', 'list_members'])
    await team.close()
    const unknown = await fetch(`${server.url}/api/mcp?toolsets=reports,reprots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${readKey}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    })
    expect(unknown.status).toBe(400)
    expect((await unknown.json()).error).toMatch(/^toolsets: unknown toolset "reprots"; the toolsets are reports, behaviour, pages/)
  })

  it('filters is an array, and that array as a JSON string is taken too', async () => {
    const client = await mcpClient(server.url, readKey)
    const stats = (await client.listTools()).tools.find((t) => t.name === 'get_stats')!
    // one type: a list of types is what some clients cannot take; the JSON text is taken all the same
    expect(stats.inputSchema.properties!.filters).toEqual({ type: 'array' })
    const filters = [{ dimension: 'device', operator: 'is', value: ['Desktop'] }]
    const asArray = await client.callTool({ name: 'get_stats', arguments: { site_id: siteId, filters } })
    const asText = await client.callTool({ name: 'get_stats', arguments: { site_id: siteId, filters: JSON.stringify(filters) } })
    const rest = await (
      await fetch(`${server.url}/api/v1/stats?site_id=${siteId}&filters=${encodeURIComponent(JSON.stringify(filters))}`, {
        headers: { authorization: `Bearer ${readKey}` },
      })
    ).json()
    expect(asArray.structuredContent).toEqual(rest)
    expect(asText.structuredContent).toEqual(rest)
    await client.close()
  })

  it('needs a Bearer key before any JSON-RPC, and GET is 405', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    const none = await fetch(`${server.url}/api/mcp`, { method: 'POST', headers, body })
    expect(none.status).toBe(401)
    expect(await none.json()).toEqual({ error: expect.stringMatching(/missing API key/) })
    const bad = await fetch(`${server.url}/api/mcp`, { method: 'POST', headers: { ...headers, authorization: 'Bearer wak_nope' }, body })
    expect(bad.status).toBe(401)
    const viaHeader = await fetch(`${server.url}/api/mcp`, { method: 'POST', headers: { ...headers, 'x-api-key': readKey }, body })
    expect(viaHeader.status).toBe(401)
    expect((await fetch(`${server.url}/api/mcp`, { headers: { authorization: `Bearer ${readKey}` } })).status).toBe(405)
  })

  it('the tool counts and sizes docs/mcp.md quotes are those listed to each kind of key', async () => {
    const org = (await (await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${readKey}` } })).json()).organization.id
    const bound = await cli('admin', ['key', 'create', '--org', org, '--name', 'bound', '--scope', 'write', '--site', siteId], env)
    const listed = async (key: string) => {
      const text = await (
        await fetch(`${server.url}/api/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        })
      ).text()
      return { tools: JSON.parse(text).result.tools.length as number, kb: Buffer.byteLength(text) / 1000 }
    }
    const [write, read, siteBound] = await Promise.all([listed(writeKey), listed(readKey), listed(bound.key)])
    const doc = readFileSync(new URL('../../docs/mcp.md', import.meta.url), 'utf8').replace(/\s+/g, ' ')
    // "just under 60 KB of JSON (78 tools; ...), a read key's 36 KB (47 tools) and a write key bound to one site 52 KB (67 tools)"
    const quoted = doc.match(
      /just under (\d+) KB of JSON \((\d+) tools;.*?a read key's (\d+) KB \((\d+) tools\) and a write key bound to one site (\d+) KB \((\d+) tools\)/,
    )
    expect(quoted, 'the figures sentence of docs/mcp.md').not.toBeNull()
    const [, writeBound, writeTools, readKb, readTools, boundKb, boundTools] = quoted!.map(Number)
    expect(write.tools).toBe(writeTools)
    expect(write.kb).toBeLessThan(writeBound)
    expect(write.kb).toBeGreaterThan(writeBound - 3)
    expect(read.tools).toBe(readTools)
    expect(Math.round(read.kb)).toBe(readKb)
    expect(siteBound.tools).toBe(boundTools)
    expect(Math.round(siteBound.kb)).toBe(boundKb)
  })

  it('tools declare their answer as outputSchema, and one tool call counts one request against the key', async () => {
    const org = (await (await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${readKey}` } })).json()).organization.id
    const fresh = await cli('admin', ['key', 'create', '--org', org, '--name', 'one-call', '--scope', 'read'], env)
    const client = await mcpClient(server.url, fresh.key)
    const tools = (await client.listTools()).tools
    const stats = tools.find((t) => t.name === 'get_stats')!
    expect(stats.outputSchema).toMatchObject({ type: 'object' })
    expect(JSON.stringify(stats.outputSchema)).toContain('"visitors"')
    // the SDK client checks structured content against outputSchema: a real answer passes it
    const answer = await client.callTool({ name: 'get_stats', arguments: { site_id: siteId, range: '7d' } })
    expect(answer.isError).toBeFalsy()
    expect((answer.structuredContent as { totals: { visitors: number } }).totals.visitors).toEqual(expect.any(Number))
    // initialize, tools/list and one call: only the call counted; this REST call is the second request
    const rest = await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${fresh.key}` } })
    expect(rest.headers.get('ratelimit-limit')).toBe('600')
    expect(rest.headers.get('ratelimit-remaining')).toBe('598')
    await client.close()
  })

  it('tool calls share the per-key REST budget: 600 REST calls, then a tool call is rate limited', async () => {
    const fresh = await cli(
      'admin',
      [
        'key',
        'create',
        '--org',
        (await (await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${readKey}` } })).json()).organization.id,
        '--name',
        'budget',
        '--scope',
        'read',
      ],
      env,
    )
    const client = await mcpClient(server.url, fresh.key)
    // the budget is a sliding window over fixed minutes: 600 calls that straddle a minute's end
    // count partly in the window before, which lets a 601st through; start early in a minute
    const intoMinute = Date.now() % 60_000
    if (intoMinute > 30_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 50))
    const statuses = await Promise.all(
      Array.from({ length: 600 }, () =>
        fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${fresh.key}` } }).then((r) => r.status),
      ),
    )
    expect(statuses.filter((s) => s === 200)).toHaveLength(600)
    const limited = await client.callTool({ name: 'whoami', arguments: {} })
    expect(limited.isError).toBe(true)
    expect(limited.structuredContent).toMatchObject({ status: 429, error: expect.stringMatching(/rate limit/) })
    await client.close()
  }, 150_000)
})
