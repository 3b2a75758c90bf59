import { gunzipSync, inflateSync } from 'node:zlib'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COMPRESS_FROM_BYTES, acceptedEncoding, compression } from '../../functions/compression'

const big = { rows: Array.from({ length: 200 }, (_, i) => ({ path: `/page/${i}`, visitors: i })) }
const small = { ok: true }

function app() {
  const app = new Hono()
  app.use(compression())
  app.get('/big', (c) => c.json(big))
  app.get('/small', (c) => c.json(small))
  app.get('/cors', (c) => {
    c.header('Vary', 'Origin')
    return c.json(big)
  })
  app.get('/script', () => new Response('x'.repeat(5000), { headers: { 'content-type': 'application/javascript', etag: '"v1"' } }))
  app.get('/png', (c) => c.body(new Uint8Array(5000), 200, { 'content-type': 'image/png' }))
  app.get('/no-transform', (c) => c.json(big, 200, { 'cache-control': 'no-transform' }))
  app.get('/events', (c) =>
    streamSSE(c, async (stream) => {
      for (let i = 0; i < 50; i++) await stream.writeSSE({ data: JSON.stringify(big.rows.slice(0, 20)) })
    }),
  )
  return app
}

describe('choosing the encoding', () => {
  it('takes the accepted encoding of the highest weight, gzip on a tie, none when neither is accepted', () => {
    expect(acceptedEncoding('gzip, deflate, br')).toBe('gzip')
    expect(acceptedEncoding('deflate')).toBe('deflate')
    expect(acceptedEncoding('gzip;q=0.5, deflate')).toBe('deflate')
    expect(acceptedEncoding('*')).toBe('gzip')
    expect(acceptedEncoding('gzip;q=0, *;q=0.1')).toBe('deflate')
    expect(acceptedEncoding('identity')).toBeUndefined()
    expect(acceptedEncoding('br')).toBeUndefined()
    expect(acceptedEncoding(undefined)).toBeUndefined()
  })
})

describe('the compression step', () => {
  const get = (path: string, encoding?: string) =>
    app().request(`http://x${path}`, { headers: encoding ? { 'accept-encoding': encoding } : {} })

  it('gzips or deflates a large answer the client accepts it for, with Vary and without the plain length', async () => {
    for (const [encoding, decode] of [
      ['gzip', gunzipSync],
      ['deflate', inflateSync],
    ] as const) {
      const res = await get('/big', encoding)
      expect(res.headers.get('content-encoding')).toBe(encoding)
      expect(res.headers.get('vary')).toBe('Accept-Encoding')
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      const bytes = Buffer.from(await res.arrayBuffer())
      expect(bytes.length).toBeLessThan(JSON.stringify(big).length)
      expect(JSON.parse(decode(bytes).toString())).toEqual(big)
    }
  })

  it('sends an answer as it is, with Vary, when the client accepts no compression it offers', async () => {
    for (const encoding of [undefined, 'identity', 'br']) {
      const res = await get('/big', encoding)
      expect(res.headers.get('content-encoding')).toBeNull()
      expect(res.headers.get('vary')).toBe('Accept-Encoding')
      expect(await res.json()).toEqual(big)
    }
  })

  it('sends an answer under the threshold as it is, even when gzip is accepted', async () => {
    expect(JSON.stringify(small).length).toBeLessThan(COMPRESS_FROM_BYTES)
    const res = await get('/small', 'gzip')
    expect(res.headers.get('content-encoding')).toBeNull()
    expect(res.headers.get('vary')).toBe('Accept-Encoding')
    expect(await res.json()).toEqual(small)
  })

  it('never compresses an event stream, nor a type that does not compress, nor an answer marked no-transform', async () => {
    const events = await get('/events', 'gzip')
    expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(events.headers.get('content-encoding')).toBeNull()
    expect(events.headers.get('vary')).toBeNull()
    expect((await events.text()).match(/^data: /gm)).toHaveLength(50)
    for (const path of ['/png', '/no-transform']) {
      const res = await get(path, 'gzip')
      expect(res.headers.get('content-encoding')).toBeNull()
      expect(res.headers.get('vary')).toBeNull()
    }
  })

  it('adds to a Vary already set, and makes a compressed answer’s ETag weak', async () => {
    expect((await get('/cors', 'gzip')).headers.get('vary')).toBe('Origin, Accept-Encoding')
    const script = await get('/script', 'gzip')
    expect(script.headers.get('content-encoding')).toBe('gzip')
    expect(script.headers.get('etag')).toBe('W/"v1"')
    expect(gunzipSync(Buffer.from(await script.arrayBuffer())).toString()).toBe('x'.repeat(5000))
    const plain = await get('/script')
    expect(plain.headers.get('etag')).toBe('"v1"')
  })
})

describe('the compression step on the Node adapter', () => {
  let base = ''
  let close = () => {}
  beforeAll(async () => {
    const server = serve({ fetch: app().fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => server.once('listening', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    close = () => server.close()
  })
  afterAll(() => close())

  it('writes plain and compressed answers with their length, and event streams as they come', async () => {
    const plain = await fetch(`${base}/big`, { headers: { 'accept-encoding': 'identity' } })
    expect(plain.headers.get('content-length')).toBe(String(JSON.stringify(big).length))
    expect(plain.headers.get('vary')).toBe('Accept-Encoding')
    expect(await plain.json()).toEqual(big)
    const gzipped = await fetch(`${base}/big`, { headers: { 'accept-encoding': 'gzip' } })
    expect(gzipped.headers.get('content-encoding')).toBe('gzip')
    expect(Number(gzipped.headers.get('content-length'))).toBeLessThan(JSON.stringify(big).length)
    expect(await gzipped.json()).toEqual(big)
    const small = await fetch(`${base}/small`, { headers: { 'accept-encoding': 'gzip' } })
    expect(small.headers.get('content-encoding')).toBeNull()
    expect(await small.json()).toEqual({ ok: true })
    const events = await fetch(`${base}/events`, { headers: { 'accept-encoding': 'gzip' } })
    expect(events.headers.get('content-encoding')).toBeNull()
    expect(events.headers.get('content-length')).toBeNull()
    expect((await events.text()).match(/^data: /gm)).toHaveLength(50)
  })
})
