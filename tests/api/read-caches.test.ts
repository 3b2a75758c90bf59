import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, revokeApiKey } from '../../lib/accounts/admin'
import { KEY_CACHE_MS, KeysRepository } from '../../lib/accounts/keys-repository'
import { sha256Hex } from '../../lib/core/crypto'
import { SiteDirectory } from '../../lib/sites/site-directory'
import { harness, type Harness } from '../helpers'

/**
 * What every keyed read looks up is kept in process for a short time: the key's record
 * (KEY_CACHE_MS) and the site with its settings (the site directory's cache time). A change made
 * through this process is seen at once; one made by another process (another instance, the admin
 * CLI) within that time. "Another process" here is another repository or directory over the same store.
 */
describe('in-process caches of the keyed read path', () => {
  let t: Harness

  beforeAll(async () => {
    t = await harness({ siteCacheMs: 10_000 })
  })

  it('a key revoked through this process is refused at once, though its record was cached', async () => {
    const doomed = await createApiKey(t.repositories, { orgId: t.a.org.id, name: 'cached', scope: 'read' }, t.services.now())
    const stats = () => t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}&range=7d`, { key: doomed.key })
    // twice: the second answer comes from the cached record
    expect((await stats()).status).toBe(200)
    expect((await stats()).status).toBe(200)
    expect((await t.call('DELETE', `/api/v1/org/api-keys?id=${doomed.id}`, { key: t.a.write.key })).status).toBe(200)
    const refused = await stats()
    expect(refused.status).toBe(401)
    expect(refused.json.error).toContain('revoked')
  })

  it('a key revoked by another process is refused once the cache time has passed, not before', async () => {
    const doomed = await createApiKey(t.repositories, { orgId: t.a.org.id, name: 'elsewhere', scope: 'read' }, t.services.now())
    const hash = await sha256Hex(doomed.key)
    let clock = 1_000_000
    const here = new KeysRepository(t.kv, { clock: () => clock })
    expect(await here.byHash(hash)).toMatchObject({ id: doomed.id })
    // revoked through the store by someone else: this process still has the record for KEY_CACHE_MS
    await revokeApiKey(t.repositories, doomed.id, t.services.now())
    expect(await t.repositories.keys.byHash(hash)).toBeNull()
    clock += KEY_CACHE_MS - 1
    expect(await here.byHash(hash)).toMatchObject({ id: doomed.id })
    clock += 1
    expect(await here.byHash(hash)).toBeNull()
    // and an unknown hash is never kept: a key made elsewhere works at once
    const made = await createApiKey(t.repositories, { orgId: t.a.org.id, name: 'later', scope: 'read' }, t.services.now())
    const madeHash = await sha256Hex(made.key)
    expect(await here.byHash(madeHash)).toMatchObject({ id: made.id })
  })

  it('a setting changed through this process is read at once by the next GET', async () => {
    const site = () => t.call('GET', `/api/v1/sites/${t.a.site.id}`, { key: t.a.read.key })
    const before = await site()
    expect(before.status).toBe(200)
    const timezone = before.json.timezone === 'Asia/Tokyo' ? 'America/Lima' : 'Asia/Tokyo'
    const patched = await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: { timezone } })
    expect(patched.status).toBe(200)
    expect((await site()).json.timezone).toBe(timezone)
    // the reports read it too: today starts at the new timezone's midnight (Tokyo +09:00, Lima -05:00, no daylight saving)
    const stats = await t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}&range=today`, { key: t.a.read.key })
    expect(stats.json.range.from).toMatch(timezone === 'Asia/Tokyo' ? /T00:00:00\+09:00$/ : /T00:00:00-05:00$/)
  })

  it('a setting changed by another process is read within the cache time, not before', async () => {
    let clock = 5_000_000
    const here = new SiteDirectory(t.repositories.sites, { cacheMs: 10_000, clock: () => clock })
    const elsewhere = new SiteDirectory(t.repositories.sites, { cacheMs: 10_000 })
    const cached = (await here.find(t.b.site.id))!
    expect(await here.find(t.b.site.snippetId)).toEqual(cached)
    const timezone = cached.timezone === 'Asia/Tokyo' ? 'America/Lima' : 'Asia/Tokyo'
    await elsewhere.update(t.b.site.id, (s) => ({ ...s, timezone }))
    clock += 9_999
    expect((await here.find(t.b.site.id))!.timezone).toBe(cached.timezone)
    clock += 1
    expect((await here.find(t.b.site.id))!.timezone).toBe(timezone)
    // a write starts from the stored site whatever the cache holds
    await elsewhere.update(t.b.site.id, (s) => ({ ...s, timezone: cached.timezone }))
    expect((await here.findFresh(t.b.site.id))!.timezone).toBe(cached.timezone)
  })

  it('an MCP tool call of a read takes the site from the cache, as the REST read does', async () => {
    const elsewhere = new SiteDirectory(t.repositories.sites, { cacheMs: 10_000 })
    const stats = async () => {
      const res = await t.app.request('http://api.test/api/mcp', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.b.read.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'get_stats', arguments: { site_id: t.b.site.id, range: 'today' } },
        }),
      })
      return ((await res.json()) as { result: { structuredContent: { range: { from: string } } } }).result.structuredContent.range.from
    }
    const rest = async () =>
      (await t.call('GET', `/api/v1/stats?site_id=${t.b.site.id}&range=today`, { key: t.b.read.key })).json.range.from
    // both reads have the site cached
    const before = await rest()
    expect(await stats()).toBe(before)
    const stored = (await t.repositories.sites.get(t.b.site.id))!
    const timezone = stored.timezone === 'Asia/Tokyo' ? 'America/Lima' : 'Asia/Tokyo'
    // changed by another process: within the cache time both reads still answer in the cached timezone
    await elsewhere.update(t.b.site.id, (s) => ({ ...s, timezone }))
    try {
      expect(await rest()).toBe(before)
      expect(await stats()).toBe(before)
    } finally {
      await elsewhere.update(t.b.site.id, (s) => ({ ...s, timezone: stored.timezone }))
    }
  })
})
