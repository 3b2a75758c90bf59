import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { runBacklinks } from '../../lib/backlinks/discover'
import { dataForSeo } from '../../lib/backlinks/provider'
import { type CrawlerConfig, DEFAULT_USER_AGENT } from '../../lib/crawl/config'
import { importHits } from '../../lib/ingest/import'
import { deliverDailyAlerts } from '../../lib/jobs/backlink-alerts'
import type { MailMessage } from '../../lib/network/mail'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { REDIS_URL, client, testServices } from '../helpers'

/**
 * Backlinks end to end: referring websites served by this test on 127.0.0.1 (each fixture host is
 * reached through a rewrite of the crawler's fetch), hits whose referrers are their pages, and a
 * fake DataForSEO server. Discovery runs on three days while the fixture pages change; the
 * expected link set, counts, events and distributions are computed below from the fixture alone.
 */

const DAY = 86_400_000
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
type Link = { to: string; anchor: string; rel: 'dofollow' | 'nofollow' | 'ugc' | 'sponsored'; image?: boolean }
type FixturePage = {
  /** The links to the site on the page at each stage (1, 2, 3); null: the page answers 404. */
  links: (stage: number) => Link[] | null
  /** Visits with this page as referrer, and from which stage they come. */
  visits: number
  from?: number
  title?: string
  /** Shown to no crawler: robots.txt of its host disallows it. */
  blocked?: boolean
}

