import { beforeAll, describe, expect, it } from 'vitest'
import { harness, REDIS_URL, type Harness } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)

describe.each(kinds)('auth matrix (%s key/value store)', (kind) => {
  let t: Harness

  beforeAll(async () => {
    t = await harness({ kv: kind })
  })

  it('no key is 401 with a JSON error and CORS', async () => {
    const res = await t.call('GET', '/api/v1/me')
    expect(res.status).toBe(401)
    expect(res.json).toEqual({ error: expect.stringContaining('missing API key') })
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
  })

  it('a bad key is 401, and so is a malformed Authorization header', async () => {
    expect((await t.call('GET', '/api/v1/me', { key: 'wak_notarealkey' })).status).toBe(401)
    const app = (await import('../../functions/app')).createApp(t.services)
    const res = await app.request('http://api.test/api/v1/me', { headers: { authorization: 'Basic abc' } })
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual({ error: expect.stringContaining('Bearer') })
  })

  it('accepts Bearer and x-api-key', async () => {
    for (const via of ['bearer', 'header'] as const) {
      const res = await t.call('GET', '/api/v1/me', { key: t.a.read.key, via })
      expect(res.status).toBe(200)
      expect(res.json.key).toMatchObject({ id: t.a.read.id, scope: 'read', siteId: null })
      expect(res.json.organization.id).toBe(t.a.org.id)
    }
  })

  it('?key= works only for a write-scoped site-bound ingest key, on the ingestion endpoints only', async () => {
    expect((await t.call('GET', '/api/v1/proxy-config', { key: t.a.read.key, via: 'query' })).status).toBe(401)
    expect((await t.call('GET', `/api/v1/proxy-config?site_id=${t.a.site.id}`, { key: t.a.write.key, via: 'query' })).status).toBe(401)
    const ingest = await t.call('GET', '/api/v1/proxy-config', { key: t.ingest.key, via: 'query' })
    expect(ingest.status).toBe(200)
    expect(ingest.json.siteId).toBe(t.a.site.id)
    // URLs get logged: the same key reads nothing through one
    for (const path of ['/api/v1/me', `/api/v1/stats?site_id=${t.a.site.id}`, `/api/v1/sites/${t.a.site.id}`]) {
      const res = await t.call('GET', path, { key: t.ingest.key, via: 'query' })
      expect(res.status, path).toBe(401)
      expect(res.json.error).toMatch(/query parameter/)
    }
    expect((await t.call('GET', '/api/v1/me', { key: t.ingest.key })).status).toBe(200)
  })

  it('a site-bound key reaches its own site only', async () => {
    const mine = await t.call('GET', '/api/v1/sites', { key: t.ingest.key })
    expect(mine.json.sites.map((s: { id: string }) => s.id)).toEqual([t.a.site.id])
    // organization-wide endpoints are 403
    expect((await t.call('GET', '/api/v1/org/api-keys', { key: t.ingest.key })).status).toBe(403)
    expect((await t.call('DELETE', `/api/v1/org/api-keys?id=${t.a.read.id}`, { key: t.ingest.key })).status).toBe(403)
    // another site of the same organization is 404, also through proxy-config
    const sibling = (
      await t.call('POST', '/api/v1/sites', {
        key: t.a.write.key,
        body: { domain: `sibling-${crypto.randomUUID().slice(0, 6)}.example.com` },
      })
    ).json
    expect((await t.call('GET', `/api/v1/sites/${sibling.id}`, { key: t.ingest.key })).status).toBe(404)
    const proxy = await t.call('GET', `/api/v1/proxy-config?site_id=${sibling.id}`, { key: t.ingest.key })
    expect(proxy.status).toBe(404)
    expect((await t.call('GET', `/api/v1/proxy-config?site_id=${t.a.site.snippetId}`, { key: t.ingest.key })).json.siteId).toBe(t.a.site.id)
  })

  it('a read key on a write endpoint is 403 and changes nothing', async () => {
    const res = await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.read.key, body: { includeBots: true } })
    expect(res.status).toBe(403)
    expect(res.json.error).toMatch(/write/)
    expect((await t.repositories.sites.get(t.a.site.id))!.tracking.includeBots).toBe(false)
    expect((await t.call('POST', '/api/v1/sites', { key: t.a.read.key, body: { domain: 'new.example.com' } })).status).toBe(403)
  })

  it("another organization's site is 404 by UUID and by snippet id, like a missing site", async () => {
    const missing = await t.call('GET', '/api/v1/sites/00000000-0000-4000-8000-000000000000', { key: t.a.read.key })
    expect(missing.status).toBe(404)
    for (const id of [t.b.site.id, t.b.site.snippetId]) {
      const res = await t.call('GET', `/api/v1/sites/${id}`, { key: t.a.read.key })
      expect(res.status).toBe(404)
      expect(res.json).toEqual(missing.json)
      const write = await t.call('PATCH', `/api/v1/sites/${id}`, { key: t.a.write.key, body: { includeBots: true } })
      expect(write.status).toBe(404)
      expect(write.json).toEqual(missing.json)
    }
    expect((await t.repositories.sites.get(t.b.site.id))!.tracking.includeBots).toBe(false)
    // the owner reaches it both ways
    expect((await t.call('GET', `/api/v1/sites/${t.b.site.snippetId}`, { key: t.b.read.key })).json.id).toBe(t.b.site.id)
  })

  it('a site-bound key reaches only its site and cannot add or delete sites', async () => {
    const now = t.services.now()
    const { newSite } = await import('../../lib/sites/sites')
    const other = newSite({ domain: `other-${crypto.randomUUID().slice(0, 6)}.example.com` }, t.a.org.id, now)
    await t.repositories.sites.create(other)
    expect((await t.call('GET', `/api/v1/sites/${other.id}`, { key: t.ingest.key })).status).toBe(404)
    expect((await t.call('GET', `/api/v1/sites/${t.a.site.snippetId}`, { key: t.ingest.key })).status).toBe(200)
    const list = await t.call('GET', '/api/v1/sites', { key: t.ingest.key })
    expect(list.json.sites.map((s: { id: string }) => s.id)).toEqual([t.a.site.id])
    expect((await t.call('POST', '/api/v1/sites', { key: t.ingest.key, body: { domain: 'x.example.com' } })).status).toBe(403)
    expect((await t.call('DELETE', `/api/v1/sites/${t.a.site.id}?confirm=${t.a.site.domain}`, { key: t.ingest.key })).status).toBe(403)
    expect(await t.repositories.sites.get(t.a.site.id)).not.toBeNull()
  })

  it('a revoked key is 401 at once, and the listing shows it revoked with no secret', async () => {
    const { createApiKey } = await import('../../lib/accounts/admin')
    const doomed = await createApiKey(t.repositories, { orgId: t.a.org.id, name: 'doomed', scope: 'read' }, t.services.now())
    expect((await t.call('GET', '/api/v1/me', { key: doomed.key })).status).toBe(200)
    const revoke = await t.call('DELETE', `/api/v1/org/api-keys?id=${doomed.id}`, { key: t.a.write.key })
    expect(revoke).toMatchObject({ status: 200, json: { revoked: true, id: doomed.id } })
    expect((await t.call('GET', '/api/v1/me', { key: doomed.key })).status).toBe(401)
    const list = await t.call('GET', '/api/v1/org/api-keys', { key: t.a.read.key })
    const row = list.json.keys.find((k: { id: string }) => k.id === doomed.id)
    expect(row).toMatchObject({ name: 'doomed', scope: 'read', prefix: doomed.prefix })
    expect(row.revokedAt).toEqual(expect.any(String))
    expect(JSON.stringify(list.json)).not.toContain(doomed.key)
    expect(JSON.stringify(list.json)).not.toContain('hash')
    // keys used above show a last use
    expect(list.json.keys.find((k: { id: string }) => k.id === t.a.read.id).lastUsedAt).toEqual(expect.any(String))
    // another organization's key id is 404, and a read key cannot revoke
    expect((await t.call('DELETE', `/api/v1/org/api-keys?id=${t.b.read.id}`, { key: t.a.write.key })).status).toBe(404)
    expect((await t.call('DELETE', `/api/v1/org/api-keys?id=${t.a.read.id}`, { key: t.a.read.key })).status).toBe(403)
    expect((await t.call('DELETE', '/api/v1/org/api-keys?id=nope', { key: t.a.write.key })).status).toBe(400)
  })

  it('keys are stored only as SHA-256 and carry the recognisable prefix', async () => {
    expect(t.a.read.key).toMatch(/^wak_[0-9A-Za-z]{43}$/)
    expect(t.a.read.key.startsWith(t.a.read.prefix)).toBe(true)
    const { createHash } = await import('node:crypto')
    const hash = createHash('sha256').update(t.a.read.key).digest('hex')
    expect(await t.services.raw.exec(['GET', `apikey:${hash}`])).toEqual(expect.stringContaining(t.a.read.id))
    const meta = String(await t.services.raw.exec(['GET', `apikeymeta:${t.a.read.id}`]))
    expect(meta).not.toContain(t.a.read.key)
  })

  it('CORS preflight on /api/v1 answers with Access-Control-Allow-Origin: *', async () => {
    const app = (await import('../../functions/app')).createApp(t.services)
    const res = await app.request('http://api.test/api/v1/stats', {
      method: 'OPTIONS',
      headers: { origin: 'https://x.test', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-allow-headers')).toMatch(/authorization/i)
  })
})
