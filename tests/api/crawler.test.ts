import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { type CrawlerConfig, DEFAULT_USER_AGENT } from '../../lib/crawl/config'
import { pageSnapshots, siteChanges } from '../../lib/crawl/changes'
import { runCrawls } from '../../lib/crawl/crawl'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { checkedApp, client, REDIS_URL, testServices } from '../helpers'

/**
 * The crawler end to end against a website served by this test on 127.0.0.1: a site added
 * through the API is queued, crawled, edited, crawled again; the inventory, every change with its
 * type, the word diff and the 422 are read back through the API. Expected values are written by
 * hand from the fixture pages below.
 */

type Page = { status?: number; type?: string; body: string | Uint8Array; location?: string }
const MAX_BYTES = 64 * 1024
const HOST_INTERVAL_MS = 100
const DAY = 86_400_000
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

const html = (title: string, main: string, head = '', extra = '') =>
  `<!doctype html><html><head><title>${title}</title>${head}</head><body><nav><a href="/">Home</a></nav><h1>${title.split(' | ')[0]}</h1><article><p>${main}</p></article>${extra}</body></html>`

function fixtureSite(origin: string, suffix = 'Acme'): Record<string, Page> {
  const t = (name: string) => `${name} | ${suffix}`
  return {
    '/robots.txt': { type: 'text/plain', body: `User-agent: *\nDisallow: /private\n\nSitemap: ${origin}/sitemap_index.xml\n` },
    '/sitemap_index.xml': {
      type: 'application/xml',
      body: `<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>${origin}/sitemap-pages.xml</loc></sitemap><sitemap><loc>${origin}/sitemap-blog.xml</loc></sitemap></sitemapindex>`,
    },
    '/sitemap-pages.xml': { type: 'application/xml', body: urlset(origin, ['/', '/about', '/pricing', '/old-page', '/private/secret']) },
    '/sitemap-blog.xml': { type: 'application/xml', body: urlset(origin, ['/blog/a', '/blog/b']) },
    '/': {
      body: html(
        t('Home'),
        'Welcome to the fixture site of the crawler test, where pages change between crawls.',
        '',
        '<a href="/about">About</a> <a href="/linked-only">Linked</a> <a href="/private/hidden">Hidden</a> <a href="/files/report.pdf">Report</a> <a href="/huge">Huge</a> <a href="/moved">Moved</a> <a href="/admin/panel">Admin</a> <a href="https://elsewhere.example/x">Elsewhere</a>',
      ),
    },
    '/about': {
      body: html(
        t('About'),
        'We build fixtures for crawler tests and nothing else at all.',
        '<meta name="description" content="About the fixture">',
      ),
    },
    '/pricing': { body: html(t('Pricing'), 'Plans start at ten euros a month for small fixture sites.') },
    '/old-page': { body: html(t('Old page'), 'This page will be removed before the second crawl happens.') },
    '/blog/a': { body: html(t('Post A'), 'Post A talks about crawling politely through a guarded fetch.') },
    '/blog/b': { body: html(t('Post B'), 'The quick brown fox jumps over the lazy dog') },
    '/linked-only': {
      body: html(
        t('Linked only'),
        'Only a link from the homepage leads here, no sitemap does.',
        `<link rel="canonical" href="${origin}/linked-only">`,
      ),
    },
    '/from-pageviews': { body: html(t('From pageviews'), 'Only the pageviews of the site show this page exists.') },
    '/files/report.pdf': { type: 'application/pdf', body: new Uint8Array([0x25, 0x50, 0x44, 0x46, 0x2d, 1, 2, 3, 4, 5]) },
    '/huge': { body: html(t('Huge'), 'x'.repeat(MAX_BYTES + 1000)) },
    '/moved': { status: 301, location: '/blog/a', body: '' },
    '/private/secret': { body: html('Secret', 'Never to be fetched.') },
    '/private/hidden': { body: html('Hidden', 'Never to be fetched.') },
    '/admin/panel': { body: html('Admin', 'Excluded by the site settings.') },
  }
}

function urlset(origin: string, paths: string[]) {
  return `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths.map((p) => `<url><loc>${origin}${p}</loc></url>`).join('')}</urlset>`
}

