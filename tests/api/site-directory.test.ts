import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { client, seed, testServices } from '../helpers'

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

describe('settings saved through the API apply at once, with the site cache on', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let fx: Awaited<ReturnType<typeof seed>>
  let call: ReturnType<typeof client>
  let app: ReturnType<typeof createApp>

  beforeAll(async () => {
    services = await testServices({ siteCacheMs: 10_000 })
    fx = await seed(services)
    call = client(services)
    app = createApp(services)
  })

  it('publicCounts: the public count answers right after the PATCH', async () => {
    const live = async () => (await app.request(`http://api.test/api/public/live?site=${fx.a.site.snippetId}`)).status
    // the first answer puts the site, counts not yet public, in the cache
    expect(await live()).toBe(404)
    expect((await call('PATCH', `/api/v1/sites/${fx.a.site.id}`, { key: fx.a.write.key, body: { publicCounts: true } })).status).toBe(200)
    expect(await live()).toBe(200)
  })

  it('excludedPaths: the collector drops the path right after the PATCH', async () => {
    const send = (path: string) =>
      app.request('http://api.test/api/event', {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'user-agent': CHROME, 'x-forwarded-for': '8.8.8.8' },
        body: JSON.stringify({ site: fx.b.site.snippetId, name: 'pageview', url: `https://${fx.b.site.domain}${path}` }),
      })
    const stored = async (path: string) =>
      (await services.olap.query('SELECT 1 FROM events WHERE site_id = {site:UUID} AND pathname = {path:String}', { site: fx.b.site.id, path })).length
    expect((await send('/private/before')).status).toBe(202)
    expect(await stored('/private/before')).toBe(1)
    expect((await call('PATCH', `/api/v1/sites/${fx.b.site.id}`, { key: fx.b.write.key, body: { excludedPaths: ['/private/*'] } })).status).toBe(200)
    expect((await send('/private/after')).status).toBe(202)
    expect(await stored('/private/after')).toBe(0)
  })
})

describe('changing a site record', () => {
  it('concurrent changes of different settings all survive: a change that lost the race is made again on the newer record', async () => {
    const services = await testServices()
    const fx = await seed(services)
    const themes = ['dark', 'light'] as const
    let calls = 0
    // each change reads, waits (as a handler awaiting a check would), then writes: all eight overlap
    const changes = Array.from({ length: 8 }, (_, i) =>
      services.sites.update(fx.a.site.id, async (site) => {
        calls++
        await new Promise((r) => setTimeout(r, 20))
        return { ...site, tracking: { ...site.tracking, excludedPaths: [...site.tracking.excludedPaths, `/p${i}`] }, appearance: { ...site.appearance, theme: themes[i % 2] } }
      }),
    )
    await Promise.all(changes)
    const stored = (await services.repositories.sites.get(fx.a.site.id))!
    expect([...stored.tracking.excludedPaths].sort()).toEqual(Array.from({ length: 8 }, (_, i) => `/p${i}`).sort())
    // the losers ran again: more calls than changes
    expect(calls).toBeGreaterThan(8)
    // a change that returns the record unchanged writes nothing; a missing site is 404
    expect(await services.sites.update(fx.a.site.id, (site) => site)).toEqual(stored)
    await expect(services.sites.update(crypto.randomUUID(), (site) => site)).rejects.toMatchObject({ status: 404 })
  })
})
