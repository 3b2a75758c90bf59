import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { harness, type Harness } from '../helpers'

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'

describe('ingestion', () => {
  let t: Harness
  const now = new Date('2026-11-22T12:00:00Z')

  beforeAll(async () => {
    t = await harness({ now: () => now })
  })

  const rows = (siteId: string, where = '1') =>
    t.clickhouse.query<Record<string, string>>(
      `SELECT name, kind, pathname, query, visitor_id, session_id, toString(session_start) AS session_start, channel, referrer_source, utm_source, browser, device, screen_class, country_code, city, link_url, dead_click, revenue_amount, revenue_currency, props
       FROM events WHERE site_id = {site:UUID} AND ${where} ORDER BY timestamp, name`,
      { site: siteId },
    )

  describe('visits, from imported hits with hand-computed expectations', () => {
    // Org A's site is in Europe/Berlin: in November, its local midnight is 23:00 UTC
    const hit = (timestamp: string, path: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        timestamp,
        site: t.a.site.snippetId,
        name: 'pageview',
        url: `https://${t.a.site.domain}${path}`,
        ip: '81.2.69.142',
        userAgent: CHROME,
        screenWidth: 1440,
        ...extra,
      })

    let visits: Record<string, string>[] = []
    beforeAll(async () => {
      const lines = [
        hit('2026-11-20T10:00:00Z', '/', { referrer: 'https://www.google.com/' }),
        hit('2026-11-20T10:10:00Z', '/pricing', { referrer: `https://${t.a.site.domain}/` }),
        JSON.stringify({
          timestamp: '2026-11-20T10:12:00Z',
          site: t.a.site.snippetId,
          name: 'engagement',
          url: `https://${t.a.site.domain}/pricing`,
          ip: '81.2.69.142',
          userAgent: CHROME,
          engagement: { ms: 90000, scroll: 80 },
        }),
        // 30 min 1 s after the last event: a new visit, which is a bounce
        hit('2026-11-20T10:42:01Z', '/blog'),
        // exactly 30 minutes after the last event: the same visit
        hit('2026-11-20T11:12:01Z', '/blog/post'),
        // 22:50 UTC is 23:50 in Berlin; 23:10 UTC is the next Berlin day: a new visitor id
        hit('2026-11-20T22:50:00Z', '/late'),
        hit('2026-11-20T23:10:00Z', '/after-midnight'),
        // a custom event alone after a pageview: not a bounce
        hit('2026-11-21T09:00:00Z', '/shop'),
        JSON.stringify({
          timestamp: '2026-11-21T09:01:00Z',
          site: t.a.site.snippetId,
          name: 'Purchase',
          url: `https://${t.a.site.domain}/shop`,
          ip: '81.2.69.142',
          userAgent: CHROME,
          revenue: { amount: '19.90', currency: 'EUR' },
          props: { plan: 'pro' },
        }),
      ]
      const result = await importHits(lines, t.services.ingestor)
      expect(result).toMatchObject({ imported: 9, rejected: 0, errors: [] })
      visits = await t.clickhouse.query<Record<string, string>>(
        `SELECT any(visitor_id) AS visitor, toString(min(session_start)) AS start, argMinMerge(entry_page) AS entry, argMaxMerge(exit_page) AS exit,
                sum(pageviews) AS pageviews, sum(custom_events) AS custom, dateDiff('second', min(session_start), max(end)) AS duration,
                any(referrer_source) AS source, any(channel) AS channel
         FROM sessions WHERE site_id = {site:UUID} GROUP BY session_id ORDER BY start`,
        { site: t.a.site.id },
      )
    })

    it("splits visits at gaps over 30 minutes and keeps the first hit's source", () => {
      expect(visits.map((v) => [v.start, v.entry, v.exit, v.pageviews, v.custom, v.duration])).toEqual([
        ['2026-11-20 10:00:00.000', '/', '/pricing', '2', '0', '720'],
        ['2026-11-20 10:42:01.000', '/blog', '/blog/post', '2', '0', '1800'],
        ['2026-11-20 22:50:00.000', '/late', '/late', '1', '0', '0'],
        ['2026-11-20 23:10:00.000', '/after-midnight', '/after-midnight', '1', '0', '0'],
        ['2026-11-21 09:00:00.000', '/shop', '/shop', '1', '1', '60'],
      ])
      expect(visits[0]).toMatchObject({ source: 'Google', channel: 'Organic Search' })
      expect(visits[1]).toMatchObject({ source: '', channel: 'Direct' })
    })

    it('rotates the visitor id at the site-local day boundary, not at UTC midnight', () => {
      expect(visits[0].visitor).toBe(visits[1].visitor)
      expect(visits[1].visitor).toBe(visits[2].visitor)
      expect(visits[3].visitor).not.toBe(visits[2].visitor)
      // 2026-11-21 09:00 UTC is the same Berlin day as 23:10 UTC the evening before
      expect(visits[4].visitor).toBe(visits[3].visitor)
    })

    it('gives bounce and duration as the metric definitions say', () => {
      // bounce: at most one pageview and no interactive custom event
      const bounces = visits.filter((v) => Number(v.pageviews) <= 1 && Number(v.custom) === 0).length
      expect(bounces).toBe(2)
      expect(visits.map((v) => Number(v.duration)).reduce((a, b) => a + b) / visits.length).toBe((720 + 1800 + 0 + 0 + 60) / 5)
    })

    it('enriches: browser, device, screen class, geo, revenue and props', async () => {
      const purchase = (await rows(t.a.site.id, "name = 'Purchase'"))[0]
      expect(purchase).toMatchObject({
        kind: 'custom',
        browser: 'Chrome',
        device: 'Desktop',
        screen_class: 'Desktop',
        country_code: 'GB',
        city: 'London',
        revenue_amount: 19.9,
        revenue_currency: 'EUR',
        props: { plan: 'pro' },
      })
    })
  })

  describe('POST /api/event', () => {
    const send = async (body: Record<string, unknown>, ua = CHROME, ip = '8.8.8.8', extra: Record<string, string> = {}) => {
      const { createApp } = await import('../../functions/app')
      const res = await createApp(t.services).request('http://api.test/api/event', {
        method: 'POST',
        headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': ua, 'x-forwarded-for': ip, ...extra },
        body: JSON.stringify(body),
      })
      if (res.status >= 500) throw new Error(`500: ${await res.text()}`)
      const text = await res.text()
      return { status: res.status, json: text ? JSON.parse(text) : null, headers: res.headers }
    }
    const base = () => ({
      site: t.b.site.snippetId,
      name: 'pageview',
      url: `https://${t.b.site.domain}/landing?utm_source=newsletter&utm_medium=email&ref=1&secret=x`,
    })

    it('accepts a text/plain pageview with 202 and CORS, and stores it enriched', async () => {
      const res = await send({ ...base(), referrer: 'https://chatgpt.com/', screenWidth: 390 }, IPHONE, '1.1.1.1')
      expect(res.status).toBe(202)
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      const [row] = await rows(t.b.site.id, "pathname = '/landing'")
      expect(row).toMatchObject({
        kind: 'pageview',
        query: '',
        referrer_source: 'ChatGPT',
        channel: 'AI assistants',
        utm_source: 'newsletter',
        browser: 'Safari',
        device: 'Mobile',
        screen_class: 'Mobile',
        country_code: 'AU',
      })
    })

    it('drops bots unless the site keeps them, and then keeps them apart', async () => {
      expect((await send({ ...base(), url: `https://${t.b.site.domain}/bot-page` }, GOOGLEBOT)).status).toBe(202)
      expect(await rows(t.b.site.id, "pathname = '/bot-page'")).toEqual([])
      await t.call('PATCH', `/api/v1/sites/${t.b.site.id}`, { key: t.b.write.key, body: { includeBots: true } })
      await send({ ...base(), url: `https://${t.b.site.domain}/bot-page` }, GOOGLEBOT)
      expect(await rows(t.b.site.id, "pathname = '/bot-page'")).toEqual([])
      const bots = await t.clickhouse.query(
        'SELECT bot_name, bot_kind, collection_source FROM bot_events WHERE site_id = {s:UUID} AND pathname = {p:String}',
        { s: t.b.site.id, p: '/bot-page' },
      )
      expect(bots).toEqual([{ bot_name: 'Googlebot', bot_kind: 'search-engine', collection_source: 'browser' }])
      await t.call('PATCH', `/api/v1/sites/${t.b.site.id}`, { key: t.b.write.key, body: { includeBots: false } })
    })

    it("applies the site's excluded paths, excluded IPs and captured query parameters", async () => {
      await t.call('PATCH', `/api/v1/sites/${t.b.site.id}`, {
        key: t.b.write.key,
        body: { excludedPaths: ['/admin/*'], excludedIps: ['10.0.0.0/8'], capturedQueryParams: ['ref'] },
      })
      await send({ ...base(), url: `https://${t.b.site.domain}/admin/users` })
      await send({ ...base(), url: `https://${t.b.site.domain}/from-office` }, CHROME, '10.1.2.3')
      await send({ ...base(), url: `https://${t.b.site.domain}/kept?ref=hn&secret=x` })
      expect(await rows(t.b.site.id, "pathname IN ('/admin/users', '/from-office')")).toEqual([])
      expect((await rows(t.b.site.id, "pathname = '/kept'"))[0].query).toBe('ref=hn')
    })

    it('classifies link clicks: outbound, download, affiliate', async () => {
      await t.call('PATCH', `/api/v1/sites/${t.b.site.id}`, { key: t.b.write.key, body: { affiliatePaths: ['/go/*'] } })
      const click = (href: string) =>
        send({ ...base(), url: `https://${t.b.site.domain}/links`, name: 'click', click: { href, tag: 'a', text: 'x', interactive: true } })
      await click('https://github.com/x')
      await click(`https://${t.b.site.domain}/files/report.pdf`)
      await click(`https://${t.b.site.domain}/go/partner`)
      await click(`https://${t.b.site.domain}/about`)
      const found = await rows(t.b.site.id, "pathname = '/links'")
      expect(found.map((r) => [r.name, r.kind, r.link_url])).toEqual(
        expect.arrayContaining([
          ['outbound', 'outbound', 'https://github.com/x'],
          ['download', 'download', `https://${t.b.site.domain}/files/report.pdf`],
          ['affiliate', 'affiliate', `https://${t.b.site.domain}/go/partner`],
          ['click', 'click', `https://${t.b.site.domain}/about`],
        ]),
      )
    })

    it("trusts X-Forwarded-For only from a proxy that proves the site's secret", async () => {
      const config = await t.call('GET', `/api/v1/proxy-config?site_id=${t.b.site.id}`, { key: t.b.write.key })
      expect(config.status).toBe(200)
      expect(config.json.proxySecret).toMatch(/^wps_/)
      expect(config.json.snippet).toContain('data-api="/stats/event"')
      expect((await t.call('GET', '/api/v1/proxy-config', { key: t.b.write.key })).status).toBe(400)
      expect((await t.call('GET', `/api/v1/proxy-config?site_id=${t.b.site.id}`, { key: t.b.read.key })).status).toBe(403)
      // the test home reads the socket address from X-Forwarded-For; a proxy secret overrides it with the forwarded one
      await send({ ...base(), url: `https://${t.b.site.domain}/proxied` }, CHROME, '81.2.69.142', {
        'x-proxy-secret': config.json.proxySecret,
      })
      expect((await rows(t.b.site.id, "pathname = '/proxied'"))[0].country_code).toBe('GB')
      // the site read never shows the secret
      expect(JSON.stringify((await t.call('GET', `/api/v1/sites/${t.b.site.id}`, { key: t.b.read.key })).json)).not.toContain(
        config.json.proxySecret,
      )
    })

    it('rejects bad payloads with 400 naming the problem, never 500', async () => {
      const cases: [unknown, RegExp][] = [
        [{ ...base(), site: 'nosuchsite' }, /site/],
        [{ ...base(), url: 'ftp://x.com/' }, /url/],
        [{ ...base(), url: 'not a url' }, /url/],
        [{ ...base(), name: '' }, /name/],
        [{ ...base(), timestamp: '2026-01-01T00:00:00Z' }, /timestamp/],
        [{ ...base(), ip: '1.2.3.4' }, /ip/],
        [{ ...base(), screenWidth: -1 }, /screenWidth/],
        [{ ...base(), props: { a: { nested: true } } }, /props/],
        [{ ...base(), revenue: { amount: 'ten', currency: 'EUR' } }, /revenue/],
        [{ ...base(), revenue: { amount: '10', currency: 'euro' } }, /revenue/],
        [{ ...base(), name: 'click' }, /click/],
        [{ ...base(), name: 'vital', vital: { name: 'XYZ', value: 1 } }, /vital/],
        [{ ...base(), extra: 1 }, /extra/],
        [[base()], /body/],
        ['pageview', /body/],
        [null, /body/],
      ]
      for (const [body, pattern] of cases) {
        const res = await send(body as never)
        expect(res.status, JSON.stringify(body)).toBe(400)
        expect(res.json.error).toMatch(pattern)
      }
      const { createApp } = await import('../../functions/app')
      const app = createApp(t.services)
      const notJson = await app.request('http://api.test/api/event', { method: 'POST', body: '{"site":' })
      expect(notJson.status).toBe(400)
      const huge = await app.request('http://api.test/api/event', {
        method: 'POST',
        body: JSON.stringify({ ...base(), props: { big: 'x'.repeat(70_000) } }),
      })
      expect(huge.status).toBe(413)
    })

    it('fuzzed payloads are 4xx or 202, never 500', async () => {
      let seed = 7
      const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
      const values = [
        null,
        true,
        0,
        -1,
        1e308,
        '',
        'x'.repeat(300),
        [],
        {},
        [1, 'a'],
        { a: 1 },
        'https://x.com/',
        '2026-01-01T00:00:00Z',
        '💥\u0000',
      ]
      const keys = [
        'site',
        'name',
        'url',
        'referrer',
        'screenWidth',
        'props',
        'revenue',
        'click',
        'error',
        'vital',
        'engagement',
        'form',
        'zzz',
      ]
      for (let i = 0; i < 300; i++) {
        const body: Record<string, unknown> = { ...base() }
        for (let j = 0; j < 1 + Math.floor(random() * 3); j++)
          body[keys[Math.floor(random() * keys.length)]] = values[Math.floor(random() * values.length)]
        const res = await send(body)
        expect([202, 400, 413]).toContain(res.status)
        expect(res.status === 202 ? res.json : typeof res.json.error).toBe(res.status === 202 ? null : 'string')
      }
    })
  })

  describe('POST /api/v1/collect', () => {
    const collect = (body: unknown, key = t.a.write.key, via: 'bearer' | 'query' = 'bearer') =>
      t.call('POST', '/api/v1/collect', { key, via, body })
    const googleIp = '66.249.66.1'
    beforeAll(() => {
      t.services.dns = {
        reverse: async (ip) =>
          ip === googleIp ? ['crawl-66-249-66-1.googlebot.com'] : ip === '6.6.6.6' ? ['fake.googlebot.com.evil.example'] : [],
        lookup: async (host) => (host === 'crawl-66-249-66-1.googlebot.com' ? [googleIp] : []),
      }
    })

    it('stores bots with their kind, drops humans and junk, and verifies crawlers by reverse and forward DNS', async () => {
      const res = await collect({
        site_id: t.a.site.snippetId,
        events: [
          { path: '/a', userAgent: GOOGLEBOT, ip: googleIp },
          { path: '/b', user_agent: GOOGLEBOT, clientIp: '6.6.6.6' },
          {
            path: '/c',
            ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)',
            referer: 'https://x.com',
            host: 'WWW.Example.com',
          },
          {
            path: '/d',
            userAgent: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot',
          },
          { path: '/e', userAgent: 'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)' },
          { path: '/f', userAgent: CHROME },
          { path: '/g' },
          { userAgent: GOOGLEBOT },
          'junk',
        ],
      })
      expect(res).toMatchObject({ status: 200, json: { ingested: 5, dropped: 4 } })
      const stored = await t.clickhouse.query<Record<string, string | number>>(
        "SELECT pathname, bot_name, bot_kind, verified, collection_source, hostname, referrer FROM bot_events WHERE site_id = {s:UUID} AND collection_source = 'server' ORDER BY pathname",
        { s: t.a.site.id },
      )
      expect(stored).toEqual([
        {
          pathname: '/a',
          bot_name: 'Googlebot',
          bot_kind: 'search-engine',
          verified: 1,
          collection_source: 'server',
          hostname: t.a.site.domain,
          referrer: '',
        },
        {
          pathname: '/b',
          bot_name: 'Googlebot',
          bot_kind: 'search-engine',
          verified: 0,
          collection_source: 'server',
          hostname: t.a.site.domain,
          referrer: '',
        },
        {
          pathname: '/c',
          bot_name: 'GPTBot',
          bot_kind: 'ai-training',
          verified: 0,
          collection_source: 'server',
          hostname: 'www.example.com',
          referrer: 'https://x.com',
        },
        {
          pathname: '/d',
          bot_name: 'ChatGPT-User',
          bot_kind: 'ai-assistant',
          verified: 0,
          collection_source: 'server',
          hostname: t.a.site.domain,
          referrer: '',
        },
        {
          pathname: '/e',
          bot_name: 'AhrefsBot',
          bot_kind: 'seo',
          verified: 0,
          collection_source: 'server',
          hostname: t.a.site.domain,
          referrer: '',
        },
      ])
      // bots are usage of their own kind, not billed as events
      const usage = await t.repositories.usage.get(t.a.org.id, now.toISOString().slice(0, 7))
      expect(usage.bot).toBe(5)
    })

    it('takes a single hit as the body, and a site-bound ingest key via ?key=', async () => {
      const res = await collect({ site_id: t.a.site.snippetId, path: '/single', ua: GOOGLEBOT }, t.ingest.key, 'query')
      expect(res).toMatchObject({ status: 200, json: { ingested: 1, dropped: 0 } })
      const noSite = await collect({ path: '/bound', ua: GOOGLEBOT }, t.ingest.key, 'query')
      expect(noSite.json).toEqual({ ingested: 1, dropped: 0 })
    })

    it('refuses 501 hits, a missing site, a foreign site and a read key', async () => {
      const many = Array.from({ length: 501 }, () => ({ path: '/x', userAgent: GOOGLEBOT }))
      const tooMany = await collect({ site_id: t.a.site.snippetId, events: many })
      expect(tooMany.status).toBe(400)
      expect(tooMany.json.error).toMatch(/events: at most 500/)
      expect((await collect({ site_id: t.a.site.snippetId, events: many.slice(0, 500) })).json).toEqual({ ingested: 500, dropped: 0 })
      expect((await collect({ events: [] })).status).toBe(400)
      expect((await collect({ site_id: t.b.site.snippetId, events: [] })).status).toBe(404)
      expect((await collect({ site_id: t.a.site.snippetId, events: [] }, t.a.read.key)).status).toBe(403)
    })
  })

  describe('ingest keys', () => {
    it('mints, shows once, rotates, and the old key stops working', async () => {
      expect((await t.call('GET', `/api/v1/sites/${t.b.site.id}/ingest-key`, { key: t.b.read.key })).json).toEqual({ exists: false })
      const first = await t.call('POST', `/api/v1/sites/${t.b.site.id}/ingest-key`, { key: t.b.write.key })
      expect(first.status).toBe(201)
      expect(first.json).toMatchObject({ scope: 'write', siteId: t.b.site.id, rotated: false })
      const shown = await t.call('GET', `/api/v1/sites/${t.b.site.id}/ingest-key`, { key: t.b.read.key })
      expect(shown.json).toEqual({ exists: true, id: first.json.id, prefix: first.json.prefix, createdAt: now.toISOString() })
      expect((await t.call('GET', '/api/v1/proxy-config', { key: first.json.key, via: 'query' })).json.siteId).toBe(t.b.site.id)
      // a site-bound key made in the account area is revoked by the rotation too
      const adminMade = await createApiKey(t.repositories, { orgId: t.b.org.id, name: 'drain', scope: 'write', siteId: t.b.site.id }, now)
      expect((await t.call('GET', '/api/v1/me', { key: adminMade.key })).status).toBe(200)
      const second = await t.call('POST', `/api/v1/sites/${t.b.site.id}/ingest-key`, { key: t.b.write.key })
      expect(second.json.rotated).toBe(true)
      expect((await t.call('GET', '/api/v1/me', { key: first.json.key })).status).toBe(401)
      expect((await t.call('GET', '/api/v1/me', { key: adminMade.key })).status).toBe(401)
      expect((await t.call('GET', '/api/v1/me', { key: second.json.key })).status).toBe(200)
      // a site-bound key cannot mint keys
      expect((await t.call('POST', `/api/v1/sites/${t.b.site.id}/ingest-key`, { key: second.json.key })).status).toBe(403)
    })
  })

  describe('the import', () => {
    it('stores the good lines and reports the bad ones', async () => {
      const good = {
        timestamp: '2026-11-19T08:00:00Z',
        site: t.b.site.snippetId,
        name: 'pageview',
        url: `https://${t.b.site.domain}/imported`,
        ip: '8.8.8.8',
        userAgent: CHROME,
      }
      const result = await importHits(
        [
          JSON.stringify(good),
          '{not json',
          JSON.stringify({ ...good, url: 'nope' }),
          JSON.stringify({ ...good, ip: undefined }),
          '',
          JSON.stringify({ ...good, site: 'unknownsite' }),
          JSON.stringify({ ...good, timestamp: '2027-01-01T00:00:00Z' }),
          JSON.stringify({ ...good, name: 'Signup', timestamp: '2026-11-19T08:01:00Z' }),
        ],
        t.services.ingestor,
      )
      expect(result.imported).toBe(2)
      expect(result.rejected).toBe(5)
      expect(result.errors).toEqual([
        { line: 2, error: 'not valid JSON' },
        { line: 3, error: expect.stringMatching(/^url/) },
        { line: 4, error: 'ip: required in an import' },
        { line: 6, error: 'site: unknown site "unknownsite"' },
        { line: 7, error: 'timestamp: in the future' },
      ])
      const stored = await rows(t.b.site.id, "pathname = '/imported'")
      expect(stored.map((r) => r.name)).toEqual(['pageview', 'Signup'])
      expect(stored[0].session_id).toBe(stored[1].session_id)
    })
  })
})