describe('the crawler against a fixture website', () => {
  let server: Server
  let origin = ''
  let site: Record<string, Page> = {}
  const requests: { path: string; agent: string }[] = []
  /** Runs before the fixture server answers a request: a test acts while a crawl run is under way. */
  let beforeAnswer: ((path: string) => Promise<void>) | undefined
  const sent: number[] = []
  let now = Date.parse('2026-11-02T09:00:00Z')
  let services: Awaited<ReturnType<typeof testServices>>
  let config: CrawlerConfig
  let call: ReturnType<typeof client>
  let write = ''
  let read = ''
  let siteId = ''
  let domain = ''
  const changesBy: Record<string, any[]> = {}

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname
      requests.push({ path, agent: String(req.headers['user-agent']) })
      await beforeAnswer?.(path)
      const page = site[path]
      if (!page)
        return void res
          .writeHead(404, { 'content-type': 'text/html' })
          .end('<html><head><title>Not found</title></head><body>Not found</body></html>')
      const headers: Record<string, string> = { 'content-type': page.type ?? 'text/html; charset=utf-8' }
      if (page.location) headers.location = page.location
      res.writeHead(page.status ?? 200, headers).end(page.body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    site = fixtureSite(origin)
    services = await testServices({ kv: REDIS_URL ? 'redis' : 'embedded', ownKeys: true, now: () => new Date(now) })
    config = {
      // loopback is allowed here by configuration, as a deployment's OUTBOUND_ALLOW_PRIVATE=1 would
      // each request's send time is noted: politeness is measured where it is kept
      fetch: ((guarded) => (input: RequestInfo | URL, init?: RequestInit) => (sent.push(performance.now()), guarded(input, init)))(
        guardedFetch({ allowPrivate: true, maxBytes: MAX_BYTES, timeoutMs: 5000 }),
      ),
      userAgent: DEFAULT_USER_AGENT,
      hostIntervalMs: HOST_INTERVAL_MS,
      maxQueuedPings: 3,
      siteRunMs: 60_000,
      siteOrigin: () => origin,
    }
    services.crawler = config
    // the hosted plans: this organization is on the free plan's crawl budget
    services.plan = undefined
    call = client(services)
    const org = await createOrg(services.repositories, 'Crawled', new Date(now))
    write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, new Date(now))).key
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, new Date(now))).key
    domain = `crawl-${crypto.randomUUID().slice(0, 8)}.test`
    const created = await call('POST', '/api/v1/sites', { key: write, body: { domain } })
    expect(created.status).toBe(201)
    siteId = created.json.id
    await call('PATCH', `/api/v1/sites/${siteId}`, { key: write, body: { changeExcludedPaths: ['/admin/*'] } })
    // pageviews: /blog/a twice by one visitor and once by another, with two engagement reports; /from-pageviews once
    const hit = (path: string, ua: string, ip: string, minutes: number, extra: object = {}) =>
      JSON.stringify({
        timestamp: new Date(now - DAY + minutes * 60_000).toISOString(),
        site: created.json.snippetId,
        name: 'pageview',
        url: `https://${domain}${path}`,
        ip,
        userAgent: ua,
        ...extra,
      })
    await importHits(
      [
        hit('/blog/a', CHROME, '203.0.113.1', 0),
        hit('/blog/a', CHROME, '203.0.113.1', 5),
        hit('/blog/a', FIREFOX, '203.0.113.2', 10),
        hit('/blog/a', CHROME, '203.0.113.1', 6, { name: 'engagement', engagement: { ms: 30_000, scroll: 40 } }),
        hit('/blog/a', FIREFOX, '203.0.113.2', 11, { name: 'engagement', engagement: { ms: 90_000, scroll: 100 } }),
        hit('/from-pageviews', FIREFOX, '203.0.113.2', 12),
      ],
      services.ingestor,
    )
  })

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
  })

  const inventory = async (query = '') => {
    const res = await call('GET', `/api/v1/pages?site_id=${siteId}${query.includes('limit=') ? '' : '&limit=1000'}${query}`, { key: read })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }
  const feed = async (query = '') => {
    const res = await call('GET', `/api/v1/changes?site_id=${siteId}&range=90d&limit=1000${query}`, { key: read })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }
  /** One run of the crawl job, which must not fail for any site. */
  const crawl = async () => {
    const failures: string[] = []
    const runs = await runCrawls(services, config, { log: (line) => failures.push(line) })
    expect(failures).toEqual([])
    return runs
  }
  const fetchedPaths = () => new Set(requests.map((r) => r.path))

  it('queues the first crawl when the site is added, and builds the inventory on its own', async () => {
    expect(await services.repositories.crawlQueue.dueAt(siteId)).toBe(now)
    const runs = await crawl()
    expect(runs.map((r) => r.siteId)).toEqual([siteId])

    const body = await inventory('&sort=path')
    const paths = body.pages.map((p: any) => p.path)
    expect(paths).toEqual([
      '/',
      '/about',
      '/blog/a',
      '/blog/b',
      '/files/report.pdf',
      '/from-pageviews',
      '/huge',
      '/linked-only',
      '/moved',
      '/old-page',
      '/pricing',
    ])
    const byPath = Object.fromEntries(body.pages.map((p: any) => [p.path, p]))
    expect(byPath['/blog/a']).toMatchObject({
      title: 'Post A | Acme',
      httpStatus: 200,
      inSitemap: true,
      status: 'new',
      visitors: 2,
      pageviews: 3,
      scrollDepth: 70,
      timeOnPage: 60,
      wordCount: 10,
    })
    expect(byPath['/linked-only']).toMatchObject({ inSitemap: false, visitors: 0, pageviews: 0, scrollDepth: null, timeOnPage: null })
    expect(byPath['/files/report.pdf']).toMatchObject({ contentType: 'application/pdf', httpStatus: 200, wordCount: 0, title: '' })
    expect(byPath['/huge']).toMatchObject({ httpStatus: 0 })
    expect(byPath['/huge'].error).toContain(`larger than ${MAX_BYTES} bytes`)
    expect(byPath['/moved']).toMatchObject({ httpStatus: 200, finalUrl: `${origin}/blog/a`, title: 'Post A | Acme' })
    // launched at the first pageview (a day before the crawl), earlier than the first crawl
    expect(byPath['/blog/a'].launchedAt).toBe(new Date(now - DAY).toISOString())
    expect(byPath['/about'].launchedAt).toBe(new Date(now).toISOString())
    expect(body.counts).toEqual({ all: 11, active: 11, removed: 0, new: 11 })

    // robots.txt and the site's exclusions are honoured; everything went out with our agent
    const fetched = fetchedPaths()
    for (const never of ['/private/secret', '/private/hidden', '/admin/panel']) expect(fetched.has(never), never).toBe(false)
    expect(new Set(requests.map((r) => r.agent))).toEqual(new Set([DEFAULT_USER_AGENT]))
    // at most one request per host interval: every request was sent that long after the one before.
    // The time is taken when the fetch is called, a turn of the event loop after the pacer let it
    // go; on a busy machine one such turn runs a few milliseconds later than another (97.98 ms was
    // seen with a 2 ms allowance), so 5 ms are allowed: unpaced, the gaps would be a few ms in all
    expect(sent).toHaveLength(requests.length)
    const gaps = sent.slice(1).map((at, i) => at - sent[i])
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(HOST_INTERVAL_MS - 5)

    // the first crawl is the baseline: no changes; the site read shows the crawl's state
    expect((await feed()).changes).toEqual([])
    const siteRead = await call('GET', `/api/v1/sites/${siteId}`, { key: read })
    expect(siteRead.json.changeDetection).toMatchObject({
      crawlStatus: 'ok',
      lastCrawlAt: new Date(now).toISOString(),
      pagesKnown: 11,
      changeExcludedPaths: ['/admin/*'],
    })
    expect(siteRead.json.changeDetection.crawlErrors).toEqual([{ path: '/huge', error: expect.stringContaining('larger than') }])
    // the next run is a day later
    expect(await services.repositories.crawlQueue.dueAt(siteId)).toBe(now + DAY)
  })

  it('filters, searches, sorts and pages the inventory, and refuses what it does not know', async () => {
    expect((await inventory('&q=POST')).pages.map((p: any) => p.path)).toEqual(['/blog/a', '/blog/b', '/moved'])
    expect((await inventory('&sort=pageviews&limit=2')).pages.map((p: any) => p.path)).toEqual(['/blog/a', '/from-pageviews'])
    const second = await inventory('&sort=path&dir=desc&limit=2&offset=1')
    expect(second.pages.map((p: any) => p.path)).toEqual(['/old-page', '/moved'])
    expect(second.total).toBe(11)
    const trends = await inventory('&q=/blog/a&trends=1&bots=1&range=7d')
    expect(trends.pages[0].trend).toHaveLength(7)
    expect(trends.pages[0].trend.reduce((a: number, b: number) => a + b, 0)).toBe(3)
    expect(trends.pages[0].bots).toEqual({ hits: 0, aiCrawlerHits: 0 })
    for (const [query, param] of [
      ['&sort=bogus', 'sort'],
      ['&dir=up', 'dir'],
      ['&filter=gone', 'filter'],
      ['&offset=-1', 'offset'],
      ['&range=realtime', 'range'],
    ]) {
      const res = await call('GET', `/api/v1/pages?site_id=${siteId}${query}`, { key: read })
      expect(res.status, query).toBe(400)
      expect(res.json.error).toContain(param)
    }
  })

  it('detects each kind of change on a recrawl, with words added and removed', async () => {
    site['/blog/a'] = { body: html('Post A, revised | Acme', 'Post A talks about crawling politely through a guarded fetch.') }
    site['/blog/b'] = { body: html('Post B | Acme', 'The quick red fox jumps over the sleepy dog') }
    site['/pricing'] = {
      body: html(
        'Pricing | Acme',
        'Plans start at ten euros a month for small fixture sites.',
        '<meta name="robots" content="noindex, follow">',
      ),
    }
    site['/about'] = {
      body: html(
        'About | Acme',
        'We build fixtures for crawler tests and nothing else at all.',
        '<meta name="description" content="Who makes the fixtures">',
      ),
    }
    site['/linked-only'] = {
      body: html(
        'Linked only | Acme',
        'Only a link from the homepage leads here, no sitemap does.',
        `<link rel="canonical" href="${origin}/">`,
      ),
    }
    delete site['/old-page']
    site['/from-pageviews'] = { status: 500, body: 'oops' }
    site['/files/report.pdf'] = { type: 'application/pdf', body: new Uint8Array([0x25, 0x50, 0x44, 0x46, 0x2d, 9, 9, 9]) }
    site['/moved'] = { status: 302, location: '/blog/b', body: '' }
    site['/blog/c'] = { body: html('Post C | Acme', 'A brand new post appears in the sitemap.') }
    site['/sitemap-blog.xml'] = { type: 'application/xml', body: urlset(origin, ['/blog/a', '/blog/b', '/blog/c']) }
    site['/robots.txt'] = {
      type: 'text/plain',
      body: `User-agent: *\nDisallow: /private\nDisallow: /drafts\n\nSitemap: ${origin}/sitemap_index.xml\n`,
    }
    now += 8 * DAY
    requests.length = 0
    await crawl()

    const body = await feed()
    const got = body.changes.map((c: any) => `${c.scope} ${c.type} ${c.path}`).sort()
    expect(got).toEqual(
      [
        'page canonical /linked-only',
        'page meta_description /about',
        'page new_page /blog/c',
        'page noindex /pricing',
        'page redirect /moved',
        'page removed /old-page',
        'page status /from-pageviews',
        'page text /blog/b',
        'page text /files/report.pdf',
        'page text /moved',
        'page title /blog/a',
        'page title /moved',
        'page h1 /blog/a',
        'page h1 /moved',
        'site robots_txt ',
        'site sitemap ',
      ].sort(),
    )
    for (const c of body.changes) (changesBy[`${c.type} ${c.path}`] ??= []).push(c)
    expect(changesBy['text /blog/b'][0]).toMatchObject({
      category: 'content',
      wordsAdded: 2,
      wordsRemoved: 2,
      diffable: true,
      before: '9 words',
      after: '9 words',
    })
    expect(changesBy['title /blog/a'][0]).toMatchObject({
      category: 'seo',
      before: 'Post A | Acme',
      after: 'Post A, revised | Acme',
      diffable: true,
    })
    expect(changesBy['removed /old-page'][0]).toMatchObject({ category: 'content', before: '200', after: '404', diffable: false })
    expect(changesBy['status /from-pageviews'][0]).toMatchObject({ category: 'technical', before: '200', after: '500' })
    expect(changesBy['redirect /moved'][0]).toMatchObject({ before: `${origin}/blog/a`, after: `${origin}/blog/b` })
    expect(changesBy['noindex /pricing'][0]).toMatchObject({ category: 'seo', before: '', after: 'noindex, follow' })
    expect(changesBy['text /files/report.pdf'][0]).toMatchObject({ diffable: false, wordsAdded: 0, wordsRemoved: 0 })
    expect(changesBy['sitemap '][0]).toMatchObject({
      scope: 'site',
      category: 'technical',
      before: '6 pages',
      after: '7 pages (1 added, 0 gone)',
      samplePaths: ['/blog/c'],
    })
    expect(body.totals).toMatchObject({
      text: 3,
      title: 2,
      h1: 2,
      removed: 1,
      new_page: 1,
      status: 1,
      redirect: 1,
      noindex: 1,
      canonical: 1,
      meta_description: 1,
      robots_txt: 1,
      sitemap: 1,
      annotation: 0,
    })
    const today = new Date(now).toISOString().slice(0, 10)
    expect(body.activity.find((d: any) => d.date === today)).toEqual({ date: today, changes: 16 })
    expect(body.activity.filter((d: any) => d.changes > 0)).toHaveLength(1)

    // the inventory follows: /old-page removed, /blog/c new
    const pages = await inventory('&filter=removed')
    expect(pages.pages.map((p: any) => p.path)).toEqual(['/old-page'])
    expect((await inventory('&q=/blog/c')).pages[0]).toMatchObject({ status: 'new', inSitemap: true })
    for (const never of ['/private/secret', '/private/hidden', '/admin/panel']) expect(fetchedPaths().has(never), never).toBe(false)
  })

  it('narrows the feed by category, type, search and day', async () => {
    expect((await feed('&category=seo')).changes.map((c: any) => c.type).sort()).toEqual([
      'canonical',
      'meta_description',
      'noindex',
      'title',
      'title',
    ])
    const texts = await feed('&type=text')
    expect(texts.changes).toHaveLength(3)
    expect(texts.totals.title).toBe(2)
    expect((await feed('&search=fixtures')).changes.map((c: any) => `${c.type} ${c.path}`)).toEqual(['meta_description /about'])
    expect((await feed(`&day=${new Date(now - DAY).toISOString().slice(0, 10)}`)).changes).toEqual([])
    await call('POST', '/api/v1/annotations', {
      key: write,
      body: { siteId, title: 'Relaunch of the blog', kind: 'deploy', at: new Date(now - 2 * DAY).toISOString() },
    })
    const withNote = await feed('&category=annotation')
    expect(withNote.changes).toEqual([
      expect.objectContaining({ kind: 'annotation', type: 'annotation', summary: 'Relaunch of the blog', diffable: false }),
    ])
    for (const [query, param] of [
      ['&category=style', 'category'],
      ['&type=color', 'type'],
      ['&day=2026-02-30', 'day'],
      ['&day=yesterday', 'day'],
    ]) {
      const res = await call('GET', `/api/v1/changes?site_id=${siteId}${query}`, { key: read })
      expect(res.status, query).toBe(400)
      expect(res.json.error).toContain(param)
    }
  })

  it('answers the word diff of a text change, 422 for a change that is not diffable, 404 for another organization', async () => {
    const text = changesBy['text /blog/b'][0]
    const diff = await call('GET', `/api/v1/changes/diff?change_id=${text.id}`, { key: read })
    expect(diff.status).toBe(200)
    expect(diff.json.before.text).toBe('The quick brown fox jumps over the lazy dog')
    expect(diff.json.after.text).toBe('The quick red fox jumps over the sleepy dog')
    const runs = diff.json.runs.map((r: any) => `${r.op}:${r.text.trim()}`).filter((r: string) => !r.endsWith(':'))
    expect(runs).toEqual([
      'equal:The quick',
      'removed:brown',
      'added:red',
      'equal:fox jumps over the',
      'removed:lazy',
      'added:sleepy',
      'equal:dog',
    ])
    const title = await call('GET', `/api/v1/changes/diff?change_id=${changesBy['title /blog/a'][0].id}`, { key: read })
    expect(title.json.runs.filter((r: any) => r.op === 'added').map((r: any) => r.text.trim())).toEqual([', revised'])
    for (const key of ['removed /old-page', 'text /files/report.pdf', 'sitemap ']) {
      const res = await call('GET', `/api/v1/changes/diff?change_id=${changesBy[key][0].id}`, { key: read })
      expect(res.status, key).toBe(422)
      expect(res.json.error).toContain('not diffable')
    }
    const other = await createOrg(services.repositories, 'Other', new Date(now))
    const otherKey = (await createApiKey(services.repositories, { orgId: other.id, name: 'r', scope: 'read' }, new Date(now))).key
    const foreign = await call('GET', `/api/v1/changes/diff?change_id=${text.id}`, { key: otherKey })
    const unknown = await call('GET', `/api/v1/changes/diff?change_id=${crypto.randomUUID()}`, { key: read })
    expect(foreign.status).toBe(404)
    expect(unknown.status).toBe(404)
    // another organization's change and one that does not exist are told apart by nothing
    expect(foreign.json).toEqual(unknown.json)
    expect((await call('GET', '/api/v1/changes/diff?change_id=nope', { key: read })).status).toBe(400)
    // site_id, the parameter of every read, is taken: the change must be that site's
    const named = await call('GET', `/api/v1/changes/diff?site_id=${siteId}&change_id=${text.id}`, { key: read })
    expect(named.status).toBe(200)
    expect(named.json).toEqual(diff.json)
    // a second site of the organization, stored directly (the free plan takes one site through the API)
    const crawled = (await services.repositories.sites.get(siteId))!
    const sibling = newSite({ domain: `sibling-${crypto.randomUUID().slice(0, 6)}.test` }, crawled.orgId, new Date(now))
    await services.repositories.sites.create(sibling)
    const elsewhere = await call('GET', `/api/v1/changes/diff?site_id=${sibling.id}&change_id=${text.id}`, { key: read })
    expect(elsewhere.status).toBe(404)
    expect(elsewhere.json.error).toBe('change_id: no such change of this site')
    const foreignSite = await call('GET', `/api/v1/changes/diff?site_id=${siteId}&change_id=${text.id}`, { key: otherKey })
    expect(foreignSite.status).toBe(404)
    await services.repositories.sites.delete(sibling)
  })

  it('records a change on most pages at once (a template edit) once, as a site change', async () => {
    for (const path of ['/', '/about', '/pricing', '/blog/a', '/blog/b', '/blog/c', '/linked-only']) {
      site[path] = { ...site[path], body: String(site[path].body).replace(' | Acme<', ' | Acme Inc<') }
    }
    expect(site['/'].body).toContain('Home | Acme Inc<')
    const before = (await feed()).changes.length
    now += 8 * DAY
    await crawl()
    const after = await feed(`&day=${new Date(now).toISOString().slice(0, 10)}`)
    expect(after.changes.map((c: any) => `${c.scope} ${c.type}`)).toEqual(['site title'])
    // the homepage, about, pricing, the three posts, linked-only and /moved (which lands on post B)
    expect(after.changes[0]).toMatchObject({ pages: 8, diffable: false, summary: 'Title changed on 8 pages at once' })
    expect((await feed()).changes.length).toBe(before + 1)
  })

  it('takes publish pings: 400 for a URL that is not the site, 200 queued, 503 when full or off', async () => {
    const ping = (url: unknown, key = write) => call('POST', '/api/v1/ping', { key, body: { url } })
    for (const url of [
      'not a url',
      `ftp://${domain}/x`,
      'https://elsewhere.example/blog/a',
      `https://${domain}.evil.example/`,
      `/blog/a`,
    ]) {
      const res = await ping(url)
      expect(res.status, url).toBe(400)
      expect(res.json.error).toContain('url')
    }
    expect((await ping(`https://${domain}/blog/a`, read)).status).toBe(403)
    expect((await call('POST', '/api/v1/ping', { key: write, body: {} })).status).toBe(400)

    const ok = await ping(`https://${domain}/blog/a?utm=x#top`)
    expect(ok.status).toBe(200)
    expect(ok.json).toEqual({ accepted: true, path: '/blog/a' })
    expect((await ping(`https://www.${domain}/blog/b`)).json).toEqual({ accepted: true, path: '/blog/b' })
    expect((await ping(`https://${domain}/admin/panel`)).json).toEqual({
      accepted: false,
      path: '/admin/panel',
      reason: 'the path is excluded from change detection (changeExcludedPaths)',
    })
    const queue = services.repositories.crawlQueue
    expect(await queue.dueAt(siteId)).toBe(now)
    await ping(`https://${domain}/blog/c`)
    // the test client treats every 5xx as a failure: the 503s are read from the app itself
    const unavailable = () =>
      checkedApp(services).request('http://api.test/api/v1/ping', {
        method: 'POST',
        headers: { authorization: `Bearer ${write}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `https://${domain}/about` }),
      })
    const full = await unavailable()
    expect(full.status).toBe(503)
    expect(full.headers.get('retry-after')).toBe('60')

    // the pinged pages are fetched at the next run, though not due by their schedule
    requests.length = 0
    now += 60_000
    await crawl()
    const pagesFetched = requests.map((r) => r.path).filter((p) => !p.endsWith('.xml') && p !== '/robots.txt')
    expect(pagesFetched.sort()).toEqual(['/blog/a', '/blog/b', '/blog/c'])
    expect(await queue.pingCount(siteId)).toBe(0)

    services.crawler = undefined
    const off = await unavailable()
    expect(off.status).toBe(503)
    expect(off.headers.get('retry-after')).toBe('60')
    services.crawler = config
  })

  it('gives later reads the snapshots and changes through lib/crawl/changes.ts', async () => {
    // /blog/b was fetched by the three crawls and the ping run
    const snapshots = await pageSnapshots(services.clickhouse, siteId, '/blog/b')
    expect(snapshots.map((s) => s.fetchedAt)).toEqual(
      [now, now - 60_000, now - 60_000 - 8 * DAY, now - 60_000 - 16 * DAY].map((t) => new Date(t).toISOString()),
    )
    expect(snapshots.map((s) => s.title)).toEqual(['Post B | Acme Inc', 'Post B | Acme Inc', 'Post B | Acme', 'Post B | Acme'])
    const changes = await siteChanges(services.clickhouse, siteId, new Date(now - 30 * DAY), new Date(now + 1), { path: '/blog/b' })
    expect(changes.map((c) => `${c.scope} ${c.type}`)).toEqual(['site title', 'page text', 'site robots_txt', 'site sitemap'])
    expect(changes[1]).toMatchObject({
      path: '/blog/b',
      wordsAdded: 2,
      wordsRemoved: 2,
      beforeSnapshot: snapshots[3].id,
      afterSnapshot: snapshots[2].id,
    })
  })

  it("stops at the plan's pages a day and goes on the next UTC day", async () => {
    now += 8 * DAY
    const day = new Date(now).toISOString().slice(0, 10)
    const queue = services.repositories.crawlQueue
    // a free plan fetches 200 pages a day per site: all but one are spent
    await queue.spendBudget(siteId, day, 199)
    requests.length = 0
    const [run] = await crawl()
    expect(run).toMatchObject({ fetched: 1 })
    expect(run.left).toBeGreaterThan(0)
    expect(requests.filter((r) => !r.path.endsWith('.xml') && r.path !== '/robots.txt').map((r) => r.path)).toEqual(['/'])
    expect(await queue.dueAt(siteId)).toBe(Date.parse(`${day}T00:00:00Z`) + DAY)
    // the day's 200 pages are fetched: a ping says so, and when they renew, and queues nothing
    const pingsBefore = await queue.pingCount(siteId)
    const refused = await call('POST', '/api/v1/ping', { key: write, body: { url: `https://${domain}/blog/a` } })
    expect(refused.json).toEqual({
      accepted: false,
      path: '/blog/a',
      reason: "this site's crawl budget of 200 pages a day is spent for today (UTC): nothing is fetched until it renews",
      renewsAt: new Date(Date.parse(`${day}T00:00:00Z`) + DAY).toISOString(),
    })
    expect(await queue.pingCount(siteId)).toBe(pingsBefore)
    expect(await queue.dueAt(siteId)).toBe(Date.parse(`${day}T00:00:00Z`) + DAY)
  })

  it('fetches nothing while robots.txt cannot be read, and tries again an hour later', async () => {
    const robots = site['/robots.txt']
    site['/robots.txt'] = { status: 503, body: 'down for maintenance' }
    now += 8 * DAY
    requests.length = 0
    const lines: string[] = []
    const [run] = await runCrawls(services, config, { log: (line) => lines.push(line) })
    expect(run).toMatchObject({ fetched: 0 })
    expect(requests.map((r) => r.path)).toEqual(['/robots.txt'])
    // the failed run is logged with its site
    expect(lines).toEqual([`crawl of site ${siteId} failed: robots.txt could not be read (HTTP 503): nothing is fetched until it can`])
    const read1 = await call('GET', `/api/v1/sites/${siteId}`, { key: read })
    expect(read1.json.changeDetection).toMatchObject({
      crawlStatus: 'failed',
      crawlErrors: [{ path: '/robots.txt', error: expect.stringContaining('HTTP 503') }],
    })
    expect(await services.repositories.crawlQueue.dueAt(siteId)).toBe(now + 3_600_000)
    site['/robots.txt'] = robots
  })

  it('crawls nothing and accepts no ping while change detection is off for the site', async () => {
    expect((await call('PATCH', `/api/v1/sites/${siteId}`, { key: write, body: { changeDetectionEnabled: false } })).status).toBe(200)
    expect((await call('POST', '/api/v1/ping', { key: write, body: { url: `https://${domain}/blog/a` } })).json).toEqual({
      accepted: false,
      path: '/blog/a',
      reason: 'change detection is off for this site',
    })
    const queue = services.repositories.crawlQueue
    await queue.schedule(siteId, now, { replace: true })
    requests.length = 0
    expect(await crawl()).toEqual([])
    expect(requests).toEqual([])
    expect(await queue.dueAt(siteId)).toBe(now + DAY)
    expect((await call('PATCH', `/api/v1/sites/${siteId}`, { key: write, body: { changeDetectionEnabled: true } })).status).toBe(200)
  })

  it('keeps crawling the other sites when one fails', async () => {
    const broken = await call('POST', '/api/v1/sites', { key: write, body: { domain: `broken-${crypto.randomUUID().slice(0, 6)}.test` } })
    const healthy = await call('POST', '/api/v1/sites', { key: write, body: { domain: `healthy-${crypto.randomUUID().slice(0, 6)}.test` } })
    const lines: string[] = []
    const failing: CrawlerConfig = {
      ...config,
      siteOrigin: (s) => {
        if (s.id === broken.json.id) throw new Error('no origin for this site')
        return origin
      },
    }
    const runs = await runCrawls(services, failing, { log: (l) => lines.push(l), concurrency: 1 })
    expect(runs.map((r) => r.siteId)).toContain(healthy.json.id)
    expect(lines).toEqual([`crawl of site ${broken.json.id} failed: no origin for this site`])
    const read1 = await call('GET', `/api/v1/sites/${broken.json.id}`, { key: read })
    expect(read1.json.changeDetection.crawlStatus).toBe('failed')
    expect(await services.repositories.crawlQueue.dueAt(broken.json.id)).toBe(now + 3_600_000)
  })

  it('crawls every accepted ping at the next run, in the order pinged: many at once, and those that come during a run', async () => {
    const queue = services.repositories.crawlQueue
    const maxQueuedPings = config.maxQueuedPings
    config.maxQueuedPings = 10
    const ping = async (path: string) => {
      now += 1000
      const res = await call('POST', '/api/v1/ping', { key: write, body: { url: `https://${domain}${path}` } })
      expect(res.json).toEqual({ accepted: true, path })
    }
    const pageRequests = () => requests.map((r) => r.path).filter((p) => !p.endsWith('.xml') && p !== '/robots.txt')
    const pinged = ['/pricing', '/about', '/linked-only', '/blog/a', '/from-pageviews']
    for (const path of pinged) await ping(path)
    // while the run fetches /about, /pricing (already fetched by it) and /huge are pinged
    let pingedDuring = false
    beforeAnswer = async (path) => {
      if (path !== '/about' || pingedDuring) return
      pingedDuring = true
      await ping('/pricing')
      await ping('/huge')
    }
    requests.length = 0
    const [run] = await crawl()
    beforeAnswer = undefined
    expect(pingedDuring).toBe(true)
    expect(run.siteId).toBe(siteId)
    // the pinged pages first, in order; then the pages due by their schedule
    expect(pageRequests().slice(0, pinged.length)).toEqual(pinged)
    // the pings of the run are served; the two that came during it wait for the next run, due at once
    expect(await queue.pings(siteId)).toEqual([
      { path: '/pricing', atMs: now - 1000 },
      { path: '/huge', atMs: now },
    ])
    expect(await queue.dueAt(siteId)).toBe(now)
    requests.length = 0
    await crawl()
    expect(pageRequests()).toEqual(['/pricing', '/huge'])
    expect(await queue.pingCount(siteId)).toBe(0)
    expect(await queue.dueAt(siteId)).toBe(now + DAY)
    config.maxQueuedPings = maxQueuedPings
  })
})
