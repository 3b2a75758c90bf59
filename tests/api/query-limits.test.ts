import { beforeAll, describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { type Harness, harness } from '../helpers'

/**
 * The documented bounds of a query's shape (docs/api.md, docs/plausible.md): a query past one is
 * a 400 naming it, never a 500 from the engine or from a walk of the body.
 */

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

const firefox = ['is', 'visit:browser', ['Firefox']]
const google = ['is', 'visit:source', ['Google']]
/** `or` nested `depth` deep: each level the one below or a visit from Google; the innermost a Firefox visit. */
function nestedOr(depth: number): unknown {
  let filter: unknown = firefox
  for (let i = 0; i < depth; i++) filter = ['or', [filter, google]]
  return filter
}

describe('bounds of a query', () => {
  let t: Harness
  const now = new Date('2026-11-22T12:00:00Z')

  beforeAll(async () => {
    t = await harness({ now: () => now })
    const hit = (ip: string, userAgent: string, referrer?: string) =>
      JSON.stringify({
        timestamp: new Date(now.getTime() - 5 * 60_000).toISOString(),
        site: t.a.site.snippetId,
        name: 'pageview',
        url: `https://${t.a.site.domain}/`,
        ip,
        userAgent,
        ...(referrer ? { referrer } : {}),
      })
    // Firefox from Google, Chrome from Google, Firefox direct, Chrome direct: three are Firefox or from Google
    const lines = [
      hit('203.0.113.1', FIREFOX, 'https://www.google.com/'),
      hit('203.0.113.2', CHROME, 'https://www.google.com/'),
      hit('203.0.113.3', FIREFOX),
      hit('203.0.113.4', CHROME),
    ]
    expect((await importHits(lines, t.services.ingestor)).rejected).toBe(0)
  })

  /** Any answer, a 500 too (the test client throws on those, which would hide the status checked here). */
  const post = async (path: string, body: string, key = t.a.read.key) => {
    const res = await t.app.request(`http://api.test${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body,
    })
    return { status: res.status, json: await res.json() }
  }
  const query = (fields: Record<string, unknown>) =>
    post('/api/v2/query', JSON.stringify({ site_id: t.a.site.domain, metrics: ['visitors'], date_range: 'day', ...fields }))

  describe('POST /api/v2/query', () => {
    it('answers `or` nested 98 deep (once a 500, TOO_DEEP_RECURSION in the engine) with a 400 naming the bound', async () => {
      const res = await query({ filters: [nestedOr(98)] })
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(/^filters\[0\](\[1\]\[0\])+: nested more than 10 deep \(and, or, not, has_done, has_not_done\)$/)
      expect((await query({ filters: [nestedOr(11)] })).status).toBe(400)
    })

    it('answers `or` nested 10 deep, the bound, as the same filter written flat', async () => {
      const deep = await query({ filters: [nestedOr(10)] })
      expect(deep.status, JSON.stringify(deep.json)).toBe(200)
      const flat = await query({ filters: [['or', [firefox, google]]] })
      expect(flat.json.results).toEqual([{ metrics: [3], dimensions: [] }])
      expect(deep.json.results).toEqual(flat.json.results)
    })

    it('counts the filters inside and, or and not: 50 in all are answered, 51 are a 400', async () => {
      const pages = (n: number) => Array.from({ length: n }, (_, i) => ['is_not', 'event:page', [`/not-${i}`]])
      const fifty = await query({ filters: [['and', pages(50)]] })
      expect(fifty.status, JSON.stringify(fifty.json)).toBe(200)
      expect(fifty.json.results).toEqual([{ metrics: [4], dimensions: [] }])
      expect(
        await query({
          filters: [
            ['and', pages(26)],
            ['not', ['or', pages(25)]],
          ],
        }),
      ).toEqual({
        status: 400,
        json: { error: 'filters: more than 50 filters in all, counting those inside and, or and not' },
      })
      expect(await query({ filters: pages(51) })).toEqual({ status: 400, json: { error: 'filters: at most 50 filters' } })
    })

    it('bounds the values of a filter, the dimensions and the orderings', async () => {
      const values = (n: number) => Array.from({ length: n }, (_, i) => `/p${i}`)
      expect((await query({ filters: [['is', 'event:page', values(100)]] })).status).toBe(200)
      expect(await query({ filters: [['is', 'event:page', values(101)]] })).toEqual({
        status: 400,
        json: { error: 'filters[0]: clauses must be a list of 1 to 100 values' },
      })
      expect(await query({ filters: [['is', 'event:page', ['x'.repeat(2001)]]] })).toEqual({
        status: 400,
        json: { error: 'filters[0]: clauses must be strings of at most 2000 characters' },
      })
      expect(await query({ dimensions: Array.from({ length: 9 }, () => 'visit:source') })).toEqual({
        status: 400,
        json: { error: 'dimensions: at most 8 dimensions' },
      })
      expect(await query({ order_by: Array.from({ length: 11 }, () => ['visitors', 'desc']) })).toEqual({
        status: 400,
        json: { error: 'order_by: at most 10 orderings' },
      })
    })
  })

  describe('/api/v1 filters', () => {
    const stats = async (filters: unknown) => {
      const res = await t.call(
        'GET',
        `/api/v1/stats?site_id=${t.a.site.id}&range=today&filters=${encodeURIComponent(JSON.stringify(filters))}`,
        {
          key: t.a.read.key,
        },
      )
      return { status: res.status, json: res.json }
    }
    const notPage = (i: number) => ({ dimension: 'path', operator: 'is_not', value: [`/not-${i}`] })

    it('takes 50 filters of 100 values each, and refuses more of either by name', async () => {
      const fifty = await stats(Array.from({ length: 50 }, (_, i) => notPage(i)))
      expect(fifty.status, JSON.stringify(fifty.json)).toBe(200)
      expect(fifty.json.totals.visitors).toBe(4)
      expect((await stats([{ dimension: 'path', operator: 'is_not', value: Array.from({ length: 100 }, (_, i) => `/${i}`) }])).status).toBe(
        200,
      )
      expect(await stats(Array.from({ length: 51 }, (_, i) => notPage(i)))).toEqual({
        status: 400,
        json: { error: 'filters: at most 50 filters' },
      })
      expect(await stats([{ dimension: 'path', operator: 'is', value: Array.from({ length: 101 }, (_, i) => `/${i}`) }])).toEqual({
        status: 400,
        json: { error: 'filters[0].value: at most 100 values' },
      })
      expect(await stats([{ dimension: 'path', operator: 'is', value: ['x'.repeat(2001)] }])).toEqual({
        status: 400,
        json: { error: 'filters[0].value: at most 2000 characters a value' },
      })
      expect((await stats([{ dimension: `props:${'k'.repeat(200)}`, operator: 'is', value: ['v'] }])).json.error).toMatch(
        /^filters\[0\]\.dimension: /,
      )
    })
  })

  describe('a JSON body nested past any shape an endpoint takes', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`

    it('is a 400 naming the bound (once a 500: the stack overflowed walking it), over REST and MCP', async () => {
      const refused = { status: 400, json: { error: 'body: nested more than 256 deep' } }
      expect(
        await post(
          '/api/v2/query',
          `{"site_id":"${t.a.site.domain}","metrics":["visitors"],"date_range":"day","filters":[${deep(20_000)}]}`,
        ),
      ).toEqual(refused)
      expect(
        await post('/api/v1/segments', `{"site_id":"${t.a.site.id}","name":"deep","filters":[${deep(20_000)}]}`, t.a.write.key),
      ).toEqual(refused)
      const tool = await post(
        '/api/mcp',
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_segment","arguments":{"site_id":"${t.a.site.id}","name":"deep","filters":[${deep(20_000)}]}}}`,
        t.a.write.key,
      )
      expect(tool.json.result.structuredContent).toEqual({ status: 400, error: 'body: nested more than 256 deep' })
      // 256 deep is taken as far as the schema: an answer about its shape, not its depth
      const at = await post('/api/v1/segments', `{"site_id":"${t.a.site.id}","name":"deep","filters":${deep(255)}}`, t.a.write.key)
      expect(at.status).toBe(400)
      expect(at.json.error).not.toMatch(/nested/)
    })
  })
})
