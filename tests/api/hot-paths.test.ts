import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import type { Metrics } from '../../lib/sites/domain-services'
import type { Readiness } from '../../lib/runtime/services'
import { type Harness, harness } from '../helpers'

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/**
 * The collector and the public count have a lean transport of their own, ahead of the middleware
 * (functions/hot-path.ts). Each request here goes to that app and to one serving the same
 * endpoints through the middleware, on the same services: the answers, the log lines and the
 * request metrics must be the same, request ids aside.
 */
describe('the hot paths answer as the middleware does', () => {
  let t: Harness
  let readiness: Readiness['phase'] = 'ready'
  const recorded: { lean: string[]; general: string[] } = { lean: [], general: [] }
  const logged: { lean: Record<string, unknown>[]; general: Record<string, unknown>[] } = { lean: [], general: [] }
  let lean: ReturnType<typeof createApp>
  let general: ReturnType<typeof createApp>
  let into: 'lean' | 'general' = 'lean'

  beforeAll(async () => {
    // the site cache on, as on the Node server: a repeat of a cached count is then answered at once
    t = await harness({ siteCacheMs: 60_000 })
    const metrics: Metrics = {
      admits: async () => false,
      render: async () => ({ contentType: 'text/plain', body: '' }),
      request: (route, method, status) => recorded[into].push(`${method} ${route} ${status}`),
      hits: () => {},
      job: () => {},
    }
    t.services.metrics = metrics
    t.services.readiness = () => ({ ready: readiness === 'ready', phase: readiness })
    const log = (which: 'lean' | 'general') => ({ level: 'debug' as const, write: (line: string) => logged[which].push(JSON.parse(line)) })
    lean = createApp(t.services, log('lean'))
    general = createApp(t.services, log('general'), { hotPaths: false })
    await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, {
      key: t.a.write.key,
      body: { publicCounts: true, publicCountsDial: '30d', excludedPaths: ['/private/*'] },
    })
  })

  /** Status, headers and body of one request as each app answers it; the request id is compared apart. */
  async function both(path: string, init: RequestInit | (() => RequestInit) = {}) {
    const answers = []
    for (const which of ['lean', 'general'] as const) {
      into = which
      const before = logged[which].length
      const res = await (which === 'lean' ? lean : general).request(`http://api.test${path}`, typeof init === 'function' ? init() : init)
      const headers = Object.fromEntries(res.headers)
      const { 'x-request-id': requestId, ...rest } = headers
      const lines = logged[which].slice(before).map(
        ({ time: _time, ms: _ms, requestId: id, ...line }): Record<string, unknown> => ({
          ...line,
          sameId: id === requestId,
        }),
      )
      answers.push({ status: res.status, headers: rest, requestId, body: await res.text(), lines })
    }
    const [a, b] = answers
    expect(a.status).toBe(b.status)
    expect(a.headers).toEqual(b.headers)
    expect(a.body).toBe(b.body)
    expect(a.lines).toEqual(b.lines)
    expect(a.requestId).toMatch(/^[\w\-.:=]{1,128}$/)
    return a
  }

  const hit = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ site: t.a.site.snippetId, name: 'pageview', url: `https://${t.a.site.domain}/hot`, ...extra })
  const post = (body: string, headers: Record<string, string> = {}) => ({
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'user-agent': FIREFOX, 'x-forwarded-for': '8.8.8.8', ...headers },
    body,
  })

  it('a stored hit: 202, empty, readable from any origin', async () => {
    const a = await both('/api/event', post(hit()))
    expect(a.status).toBe(202)
    expect(a.body).toBe('')
    expect(a.headers).toMatchObject({
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'X-Dropped, x-plausible-dropped',
      'content-length': '0',
    })
    expect(a.lines).toEqual([{ level: 'info', method: 'POST', path: '/api/event', status: 202, sameId: true }])
  })

  it('a dropped hit says why, in its header and a debug line', async () => {
    const a = await both('/api/event', post(hit({ url: `https://${t.a.site.domain}/private/x` })))
    expect(a.headers['x-dropped']).toBe('excluded-path')
    expect(a.lines.map((l) => l.level)).toEqual(['debug', 'info'])
    // Plausible's payload, by domain, with its own header: the same whatever the reason (tracker.md)
    const plausible = await both('/api/event', post(JSON.stringify({ n: 'pageview', u: 'https://elsewhere.test/', d: t.a.site.domain })))
    expect(plausible.headers).toMatchObject({ 'x-dropped': 'not-kept', 'x-plausible-dropped': '1' })
  })

  it('refusals: bad JSON, an unknown site, a body over the cap (by its length and counted), with the caller id kept', async () => {
    expect((await both('/api/event', post('{not json'))).status).toBe(400)
    expect((await both('/api/event', post(hit({ site: 'nosuchsite' })))).body).toContain('unknown site')
    const large = hit({ props: { pad: 'x'.repeat(1900) } }).padEnd(70_000, ' ')
    expect((await both('/api/event', post(large))).status).toBe(413)
    const stream = () =>
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(large))
          controller.close()
        },
      })
    const counted = await both('/api/event', () => ({ ...post(''), body: stream(), duplex: 'half' }) as RequestInit)
    expect(counted.status).toBe(413)
    expect(counted.headers['access-control-allow-origin']).toBe('*')
    const given = await both('/api/event', post('[]', { 'x-request-id': 'caller-1' }))
    expect(given.requestId).toBe('caller-1')
    expect(given.status).toBe(400)
  })

  it('the public count: the answer, 404 for an unknown site, 400 for a bad range', async () => {
    const a = await both(`/api/public/live?site=${t.a.site.snippetId}`)
    expect(a.status).toBe(200)
    expect(JSON.parse(a.body)).toMatchObject({ site: t.a.site.snippetId, range: '5m', visitors: expect.any(Number) })
    expect(a.headers).toMatchObject({ 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=10' })
    expect((await both(`/api/public/live?site=${t.a.site.snippetId}&range=7d&cachebuster=1`)).status).toBe(200)
    expect((await both('/api/public/live?site=nosuchsite')).status).toBe(404)
    expect((await both(`/api/public/live?site=${t.a.site.snippetId}&range=forever`)).status).toBe(400)
    expect((await both('/api/public/live/?site=nosuchsite')).status).toBe(404)
  })

  it('a repeat of a cached count is answered at once (no promise), the same as the middleware answers it', async () => {
    const path = `/api/public/live?site=${t.a.site.snippetId}&range=today`
    const first = await both(path)
    expect(first.status).toBe(200)
    into = 'lean'
    const repeat = lean.fetch(new Request(`http://api.test${path}`))
    // the Node adapter writes an answer it gets at once in the same turn; a promise costs it a close handler and an async write
    expect(repeat).toBeInstanceOf(Response)
    expect(await (repeat as Response).text()).toBe(first.body)
    into = 'general'
    expect(await (await general.fetch(new Request(`http://api.test${path}`))).text()).toBe(first.body)
    const again = await both(path)
    expect(again.body).toBe(first.body)
    expect(again.headers).toEqual(first.headers)
    // HEAD and a trailing slash reach the same route, as in the app's router
    const head = await both(path, { method: 'HEAD' })
    expect([head.status, head.body, head.headers['cache-control']]).toEqual([200, '', 'public, max-age=60'])
    expect((await both(`/api/public/live/?site=${t.a.site.snippetId}&range=today`)).body).toBe(first.body)
    expect((await both('/api/event/', post(hit()))).status).toBe(202)
  })

  it("a repeat follows the site's settings: a window the dial no longer admits, or an unpublished count, is 404 at once", async () => {
    const path = `/api/public/live?site=${t.a.site.snippetId}&range=today&v=2`
    const settings = (body: Record<string, unknown>) => t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body })
    expect((await both(path)).status).toBe(200)
    expect((await both(path)).status).toBe(200)
    try {
      await settings({ publicCountsDial: 'live' })
      expect((await both(path)).status).toBe(404)
      await settings({ publicCountsDial: '30d' })
      expect((await both(path)).status).toBe(200)
      await settings({ publicCounts: false })
      expect((await both(path)).status).toBe(404)
    } finally {
      await settings({ publicCounts: true, publicCountsDial: '30d' })
    }
    expect((await both(path)).status).toBe(200)
  })

  it('an unknown failure: 500 naming the request id, logged under the same id', async () => {
    const submit = t.services.ingestor.submit
    t.services.ingestor.submit = () => Promise.reject(new Error('the store fell over'))
    try {
      for (const which of ['lean', 'general'] as const) {
        into = which
        const before = logged[which].length
        const res = await (which === 'lean' ? lean : general).request('http://api.test/api/event', post(hit()))
        const id = res.headers.get('x-request-id')
        expect(res.status).toBe(500)
        expect(await res.json()).toEqual({ error: `internal error (request ${id})` })
        const errors = logged[which].slice(before).filter((l) => l.level === 'error')
        expect(errors).toMatchObject([{ requestId: id, path: '/api/event', error: expect.stringContaining('the store fell over') }])
      }
      // at `info` the lean transport registers a request's trace only when it answers a failure
      const metrics = t.services.metrics
      t.services.metrics = undefined
      try {
        const lines: Record<string, unknown>[] = []
        const info = createApp(t.services, { level: 'info', write: (line) => lines.push(JSON.parse(line)) })
        const res = await info.request('http://api.test/api/event', post(hit()))
        const id = res.headers.get('x-request-id')
        expect(await res.json()).toEqual({ error: `internal error (request ${id})` })
        expect(lines.map((l) => [l.level, l.requestId])).toEqual([
          ['error', id],
          ['info', id],
        ])
      } finally {
        t.services.metrics = metrics
      }
    } finally {
      t.services.ingestor.submit = submit
    }
  })

  it('what still goes through the middleware: preflight, a wrong method', async () => {
    const preflight = await both('/api/event', { method: 'OPTIONS', headers: { 'access-control-request-headers': 'content-type' } })
    expect(preflight.status).toBe(204)
    expect((await both('/api/event')).status).toBe(405)
  })

  it('503 while the migrations are applied', async () => {
    readiness = 'migrating'
    try {
      const a = await both('/api/event', post(hit()))
      expect(a.status).toBe(503)
      expect(a.headers['retry-after']).toBe('2')
      expect((await both(`/api/public/live?site=${t.a.site.snippetId}`)).status).toBe(503)
    } finally {
      readiness = 'ready'
    }
  })

  it('the request metric names the declared route, as the middleware does', () => {
    expect(recorded.lean).toEqual(recorded.general)
    expect(recorded.lean).toContain('POST /api/event 202')
    expect(recorded.lean).toContain('GET /api/public/live 200')
  })
})
