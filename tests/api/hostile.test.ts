import { beforeAll, describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { DISTINCT_WINDOWS_PER_MINUTE } from '../../lib/operations/public-live'
import { client, harness, type Harness } from '../helpers'

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
  let t: Harness

  beforeAll(async () => {
    t = await harness()
  })

  const botCount = async (siteId: string) =>
    Number((await t.clickhouse.query<{ n: string }>('SELECT count() AS n FROM bot_events WHERE site_id = {s:UUID}', { s: siteId }))[0].n)

  it('a 200 MB streamed body to /api/event is refused after at most its cap, never buffered whole', async () => {
    const body = lazyBody(200 * 1024 * 1024)
    const res = await t.app.request('http://api.test/api/event', { method: 'POST', body: body.stream, duplex: 'half' } as RequestInit)
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({ error: 'body: larger than 65536 bytes' })
    expect(body.pulled()).toBeLessThan(2 * 1024 * 1024)
  })

  it('a body whose Content-Length is over the cap is refused before it is read', async () => {
    const body = lazyBody(10 * 1024 * 1024)
    const res = await t.app.request(`http://api.test/api/v1/sites/${t.a.site.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${t.a.write.key}`, 'content-length': String(10 * 1024 * 1024) },
      body: body.stream,
      duplex: 'half',
    } as RequestInit)
    expect(res.status).toBe(413)
    // the stream makes its first chunk itself before anyone reads; nothing past it was asked for
    expect(body.pulled()).toBeLessThanOrEqual(64 * 1024)
  })

  it('collect takes 500 hits and refuses a body over 1 MB, storing nothing', async () => {
    const hit = { path: '/x', userAgent: 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)' }
    const ok = await t.call('POST', '/api/v1/collect', {
      key: t.ingest.key,
      body: { site_id: t.a.site.snippetId, events: Array(500).fill(hit) },
    })
    expect(ok.json).toEqual({ ingested: 500, dropped: 0 })
    const before = await botCount(t.a.site.id)
    const padded = { ...hit, referrer: 'x'.repeat(1900) }
    const huge = await t.call('POST', '/api/v1/collect', {
      key: t.ingest.key,
      body: { site_id: t.a.site.snippetId, events: Array(600).fill(padded) },
    })
    expect(huge.status).toBe(413)
    expect(huge.json.error).toMatch(/^body: larger than 1048576 bytes/)
    expect(await botCount(t.a.site.id)).toBe(before)
  })

  it('a settings write over 64 KB is 413 and changes nothing', async () => {
    const before = await t.repositories.sites.get(t.a.site.id)
    const res = await t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, {
      key: t.a.write.key,
      body: { displayName: 'x', excludedPaths: Array(5000).fill('/a-long-path-to-exclude') },
    })
    expect(res.status).toBe(413)
    expect(await t.repositories.sites.get(t.a.site.id)).toEqual(before)
  })
})

