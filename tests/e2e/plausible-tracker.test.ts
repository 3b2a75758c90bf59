import { execFile } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import { serve } from '@hono/node-server'
import { build } from 'esbuild'
import { Hono } from 'hono'
import type { Browser, BrowserContext } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { createApiKey } from '../../lib/accounts/admin'
import { orgWithSites, seed, testServices, type TestServices } from '../helpers'
import { CHROMIUM, launchChromium } from './chromium'

const DESKTOP_CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const DESKTOP_FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0'

// Plausible's snippet as its docs give it, with only the host changed; the queue stub takes calls made before the script loads
const tagPage = (domain: string, api: string) => `<!doctype html>
<html><head><title>Plausible tag</title>
<script>window.plausible = window.plausible || function() { (window.plausible.q = window.plausible.q || []).push(arguments) }</script>
<script defer data-domain="${domain}" src="${api}/js/script.hash.outbound-links.file-downloads.tagged-events.revenue.js"></script>
<script>plausible('Signup', {props: {plan: 'pro'}, revenue: {amount: '19.90', currency: 'EUR'}, callback: function (r) { window.signupResult = r }})</script>
</head><body style="height:3000px">
<button id="cta" class="big plausible-event-name=Cta+Click plausible-event-position=hero plausible-revenue-amount=5 plausible-revenue-currency=EUR">Start</button>
<a id="pdf" href="/files/report.pdf">Report</a>
<a id="out" href="https://elsewhere.example.org/page">Elsewhere</a>
</body></html>`

// the plain script.js with data-domain: our tracker hands over to the build for Plausible's tag
const plainPage = (domain: string, api: string) => `<!doctype html>
<html><head><title>Plain tag</title>
<script defer data-domain="${domain}" src="${api}/js/script.js"></script>
</head><body>plain</body></html>`

// one pageview and one custom event through Plausible's script, interactive or not (Plausible's snippet and call)
const oneEventPage = (domain: string, api: string, name: string, interactive: boolean) => `<!doctype html>
<html><head><title>One event</title>
<script>window.plausible = window.plausible || function() { (window.plausible.q = window.plausible.q || []).push(arguments) }</script>
<script defer data-domain="${domain}" src="${api}/js/script.js"></script>
<script>plausible(${JSON.stringify(name)}, {${interactive ? '' : 'interactive: false, '}callback: function (r) { window.eventResult = r }})</script>
</head><body>one event</body></html>`

const npmPage = (domain: string, api: string) => `<!doctype html>
<html><head><title>npm tracker</title>
<script>window.PLAUSIBLE_DOMAIN = ${JSON.stringify(domain)}; window.PLAUSIBLE_API = ${JSON.stringify(api)}</script>
<script src="/npm-bundle.js"></script>
</head><body>
<button id="buy" onclick="window.pa.track('Purchase', {props: {plan: 'team'}, revenue: {amount: 49, currency: 'EUR'}})">Buy</button>
<button id="legacy" onclick="window.legacy.trackEvent('Legacy Event', {props: {tracker: 'old'}})">Old tracker</button>
<button id="client" onclick="window.client.sendEvent('Trial', {props: {plan: 'solo', seats: 3}, revenue: {currency: 'EUR', amount: 12.5}})">Client</button>
<button id="tagged" class="plausible-event-name=Newsletter plausible-event-list=weekly">Subscribe</button>
<a id="out" href="https://elsewhere.example.org/npm">Elsewhere</a>
</body></html>`

// the official npm trackers and the community client plausible-client (its apiHost setting), bundled
// for the browser as an app would; each initialised with this host
const NPM_ENTRY = `
import { init, track } from '@plausible-analytics/tracker'
import Plausible from 'plausible-tracker'
import { Plausible as PlausibleClient } from 'plausible-client'
init({ domain: window.PLAUSIBLE_DOMAIN, endpoint: window.PLAUSIBLE_API + '/api/event', outboundLinks: true })
window.pa = { track }
window.legacy = Plausible({ domain: window.PLAUSIBLE_DOMAIN, apiHost: window.PLAUSIBLE_API })
window.client = new PlausibleClient({ domain: window.PLAUSIBLE_DOMAIN, apiHost: window.PLAUSIBLE_API })
`

