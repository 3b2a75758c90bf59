import { beforeAll, describe, expect, it } from 'vitest'
import { harness, REDIS_URL, type Harness } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)

describe.each(kinds)('annotations (%s key/value store)', (kind) => {
  let t: Harness
  const now = new Date('2026-11-22T12:00:00Z')

  beforeAll(async () => {
    t = await harness({ kv: kind, now: () => now })
  })

  const list = async (query: string, key = t.a.read.key) => t.call('GET', `/api/v1/annotations?${query}`, { key })

  it('creates by siteId or domain with defaults, and lists newest first', async () => {
    const made = await t.call('POST', '/api/v1/annotations', { key: t.a.write.key, body: { siteId: t.a.site.id, title: 'Launch' } })
    expect(made.status).toBe(201)
    expect(made.json).toEqual({
      id: expect.any(String),
      siteId: t.a.site.id,
      title: 'Launch',
      at: now.toISOString(),
      kind: 'note',
      body: null,
      url: null,
      createdAt: now.toISOString(),
    })
    const byDomain = await t.call('POST', '/api/v1/annotations', {
      key: t.a.write.key,
      body: {
        domain: t.a.site.domain.toUpperCase(),
        title: 'Newsletter',
        at: '2026-11-20T09:30:00+01:00',
        kind: 'email',
        body: 'November issue',
        url: 'https://example.com/news',
      },
    })
    expect(byDomain.status).toBe(201)
    expect(byDomain.json).toMatchObject({
      siteId: t.a.site.id,
      at: '2026-11-20T08:30:00.000Z',
      kind: 'email',
      body: 'November issue',
      url: 'https://example.com/news',
    })
    const older = await t.call('POST', '/api/v1/annotations', {
      key: t.a.write.key,
      body: { siteId: t.a.site.id, title: 'Deploy 1.2', at: '2026-10-01T00:00:00Z', kind: 'deploy' },
    })

    // a write key reads too; newest first
    const all = await list(`siteId=${t.a.site.id}`, t.a.write.key)
    expect(all.status).toBe(200)
    expect(all.json.annotations.map((a: { id: string }) => a.id)).toEqual([made.json.id, byDomain.json.id, older.json.id])
    // from and to bound the window, both included
    const window = await list(`siteId=${t.a.site.id}&from=2026-11-20T08:30:00Z&to=2026-11-21T00:00:00Z`)
    expect(window.json.annotations.map((a: { id: string }) => a.id)).toEqual([byDomain.json.id])
    expect((await list(`siteId=${t.a.site.id}&to=2026-10-31T23:59:59Z`)).json.annotations).toHaveLength(1)
  })

  it('lists at most 500', async () => {
    const { createAnnotation } = await import('../../lib/sites/annotations')
    const site = await t.repositories.sites.get(t.b.site.id)
    for (let i = 0; i < 505; i++)
      await createAnnotation(
        t.repositories,
        site!,
        { title: `n${i}`, kind: 'note', at: new Date(Date.UTC(2025, 0, 1, 0, i)).toISOString() },
        now,
      )
    const res = await list(`siteId=${t.b.site.id}`, t.b.read.key)
    expect(res.json.annotations).toHaveLength(500)
    expect(res.json.annotations[0].title).toBe('n504')
  })

  it('refuses bad input with a 400 naming the field, and stores nothing', async () => {
    const before = await t.repositories.annotations.list(t.a.site.id)
    const cases: [unknown, RegExp][] = [
      [{ title: 'x' }, /^siteId: siteId or domain is required/],
      [{ siteId: t.a.site.snippetId, title: 'x' }, /^siteId: must be a site UUID/],
      [{ siteId: t.a.site.id }, /^title/],
      [{ siteId: t.a.site.id, title: '   ' }, /^title/],
      [{ siteId: t.a.site.id, title: 'x'.repeat(201) }, /^title: at most 200/],
      [{ siteId: t.a.site.id, title: 'x', at: 'yesterday' }, /^at: must be an ISO 8601/],
      [{ siteId: t.a.site.id, title: 'x', at: '2026-11-01T10:00:00' }, /^at:/],
      [{ siteId: t.a.site.id, title: 'x', kind: 'launch' }, /^kind/],
      [{ siteId: t.a.site.id, title: 'x', url: 'javascript:alert(1)' }, /^url: must be an http\(s\) URL/],
      [{ siteId: t.a.site.id, title: 'x', url: 'ftp://example.com/' }, /^url/],
      [{ siteId: t.a.site.id, title: 'x', extra: 1 }, /unknown field "extra"/],
      [{ siteId: t.a.site.id, domain: 'other.example.com', title: 'x' }, /^domain: "other.example.com" is not the domain/],
    ]
    for (const [body, message] of cases) {
      const res = await t.call('POST', '/api/v1/annotations', { key: t.a.write.key, body })
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.json.error, JSON.stringify(body)).toMatch(message)
    }
    expect(await t.repositories.annotations.list(t.a.site.id)).toEqual(before)
    // the list names the site as every read does: its UUID or its snippet id, as siteId or site_id
    const bySnippet = await list(`siteId=${t.a.site.snippetId}`)
    expect(bySnippet.status).toBe(200)
    expect(bySnippet.json).toEqual((await list(`site_id=${t.a.site.id}`)).json)
    expect((await list(`siteId=${t.a.site.id}&from=last-week`)).json.error).toMatch(/^from:/)
    expect((await list(`siteId=${t.a.site.id}&from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z`)).json.error).toMatch(
      /^from: must not be after to/,
    )
  })

  it('deletes by id; a second delete and an unknown id are 404', async () => {
    const made = await t.call('POST', '/api/v1/annotations', { key: t.a.write.key, body: { siteId: t.a.site.id, title: 'Oops' } })
    expect((await t.call('DELETE', `/api/v1/annotations?id=${made.json.id}`, { key: t.a.read.key })).status).toBe(403)
    const res = await t.call('DELETE', `/api/v1/annotations?id=${made.json.id}`, { key: t.a.write.key })
    expect(res).toMatchObject({ status: 200, json: { deleted: true, id: made.json.id } })
    expect((await list(`siteId=${t.a.site.id}`)).json.annotations.map((a: { id: string }) => a.id)).not.toContain(made.json.id)
    expect((await t.call('DELETE', `/api/v1/annotations?id=${made.json.id}`, { key: t.a.write.key })).status).toBe(404)
    expect((await t.call('DELETE', `/api/v1/annotations?id=${crypto.randomUUID()}`, { key: t.a.write.key })).status).toBe(404)
    expect((await t.call('DELETE', '/api/v1/annotations?id=nope', { key: t.a.write.key })).json.error).toMatch(/^id: must be a UUID/)
  })

  it("another organization's annotations and sites are 404, the same as unknown ones; a read key cannot write", async () => {
    const theirs = await t.call('POST', '/api/v1/annotations', { key: t.b.write.key, body: { siteId: t.b.site.id, title: 'Private' } })
    const unknown = await t.call('DELETE', `/api/v1/annotations?id=${crypto.randomUUID()}`, { key: t.a.write.key })
    const foreign = await t.call('DELETE', `/api/v1/annotations?id=${theirs.json.id}`, { key: t.a.write.key })
    expect(foreign).toMatchObject({ status: 404, json: unknown.json })
    expect((await list(`siteId=${t.b.site.id}`)).status).toBe(404)
    expect((await t.call('POST', '/api/v1/annotations', { key: t.a.write.key, body: { siteId: t.b.site.id, title: 'x' } })).status).toBe(
      404,
    )
    expect(
      (await t.call('POST', '/api/v1/annotations', { key: t.a.write.key, body: { domain: t.b.site.domain, title: 'x' } })).status,
    ).toBe(404)
    expect((await t.call('POST', '/api/v1/annotations', { key: t.a.read.key, body: { siteId: t.a.site.id, title: 'x' } })).status).toBe(403)
    // still there for its owner
    expect((await list(`siteId=${t.b.site.id}`, t.b.read.key)).json.annotations.map((a: { id: string }) => a.id)).toContain(theirs.json.id)
  })

  it('a site-bound key reaches its own site only', async () => {
    const mine = await t.call('POST', '/api/v1/annotations', {
      key: t.ingest.key,
      body: { siteId: t.a.site.id, title: 'From CI', kind: 'deploy' },
    })
    expect(mine.status).toBe(201)
    const other = (
      await t.call('POST', '/api/v1/sites', { key: t.a.write.key, body: { domain: `o-${crypto.randomUUID().slice(0, 6)}.example.com` } })
    ).json
    const theirs = await t.call('POST', '/api/v1/annotations', { key: t.a.write.key, body: { siteId: other.id, title: 'Other site' } })
    expect((await t.call('POST', '/api/v1/annotations', { key: t.ingest.key, body: { siteId: other.id, title: 'x' } })).status).toBe(404)
    expect((await t.call('DELETE', `/api/v1/annotations?id=${theirs.json.id}`, { key: t.ingest.key })).status).toBe(404)
  })
})
