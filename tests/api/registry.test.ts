import { compileErrors, validate } from '@readme/openapi-parser'
import ts from 'typescript'
import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { isJsonAnswer } from '../../functions/endpoint'
import { honoPath } from '../../functions/http'
import { endpoints } from '../../functions/registry'
import { client, harness, testServices, type Harness } from '../helpers'

describe('the endpoint registry', () => {
  let t: Harness

  beforeAll(async () => {
    t = await harness()
  })

  it('declares exactly the routes the app serves', () => {
    const app = createApp(t.services)
    // the web application's pages under /app and the shared dashboards under /share are not API endpoints
    const served = new Set(
      app.routes
        .filter((r) => r.method !== 'ALL' && !r.path.startsWith('/app') && !r.path.startsWith('/share'))
        .map((r) => `${r.method} ${r.path}`),
    )
    const declared = new Set(endpoints.map((e) => `${e.method} ${honoPath(e.path)}`))
    expect([...served].sort()).toEqual([...declared].sort())
    // one declaration per method and path, one tool name per tool
    expect(new Set(endpoints.map((e) => `${e.method} ${e.path}`)).size).toBe(endpoints.length)
    const tools = endpoints.map((e) => e.tool).filter(Boolean)
    expect(new Set(tools).size).toBe(tools.length)
    for (const tool of tools) expect(tool).toMatch(/^[a-z][a-z0-9_]*$/)
  })

  it('GET /api/v1 lists every registered endpoint, keyless, with JSON Schema parameters', async () => {
    const res = await t.call('GET', '/api/v1')
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const listed = res.json.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`)
    expect(listed.sort()).toEqual(endpoints.map((e) => `${e.method} ${e.path}`).sort())
    const patch = res.json.endpoints.find(
      (e: { method: string; path: string }) => e.method === 'PATCH' && e.path === '/api/v1/sites/{site_id}',
    )
    expect(patch).toMatchObject({ scope: 'write', tool: 'update_site_settings', parameters: { type: 'object', required: ['site_id'] } })
    expect(patch.body.properties.includeBots).toEqual({ type: 'boolean' })
    expect(patch.body.properties.publicCountsDial).toEqual({ type: 'string', enum: ['live', '30d', 'year', 'all'] })
    expect(patch.body.additionalProperties).toBe(false)
    const list = res.json.endpoints.find((e: { tool: string }) => e.tool === 'list_sites')
    expect(list.parameters.properties.range.enum).toContain('last-year')
    expect(list.parameters.required ?? []).not.toContain('range')
  })

  it('GET /api/v1/openapi.json is a valid OpenAPI 3.1 document covering every endpoint', async () => {
    const res = await t.call('GET', '/api/v1/openapi.json')
    expect(res.status).toBe(200)
    expect(res.json.openapi).toBe('3.1.0')
    const operations = Object.entries(res.json.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    )
    expect(operations.sort()).toEqual(endpoints.map((e) => `${e.method} ${e.path}`).sort())
    const copy = structuredClone(res.json)
    const result = await validate(copy)
    expect(result.valid ? 'valid' : compileErrors(result)).toBe('valid')
    const del = res.json.paths['/api/v1/sites/{site_id}'].delete
    expect(del.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'site_id', in: 'path', required: true }),
        expect.objectContaining({ name: 'confirm', in: 'query', required: true }),
      ]),
    )
  })

  it('unknown paths are a JSON 404 with CORS', async () => {
    const res = await t.call('GET', '/api/v1/nope', { key: t.a.read.key })
    expect(res.status).toBe(404)
    expect(res.json.error).toMatch(/no endpoint/)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('a known path asked with a method it does not answer is 405 with Allow, in JSON', async () => {
    const put = await t.call('PUT', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: {} })
    expect(put.status).toBe(405)
    expect(put.json.error).toMatch(/PUT is not allowed/)
    expect(put.headers.get('allow')).toBe('GET, PATCH, DELETE, OPTIONS')
    const mcp = await t.call('GET', '/api/mcp')
    expect(mcp).toMatchObject({ status: 405, json: { error: expect.any(String) } })
    expect(mcp.headers.get('allow')).toBe('POST, OPTIONS')
    expect((await t.call('DELETE', '/api/v1/stats', { key: t.a.read.key })).status).toBe(405)
    expect((await t.call('GET', '/api/v1/nope/deeper', { key: t.a.read.key })).status).toBe(404)
  })

  it('GET /api/v1/dimensions lists dimensions, operators and ranges', async () => {
    const res = await t.call('GET', '/api/v1/dimensions', { key: t.a.read.key })
    expect(res.json.operators).toEqual(['is', 'is_not', 'contains', 'matches'])
    expect(res.json.ranges).toHaveLength(14)
    expect(res.json.filterDimensions).toHaveLength(30)
    expect(res.json.firstPartyOnly).toContain('collection_source')
    expect(res.json.ga4Datasets).toMatchObject({
      locations: ['country', 'region', 'city'],
      pages: ['path'],
      hostnames: ['hostname'],
      events: ['event'],
    })
    expect(res.json.breakdownProperties).toContain('prop:<key>')
  })

  it('/health answers without a key', async () => {
    const res = await t.call('GET', '/health')
    expect(res).toMatchObject({ status: 200, json: { status: 'ok', clickhouse: 'ok', keyValue: 'ok' } })
  })
})

describe('typed answers in the OpenAPI document', () => {
  it('every endpoint documents its success status and, for JSON answers, a real response schema', async () => {
    const services = await testServices()
    const doc = (await client(services)('GET', '/api/v1/openapi.json')).json
    for (const e of endpoints) {
      const responses = doc.paths[e.path][e.method.toLowerCase()].responses
      const success = responses[String(e.status ?? 200)]
      expect(success, `${e.method} ${e.path}`).toBeDefined()
      if (!isJsonAnswer(e.response)) continue
      const schema = success.content['application/json'].schema
      expect(schema.type, `${e.method} ${e.path}`).toBe('object')
      expect(Object.keys(schema.properties ?? {}).length, `${e.method} ${e.path}`).toBeGreaterThan(0)
    }
    expect(doc.paths['/api/v1/sites/{site_id}/ingest-key'].post.responses).toHaveProperty('201')
    expect(doc.paths['/api/v1/sites/{site_id}/ingest-key'].post.responses).not.toHaveProperty('200')
    expect(doc.paths['/api/event'].post.responses).toHaveProperty('202')
    // integer parameters carry their real bounds, not the whole safe-integer range
    for (const path of Object.values(doc.paths) as Record<
      string,
      { parameters?: { schema: { minimum?: number; maximum?: number } }[] }
    >[]) {
      for (const op of Object.values(path)) {
        for (const p of op.parameters ?? []) expect(Math.abs(p.schema.maximum ?? 0)).toBeLessThan(Number.MAX_SAFE_INTEGER)
      }
    }
  })

  it('openapi-typescript generates a client in which get_stats answers totals.visitors: number', async () => {
    const services = await testServices()
    const doc = (await client(services)('GET', '/api/v1/openapi.json')).json
    const { default: openapiTS, astToString } = await import('openapi-typescript')
    const generated = astToString(await openapiTS(doc))
    const probe = (line: string) => {
      const files: Record<string, string> = {
        '/api.d.ts': generated,
        '/probe.ts': `import type { paths } from './api'\ntype Stats = paths['/api/v1/stats']['get']['responses'][200]['content']['application/json']\ndeclare const stats: Stats\n${line}\n`,
      }
      const options = {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        types: [],
        lib: ['lib.es2022.d.ts'],
      }
      const host = ts.createCompilerHost(options)
      const read = host.readFile.bind(host)
      host.readFile = (name) => files[name] ?? read(name)
      host.fileExists = (name) => name in files || ts.sys.fileExists(name)
      const getSource = host.getSourceFile.bind(host)
      host.getSourceFile = (name, version) => (name in files ? ts.createSourceFile(name, files[name], version) : getSource(name, version))
      const program = ts.createProgram(['/probe.ts'], options, host)
      return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    }
    expect(probe('const visitors: number = stats.totals.visitors')).toEqual([])
    expect(probe("const source: 'standalone' | 'ga4' = stats.source")).toEqual([])
    // the probe can fail: a field of the wrong type or one that does not exist is an error
    expect(probe('const visitors: string = stats.totals.visitors').join()).toMatch(/not assignable/)
    expect(probe('const nope = stats.totals.nope').join()).toMatch(/does not exist/)
  })
})