describe('dates, limits and the public count under abuse', () => {
  const NOW = new Date('2026-11-22T15:00:30Z')
  let t: Harness

  beforeAll(async () => {
    t = await harness({ now: () => NOW })
    await t.call('PATCH', `/api/v1/sites/${t.b.site.id}`, { key: t.b.write.key, body: { publicCounts: true, publicCountsDial: 'all' } })
    const hit = (minutesAgo: number, ip: string, path: string) =>
      JSON.stringify({
        timestamp: new Date(NOW.getTime() - minutesAgo * 60_000).toISOString(),
        site: t.b.site.snippetId,
        name: 'pageview',
        url: `https://${t.b.site.domain}${path}`,
        ip,
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
        props: { plan: path === '/a' ? 'pro' : 'free' },
      })
    expect(
      (await importHits([hit(2, '8.8.8.8', '/a'), hit(3, '1.1.1.1', '/b'), hit(90, '9.9.9.9', '/b')], t.services.ingestor)).rejected,
    ).toBe(0)
  })

  it.each([
    ['9999-12-30', '9999-12-31', 'from'],
    ['2026-01-01', '9999-12-31', 'to'],
    ['0001-01-01', '0001-01-02', 'from'],
    ['1969-12-31', '2026-01-01', 'from'],
  ])('custom %s to %s is 400 naming %s, on every report and the public count', async (from, to, name) => {
    const range = `range=custom&from=${from}&to=${to}`
    for (const path of ['stats', 'timeseries', 'breakdown', 'export']) {
      // property is breakdown's alone: the others refuse a parameter they do not take
      const property = path === 'breakdown' ? '&property=path' : ''
      const res = await t.call('GET', `/api/v1/${path}?site_id=${t.b.site.id}&${range}${property}`, { key: t.b.read.key })
      expect(res.status, path).toBe(400)
      expect(res.json.error, path).toMatch(new RegExp(`^${name}: .*outside`))
    }
    const live = await t.call('GET', `/api/public/live?site=${t.b.site.snippetId}&${range}`)
    expect(live.status).toBe(400)
    expect(live.json.error).toMatch(new RegExp(`^${name}:`))
  })

  it('export clamps limit like every list: -1 and 0 give one row a breakdown, never a 500', async () => {
    for (const limit of ['-1', '0']) {
      const res = await t.call('GET', `/api/v1/export?site_id=${t.b.site.id}&range=today&limit=${limit}`, { key: t.b.read.key })
      expect(res.status).toBe(200)
      expect(res.json.breakdowns.path).toHaveLength(1)
    }
    const all = await t.call('GET', `/api/v1/export?site_id=${t.b.site.id}&range=today&limit=20000`, { key: t.b.read.key })
    expect(all.json.breakdowns.path.map((r: { value: string }) => r.value).sort()).toEqual(['/a', '/b'])
  })

  it('echoes the range that was asked when an equal window is cached under another name', async () => {
    const live = (range?: string) => t.call('GET', `/api/public/live?site=${t.b.site.snippetId}${range ? `&range=${range}` : ''}`)
    for (const [first, second] of [
      ['year', 'ytd'],
      ['today', 'week'],
      ['5m', 'realtime'],
    ]) {
      const a = await live(first)
      const b = await live(second)
      expect(a.json.range).toBe(first)
      expect(b.json.range).toBe(second)
      expect(b.json.visitors).toBe(a.json.visitors)
      // and again from the cache of the asked question
      expect((await live(second)).json.range).toBe(second)
    }
    expect((await live()).json.range).toBe('5m')
  })

  it('many custom windows cannot switch off the live badge: live windows are never refused for them', async () => {
    const custom = (day: number) =>
      t.call(
        'GET',
        `/api/public/live?site=${t.b.site.snippetId}&range=custom&from=2026-10-${String(day).padStart(2, '0')}&to=2026-10-${String(day).padStart(2, '0')}`,
      )
    let refused: Awaited<ReturnType<typeof custom>> | undefined
    for (let day = 1; day <= DISTINCT_WINDOWS_PER_MINUTE + 1 && !refused; day++) {
      const res = await custom(day)
      if (res.status === 429) refused = res
    }
    expect(refused?.status).toBe(429)
    // 30 s into the minute: the window limit lifts when it ends
    expect(refused!.headers.get('retry-after')).toBe('30')
    for (const range of ['', '&range=5m', '&range=30m', '&range=realtime']) {
      const res = await t.call('GET', `/api/public/live?site=${t.b.site.snippetId}${range}`)
      expect(res.status, range).toBe(200)
    }
    const live = await t.call('GET', `/api/public/live?site=${t.b.site.snippetId}`)
    expect(live.json).toMatchObject({ range: '5m', visitors: 2, halfHour: 2 })
  })

  it('export breaks down by every custom property key seen in the window', async () => {
    const res = await t.call('GET', `/api/v1/export?site_id=${t.b.site.id}&range=today`, { key: t.b.read.key })
    // by hand: /a was seen with plan=pro by one visitor, /b with plan=free by two
    expect(res.json.breakdowns['prop:plan'].map((r: { value: string; visitors: number }) => [r.value, r.visitors])).toEqual([
      ['free', 2],
      ['pro', 1],
    ])
  })

  it('a goal filter takes contains and matches over goal names, like every dimension', async () => {
    for (const body of [
      { type: 'page', matchValue: '/a' },
      { type: 'event', matchValue: 'Signup' },
    ]) {
      expect((await t.call('POST', '/api/v1/goals', { key: t.b.write.key, body: { site_id: t.b.site.id, ...body } })).status).toBe(201)
    }
    const visitors = async (filter: unknown) => {
      const res = await t.call(
        'GET',
        `/api/v1/stats?site_id=${t.b.site.id}&range=today&filters=${encodeURIComponent(JSON.stringify([filter]))}`,
        { key: t.b.read.key },
      )
      expect(res.status, JSON.stringify(res.json)).toBe(200)
      return res.json.totals.visitors
    }
    // "Visit /a" converted once (8.8.8.8); nobody signed up
    expect(await visitors({ dimension: 'goal', operator: 'contains', value: ['visit'] })).toBe(1)
    expect(await visitors({ dimension: 'goal', operator: 'matches', value: ['^Visit /'] })).toBe(1)
    expect(await visitors({ dimension: 'goal', operator: 'matches', value: ['^Sign'] })).toBe(0)
    expect(await visitors({ dimension: 'goal', operator: 'contains', value: ['nothing like it'] })).toBe(0)
    expect(await visitors({ dimension: 'goal', operator: 'is_not', value: ['Visit /a'] })).toBe(2)
    const bad = await t.call(
      'GET',
      `/api/v1/stats?site_id=${t.b.site.id}&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'goal', operator: 'matches', value: ['('] }]))}`,
      { key: t.b.read.key },
    )
    expect(bad).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^filters: invalid regular expression/) } })
  })
})

