import { compileErrors, validate } from '@readme/openapi-parser'
import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { honoPath } from '../../functions/http'
import { endpoints } from '../../functions/registry'
import { client, seed, testServices } from '../helpers'


describe('the endpoint registry', () => {
  let call: ReturnType<typeof client>
  let services: Awaited<ReturnType<typeof testServices>>
  let fx: Awaited<ReturnType<typeof seed>>

  beforeAll(async () => {
    services = await testServices()
    fx = await seed(services)
    call = client(services)
  })

  it('declares exactly the routes the app serves', () => {
    const app = createApp(services)
    const served = new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path}`))
    const declared = new Set(endpoints.map((e) => `${e.method} ${honoPath(e.path)}`))
    expect([...served].sort()).toEqual([...declared].sort())
    // one declaration per method and path, one tool name per tool
    expect(new Set(endpoints.map((e) => `${e.method} ${e.path}`)).size).toBe(endpoints.length)
    const tools = endpoints.map((e) => e.tool).filter(Boolean)
    expect(new Set(tools).size).toBe(tools.length)
    for (const tool of tools) expect(tool).toMatch(/^[a-z][a-z0-9_]*$/)
  })

  it('GET /api/v1 lists every registered endpoint, keyless, with JSON Schema parameters', async () => {
    const res = await call('GET', '/api/v1')
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    const listed = res.json.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`)
    expect(listed.sort()).toEqual(endpoints.map((e) => `${e.method} ${e.path}`).sort())
    const patch = res.json.endpoints.find((e: { method: string; path: string }) => e.method === 'PATCH' && e.path === '/api/v1/sites/{site_id}')
    expect(patch).toMatchObject({ scope: 'write', tool: 'update_site_settings', parameters: { type: 'object', required: ['site_id'] } })
    expect(patch.body.properties.includeBots).toEqual({ type: 'boolean' })
    expect(patch.body.properties.publicCountsDial).toEqual({ type: 'string', enum: ['live', '30d', 'year', 'all'] })
    expect(patch.body.additionalProperties).toBe(false)
    const list = res.json.endpoints.find((e: { tool: string }) => e.tool === 'list_sites')
    expect(list.parameters.properties.range.enum).toContain('last-year')
    expect(list.parameters.required ?? []).not.toContain('range')
  })

  it('GET /api/v1/openapi.json is a valid OpenAPI 3.1 document covering every endpoint', async () => {
    const res = await call('GET', '/api/v1/openapi.json')
    expect(res.status).toBe(200)
    expect(res.json.openapi).toBe('3.1.0')
    const operations = Object.entries(res.json.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
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
    const res = await call('GET', '/api/v1/nope', { key: fx.a.read.key })
    expect(res.status).toBe(404)
    expect(res.json.error).toMatch(/no endpoint/)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('GET /api/v1/dimensions lists dimensions, operators and ranges', async () => {
    const res = await call('GET', '/api/v1/dimensions', { key: fx.a.read.key })
    expect(res.json.operators).toEqual(['is', 'is_not', 'contains', 'matches'])
    expect(res.json.ranges).toHaveLength(14)
    expect(res.json.filterDimensions).toHaveLength(29)
    expect(res.json.firstPartyOnly).toContain('collection_source')
    expect(res.json.breakdownProperties).toContain('prop:<key>')
  })

  it('/health answers without a key', async () => {
    const res = await call('GET', '/health')
    expect(res).toMatchObject({ status: 200, json: { status: 'ok', clickhouse: 'ok', keyValue: 'ok' } })
  })
})
