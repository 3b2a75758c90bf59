import { beforeAll, describe, expect, it } from 'vitest'
import { checkedApp, client, seed, testServices } from '../helpers'

/** A body of `total` bytes made on demand, counting how much of it the server pulled. */
function lazyBody(total: number, chunk = 64 * 1024) {
  let sent = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close()
      const size = Math.min(chunk, total - sent)
      sent += size
      controller.enqueue(new Uint8Array(size).fill(0x20))
    },
  })
  return { stream, pulled: () => sent }
}

describe('request bodies are capped while they are read', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let fx: Awaited<ReturnType<typeof seed>>
  let app: ReturnType<typeof checkedApp>
  let call: ReturnType<typeof client>

  beforeAll(async () => {
    services = await testServices()
    fx = await seed(services)
    app = checkedApp(services)
    call = client(services)
  })

  const botCount = async (siteId: string) => Number((await services.olap.query<{ n: string }>('SELECT count() AS n FROM bot_events WHERE site_id = {s:UUID}', { s: siteId }))[0].n)

  it('a 200 MB streamed body to /api/event is refused after at most its cap, never buffered whole', async () => {
    const body = lazyBody(200 * 1024 * 1024)
    const res = await app.request('http://api.test/api/event', { method: 'POST', body: body.stream, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({ error: 'body: larger than 65536 bytes' })
    expect(body.pulled()).toBeLessThan(2 * 1024 * 1024)
  })

  it('a body whose Content-Length is over the cap is refused before it is read', async () => {
    const body = lazyBody(10 * 1024 * 1024)
    const res = await app.request(`http://api.test/api/v1/sites/${fx.a.site.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${fx.a.write.key}`, 'content-length': String(10 * 1024 * 1024) },
      body: body.stream,
      duplex: 'half',
    } as RequestInit)
    expect(res.status).toBe(413)
    // the stream makes its first chunk itself before anyone reads; nothing past it was asked for
    expect(body.pulled()).toBeLessThanOrEqual(64 * 1024)
  })

  it('collect takes 500 hits and refuses a body over 1 MB, storing nothing', async () => {
    const hit = { path: '/x', userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)' }
    const ok = await call('POST', '/api/v1/collect', { key: fx.ingest.key, body: { site_id: fx.a.site.snippetId, events: Array(500).fill(hit) } })
    expect(ok.json).toEqual({ ingested: 500, dropped: 0 })
    const before = await botCount(fx.a.site.id)
    const padded = { ...hit, referrer: 'x'.repeat(1900) }
    const huge = await call('POST', '/api/v1/collect', { key: fx.ingest.key, body: { site_id: fx.a.site.snippetId, events: Array(600).fill(padded) } })
    expect(huge.status).toBe(413)
    expect(huge.json.error).toMatch(/^body: larger than 1048576 bytes/)
    expect(await botCount(fx.a.site.id)).toBe(before)
  })

  it('a settings write over 64 KB is 413 and changes nothing', async () => {
    const before = await services.store.getSite(fx.a.site.id)
    const res = await call('PATCH', `/api/v1/sites/${fx.a.site.id}`, { key: fx.a.write.key, body: { displayName: 'x', excludedPaths: Array(5000).fill('/a-long-path-to-exclude') } })
    expect(res.status).toBe(413)
    expect(await services.store.getSite(fx.a.site.id)).toEqual(before)
  })
})