describe('server-side collection verifies crawlers without a DNS lookup per hit', () => {
  const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
  const ips = Array.from({ length: 500 }, (_, i) => `66.249.${64 + Math.floor(i / 250)}.${i % 250}`)

  it('caches checks per address, bounds their concurrency, and answers within its budget', async () => {
    const t = await harness()
    let reverses = 0
    let inFlight = 0
    let mostInFlight = 0
    const dns = {
      async reverse(ip: string) {
        reverses++
        mostInFlight = Math.max(mostInFlight, ++inFlight)
        await new Promise((r) => setTimeout(r, 30))
        inFlight--
        return [`crawl-${ip.replaceAll('.', '-')}.googlebot.com`]
      },
      async lookup(host: string) {
        return [host.slice('crawl-'.length, host.indexOf('.')).replaceAll('-', '.')]
      },
    }
    const call = client({ ...t.services, dns })
    const verifiedCount = async () =>
      Number(
        (
          await t.clickhouse.query<{ n: string }>('SELECT countIf(verified = 1) AS n FROM bot_events WHERE site_id = {s:UUID}', {
            s: t.a.site.id,
          })
        )[0].n,
      )
    const send = () =>
      call('POST', '/api/v1/collect', {
        key: t.ingest.key,
        body: { site_id: t.a.site.snippetId, events: ips.map((ip) => ({ path: '/', userAgent: GOOGLEBOT, ip })) },
      })
    expect((await send()).json).toEqual({ ingested: 500, dropped: 0 })
    expect(mostInFlight).toBeLessThanOrEqual(16)
    // 500 checks of 30 ms, 16 at a time, outlast the call's budget: those not done went in unverified and go on
    const first = await verifiedCount()
    expect(first).toBeGreaterThan(0)
    expect(first).toBeLessThan(500)
    await new Promise((r) => setTimeout(r, 1500))
    expect(reverses).toBe(500)
    expect((await send()).json).toEqual({ ingested: 500, dropped: 0 })
    // every address was checked once: the second batch is verified from the cache
    expect(reverses).toBe(500)
    expect((await verifiedCount()) - first).toBe(500)
  })

  it('answers even when DNS never does', async () => {
    const t = await harness()
    const call = client({ ...t.services, dns: { reverse: () => new Promise<string[]>(() => {}), lookup: async () => [] } })
    const res = await call('POST', '/api/v1/collect', {
      key: t.ingest.key,
      body: { site_id: t.a.site.snippetId, events: [{ path: '/', userAgent: GOOGLEBOT, ip: '66.249.66.1' }] },
    })
    expect(res.json).toEqual({ ingested: 1, dropped: 0 })
  })
})