const html = (title: string, links: Link[] | null, extra = '') =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><p>Some words about tools.</p>${(links ?? [])
    .map((l) => {
      const rel = l.rel === 'dofollow' ? '' : ` rel="${l.rel === 'ugc' ? 'ugc nofollow' : l.rel}"`
      return l.image ? `<a href="${l.to}"${rel}><img src="/logo.png" alt="${l.anchor}"></a>` : `<a href="${l.to}"${rel}>${l.anchor}</a>`
    })
    .join(' ')}${extra}<a href="https://elsewhere.example/x">Elsewhere</a></body></html>`

describe('backlinks: discovery, provider, snapshots, events, the read, alerts', () => {
  let server: Server
  let fixtureOrigin = ''
  let provider: Server
  let providerOrigin = ''
  const requests: { url: string; agent: string }[] = []
  const providerRequests: { path: string; auth: string; body: any }[] = []
  let stage = 1
  const t0 = Date.parse('2026-11-02T09:00:00Z')
  let now = t0
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let write = ''
  let read = ''
  let siteId = ''
  let snippet = ''
  const domain = `bl-${crypto.randomUUID().slice(0, 8)}.test`
  const mail: MailMessage[] = []
  const S = (path: string) => `https://${domain}${path}`

  const pages: Record<string, FixturePage> = {
    'https://blog.example.org/post': { links: () => [{ to: S('/pricing'), anchor: 'Great pricing tool', rel: 'dofollow' }], visits: 5 },
    'https://news.example.com/story': { links: () => [{ to: S('/'), anchor: 'Acme', rel: 'nofollow' }], visits: 2 },
    'https://gallery.example.net/images': {
      links: () => [{ to: `https://www.${domain}/`, anchor: 'Acme logo', rel: 'dofollow', image: true }],
      visits: 1,
    },
    'https://forum.example.org/thread': { links: () => [{ to: S('/docs'), anchor: 'docs here', rel: 'ugc' }], visits: 1 },
    'https://changing.example.com/list': {
      links: (s) => (s === 1 ? [{ to: S('/pricing'), anchor: 'Acme pricing', rel: 'dofollow' }] : []),
      visits: 3,
    },
    'https://returns.example.com/roundup': {
      links: (s) => (s === 2 ? [] : [{ to: S('/'), anchor: 'Acme', rel: 'dofollow' }]),
      visits: 2,
    },
    'https://never.example.com/mention': { links: () => [], visits: 2 },
    'https://fresh.example.co.uk/links': { links: () => [{ to: S('/docs'), anchor: 'Acme docs', rel: 'dofollow' }], visits: 1, from: 2 },
    'https://blocked.example.org/private/page': {
      links: () => [{ to: S('/'), anchor: 'Hidden', rel: 'dofollow' }],
      visits: 1,
      blocked: true,
    },
    // a referring origin: no link on its homepage, one on a page its sitemap lists
    'https://origin.example.io/': { links: () => [], visits: 4 },
    'https://origin.example.io/articles/review': { links: () => [{ to: S('/'), anchor: 'Review of Acme', rel: 'dofollow' }], visits: 0 },
    'https://origin.example.io/articles/other': { links: () => [], visits: 0 },
  }
  /** The provider's list: one link we also find, one nobody sent a visit through. */
  const providerLinks = [
    { from: 'https://blog.example.org/post', to: S('/pricing'), anchor: 'Great pricing tool', rel: 'dofollow' as const, rank: 300 },
    { from: 'https://partner.example.de/resources', to: S('/'), anchor: 'Acme analytics', rel: 'dofollow' as const, rank: 150 },
  ]
  const authorityAt = (s: number) => 415 + 5 * s

  /** The reference: the link set at a stage, from the fixture alone. */
  function expectedLinks(s: number) {
    const set = new Map<string, { from: string; to: string; anchor: string; rel: string; image: boolean; foundBy: string }>()
    for (const [url, page] of Object.entries(pages)) {
      // discovered: a page that sent visits by then, or one the referring origin's sitemap lists; never a blocked one
      const seen = (page.visits > 0 && (page.from ?? 1) <= s) || url.startsWith('https://origin.example.io/articles/review')
      if (!seen || page.blocked) continue
      for (const l of page.links(s) ?? [])
        set.set(`${url} ${l.to}`, { from: url, to: l.to, anchor: l.anchor, rel: l.rel, image: !!l.image, foundBy: 'discovered' })
    }
    for (const p of providerLinks) {
      const key = `${p.from} ${p.to}`
      set.set(key, set.has(key) ? { ...set.get(key)!, foundBy: 'both' } : { ...p, image: false, foundBy: 'provider' })
    }
    return set
  }
  const domainOf = (url: string) => new URL(url).hostname.replace(/^www\./, '')

  beforeAll(async () => {
    server = createServer((req, res) => {
      // /<host>/<path>: the fixture host the crawler asked for
      const [, host, ...rest] = (req.url ?? '/').split('/')
      const path = `/${rest.join('/')}`
      const url = `https://${host}${path}`
      requests.push({ url, agent: String(req.headers['user-agent']) })
      if (path === '/robots.txt') {
        const body =
          host === 'blocked.example.org'
            ? 'User-agent: *\nDisallow: /private\n'
            : host === 'origin.example.io'
              ? 'User-agent: *\nAllow: /\n\nSitemap: https://origin.example.io/sitemap.xml\n'
              : ''
        return void res.writeHead(body ? 200 : 404, { 'content-type': 'text/plain' }).end(body)
      }
      if (url === 'https://origin.example.io/sitemap.xml')
        return void res
          .writeHead(200, { 'content-type': 'application/xml' })
          .end(
            `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://origin.example.io/articles/review</loc></url><url><loc>https://origin.example.io/articles/other</loc></url></urlset>`,
          )
      const page = pages[url]
      const links = page?.links(stage)
      if (!page || links === null) return void res.writeHead(404, { 'content-type': 'text/html' }).end('<html>Not found</html>')
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html(page.title ?? `Page ${path}`, links ?? []))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    fixtureOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

    // DataForSEO's protocol: POST a list of one task, answer the envelope with status codes 20000
    provider = createServer(async (req, res) => {
      let text = ''
      for await (const chunk of req) text += chunk
      const body = JSON.parse(text)
      providerRequests.push({ path: req.url ?? '', auth: String(req.headers.authorization), body })
      if (req.headers.authorization !== `Basic ${Buffer.from('login:secret').toString('base64')}`)
        return void res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status_code: 40100, status_message: 'You are not authorized' }))
      const task = body[0]
      const envelope = (result: object) =>
        JSON.stringify({
          version: '0.1.20250101',
          status_code: 20000,
          status_message: 'Ok.',
          tasks: [{ id: 'x', status_code: 20000, status_message: 'Ok.', result: [result] }],
        })
      if (req.url === '/v3/backlinks/summary/live')
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(envelope({ target: task.target, rank: authorityAt(stage) }))
      if (req.url === '/v3/backlinks/backlinks/live') {
        const items = providerLinks.slice(task.offset, task.offset + task.limit).map((l) => ({
          type: 'backlink',
          domain_from: domainOf(l.from),
          url_from: l.from,
          url_to: l.to,
          anchor: l.anchor,
          dofollow: l.rel === 'dofollow',
          attributes: l.rel === 'dofollow' ? null : [l.rel],
          item_type: 'anchor',
          page_from_title: `Title of ${l.from}`,
          first_seen: '2026-10-01 10:00:00 +00:00',
          domain_from_rank: l.rank,
        }))
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(envelope({ target: task.target, total_count: providerLinks.length, items_count: items.length, items }))
      }
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve))
    providerOrigin = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`

    services = await testServices({ kv: REDIS_URL ? 'redis' : 'embedded', ownKeys: true, now: () => new Date(now) })
    const guarded = guardedFetch({ allowPrivate: true, maxBytes: 256 * 1024, timeoutMs: 5000 })
    const crawler: CrawlerConfig = {
      // every fixture host is this test's server: /<host>/<path>
      fetch: (input, init) => {
        const u = new URL(String(input))
        return guarded(`${fixtureOrigin}/${u.host}${u.pathname}${u.search}`, init)
      },
      userAgent: DEFAULT_USER_AGENT,
      hostIntervalMs: 0,
      maxQueuedPings: 3,
      siteRunMs: 60_000,
    }
    services.crawler = crawler
    services.backlinkProvider = dataForSeo({ credentials: 'login:secret', baseUrl: providerOrigin, fetch: guarded })
    services.mailer = { send: async (m) => void mail.push(m) }
    call = client(services)
    const org = await createOrg(services.repositories, 'Linked', new Date(now))
    write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, new Date(now))).key
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, new Date(now))).key
    const created = await call('POST', '/api/v1/sites', { key: write, body: { domain, timezone: 'UTC' } })
    expect(created.status).toBe(201)
    siteId = created.json.id
    snippet = created.json.snippetId
    const alerts = await call('PATCH', `/api/v1/sites/${siteId}/alerts`, {
      key: write,
      body: { backlinkAlerts: true, recipients: ['owner@example.com'] },
    })
    expect(alerts.status, JSON.stringify(alerts.json)).toBe(200)
  })

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
    await new Promise((resolve) => provider.close(resolve))
  })

  let ip = 1
  /** The hits of a stage: each page's visits (distinct visitors) the day before `now`, and three from a search engine. */
  async function hitsOf(s: number) {
    const lines: string[] = []
    const hit = (referrer: string, path: string) =>
      JSON.stringify({
        timestamp: new Date(now - DAY + lines.length * 60_000).toISOString(),
        site: snippet,
        name: 'pageview',
        url: S(path),
        referrer,
        ip: `198.51.100.${ip++}`,
        userAgent: CHROME,
      })
    for (const [url, page] of Object.entries(pages)) {
      if ((page.from ?? 1) !== s) continue
      for (let i = 0; i < page.visits; i++) lines.push(hit(url, '/'))
    }
    if (s === 1) for (let i = 0; i < 3; i++) lines.push(hit('https://www.google.com/', '/'))
    await importHits(lines, services.ingestor)
  }

  async function discover() {
    const failures: string[] = []
    const runs = await runBacklinks(services, { log: (line) => failures.push(line) })
    expect(failures).toEqual([])
    return runs
  }
  const get = async (query = '') => {
    const res = await call('GET', `/api/v1/backlinks?site_id=${siteId}${query}`, { key: read })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }

  /** Counts, distributions and the link list the read must give at a stage: the reference over the fixture. */
  function expectedRead(s: number) {
    const links = [...expectedLinks(s).values()]
    const domains = new Set(links.map((l) => domainOf(l.from)))
    const by = (rel: string) => links.filter((l) => l.rel === rel).length
    const tlds = new Map<string, { links: number; domains: Set<string> }>()
    for (const l of links) {
      const d = domainOf(l.from)
      const tld = d.slice(d.lastIndexOf('.') + 1)
      const entry = tlds.get(tld) ?? { links: 0, domains: new Set() }
      entry.links++
      entry.domains.add(d)
      tlds.set(tld, entry)
    }
    const anchors = new Map<string, number>()
    for (const l of links) anchors.set(l.anchor, (anchors.get(l.anchor) ?? 0) + 1)
    return {
      counts: {
        links: links.length,
        referringDomains: domains.size,
        dofollow: by('dofollow'),
        nofollow: by('nofollow'),
        ugc: by('ugc'),
        sponsored: by('sponsored'),
      },
      types: ['dofollow', 'nofollow', 'ugc', 'sponsored'].map((type) => ({ type, links: by(type) })),
      tlds: [...tlds]
        .map(([tld, e]) => ({ tld, links: e.links, domains: e.domains.size }))
        .sort((a, b) => b.links - a.links || a.tld.localeCompare(b.tld)),
      // ClickHouse orders text by its bytes
      anchors: [...anchors]
        .map(([anchor, n]) => ({ anchor, links: n }))
        .sort((a, b) => b.links - a.links || (a.anchor < b.anchor ? -1 : a.anchor > b.anchor ? 1 : 0)),
      links,
    }
  }

  it('queues discovery when the site is added, confirms and refutes links, and reads them back', async () => {
    expect(await services.repositories.backlinks.dueAt(siteId)).toBe(now)
    await hitsOf(1)
    const [run] = await discover()
    expect(run.siteId).toBe(siteId)
    expect(run.provider).toBe('asked')

    const fetched = new Set(requests.map((r) => r.url))
    // robots.txt read for every host, pages allowed fetched, the blocked one and the search engine never
    expect(fetched.has('https://blocked.example.org/robots.txt')).toBe(true)
    expect(fetched.has('https://blocked.example.org/private/page')).toBe(false)
    expect([...fetched].some((u) => u.includes('google'))).toBe(false)
    expect(fetched.has('https://never.example.com/mention')).toBe(true)
    expect(fetched.has('https://origin.example.io/articles/review')).toBe(true)
    expect(new Set(requests.map((r) => r.agent))).toEqual(new Set([DEFAULT_USER_AGENT]))
    // the provider was asked with the documented request and Basic credentials
    expect(providerRequests.map((r) => r.path).sort()).toEqual(['/v3/backlinks/backlinks/live', '/v3/backlinks/summary/live'])
    expect(providerRequests.find((r) => r.path.includes('backlinks/live'))!.body[0]).toMatchObject({
      target: domain,
      mode: 'as_is',
      offset: 0,
    })

    const body = await get('&limit=50')
    const want = expectedRead(1)
    expect(body.snapshotDay).toBe('2026-11-02')
    expect(body.counts).toEqual({ ...want.counts, trafficOnlyDomains: 0 })
    expect(body.distributions.types).toEqual(want.types)
    expect(body.distributions.tlds).toEqual(want.tlds)
    expect(body.distributions.anchors).toEqual(want.anchors)
    // every expected link listed with its attributes and who found it
    const listed = new Map(body.topLinks.map((l: any) => [`${l.from} ${l.to}`, l]))
    expect(listed.size).toBe(want.links.length)
    for (const l of want.links)
      expect(listed.get(`${l.from} ${l.to}`)).toMatchObject({ anchor: l.anchor, rel: l.rel, image: l.image, foundBy: l.foundBy })
    // visits sent: the blog page sent 5, the most, so it is first
    expect(body.topLinks[0]).toMatchObject({ from: 'https://blog.example.org/post', visits: 5, title: 'Page /post' })
    const blog = body.topDomains.find((d: any) => d.domain === 'blog.example.org')
    expect(blog).toMatchObject({ links: 1, visits: 5, authority: 300, foundBy: 'both' })
    // the referring origin: its homepage does not link, its sitemap's review page does; no link refuted as a domain with traffic only
    expect(body.topDomains.find((d: any) => d.domain === 'origin.example.io')).toMatchObject({ links: 1, visits: 4 })
    // the page that never linked is no link, and its domain is no referring domain
    expect(body.topDomains.some((d: any) => d.domain === 'never.example.com')).toBe(false)
    expect(body.authority).toEqual({
      available: true,
      provider: 'dataforseo',
      current: authorityAt(1),
      trend: [{ day: '2026-11-02', value: authorityAt(1) }],
    })
    // the first snapshot has nothing to compare with: no events
    expect(body.events).toEqual({ new: [], lost: [], regained: [] })

    // filters
    const nofollow = await get('&type=nofollow&limit=50')
    expect(nofollow.filtered.links).toBe(want.counts.nofollow)
    expect(nofollow.topLinks.map((l: any) => l.from)).toEqual(want.links.filter((l) => l.rel === 'nofollow').map((l) => l.from))
    const org = await get('&tld=org&limit=50')
    expect(org.filtered.links).toBe(want.links.filter((l) => domainOf(l.from).endsWith('.org')).length)
    const search = await get('&search=PRICING&limit=50')
    expect(search.topLinks.map((l: any) => l.anchor).sort()).toEqual(
      want.links
        .filter((l) => /pricing/i.test(l.anchor))
        .map((l) => l.anchor)
        .sort(),
    )
    const paged = await get('&limit=2&offset=2')
    expect(paged.topLinks).toEqual(body.topLinks.slice(2, 4))
    expect(paged.paging).toEqual({ limit: 2, offset: 2 })
    const bad = await call('GET', `/api/v1/backlinks?site_id=${siteId}&type=followed`, { key: read })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/type/)
  })

  it('finds links lost and regained by comparing daily snapshots, and alerts once a day', async () => {
    // day 2: two pages removed their link, a new referring domain sends visits
    now = t0 + DAY
    stage = 2
    await hitsOf(2)
    await discover()
    // day 3: one of them links again
    now = t0 + 2 * DAY
    stage = 3
    await discover()

    const body = await get('&limit=50')
    const want = expectedRead(3)
    expect(body.counts.links).toBe(want.counts.links)
    expect(body.counts).toMatchObject(want.counts)
    // events from the reference: lost = in the day before's set and not in the day's; regained = seen before, back
    const sets = [expectedLinks(1), expectedLinks(2), expectedLinks(3)]
    const lost = [...sets[0].keys()].filter((k) => !sets[1].has(k)).concat([...sets[1].keys()].filter((k) => !sets[2].has(k)))
    const regained = [...sets[2].keys()].filter((k) => !sets[1].has(k) && sets[0].has(k))
    const added = [...sets[1].keys()]
      .filter((k) => !sets[0].has(k))
      .concat([...sets[2].keys()].filter((k) => !sets[1].has(k) && !sets[0].has(k)))
    const keys = (list: any[]) => list.map((e: any) => `${e.from} ${e.to}`).sort()
    expect(keys(body.events.lost)).toEqual(lost.sort())
    expect(keys(body.events.regained)).toEqual(regained.sort())
    expect(keys(body.events.new)).toEqual(added.sort())
    expect(body.events.lost.every((e: any) => e.reason === 'link_removed')).toBe(true)
    expect(body.movement).toMatchObject({ new: added.length, lost: lost.length, regained: regained.length })
    expect(body.authority.trend.map((t: any) => t.value)).toEqual([authorityAt(1), authorityAt(2), authorityAt(3)])
    // a regained link keeps the day it was first seen
    expect(body.topLinks.find((l: any) => l.from === 'https://returns.example.com/roundup').firstSeen).toBe('2026-11-02')

    // markers: the days with movement
    const markers = await call('GET', `/api/v1/markers?site_id=${siteId}&range=7d`, { key: read })
    expect(markers.status, JSON.stringify(markers.json)).toBe(200)
    expect(markers.json.markers.backlinks).toEqual([
      { day: '2026-11-03', newLinks: 1, lostLinks: 2, newDomains: 1, lostDomains: 2 },
      { day: '2026-11-04', newLinks: 1, lostLinks: 0, newDomains: 1, lostDomains: 0 },
    ])

    // the alert about day 2 goes once, however often the job runs
    expect((await deliverDailyAlerts(services, new Date(now))).sent).toBe(1)
    expect((await deliverDailyAlerts(services, new Date(now))).sent).toBe(0)
    expect(mail).toHaveLength(1)
    expect(mail[0].to).toEqual(['owner@example.com'])
    expect(mail[0].subject).toBe(`${domain} on 2026-11-03: 1 new referring domain, 2 lost links`)
    expect(mail[0].text).toContain('fresh.example.co.uk: https://fresh.example.co.uk/links')
    expect(mail[0].text).toContain('https://changing.example.com/list')
  })
})

describe('backlinks explain a traffic drop: the planted backlink_lost', () => {
  let server: Server
  let fixtureOrigin = ''
  let now = 0
  let linked = true
  const d0 = Date.parse('2026-10-01T00:00:00Z')
  const at = (day: number, hours = 12) => d0 + day * DAY + hours * 3_600_000
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let read = ''
  let siteId = ''
  const domain = `guide-${crypto.randomUUID().slice(0, 8)}.test`
  const STRONG = 'https://strong.example.com/best-guides'

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = (req.url ?? '/').split('/').slice(2).join('/')
      if (path === 'best-guides')
        return void res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(
            `<html><head><title>Best guides</title></head><body>${linked ? `<a href="https://${domain}/guide">The guide</a>` : 'Gone'}</body></html>`,
          )
      if (path === 'comments')
        return void res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(`<html><body><a rel="nofollow" href="https://${domain}/guide">a guide</a></body></html>`)
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    fixtureOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    now = at(0, 0)
    services = await testServices({ kv: REDIS_URL ? 'redis' : 'embedded', ownKeys: true, now: () => new Date(now) })
    const guarded = guardedFetch({ allowPrivate: true, maxBytes: 256 * 1024, timeoutMs: 5000 })
    services.crawler = {
      fetch: (input, init) => {
        const u = new URL(String(input))
        return guarded(`${fixtureOrigin}/${u.host}${u.pathname}`, init)
      },
      userAgent: DEFAULT_USER_AGENT,
      hostIntervalMs: 0,
      maxQueuedPings: 3,
      siteRunMs: 60_000,
    }
    call = client(services)
    const org = await createOrg(services.repositories, 'Guides', new Date(now))
    const write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, new Date(now))).key
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, new Date(now))).key
    const created = await call('POST', '/api/v1/sites', { key: write, body: { domain, timezone: 'UTC' } })
    siteId = created.json.id
    // days 0-9: 20 visits a day through the strong link and 3 direct; from day 10 the 3 direct only; one visit through a nofollow comment
    const lines: string[] = []
    let ip = 1
    const hit = (day: number, referrer?: string) =>
      lines.push(
        JSON.stringify({
          timestamp: new Date(at(day, 8) + lines.length * 1000).toISOString(),
          site: created.json.snippetId,
          name: 'pageview',
          url: `https://${domain}/guide`,
          ...(referrer ? { referrer } : {}),
          ip: `10.${Math.floor(ip / 250)}.${ip++ % 250}.1`,
          userAgent: CHROME,
        }),
      )
    for (let day = 0; day <= 16; day++) {
      if (day <= 9) for (let i = 0; i < 20; i++) hit(day, STRONG)
      for (let i = 0; i < 3; i++) hit(day)
    }
    hit(2, 'https://weak.example.net/comments')
    // imported as history, from the day after
    now = at(17, 0)
    await importHits(lines, services.ingestor)
  })

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
  })

  it('ranks backlink_lost first, with the link, in page detail and anomalies', async () => {
    // discovery runs every day at noon; the strong page drops its link on day 9
    for (let day = 0; day <= 16; day++) {
      now = at(day)
      linked = day < 9
      const failures: string[] = []
      await runBacklinks(services, { log: (l) => failures.push(l) })
      expect(failures).toEqual([])
    }
    const detail = await call('GET', `/api/v1/pages/detail?site_id=${siteId}&path=/guide&range=30d`, { key: read })
    expect(detail.status, JSON.stringify(detail.json)).toBe(200)
    expect(detail.json.shift).toMatchObject({ day: '2026-10-11', direction: 'down' })
    const first = detail.json.causes[0]
    expect(first.kind).toBe('backlink_lost')
    expect(first.evidence).toMatchObject({
      from: STRONG,
      to: `https://${domain}/guide`,
      anchor: 'The guide',
      rel: 'dofollow',
      reason: 'link_removed',
      day: '2026-10-10',
    })

    const anomalies = await call('GET', `/api/v1/anomalies?site_id=${siteId}&range=7d`, { key: read })
    expect(anomalies.status, JSON.stringify(anomalies.json)).toBe(200)
    const guide = anomalies.json.pages.find((p: any) => p.path === '/guide')
    expect(guide.status).toBe('fell')
    expect(guide.candidates[0]).toMatchObject({ kind: 'backlink_lost', from: STRONG, anchor: 'The guide' })
  })
})

