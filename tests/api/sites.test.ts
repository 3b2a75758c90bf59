import { beforeAll, describe, expect, it, vi } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { rollupBuildsSettled } from '../../lib/reports/query/run'
import { harness, type Harness } from '../helpers'

describe('sites', () => {
  let t: Harness
  const now = new Date('2026-11-22T12:00:00Z')

  beforeAll(async () => {
    t = await harness({ now: () => now })
  })

  it('creates a site: 201, UUID and snippet id, snippet tag, defaults', async () => {
    const res = await t.call('POST', '/api/v1/sites', {
      key: t.a.write.key,
      body: { domain: '  Shop.Example.COM ', timezone: 'america/new_york' },
    })
    expect(res.status).toBe(201)
    expect(res.json).toMatchObject({
      domain: 'shop.example.com',
      timezone: 'America/New_York',
      sources: ['standalone'],
      primarySource: 'standalone',
      standaloneEnabled: true,
      createdAt: now.toISOString(),
      tracking: { includeBots: false, excludedPaths: [], customDomain: null },
      sharing: { publicCounts: false, publicCountsDial: 'live', isPublic: false },
      install: { installed: false },
      imports: [],
    })
    expect(res.json.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(res.json.snippetId).toMatch(/^[a-z0-9]{10}$/)
    expect(res.json.snippet).toBe(`<script defer data-site="${res.json.snippetId}" src="https://api.test/js/script.js"></script>`)
    expect(res.json).not.toHaveProperty('orgId')
    // both ids read it back; the listing has it
    for (const id of [res.json.id, res.json.snippetId])
      expect((await t.call('GET', `/api/v1/sites/${id}`, { key: t.a.read.key })).json).toEqual(res.json)
    const list = await t.call('GET', '/api/v1/sites?stats=0', { key: t.a.read.key })
    expect(list.json.sites.map((s: { domain: string }) => s.domain)).toContain('shop.example.com')
    // the same domain twice in one organization is a conflict; another organization may have it
    expect((await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: 'shop.example.com' } })).status).toBe(409)
    expect((await t.call('POST', '/api/v1/sites', { key: t.b.write.key, body: { domain: 'shop.example.com' } })).status).toBe(201)
  })

  it('takes sources and primarySource, and ga4-only sites are not standalone', async () => {
    const res = await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: 'ga.example.com', sources: ['ga4'] } })
    expect(res.json).toMatchObject({ sources: ['ga4'], primarySource: 'ga4', standaloneEnabled: false, timezone: 'UTC' })
    const both = await t.call('POST', '/api/v1/sites', {
      key: t.a.write.key,
      body: { domain: 'both.example.com', sources: ['standalone', 'ga4'], primarySource: 'ga4' },
    })
    expect(both.json).toMatchObject({ sources: ['standalone', 'ga4'], primarySource: 'ga4' })
  })

  const badCreates: [string, unknown, RegExp][] = [
    ['missing domain', {}, /domain/],
    ['domain with scheme', { domain: 'https://x.com' }, /domain/],
    ['domain with path', { domain: 'x.com/blog' }, /domain/],
    ['domain not a string', { domain: 42 }, /domain/],
    ['single-label domain', { domain: 'localhost' }, /domain/],
    ['unknown source', { domain: 'x.com', sources: ['matomo'] }, /sources/],
    ['empty sources', { domain: 'x.com', sources: [] }, /sources/],
    ['repeated source', { domain: 'x.com', sources: ['ga4', 'ga4'] }, /sources/],
    ['primarySource not a source', { domain: 'x.com', sources: ['standalone'], primarySource: 'ga4' }, /primarySource/],
    ['unknown primarySource', { domain: 'x.com', primarySource: 'x' }, /primarySource/],
    ['bad timezone', { domain: 'x.com', timezone: 'Mars/Olympus' }, /timezone/],
    ['timezone not a string', { domain: 'x.com', timezone: 5 }, /timezone/],
    ['unknown field', { domain: 'x.com', owner: 'me' }, /owner/],
    ['array body', [{ domain: 'x.com' }], /body/],
  ]
  it.each(badCreates)('site create with %s is 400 naming the problem, and nothing is created', async (_name, body, pattern) => {
    const before = (await t.repositories.sites.list(t.a.org.id)).length
    const res = await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body })
    expect(res.status).toBe(400)
    expect(Object.keys(res.json)).toEqual(['error'])
    expect(res.json.error).toMatch(pattern)
    expect((await t.repositories.sites.list(t.a.org.id)).length).toBe(before)
  })

  it('site create with a body that is not JSON, or no body, is 400', async () => {
    expect((await t.call('POST', '/api/v1/sites', { key: t.a.write.key, rawBody: '{domain:' })).json).toEqual({
      error: 'body: not valid JSON',
    })
    expect((await t.call('POST', '/api/v1/sites', { key: t.a.write.key })).status).toBe(400)
  })

  it('patches settings flat by name and returns the updated site', async () => {
    const res = await t.call('PATCH', `/api/v1/sites/${t.a.site.snippetId}`, {
      key: t.a.write.key,
      body: {
        includeBots: true,
        excludedPaths: ['/admin/*'],
        isPublic: true,
        shareLevel: 'link',
        publicCounts: true,
        publicCountsDial: '30d',
        theme: 'dark',
        changeDetectionEnabled: false,
        timezone: 'Asia/Kolkata',
      },
    })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      timezone: 'Asia/Kolkata',
      tracking: { includeBots: true, excludedPaths: ['/admin/*'], trackErrors: true },
      sharing: { isPublic: true, shareLevel: 'link', publicCounts: true, publicCountsDial: '30d' },
      appearance: { theme: 'dark', accentColor: '#4f46e5' },
      changeDetection: { changeDetectionEnabled: false, crawlStatus: 'pending' },
    })
    expect((await t.call('GET', `/api/v1/sites/${t.a.site.id}`, { key: t.a.read.key })).json).toEqual(res.json)
    // adding ga4 and making it primary, then dropping it again while primary, is refused
    const ga = await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, {
      key: t.a.write.key,
      body: { sources: ['standalone', 'ga4'], primarySource: 'ga4' },
    })
    expect(ga.json).toMatchObject({ sources: ['standalone', 'ga4'], primarySource: 'ga4' })
    const drop = await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: { sources: ['standalone'] } })
    expect(drop.status).toBe(400)
    expect(drop.json.error).toMatch(/primarySource/)
  })

  const badPatches: [string, unknown][] = [
    ['includeBots', 'yes'],
    ['excludedPaths', 'admin'],
    ['excludedPaths', ['admin']],
    ['excludedIps', ['300.1.1.1']],
    ['capturedQueryParams', ['a b']],
    ['affiliatePaths', [1]],
    ['hashRouting', 1],
    ['trackOutboundLinks', 'true'],
    ['trackFileDownloads', null],
    ['trackForms', 0],
    ['trackErrors', 'no'],
    ['trackVitals', []],
    ['autocapture', {}],
    ['changeDetectionEnabled', 'off'],
    ['changeExcludedPaths', '/x'],
    ['isPublic', 'public'],
    ['shareLevel', 'everyone'],
    ['publicCounts', 1],
    ['publicCountsDial', 'forever'],
    ['displayName', ''],
    ['theme', 'blue'],
    ['accentColor', 'red'],
    ['samplingThreshold', -1],
    ['samplingThreshold', 999],
    ['samplingThreshold', 1500.5],
    ['samplingThreshold', '5000'],
    ['samplingThreshold', 1e13],
    ['standaloneEnabled', 'yes'],
    ['primarySource', 'matomo'],
    ['sources', 'ga4'],
    ['timezone', 'Nowhere/Land'],
    ['customDomain', 'stats.example.com'],
    ['crawlStatus', 'ok'],
    ['domain', 'other.com'],
    ['snippetId', 'abc'],
    ['id', 'x'],
  ]
  it.each(badPatches)('PATCH %s = %j is 400 naming the field and changes nothing', async (field, value) => {
    const before = await t.repositories.sites.get(t.a.site.id)
    const res = await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: { theme: 'light', [field]: value } })
    expect(res.status).toBe(400)
    expect(res.json.error).toContain(field)
    expect(await t.repositories.sites.get(t.a.site.id)).toEqual(before)
  })

  it('PATCH with an empty object or a non-object is 400', async () => {
    expect((await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: {} })).status).toBe(400)
    expect((await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: 'x' })).status).toBe(400)
  })

  it('DELETE needs confirm=<domain>, then removes the site from both stores', async () => {
    const created = (await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: 'gone.example.com' } })).json
    const other = (await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: 'stays.example.com' } })).json
    // through the collector's own paths: raw hits by the import, a crawler hit by server-side collection
    const hit = (snippet: string, path: string, second: number) =>
      JSON.stringify({
        timestamp: `2026-11-20T10:00:0${second}Z`,
        site: snippet,
        name: 'pageview',
        url: `https://example.com${path}`,
        ip: '203.0.113.5',
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      })
    const imported = await importHits(
      [hit(created.snippetId, '/a', 0), hit(created.snippetId, '/b', 1), hit(other.snippetId, '/c', 2)],
      t.services.ingestor,
    )
    expect(imported).toMatchObject({ imported: 3, rejected: 0 })
    const crawled = await t.call('POST', '/api/v1/collect', {
      key: t.a.write.key,
      body: {
        site_id: created.snippetId,
        events: [{ path: '/a', userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)' }],
      },
    })
    expect(crawled.json).toEqual({ ingested: 1, dropped: 0 })
    const count = async (table: string, id: string) =>
      Number((await t.clickhouse.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE site_id = {id:UUID}`, { id }))[0].n)
    expect(await count('events', created.id)).toBe(2)
    expect(await count('sessions', created.id)).toBe(1)

    expect((await t.call('DELETE', `/api/v1/sites/${created.id}`, { key: t.a.write.key })).status).toBe(400)
    const wrong = await t.call('DELETE', `/api/v1/sites/${created.id}?confirm=other.com`, { key: t.a.write.key })
    expect(wrong.status).toBe(400)
    expect(wrong.json.error).toMatch(/confirm/)
    expect(await count('events', created.id)).toBe(2)

    // the rows' deletion is held until the answer is read: the answer does not wait for it
    const engine = t.services.clickhouse
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    t.services.clickhouse = new Proxy(engine, {
      get(target, prop) {
        if (prop === 'command')
          return async (query: string, params?: Record<string, unknown>) => {
            if (/\bDELETE WHERE\b/.test(query)) await held
            return target.command(query, params)
          }
        const value = Reflect.get(target, prop, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const res = await t.call('DELETE', `/api/v1/sites/${created.snippetId}?confirm=gone.example.com`, { key: t.a.write.key })
    expect(res).toMatchObject({ status: 200, json: { deleted: true, id: created.id } })
    // gone from every read at once, its rows still there
    expect((await t.call('GET', `/api/v1/sites/${created.id}`, { key: t.a.read.key })).status).toBe(404)
    expect((await t.call('GET', `/api/v1/stats?site_id=${created.id}`, { key: t.a.read.key })).status).toBe(404)
    expect((await t.call('GET', '/api/v1/sites', { key: t.a.read.key })).json.sites.map((s: any) => s.id)).not.toContain(created.id)
    expect(await count('events', created.id)).toBe(2)
    release()
    t.services.clickhouse = engine
    await vi.waitFor(async () => expect((await count('events', created.id)) + (await count('bot_events', created.id))).toBe(0), {
      timeout: 60_000,
      interval: 100,
    })
    expect(await count('events', created.id)).toBe(0)
    expect(await count('sessions', created.id)).toBe(0)
    expect(await count('bot_events', created.id)).toBe(0)
    expect(await count('events', other.id)).toBe(1)
    expect((await t.call('GET', `/api/v1/sites/${created.id}`, { key: t.a.read.key })).status).toBe(404)
    expect((await t.call('GET', `/api/v1/sites/${created.snippetId}`, { key: t.a.read.key })).status).toBe(404)
    // the domain is free again
    expect((await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: 'gone.example.com' } })).status).toBe(201)
  })

  it("waits for a filter's rollup build under way before deleting the site's rows, which would otherwise stay behind", async () => {
    const created = (await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: 'built.example.com' } })).json
    const hits = [0, 1, 2].map((second) =>
      JSON.stringify({
        timestamp: `2026-11-19T09:00:0${second}Z`,
        site: created.snippetId,
        name: 'pageview',
        url: `https://built.example.com/p${second}`,
        ip: `203.0.113.${second + 1}`,
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      }),
    )
    expect(await importHits(hits, t.services.ingestor)).toMatchObject({ imported: 3, rejected: 0 })
    const rolled = async () =>
      Number(
        (
          await t.clickhouse.query<{ n: string }>('SELECT count() AS n FROM day_rollups WHERE site_id = {id:UUID}', {
            id: created.id,
          })
        )[0].n,
      )
    // the filter's first read answers from events and rolls its days up after the answer: that build
    // is held until the deletion has deleted the site's rolled rows, or for 2 s when the deletion waits for it
    const engine = t.services.clickhouse
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    let buildsHeld = 0
    t.services.clickhouse = new Proxy(engine, {
      get(target, prop) {
        if (prop === 'command')
          return async (query: string, params?: Record<string, unknown>) => {
            if (/INSERT INTO day_rollups/.test(query)) {
              buildsHeld++
              await held
            }
            const done = await target.command(query, params)
            if (/ALTER TABLE day_rollups DELETE/.test(query)) release()
            return done
          }
        const value = Reflect.get(target, prop, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'is', value: ['/p1'] }]))
    const read = await t.call('GET', `/api/v1/stats?site_id=${created.id}&range=7d&filters=${filters}`, { key: t.a.read.key })
    expect(read.status).toBe(200)
    expect(read.json.totals.pageviews).toBe(1)
    await vi.waitFor(() => expect(buildsHeld).toBe(1), { timeout: 10_000, interval: 10 })
    expect(await rolled()).toBe(0)
    const res = await t.call('DELETE', `/api/v1/sites/${created.id}?confirm=built.example.com`, { key: t.a.write.key })
    expect(res.status).toBe(200)
    setTimeout(release, 2000)
    const events = async () =>
      Number(
        (await t.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events WHERE site_id = {id:UUID}', { id: created.id }))[0].n,
      )
    await vi.waitFor(async () => expect(await events()).toBe(0), { timeout: 60_000, interval: 100 })
    await rollupBuildsSettled()
    await vi.waitFor(async () => expect(await rolled()).toBe(0), { timeout: 60_000, interval: 100 })
    t.services.clickhouse = engine
    // the build did write its rows, before the deletion deleted them: nothing is left behind
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(await rolled()).toBe(0)
  })

  it('rejects bad list parameters', async () => {
    const res = await t.call('GET', '/api/v1/sites?range=fortnight', { key: t.a.read.key })
    expect(res.status).toBe(400)
    expect(res.json.error).toMatch(/^range/)
    expect((await t.call('GET', '/api/v1/sites?stats=maybe', { key: t.a.read.key })).json.error).toMatch(/^stats/)
  })

  it.each(['SystemV/EST5', 'SystemV/AST4ADT', 'US/Pacific-New'])(
    'a zone the runtime knows and the engine does not (%s) is 400 naming timezone, and the organization keeps working',
    async (zone) => {
      const before = (await t.repositories.sites.get(t.a.site.id))!.timezone
      const patched = await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: { timezone: zone } })
      expect(patched.status).toBe(400)
      expect(patched.json.error).toMatch(/^timezone/)
      const created = await t.call('POST', '/api/v1/sites', {
        key: t.a.write.key,
        body: { domain: `tz-${crypto.randomUUID().slice(0, 6)}.example.com`, timezone: zone },
      })
      expect(created.status).toBe(400)
      expect(created.json.error).toMatch(/^timezone/)
      expect((await t.repositories.sites.get(t.a.site.id))!.timezone).toBe(before)
      expect((await t.call('GET', '/api/v1/sites', { key: t.a.read.key })).status).toBe(200)
      // an alias the engine knows is kept as written
      const alias = await t.call('POST', '/api/v1/sites', {
        key: t.a.write.key,
        body: { domain: `tz-${crypto.randomUUID().slice(0, 6)}.example.com`, timezone: 'Asia/Calcutta' },
      })
      expect(alias.json.timezone).toBe('Asia/Calcutta')
    },
  )
})
