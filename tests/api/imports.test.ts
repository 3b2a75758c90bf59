import { beforeAll, describe, expect, it } from 'vitest'
import { runImport } from '../../lib/ingest/import'
import { harness, REDIS_URL, type Harness } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

describe.each(kinds)('site imports (%s key/value store)', (kind) => {
  let t: Harness

  beforeAll(async () => {
    t = await harness({ kv: kind })
  })

  const hit = (site: { snippetId: string; domain: string }, at: string) =>
    JSON.stringify({
      timestamp: at,
      site: site.snippetId,
      name: 'pageview',
      url: `https://${site.domain}/`,
      ip: '8.8.8.8',
      userAgent: FIREFOX,
    })
  const imports = async (ref: string, key = t.a.read.key) => t.call('GET', `/api/v1/sites/${ref}/imports`, { key })

  it('records each raw-hit run per site: rows, rejected lines, period covered, state', async () => {
    expect((await imports(t.a.site.id)).json).toEqual({ imports: [] })
    await t.services.sites.update(t.a.site.id, (site) => ({ ...site, tracking: { ...site.tracking, excludedPaths: ['/private'] } }))
    const result = await runImport(
      [
        hit(t.a.site, '2026-11-02T10:00:00Z'),
        hit(t.a.site, '2026-10-15T08:00:00Z'),
        // screened out by the site's settings: held against the site
        JSON.stringify({
          timestamp: '2026-11-01T00:00:00Z',
          site: t.a.site.snippetId,
          name: 'pageview',
          url: `https://${t.a.site.domain}/private`,
          ip: '8.8.8.8',
          userAgent: FIREFOX,
        }),
        // unreadable: no site to hold it against, reported by the import only
        JSON.stringify({
          timestamp: '2026-11-01T00:00:00Z',
          site: t.a.site.snippetId,
          name: 'pageview',
          url: 'not a url',
          ip: '8.8.8.8',
          userAgent: FIREFOX,
        }),
        hit(t.b.site, '2026-11-03T10:00:00Z'),
        'not json',
      ],
      t.services,
    )
    expect(result).toMatchObject({ imported: 3, rejected: 3 })
    const mine = await imports(t.a.site.snippetId)
    expect(mine.status).toBe(200)
    expect(mine.json.imports).toEqual([
      {
        id: expect.any(String),
        kind: 'raw_hits',
        state: 'completed',
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        rows: 2,
        rejected: 1,
        from: '2026-10-15T08:00:00.000Z',
        to: '2026-11-02T10:00:00.000Z',
        error: null,
        trigger: null,
        progress: null,
        retryAt: null,
      },
    ])
    // the other organization's run is its own
    const theirs = await imports(t.b.site.id, t.b.read.key)
    expect(theirs.json.imports).toEqual([
      expect.objectContaining({ rows: 1, from: '2026-11-03T10:00:00.000Z', to: '2026-11-03T10:00:00.000Z' }),
    ])
  })

  it('records a failed run with what it stored and why', async () => {
    // more than one chunk, so some rows are stored before the input breaks
    async function* failing() {
      for (let i = 0; i < 5001; i++) yield hit(t.a.site, new Date(Date.UTC(2026, 10, 5, 10, 0, i)).toISOString())
      throw new Error('disk read error')
    }
    await expect(runImport(failing(), t.services)).rejects.toThrow(/disk read error/)
    const [latest] = (await imports(t.a.site.id)).json.imports
    expect(latest).toMatchObject({
      kind: 'raw_hits',
      state: 'failed',
      error: 'disk read error',
      rows: 5000,
      from: '2026-11-05T10:00:00.000Z',
    })
  })

  it('lists the GA4 import runs with their state, trigger and progress, newest first', async () => {
    const run = {
      id: crypto.randomUUID(),
      siteId: t.a.site.id,
      propertyId: '123',
      trigger: 'hourly' as const,
      state: 'running' as const,
      reason: null,
      from: '2099-01-01',
      to: '2099-01-02',
      version: 1,
      createdAt: '2099-01-01T00:00:00.000Z',
      startedAt: '2099-01-01T00:00:01.000Z',
      finishedAt: null,
      retryAt: null,
      attempts: 0,
      rows: 40,
      cursor: { task: 3, offset: 0 },
      tasks: 11,
    }
    await t.services.repositories.ga4Imports.save(run)
    const [first, ...rest] = (await imports(t.a.site.id)).json.imports
    expect(first).toEqual({
      id: run.id,
      kind: 'ga4',
      state: 'running',
      trigger: 'hourly',
      startedAt: '2099-01-01T00:00:01.000Z',
      finishedAt: null,
      rows: 40,
      rejected: 0,
      from: '2099-01-01',
      to: '2099-01-02',
      error: null,
      progress: { tasksDone: 3, tasksTotal: 11, fraction: 3 / 11 },
      retryAt: null,
    })
    expect(rest).toHaveLength(2)
  })

  it("another organization's site is the same 404 as an unknown one; a site-bound key sees its own site only", async () => {
    const unknown = await imports(crypto.randomUUID())
    expect(unknown.status).toBe(404)
    for (const ref of [t.b.site.id, t.b.site.snippetId]) expect(await imports(ref)).toMatchObject({ status: 404, json: unknown.json })
    expect((await imports(t.a.site.id, t.ingest.key)).status).toBe(200)
    expect((await imports(t.b.site.id, t.ingest.key)).status).toBe(404)
    expect((await t.call('GET', `/api/v1/sites/${t.a.site.id}/imports`)).status).toBe(401)
  })
})