describe('backlinks without a provider, a failing provider, the daily budget, and vitals alerts', () => {
  let server: Server
  let origin = ''
  const fetched: string[] = []
  let now = Date.parse('2026-11-10T09:00:00Z')
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let read = ''
  let write = ''
  const mail: MailMessage[] = []

  beforeAll(async () => {
    server = createServer((req, res) => {
      const [, host, ...rest] = (req.url ?? '/').split('/')
      fetched.push(`https://${host}/${rest.join('/')}`)
      if (req.url?.startsWith('/v3/')) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"status_code":40100}')
      if (rest.join('/') === 'robots.txt') return void res.writeHead(404).end()
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body><a href="https://budget.test/">budget</a></body></html>')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    services = await testServices({ kv: REDIS_URL ? 'redis' : 'embedded', ownKeys: true, now: () => new Date(now) })
    const guarded = guardedFetch({ allowPrivate: true, maxBytes: 256 * 1024, timeoutMs: 5000 })
    services.crawler = {
      fetch: (input, init) => {
        const u = new URL(String(input))
        return guarded(`${origin}/${u.host}${u.pathname}`, init)
      },
      userAgent: DEFAULT_USER_AGENT,
      hostIntervalMs: 0,
      maxQueuedPings: 3,
      siteRunMs: 60_000,
    }
    services.mailer = { send: async (m) => void mail.push(m) }
    call = client(services)
    const org = await createOrg(services.repositories, 'Budget', new Date(now))
    write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, new Date(now))).key
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, new Date(now))).key
  })

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
  })

  it('says why authority is not available, checks no more pages than the budget left, and survives a failing provider', async () => {
    const created = await call('POST', '/api/v1/sites', { key: write, body: { domain: 'budget.test', timezone: 'UTC' } })
    const siteId = created.json.id
    // five referring pages; the day's budget (unlimited plan: 2,000) has 2 checks left
    await importHits(
      Array.from({ length: 5 }, (_, i) =>
        JSON.stringify({
          timestamp: new Date(now - 3_600_000).toISOString(),
          site: created.json.snippetId,
          name: 'pageview',
          url: 'https://budget.test/',
          referrer: `https://ref${i}.example.com/page`,
          ip: `198.51.100.${i + 1}`,
          userAgent: CHROME,
        }),
      ),
      services.ingestor,
    )
    await services.repositories.backlinks.spendBudget(siteId, '2026-11-10', 1_998)
    const [run] = await runBacklinks(services)
    expect(run).toMatchObject({ checked: 2, left: 3, provider: 'none', links: 2 })
    expect(fetched.filter((u) => u.endsWith('/page'))).toHaveLength(2)
    // the day's budget is spent: the rest waits for the next day's; the site's next run is the hourly one
    expect(await services.repositories.backlinks.dueAt(siteId)).toBe(now + 60 * 60_000)
    const body = (await call('GET', `/api/v1/backlinks?site_id=${siteId}`, { key: read })).json
    expect(body.authority).toEqual({ available: false, reason: expect.stringMatching(/no backlink provider is configured/) })
    expect(body.sources).toEqual({ discovered: true, provider: null })

    // a provider that refuses the credentials: logged, the site's run still takes its snapshot
    services.backlinkProvider = dataForSeo({ credentials: 'login:wrong', baseUrl: origin, fetch: guardedFetch({ allowPrivate: true }) })
    now += 3_600_000
    const log: string[] = []
    const [again] = await runBacklinks(services, { log: (l) => log.push(l) })
    expect(again).toMatchObject({ provider: 'failed', links: 2 })
    expect(log).toEqual([
      expect.stringMatching(/backlink provider for site .* failed: DataForSEO \/v3\/backlinks\/summary\/live answered 401/),
    ])
    expect(log[0]).not.toContain('wrong')
    services.backlinkProvider = undefined
  })

  it('sends a vitals regression once, the day after it appears', async () => {
    const created = await call('POST', '/api/v1/sites', { key: write, body: { domain: 'vitals.test', timezone: 'UTC' } })
    const siteId = created.json.id
    await call('PATCH', `/api/v1/sites/${siteId}/alerts`, { key: write, body: { vitalsAlerts: true, recipients: ['ops@example.com'] } })
    const day = Date.parse('2026-11-10T00:00:00Z')
    const sample = (at: number, value: number, i: number) =>
      JSON.stringify({
        timestamp: new Date(at + i * 60_000).toISOString(),
        site: created.json.snippetId,
        name: 'vital',
        url: 'https://vitals.test/slow',
        ip: `192.0.2.${(i % 200) + 1}`,
        userAgent: CHROME,
        vital: { name: 'LCP', value },
      })
    // 25 good samples ten days before, 25 poor ones on the last day: the regression appears on 2026-11-09
    await importHits(
      [
        ...Array.from({ length: 25 }, (_, i) => sample(day - 10 * DAY + 3_600_000, 1500, i)),
        ...Array.from({ length: 25 }, (_, i) => sample(day - DAY + 3_600_000, 4500, i)),
      ],
      services.ingestor,
    )
    mail.length = 0
    expect((await deliverDailyAlerts(services, new Date(now))).sent).toBe(1)
    expect((await deliverDailyAlerts(services, new Date(now))).sent).toBe(0)
    expect(mail).toHaveLength(1)
    expect(mail[0].subject).toBe('vitals.test on 2026-11-09: 1 vitals regression')
    expect(mail[0].text).toContain('/slow LCP: 1500 to 4500 (poor)')
    // the next day the same regression is no news
    now += DAY
    expect((await deliverDailyAlerts(services, new Date(now))).sent).toBe(0)
    expect(mail).toHaveLength(1)
  })
})
