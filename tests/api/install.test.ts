import { type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { type Site, newSite, siteView } from '../../lib/sites/sites'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { harness, type Harness } from '../helpers'

interface FixturePage {
  status?: number
  headers?: Record<string, string>
  body: string
}

/** Fixture homepages on 127.0.0.1, one per site domain: the request path starts with the domain. */
async function fixtureSite() {
  const pages = new Map<string, FixturePage>()
  const server: Server = createServer((req, res) => {
    const domain = (req.url ?? '/').split('/')[1]
    const page = pages.get(domain)
    if (!page) return void res.writeHead(404).end('not found')
    res.writeHead(page.status ?? 200, { 'content-type': 'text/html; charset=utf-8', ...page.headers }).end(page.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { pages, origin, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const html = (head: string) => `<!doctype html><html><head><title>Home</title>${head}</head><body><h1>Welcome</h1></body></html>`

describe('install check', () => {
  let t: Harness
  let fixture: Awaited<ReturnType<typeof fixtureSite>>
  let closedPort = 0

  beforeAll(async () => {
    fixture = await fixtureSite()
    const outbound = guardedFetch({ allowPrivate: true })
    // the homepage https://<domain>/ is served by the fixture server; an unreachable domain by a closed port
    const homepageFetch: typeof fetch = (input, init) => {
      const url = new URL(String(input))
      if (url.hostname.startsWith('down-')) return outbound(`http://127.0.0.1:${closedPort}/`, init)
      return outbound(`${fixture.origin}/${url.hostname}${url.pathname}`, init)
    }
    t = await harness({ with: { fetch: homepageFetch } })
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    closedPort = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
  })
  afterAll(() => fixture?.close())

  const addSite = async (prefix: string) => {
    const site = newSite({ domain: `${prefix}-${crypto.randomUUID().slice(0, 8)}.example.com` }, t.a.org.id, t.services.now())
    await t.repositories.sites.create(site)
    return site
  }
  const snippetOf = (site: Site) => siteView(site, 'https://api.test').snippet
  const check = async (site: Site) => (await t.call('POST', `/api/v1/sites/${site.id}/install`, { key: t.a.write.key })).json

  it('finds the snippet on the homepage and records the check', async () => {
    const site = await addSite('found')
    fixture.pages.set(site.domain, { body: html(snippetOf(site)) })
    const before = await t.call('GET', `/api/v1/sites/${site.snippetId}/install`, { key: t.a.read.key })
    expect(before.json).toEqual({
      installed: false,
      recording: false,
      firstEventAt: null,
      lastEventAt: null,
      eventsLast24h: 0,
      lastCheck: null,
    })
    const res = await t.call('POST', `/api/v1/sites/${site.id}/install`, { key: t.a.write.key })
    expect(res.status).toBe(200)
    expect(res.json).toMatchObject({
      installed: true,
      recording: false,
      lastCheck: { result: 'found', status: 200, url: `https://${site.domain}/` },
    })
    expect((await t.call('GET', `/api/v1/sites/${site.id}/install`, { key: t.a.read.key })).json).toEqual(res.json)
    expect((await t.call('GET', `/api/v1/sites/${site.id}`, { key: t.a.read.key })).json.install).toMatchObject({
      installed: true,
      checkedAt: res.json.lastCheck.checkedAt,
    })
  })

  it('reports events received: first and last, and those of the last 24 hours', async () => {
    const site = await addSite('recording')
    const hit = (ago: number, ip: string) =>
      JSON.stringify({
        timestamp: new Date(Date.now() - ago).toISOString(),
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/`,
        ip,
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      })
    await importHits([hit(3 * 86_400_000, '203.0.113.5'), hit(600_000, '203.0.113.6'), hit(300_000, '203.0.113.7')], t.services.ingestor)
    const res = await t.call('GET', `/api/v1/sites/${site.id}/install`, { key: t.a.read.key })
    expect(res.json).toMatchObject({ installed: true, recording: true, eventsLast24h: 2, lastCheck: null })
    expect(Date.parse(res.json.firstEventAt)).toBeLessThan(Date.now() - 2 * 86_400_000)
    expect(Date.parse(res.json.lastEventAt)).toBeGreaterThan(Date.now() - 400_000)
  })

  it('says what is wrong: unreachable, missing, another site’s snippet', async () => {
    const error = await addSite('error')
    fixture.pages.set(error.domain, { status: 503, body: 'maintenance' })
    expect((await check(error)).lastCheck).toMatchObject({ result: 'unreachable', status: 503, detail: 'the homepage answered 503' })
    const down = await addSite('down')
    expect((await check(down)).lastCheck).toMatchObject({
      result: 'unreachable',
      status: null,
      detail: expect.stringMatching(/did not answer/),
    })
    const missing = await addSite('missing')
    fixture.pages.set(missing.domain, { body: html('<script src="/app.js"></script>') })
    expect((await check(missing)).lastCheck).toMatchObject({
      result: 'script_missing',
      status: 200,
      detail: expect.stringContaining(missing.snippetId),
    })
    const other = await addSite('other')
    fixture.pages.set(other.domain, { body: html(snippetOf(t.b.site)) })
    const answer = await check(other)
    expect(answer).toMatchObject({ installed: false, lastCheck: { result: 'other_site' } })
    expect(answer.lastCheck.detail).toContain(other.snippetId)
  })

  const policies: [string, Record<string, string>, string, 'found' | 'blocked_by_csp', RegExp?][] = [
    [
      'script-src without our host',
      { 'content-security-policy': "default-src 'self'; script-src 'self' https://cdn.example.net" },
      '',
      'blocked_by_csp',
      /script-src does not allow https:\/\/api\.test/,
    ],
    [
      'connect-src without our host',
      { 'content-security-policy': "script-src 'self' https://api.test; connect-src 'self'" },
      '',
      'blocked_by_csp',
      /connect-src does not allow sending events to https:\/\/api\.test/,
    ],
    ['default-src with our host', { 'content-security-policy': "default-src 'self' https://api.test" }, '', 'found'],
    ['a wildcard and a scheme', { 'content-security-policy': 'script-src *.test; connect-src https:' }, '', 'found'],
    [
      'strict-dynamic without a nonce',
      { 'content-security-policy': "script-src 'strict-dynamic' 'nonce-abc' https://api.test" },
      '',
      'blocked_by_csp',
    ],
    ['a second header that blocks', { 'content-security-policy': "script-src https://api.test, script-src 'self'" }, '', 'blocked_by_csp'],
    ['a meta tag that blocks', {}, `<meta http-equiv="Content-Security-Policy" content="script-src 'none'">`, 'blocked_by_csp'],
    ['a report-only header', { 'content-security-policy-report-only': "script-src 'none'" }, '', 'found'],
  ]
  for (const [name, headers, meta, result, detail] of policies) {
    it(`reads the Content-Security-Policy: ${name}`, async () => {
      const site = await addSite('csp')
      fixture.pages.set(site.domain, { headers, body: html(`${meta}${snippetOf(site)}`) })
      const answer = await check(site)
      expect(answer.lastCheck.result).toBe(result)
      if (detail) expect(answer.lastCheck.detail).toMatch(detail)
    })
  }

  it('allows a nonce on our tag under strict-dynamic', async () => {
    const site = await addSite('nonce')
    fixture.pages.set(site.domain, {
      headers: { 'content-security-policy': "script-src 'strict-dynamic' 'nonce-r4nd0m'; connect-src https://api.test" },
      body: html(snippetOf(site).replace('<script ', '<script nonce="r4nd0m" ')),
    })
    expect((await check(site)).lastCheck.result).toBe('found')
  })

  it('needs a write key to check, and keeps organizations and site-bound keys apart', async () => {
    expect((await t.call('POST', `/api/v1/sites/${t.a.site.id}/install`, { key: t.a.read.key })).status).toBe(403)
    for (const ref of [t.b.site.id, t.b.site.snippetId]) {
      expect((await t.call('GET', `/api/v1/sites/${ref}/install`, { key: t.a.read.key })).status).toBe(404)
      expect((await t.call('POST', `/api/v1/sites/${ref}/install`, { key: t.a.write.key })).status).toBe(404)
    }
    expect(await t.repositories.siteChecks.installCheck(t.b.site.id)).toBeNull()
    const other = await addSite('bound')
    expect((await t.call('GET', `/api/v1/sites/${other.id}/install`, { key: t.ingest.key })).status).toBe(404)
    fixture.pages.set(t.a.site.domain, { body: html(snippetOf(t.a.site)) })
    expect((await t.call('POST', `/api/v1/sites/${t.a.site.id}/install`, { key: t.ingest.key })).json.lastCheck.result).toBe('found')
  })
})
