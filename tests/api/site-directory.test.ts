import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { harness, type Harness } from '../helpers'

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

describe('settings saved through the API apply at once, with the site cache on', () => {
  let t: Harness
  let app: ReturnType<typeof createApp>

  beforeAll(async () => {
    t = await harness({ siteCacheMs: 10_000 })
    app = createApp(t.services)
  })

  it('publicCounts: the public count answers right after the PATCH', async () => {
    const live = async () => (await app.request(`http://api.test/api/public/live?site=${t.a.site.snippetId}`)).status
    // the first answer puts the site, counts not yet public, in the cache
    expect(await live()).toBe(404)
    expect((await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: { publicCounts: true } })).status).toBe(200)
    expect(await live()).toBe(200)
  })

  it('excludedPaths: the collector drops the path right after the PATCH', async () => {
    const send = (path: string) =>
      app.request('http://api.test/api/event', {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'user-agent': CHROME, 'x-forwarded-for': '8.8.8.8' },
        body: JSON.stringify({ site: t.b.site.snippetId, name: 'pageview', url: `https://${t.b.site.domain}${path}` }),
      })
    const stored = async (path: string) =>
      (
        await t.clickhouse.query('SELECT 1 FROM events WHERE site_id = {site:UUID} AND pathname = {path:String}', {
          site: t.b.site.id,
          path,
        })
      ).length
    expect((await send('/private/before')).status).toBe(202)
    expect(await stored('/private/before')).toBe(1)
    expect(
      (await t.call('PATCH', `/api/v1/sites/${t.b.site.id}`, { key: t.b.write.key, body: { excludedPaths: ['/private/*'] } })).status,
    ).toBe(200)
    expect((await send('/private/after')).status).toBe(202)
    expect(await stored('/private/after')).toBe(0)
  })
})

describe('changing a site record', () => {
  it('concurrent changes of different settings all survive: a change that lost the race is made again on the newer record', async () => {
    const t = await harness()
    const themes = ['dark', 'light'] as const
    let calls = 0
    // each change reads, waits (as a handler awaiting a check would), then writes: all eight overlap
    const changes = Array.from({ length: 8 }, (_, i) =>
      t.services.sites.update(t.a.site.id, async (site) => {
        calls++
        await new Promise((r) => setTimeout(r, 20))
        return {
          ...site,
          tracking: { ...site.tracking, excludedPaths: [...site.tracking.excludedPaths, `/p${i}`] },
          appearance: { ...site.appearance, theme: themes[i % 2] },
        }
      }),
    )
    await Promise.all(changes)
    const stored = (await t.repositories.sites.get(t.a.site.id))!
    expect([...stored.tracking.excludedPaths].sort()).toEqual(Array.from({ length: 8 }, (_, i) => `/p${i}`).sort())
    // the losers ran again: more calls than changes
    expect(calls).toBeGreaterThan(8)
    // a change that returns the record unchanged writes nothing; a missing site is 404
    expect(await t.services.sites.update(t.a.site.id, (site) => site)).toEqual(stored)
    await expect(t.services.sites.update(crypto.randomUUID(), (site) => site)).rejects.toMatchObject({ status: 404 })
  })
})