describe.skipIf(!CHROMIUM)("Plausible's script tag and npm trackers against this host, in real Chromium", () => {
  let services: TestServices
  let browser: Browser
  let api = ''
  let port = 0
  let close: () => void
  let app: ReturnType<typeof createApp>
  let fx: Awaited<ReturnType<typeof seed>>
  let bounces: Awaited<ReturnType<typeof orgWithSites>>
  const received: Record<string, any>[] = []

  beforeAll(async () => {
    services = await testServices({ kv: 'embedded' })
    fx = await seed(services)
    bounces = await orgWithSites(services, 'Bounces', [{ domain: `bounces-${crypto.randomUUID().slice(0, 8)}.example.net` }])
    app = createApp(services)
    const bundle = (
      await build({
        stdin: { contents: NPM_ENTRY, resolveDir: process.cwd() },
        bundle: true,
        write: false,
        format: 'iife',
        logLevel: 'silent',
      })
    ).outputFiles[0].text
    const outer = new Hono()
    outer.all('*', async (c) => {
      const host = new URL(c.req.url).hostname
      // the sites' pages, on their own hostnames (Chromium resolves them here)
      if (host !== '127.0.0.1') {
        const site = [fx.a.site, fx.b.site, ...bounces.sites].find((s) => s.domain === host)!
        if (c.req.path === '/npm-bundle.js') return c.body(bundle, 200, { 'content-type': 'application/javascript' })
        if (c.req.path === '/tag') return c.html(tagPage(site.domain, api))
        if (c.req.path === '/plain') return c.html(plainPage(site.domain, api))
        if (c.req.path === '/npm') return c.html(npmPage(site.domain, api))
        if (c.req.path === '/autoplay') return c.html(oneEventPage(site.domain, api, 'Autoplay', false))
        if (c.req.path === '/play') return c.html(oneEventPage(site.domain, api, 'Play', true))
        return c.text('a file')
      }
      const isEvent = c.req.path === '/api/event' && c.req.method === 'POST'
      const body = isEvent ? JSON.parse(await c.req.raw.clone().text()) : null
      const response = await app.fetch(c.req.raw)
      // recorded once answered: the test services have stored it by then
      if (isEvent && response.status === 202) received.push({ ...body, dropped: response.headers.get('x-dropped') })
      else if (isEvent) received.push({ refused: response.status, body })
      return response
    })
    const server = serve({ fetch: outer.fetch, port: 0, hostname: '127.0.0.1' })
    await new Promise((r) => server.once('listening', r))
    port = (server.address() as AddressInfo).port
    api = `http://127.0.0.1:${port}`
    close = () => server.close()
    browser = await launchChromium([
      `--user-agent=${DESKTOP_CHROME}`,
      `--host-resolver-rules=MAP ${fx.a.site.domain} 127.0.0.1, MAP ${fx.b.site.domain} 127.0.0.1, MAP ${bounces.sites[0].domain} 127.0.0.1, MAP elsewhere.example.org 127.0.0.1`,
      // navigator.webdriver would make Plausible's npm tracker ignore every event
      '--disable-blink-features=AutomationControlled',
    ])
  })
  afterAll(async () => {
    await browser?.close()
    close?.()
  })

  const waitFor = async (predicate: (e: Record<string, any>) => boolean, what: string) => {
    for (let i = 0; i < 100; i++) {
      const found = received.find(predicate)
      if (found) return found
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`no ${what} arrived; got ${JSON.stringify(received.map((e) => e.n ?? e.name))}`)
  }
  const context = (): Promise<BrowserContext> => browser.newContext({ userAgent: DESKTOP_CHROME, viewport: { width: 1280, height: 800 } })
  const read = async (path: string, key: string) => {
    const res = await app.request(`http://api.test${path}`, { headers: { authorization: `Bearer ${key}` } })
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`)
    return (await res.json()) as Record<string, any>
  }
  const countBy = (values: string[]) => values.reduce<Record<string, number>>((n, v) => ({ ...n, [v]: (n[v] ?? 0) + 1 }), {})
  const rowsOf = (answer: Record<string, any>) => (answer.results ?? answer.rows ?? answer.breakdown) as Record<string, any>[]

  it("tracks a page that keeps Plausible's script tag: pageviews, hash routes, custom event, tagged event, download, outbound link", async () => {
    const site = fx.a.site
    const page = `http://${site.domain}:${port}`
    const ctx = await context()
    const tab = await ctx.newPage()
    await tab.goto(`${page}/tag`)
    const pageview = await waitFor((e) => e.d === site.domain && e.n === 'pageview' && e.u === `${page}/tag`, 'pageview')
    expect(pageview).toMatchObject({ h: 1, r: null, w: 1280, dropped: null })
    const signup = await waitFor((e) => e.d === site.domain && e.n === 'Signup', 'queued custom event')
    expect(signup).toMatchObject({ p: { plan: 'pro' }, $: { amount: '19.90', currency: 'EUR' }, dropped: null })
    await tab.waitForFunction(() => (window as any).signupResult)
    expect(await tab.evaluate(() => (window as any).signupResult)).toEqual({ status: 202 })
    // no cookie, no storage
    expect(await ctx.cookies()).toEqual([])
    expect(await tab.evaluate(() => localStorage.length + sessionStorage.length)).toBe(0)

    // hash routing: the route is a page of its own
    await tab.evaluate(() => (location.hash = '#/pricing'))
    await waitFor((e) => e.d === site.domain && e.n === 'pageview' && e.u.endsWith('#/pricing'), 'hash pageview')

    await tab.click('#cta')
    const cta = await waitFor((e) => e.d === site.domain && e.n === 'Cta Click', 'tagged event')
    expect(cta).toMatchObject({ p: { position: 'hero' }, $: { amount: '5', currency: 'EUR' } })

    await tab.click('#pdf')
    await waitFor((e) => e.d === site.domain && e.n === 'File Download', 'file download')
    await tab.goBack()
    await tab.click('#out')
    const out = await waitFor((e) => e.d === site.domain && e.n === 'Outbound Link: Click', 'outbound link click')
    expect(out.p).toEqual({ url: 'https://elsewhere.example.org/page' })
    await ctx.close()

    // the plain script.js with data-domain
    const plain = await context()
    await (await plain.newPage()).goto(`${page}/plain`)
    await waitFor((e) => e.d === site.domain && e.n === 'pageview' && e.u === `${page}/plain`, 'pageview of the plain tag')
    await plain.close()
    // let the engagement events sent as the pages closed land
    await new Promise((r) => setTimeout(r, 1000))

    const all = received.filter((e) => e.d === site.domain)
    expect(all.filter((e) => e.dropped)).toEqual([])
    // expected from what the browser sent: the pages and custom events by name
    const pageviews = all.filter((e) => e.n === 'pageview').length
    const custom = all.filter((e) => e.n !== 'pageview' && e.n !== 'engagement')
    const q = `site_id=${site.id}&range=today`
    const key = fx.a.read.key
    const stats = await read(`/api/v1/stats?${q}`, key)
    expect(stats.totals).toMatchObject({ pageviews, events: custom.length, visitors: 1 })
    // /tag, /tag#/pricing and /plain; going back may load /tag again (or restore it from the back-forward cache)
    expect(pageviews).toBeGreaterThanOrEqual(3)

    const byEvent = rowsOf(await read(`/api/v1/breakdown?${q}&property=event`, key))
    const names = Object.fromEntries(byEvent.filter((r) => r.value !== 'pageview').map((r) => [r.value, r.events]))
    // going back may load /tag again, which calls plausible('Signup') again: counted from what was sent
    expect(names).toEqual(countBy(custom.map((e) => e.n)))
    expect(Object.keys(names).sort()).toEqual(['Cta Click', 'File Download', 'Outbound Link: Click', 'Signup'])
    const paths = rowsOf(await read(`/api/v1/breakdown?${q}&property=path`, key)).map((r) => r.value)
    expect(paths).toEqual(expect.arrayContaining(['/tag', '/tag/pricing', '/plain']))
    const positions = rowsOf(await read(`/api/v1/breakdown?${q}&property=prop:position`, key))
    expect(positions.map((r) => [r.value, r.events])).toEqual([['hero', 1]])

    // leaving a page sent engagement events (scroll depth, time since the last report): each is an engagement report
    const engagements = all.filter((e) => e.n === 'engagement')
    expect(engagements.length).toBeGreaterThan(0)
    const reports = await services.clickhouse.query<{ scroll_depth: number; engaged_ms: string }>(
      "SELECT scroll_depth, engaged_ms FROM events WHERE site_id = {s:UUID} AND kind = 'engagement'",
      { s: site.id },
    )
    expect(reports.map((r) => Number(r.scroll_depth)).sort()).toEqual(engagements.map((e) => Math.min(e.sd, 100)).sort())
  })

  it('works with @plausible-analytics/tracker, plausible-tracker and plausible-client initialised with this host', async () => {
    const site = fx.b.site
    const page = `http://${site.domain}:${port}`
    const ctx = await context()
    const tab = await ctx.newPage()
    await tab.goto(`${page}/npm`)
    await waitFor((e) => e.d === site.domain && e.n === 'pageview', 'pageview from the npm tracker')
    await tab.click('#buy')
    const purchase = await waitFor((e) => e.d === site.domain && e.n === 'Purchase', 'custom event')
    expect(purchase).toMatchObject({ p: { plan: 'team' }, $: { amount: 49, currency: 'EUR' } })
    await tab.click('#tagged')
    await waitFor((e) => e.d === site.domain && e.n === 'Newsletter', 'tagged event')
    await tab.click('#legacy')
    const legacy = await waitFor((e) => e.d === site.domain && e.n === 'Legacy Event', 'older npm tracker event')
    // the older tracker sends its props as JSON text
    expect(legacy.p).toBe('{"tracker":"old"}')
    await tab.click('#client')
    const trial = await waitFor((e) => e.d === site.domain && e.n === 'Trial', 'plausible-client event')
    // plausible-client sends props and revenue as JSON text, under p and revenue
    expect(trial).toMatchObject({ p: '{"plan":"solo","seats":3}', revenue: '{"currency":"EUR","amount":12.5}' })
    await tab.click('#out')
    await waitFor((e) => e.d === site.domain && e.n === 'Outbound Link: Click', 'outbound link click')
    await ctx.close()

    const all = received.filter((e) => e.d === site.domain)
    expect(all.filter((e) => e.dropped)).toEqual([])
    const write = await createApiKey(services.repositories, { orgId: fx.b.org.id, name: 'goals', scope: 'write' }, services.now())
    const goal = await app.request('http://api.test/api/v1/goals', {
      method: 'POST',
      headers: { authorization: `Bearer ${write.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ site_id: site.id, name: 'Purchase', type: 'event', matchValue: 'Purchase', currency: 'EUR' }),
    })
    expect(goal.status).toBe(201)
    const trialGoal = await app.request('http://api.test/api/v1/goals', {
      method: 'POST',
      headers: { authorization: `Bearer ${write.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ site_id: site.id, name: 'Trial', type: 'event', matchValue: 'Trial', currency: 'EUR' }),
    })
    expect(trialGoal.status).toBe(201)

    const q = `site_id=${site.id}&range=today`
    const key = fx.b.read.key
    const byEvent = Object.fromEntries(rowsOf(await read(`/api/v1/breakdown?${q}&property=event`, key)).map((r) => [r.value, r.events]))
    expect(byEvent).toMatchObject({ Purchase: 1, Newsletter: 1, 'Legacy Event': 1, 'Outbound Link: Click': 1, Trial: 1 })
    const stats = await read(`/api/v1/stats?${q}`, key)
    const sent = all.filter((e) => e.n !== 'engagement')
    expect(stats.totals).toMatchObject({
      pageviews: sent.filter((e) => e.n === 'pageview').length,
      events: sent.filter((e) => e.n !== 'pageview').length,
      visitors: 1,
    })
    const plans = rowsOf(await read(`/api/v1/breakdown?${q}&property=prop:plan`, key))
    expect(plans.map((r) => [r.value, r.events]).sort()).toEqual([
      ['solo', 1],
      ['team', 1],
    ])
    const seats = rowsOf(await read(`/api/v1/breakdown?${q}&property=prop:seats`, key))
    expect(seats.map((r) => [r.value, r.events])).toEqual([['3', 1]])
    const goals = rowsOf(await read(`/api/v1/breakdown?${q}&property=goal`, key))
    expect(goals.find((r) => r.value === 'Purchase')).toMatchObject({ conversions: 1, revenue: { amount: 49, currency: 'EUR' } })
    // plausible-client's revenue, sent as JSON text, is read as Plausible reads it
    expect(goals.find((r) => r.value === 'Trial')).toMatchObject({ conversions: 1, revenue: { amount: 12.5, currency: 'EUR' } })
  })

  it('leaves a visit whose only custom event was sent with {interactive: false} a bounce, on /api/v1 and /api/v2/query', async () => {
    const site = bounces.sites[0]
    const page = `http://${site.domain}:${port}`
    // two visitors (two browsers), each one pageview and one custom event: Autoplay non-interactive, Play interactive
    for (const [userAgent, path, name] of [
      [DESKTOP_CHROME, '/autoplay', 'Autoplay'],
      [DESKTOP_FIREFOX, '/play', 'Play'],
    ]) {
      const ctx = await browser.newContext({ userAgent, viewport: { width: 1280, height: 800 } })
      const tab = await ctx.newPage()
      await tab.goto(`${page}${path}`)
      await tab.waitForFunction(() => (window as any).eventResult)
      expect(await tab.evaluate(() => (window as any).eventResult)).toEqual({ status: 202 })
      await ctx.close()
      await waitFor((e) => e.d === site.domain && e.n === name, name)
    }
    const sent = received.filter((e) => e.d === site.domain && e.n !== 'engagement')
    expect(sent.filter((e) => e.dropped)).toEqual([])
    // Plausible's script marks the non-interactive call with i: false, and sends nothing for an interactive one
    expect(sent.filter((e) => e.n !== 'pageview').map((e) => [e.n, e.i])).toEqual([
      ['Autoplay', false],
      ['Play', undefined],
    ])
    expect(sent.filter((e) => e.n === 'pageview')).toHaveLength(2)

    // by hand: two visits of one pageview each; Autoplay's leaves its visit a bounce, Play's does not
    const stats = await read(`/api/v1/stats?site_id=${site.id}&range=today`, bounces.key)
    expect(stats.totals).toMatchObject({ visitors: 2, visits: 2, pageviews: 2, events: 2, bounceRate: 0.5 })
    const res = await app.request('http://api.test/api/v2/query', {
      method: 'POST',
      headers: { authorization: `Bearer ${bounces.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ site_id: site.domain, metrics: ['visits', 'events', 'bounce_rate'], date_range: 'day' }),
    })
    expect(res.status).toBe(200)
    // the Stats API's events are the pageviews and custom events: 2 + 2
    expect(((await res.json()) as { results: unknown }).results).toEqual([{ metrics: [2, 4, 50], dimensions: [] }])
  })

  it("the Events API's curl example works as written with only the host changed", async () => {
    // the example's domain, as a site of its own
    const { sites } = await orgWithSites(services, 'Dummy', [{ domain: 'dummy.site' }])
    const { stdout } = await promisify(execFile)('curl', [
      '-i',
      '-X',
      'POST',
      `${api}/api/event`,
      '-H',
      'User-Agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_6) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/85.0.4183.121 Safari/537.36 OPR/71.0.3770.284',
      '-H',
      'X-Forwarded-For: 127.0.0.1',
      '-H',
      'Content-Type: application/json',
      '--data',
      '{"name":"pageview","url":"http://dummy.site","domain":"dummy.site"}',
    ])
    expect(stdout).toMatch(/^HTTP\/1\.1 202/)
    expect(stdout.toLowerCase()).not.toMatch(/^x-plausible-dropped:/m)
    const rows = await services.clickhouse.query<{ name: string; pathname: string; hostname: string; browser: string }>(
      'SELECT name, pathname, hostname, browser FROM events WHERE site_id = {s:UUID}',
      { s: sites[0].id },
    )
    expect(rows).toEqual([{ name: 'pageview', pathname: '/', hostname: 'dummy.site', browser: 'Opera' }])
  })
})
