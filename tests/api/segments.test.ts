import { beforeAll, describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { harness, REDIS_URL, type Harness } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

describe.each(kinds)('segments (%s key/value store)', (kind) => {
  let t: Harness
  const now = new Date('2026-11-22T12:00:00Z')
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`
  const segmentFilter = (id: string, operator = 'is') => ({ dimension: 'segment', operator, value: [id] })

  beforeAll(async () => {
    t = await harness({ kv: kind, now: () => now })
    await t.call('POST', '/api/v1/goals', { key: t.a.write.key, body: { site_id: t.a.site.id, type: 'event', matchValue: 'Signup' } })
    const hit = (minutes: number, ip: string, ua: string, path: string, name = 'pageview', referrer?: string) =>
      JSON.stringify({
        timestamp: new Date(Date.UTC(2026, 10, 20, 9, minutes)).toISOString(),
        site: t.a.site.snippetId,
        name,
        url: `https://${t.a.site.domain}${path}`,
        ip,
        userAgent: ua,
        ...(referrer ? { referrer } : {}),
      })
    const lines = [
      hit(0, '8.8.8.8', FIREFOX, '/', 'pageview', 'https://www.google.com/'),
      hit(1, '8.8.8.8', FIREFOX, '/pricing'),
      hit(2, '8.8.8.8', FIREFOX, '/pricing', 'Signup'),
      hit(3, '1.1.1.1', CHROME, '/pricing', 'pageview', 'https://news.ycombinator.com/'),
      hit(4, '1.1.1.1', CHROME, '/blog/a'),
      hit(5, '46.114.0.1', FIREFOX, '/blog/b'),
      hit(6, '46.114.0.1', FIREFOX, '/blog/c'),
      hit(7, '81.2.69.142', CHROME, '/'),
      hit(9, '81.2.69.142', CHROME, '/pricing', 'Signup'),
    ]
    const result = await importHits(lines, t.services.ingestor)
    expect(result.rejected).toBe(0)
  })

  const create = (body: unknown, key = t.a.write.key) => t.call('POST', '/api/v1/segments', { key, body })
  const read = async (path: string) => {
    const res = await t.call('GET', path, { key: t.a.read.key })
    expect(res.status, `${path}: ${JSON.stringify(res.json)}`).toBe(200)
    return res.json
  }

  it('a segment filter gives exactly the numbers of its filters, in every report', async () => {
    const filters = [
      { dimension: 'browser', operator: 'is', value: ['Firefox'] },
      { dimension: 'path', operator: 'contains', value: ['pricing', 'blog'] },
    ]
    const made = await create({ site_id: t.a.site.id, name: 'Firefox readers', filters })
    expect(made.status).toBe(201)
    expect(made.json).toEqual({ id: expect.any(String), name: 'Firefox readers', filters, createdAt: now.toISOString() })
    const window = `site_id=${t.a.site.id}&range=custom&from=2026-11-20&to=2026-11-20`
    const extra = { dimension: 'utm_source', operator: 'is_not', value: ['nope'] }
    for (const report of [
      'stats',
      'timeseries',
      'breakdown?property=path',
      'breakdown?property=browser',
      'breakdown?property=goal',
      'goals',
      'realtime',
    ]) {
      const [path, query] = report.split('?')
      // realtime has its own windows and takes no range
      const base = `/api/v1/${path}?${path === 'realtime' ? `site_id=${t.a.site.id}` : window}${query ? `&${query}` : ''}`
      const bySegment = await read(`${base}${filtersParam([segmentFilter(made.json.id)])}`)
      const byFilters = await read(`${base}${filtersParam(filters)}`)
      expect(bySegment, report).toEqual(byFilters)
      // AND-ed with the other filters
      expect(await read(`${base}${filtersParam([extra, segmentFilter(made.json.id)])}`), report).toEqual(
        await read(`${base}${filtersParam([extra, ...filters])}`),
      )
    }
    const totals = (await read(`/api/v1/stats?${window}${filtersParam([segmentFilter(made.json.id)])}`)).totals
    expect(totals.visitors).toBe(2)
    expect(totals.pageviews).toBe(3)
  })

  it('takes goal filters and filters as a JSON string, and lists segments', async () => {
    const made = await create({
      site_id: t.a.site.snippetId,
      name: 'Converters',
      filters: JSON.stringify([{ dimension: 'goal', operator: 'is', value: ['Signup'] }]),
    })
    expect(made.status).toBe(201)
    const window = `site_id=${t.a.site.id}&range=custom&from=2026-11-20&to=2026-11-20`
    expect(await read(`/api/v1/stats?${window}${filtersParam([segmentFilter(made.json.id)])}`)).toEqual(
      await read(`/api/v1/stats?${window}${filtersParam([{ dimension: 'goal', operator: 'is', value: ['Signup'] }])}`),
    )
    const listed = await read(`/api/v1/segments?site_id=${t.a.site.id}`)
    // oldest first; made at the same instant here, so by name
    expect(listed.segments.map((s: { name: string }) => s.name)).toEqual(['Converters', 'Firefox readers'])
  })

  it('refuses a bad filter exactly as the reports do, and saves nothing', async () => {
    const before = await t.repositories.segments.list(t.a.site.id)
    const bad: unknown[] = [
      [{ dimension: 'colour', operator: 'is', value: ['x'] }],
      [{ dimension: 'path', operator: 'like', value: ['x'] }],
      [{ dimension: 'path', operator: 'is', value: 'x' }],
      [{ dimension: 'path', operator: 'is', value: ['/'], x: 1 }],
      [{ dimension: 'goal', operator: 'is', value: ['No such goal'] }],
      [{ dimension: 'goal', operator: 'matches', value: ['('] }],
    ]
    for (const filters of bad) {
      const viaReport = await t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}${filtersParam(filters)}`, { key: t.a.read.key })
      const res = await create({ site_id: t.a.site.id, name: 'bad', filters })
      expect(res.status, JSON.stringify(filters)).toBe(400)
      expect(res.json, JSON.stringify(filters)).toEqual(viaReport.json)
    }
    const cases: [unknown, RegExp][] = [
      [{ site_id: t.a.site.id, name: 'x', filters: [] }, /^filters: a segment needs at least one filter/],
      [{ site_id: t.a.site.id, name: 'x', filters: 'not json' }, /^filters: not valid JSON/],
      [{ site_id: t.a.site.id, name: 'x', filters: 42 }, /^filters: must be an array/],
      [{ site_id: t.a.site.id, filters: [{ dimension: 'path', operator: 'is', value: ['/'] }] }, /^name/],
      [
        { site_id: t.a.site.id, name: 'x', filters: [segmentFilter(before[0].id)] },
        /^filters\[0\]\.dimension: a segment cannot contain another segment/,
      ],
      [
        { site_id: t.a.site.id, name: 'Converters', filters: [{ dimension: 'path', operator: 'is', value: ['/'] }] },
        /^name: the site already has a segment/,
      ],
    ]
    for (const [body, message] of cases) {
      const res = await create(body)
      expect(res.status, JSON.stringify(body)).toBe(message.source.includes('already') ? 409 : 400)
      expect(res.json.error, JSON.stringify(body)).toMatch(message)
    }
    expect(await t.repositories.segments.list(t.a.site.id)).toEqual(before)
  })

  it('a segment filter takes is with one known id; a ga4 read refuses its first-party filters', async () => {
    const [segment] = await t.repositories.segments.list(t.a.site.id)
    const stats = (filters: unknown, extra = '') =>
      t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}${extra}${filtersParam(filters)}`, { key: t.a.read.key })
    expect((await stats([segmentFilter(segment.id, 'is_not')])).json.error).toMatch(/^filters: a segment filter takes only the is operator/)
    expect((await stats([{ dimension: 'segment', operator: 'is', value: [segment.id, segment.id] }])).json.error).toMatch(
      /exactly one segment id/,
    )
    expect((await stats([segmentFilter(crypto.randomUUID())])).json.error).toMatch(/^filters: not a segment id of this site/)
    expect((await t.call('GET', `/api/v1/breakdown?site_id=${t.a.site.id}&property=segment`, { key: t.a.read.key })).json.error).toMatch(
      /^property: segment is a filter/,
    )
    // a site with both sources: the segment works on standalone, and a ga4 read names the offending dimension
    const both = (await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body: { sources: ['standalone', 'ga4'] } }))
      .json
    expect(both.sources).toEqual(['standalone', 'ga4'])
    const firstParty = await create({
      site_id: t.a.site.id,
      name: 'Outbound',
      filters: [{ dimension: 'outbound', operator: 'contains', value: ['x'] }],
    })
    expect(firstParty.status).toBe(201)
    const ga4 = await stats([segmentFilter(firstParty.json.id)], '&source=ga4')
    expect(ga4.status).toBe(400)
    expect(ga4.json.error).toMatch(/"outbound" is recorded only by the first-party collector/)
  })

  it("deletes a segment; another organization's segments and sites are the same 404 as unknown ones", async () => {
    const theirs = await create(
      { site_id: t.b.site.id, name: 'Theirs', filters: [{ dimension: 'path', operator: 'is', value: ['/'] }] },
      t.b.write.key,
    )
    expect(theirs.status).toBe(201)
    // their segment is unknown on my site, in reports and deletes alike
    const unknownFilter = await t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}${filtersParam([segmentFilter(theirs.json.id)])}`, {
      key: t.a.read.key,
    })
    expect(unknownFilter.status).toBe(400)
    const unknown = await t.call('DELETE', `/api/v1/segments?site_id=${t.a.site.id}&id=${crypto.randomUUID()}`, { key: t.a.write.key })
    const foreign = await t.call('DELETE', `/api/v1/segments?site_id=${t.a.site.id}&id=${theirs.json.id}`, { key: t.a.write.key })
    expect(foreign).toMatchObject({ status: 404, json: unknown.json })
    for (const ref of [t.b.site.id, t.b.site.snippetId]) {
      expect((await t.call('GET', `/api/v1/segments?site_id=${ref}`, { key: t.a.read.key })).status).toBe(404)
      expect((await t.call('DELETE', `/api/v1/segments?site_id=${ref}&id=${theirs.json.id}`, { key: t.a.write.key })).status).toBe(404)
      expect((await create({ site_id: ref, name: 'mine', filters: [{ dimension: 'path', operator: 'is', value: ['/'] }] })).status).toBe(
        404,
      )
    }
    expect(await t.repositories.segments.list(t.b.site.id)).toHaveLength(1)
    expect(
      (await create({ site_id: t.a.site.id, name: 'ro', filters: [{ dimension: 'path', operator: 'is', value: ['/'] }] }, t.a.read.key))
        .status,
    ).toBe(403)

    const [mine] = await t.repositories.segments.list(t.a.site.id)
    expect((await t.call('DELETE', `/api/v1/segments?site_id=${t.a.site.id}&id=${mine.id}`, { key: t.a.read.key })).status).toBe(403)
    expect(await t.call('DELETE', `/api/v1/segments?site_id=${t.a.site.id}&id=${mine.id}`, { key: t.a.write.key })).toMatchObject({
      status: 200,
      json: { deleted: true, id: mine.id },
    })
    const after = await t.call('GET', `/api/v1/stats?site_id=${t.a.site.id}${filtersParam([segmentFilter(mine.id)])}`, {
      key: t.a.read.key,
    })
    expect(after.status).toBe(400)
  })
})
