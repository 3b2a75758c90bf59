import { beforeAll, describe, expect, it } from 'vitest'
import { type KvKind, REDIS_URL, orgWithSites, harness, type Harness } from '../helpers'
import { createApp } from '../../functions/app'
import { openRepositories } from '../../lib/runtime/repositories'
import type { Site } from '../../lib/sites/sites'

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0'

interface Row {
  name: string
  kind: string
  hostname: string
  pathname: string
  referrer: string
  props: Record<string, string>
  revenue_amount: string
  revenue_currency: string
  engaged_ms: string
  scroll_depth: string
  visitor_id: string
  screen_class: string
}

const STORES: KvKind[] = REDIS_URL ? ['embedded', 'redis'] : ['embedded']

describe.each(STORES)("Plausible's Events API payload on POST /api/event (%s store)", (kv) => {
  let t: Harness
  let other: Site

  beforeAll(async () => {
    // the domain index is global to a store: a store of this file's own
    t = await harness({ kv, ownKeys: true })
    // a third site, of another organization, for comma lists across organizations
    ;({
      sites: [other],
    } = await orgWithSites(t.services, 'Org C', [{ domain: `c-${crypto.randomUUID().slice(0, 8)}.example.net` }]))
  })

  // each call another visitor unless told: referrer and screen class are the visit's, from its first hit
  const anyone = () => `198.18.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`
  const post = (body: unknown, { type = 'application/json', ua = FIREFOX, xff = anyone() } = {}) =>
    t.app.request('http://api.test/api/event', {
      method: 'POST',
      headers: { 'content-type': type, 'user-agent': ua, 'x-forwarded-for': xff },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const rows = async (site: Site, path: string) =>
    t.clickhouse.query<Row>(
      `SELECT name, kind, hostname, pathname, referrer, props, toString(revenue_amount) AS revenue_amount, revenue_currency,
              engaged_ms, scroll_depth, toString(visitor_id) AS visitor_id, screen_class
       FROM events WHERE site_id = {s:UUID} AND pathname = {p:String} ORDER BY timestamp, name`,
      { s: site.id, p: path },
    )
  const url = (site: Site, path: string) => `https://${site.domain}${path}`

  it('takes the short fields, as JSON or text/plain, and stores what they say', async () => {
    const a = t.a.site
    for (const type of ['application/json', 'text/plain']) {
      const res = await post(
        {
          n: 'Signup',
          u: url(a, `/short-${type.split('/')[1]}?x=1`),
          d: a.domain,
          r: 'https://news.ycombinator.com/item?id=1',
          p: { plan: 'pro', seats: 3 },
          $: { amount: '19.90', currency: 'eur' },
          i: true,
          w: 390,
          v: 36,
        },
        { type },
      )
      expect(res.status).toBe(202)
      expect(res.headers.get('x-plausible-dropped')).toBeNull()
      expect(res.headers.get('x-dropped')).toBeNull()
    }
    for (const path of ['/short-json', '/short-plain']) {
      expect(await rows(a, path)).toMatchObject([
        {
          name: 'Signup',
          kind: 'custom',
          hostname: a.domain,
          referrer: 'https://news.ycombinator.com/item?id=1',
          props: { plan: 'pro', seats: '3' },
          revenue_amount: '19.9',
          revenue_currency: 'EUR',
          screen_class: 'Mobile',
        },
      ])
    }
  })

  it('takes the long fields, props as JSON text (the older npm tracker) and numeric revenue', async () => {
    const a = t.a.site
    const res = await post({
      name: 'pageview',
      url: url(a, '/long'),
      domain: a.domain,
      referrer: null,
      props: JSON.stringify({ author: 'ann' }),
      revenue: { amount: 5, currency: 'USD' },
    })
    expect(res.status).toBe(202)
    expect(await rows(a, '/long')).toMatchObject([
      { name: 'pageview', kind: 'pageview', referrer: '', props: { author: 'ann' }, revenue_amount: '5', revenue_currency: 'USD' },
    ])
  })

  it("records a comma list's event for each site it names, across organizations, and drops the names of no site", async () => {
    const [a, b] = [t.a.site, t.b.site]
    // a rollup, as Plausible keeps it: a page of one site listed is kept by every site listed, without a space too
    const res = await post({ n: 'pageview', u: url(a, '/rollup'), d: `${a.domain},${other.domain}` })
    expect([res.status, res.headers.get('x-plausible-dropped'), res.headers.get('x-dropped')]).toEqual([202, null, null])
    expect(await rows(a, '/rollup')).toHaveLength(1)
    expect(await rows(other, '/rollup')).toHaveLength(1)
    const custom = await post({ n: 'Signup', u: url(b, '/rollup-event'), d: `${other.domain}, ${b.domain}`, p: { plan: 'pro' } })
    expect([custom.status, custom.headers.get('x-dropped')]).toEqual([202, null])
    for (const site of [b, other]) expect(await rows(site, '/rollup-event')).toMatchObject([{ name: 'Signup', props: { plan: 'pro' } }])
    // a page of none of the sites listed is still dropped by each (a copy of the site elsewhere)
    const copy = await post({ n: 'pageview', u: 'https://copycat.example.net/rollup', d: `${a.domain},${other.domain}` })
    expect([copy.status, copy.headers.get('x-dropped')]).toEqual([202, 'not-kept'])
    expect(await rows(a, '/rollup')).toHaveLength(1)
    expect(await rows(other, '/rollup')).toHaveLength(1)

    // a page on a hostname both sites allow is recorded for each, once however often it is listed
    for (const site of [a, b]) {
      await t.services.sites.update(site.id, (s) => ({ ...s, tracking: { ...s.tracking, allowedHostnames: ['shared.example.io'] } }))
    }
    const both = await post({ n: 'pageview', u: 'https://shared.example.io/both', d: `${a.domain},${b.domain.toUpperCase()},${a.domain}` })
    expect(both.status).toBe(202)
    expect(both.headers.get('x-plausible-dropped')).toBeNull()
    expect(await rows(a, '/both')).toHaveLength(1)
    expect(await rows(b, '/both')).toHaveLength(1)

    const partly = await post({ n: 'pageview', u: 'https://shared.example.io/partly', d: `${a.domain},nobody-here.example` })
    expect(partly.status).toBe(202)
    expect(partly.headers.get('x-plausible-dropped')).toBe('1')
    expect(partly.headers.get('x-dropped')).toBe('not-kept')
    expect(await rows(a, '/partly')).toHaveLength(1)
  })

  it('answers 202 with x-plausible-dropped and X-Dropped: not-kept whatever the reason, so no answer tells a tracked domain', async () => {
    const a = t.a.site
    const unknown = await post({ n: 'pageview', u: 'https://nobody-here.example/x', d: 'nobody-here.example' })
    expect([unknown.status, unknown.headers.get('x-plausible-dropped'), unknown.headers.get('x-dropped')]).toEqual([202, '1', 'not-kept'])
    const bot = await post({ n: 'pageview', u: url(a, '/bot'), d: a.domain }, { ua: 'curl/8.5.0' })
    expect([bot.status, bot.headers.get('x-plausible-dropped'), bot.headers.get('x-dropped')]).toEqual([202, '1', 'not-kept'])
    const elsewhere = await post({ n: 'pageview', u: 'https://copycat.example.net/bot', d: a.domain })
    expect([elsewhere.headers.get('x-plausible-dropped'), elsewhere.headers.get('x-dropped')]).toEqual(['1', 'not-kept'])
    expect(await rows(a, '/bot')).toHaveLength(0)
    expect(await rows(a, '/bot')).toHaveLength(0)
  })

  it('counts the first valid address of X-Forwarded-For as the visitor', async () => {
    const a = t.a.site
    const send = (xff: string) => post({ n: 'pageview', u: url(a, '/xff'), d: a.domain }, { xff })
    for (const xff of ['198.51.100.7', 'unknown, 198.51.100.7, 10.0.0.1', ' , 198.51.100.8', '2001:db8::1, 198.51.100.7']) {
      expect((await send(xff)).status).toBe(202)
    }
    const ids = (await rows(a, '/xff')).map((r) => r.visitor_id)
    expect(ids).toHaveLength(4)
    // the first two name the same address; the third and the fourth each another
    expect(new Set(ids).size).toBe(3)
    const [first, second, third, fourth] = (
      await t.clickhouse.query<{ id: string }>(
        `SELECT toString(visitor_id) AS id FROM events WHERE site_id = {s:UUID} AND pathname = '/xff' ORDER BY timestamp`,
        { s: a.id },
      )
    ).map((r) => r.id)
    expect(first).toBe(second)
    expect(new Set([first, third, fourth]).size).toBe(3)
  })

  it("turns engagement events into the page view's engagement reports: total time so far and scroll depth", async () => {
    const a = t.a.site
    const page = url(a, '/read')
    const send = (body: Record<string, unknown>) => post({ d: a.domain, u: page, ...body }, { xff: '198.51.100.50' })
    expect((await send({ n: 'pageview' })).status).toBe(202)
    // Plausible's tracker reports the time since its last report, and the deepest scroll so far
    expect((await send({ n: 'engagement', sd: 40, e: 3000, p: {} })).status).toBe(202)
    expect((await send({ n: 'engagement', sd: 70, e: 2500 })).status).toBe(202)
    // -1: not measured yet
    expect((await send({ n: 'engagement', sd: -1, e: 500 })).status).toBe(202)
    // a new view of the page starts its total anew
    expect((await send({ n: 'pageview' })).status).toBe(202)
    expect((await send({ n: 'engagement', sd: 20, e: 1200 })).status).toBe(202)
    const reports = (await rows(a, '/read')).filter((r) => r.kind === 'engagement')
    expect(reports.map((r) => [Number(r.engaged_ms), Number(r.scroll_depth)])).toEqual([
      [3000, 40],
      [5500, 70],
      [6000, 0],
      [1200, 20],
    ])
  })

  it("keeps Plausible's event names as custom events, even names our own tracker uses for its kinds", async () => {
    const a = t.a.site
    for (const n of ['click', 'Outbound Link: Click', 'error']) {
      const res = await post({ n, u: url(a, '/names'), d: a.domain, p: { url: 'https://example.org/' } })
      expect(res.status).toBe(202)
    }
    const stored = await rows(a, '/names')
    expect(stored.map((r) => [r.name, r.kind]).sort()).toEqual([
      ['Outbound Link: Click', 'custom'],
      ['click', 'custom'],
      ['error', 'custom'],
    ])
  })

  it('puts the hash route into the path when the payload says h: 1', async () => {
    const a = t.a.site
    await post({ n: 'pageview', u: url(a, '/app#/settings/profile'), d: a.domain, h: 1 })
    await post({ n: 'pageview', u: url(a, '/app#/not-routed'), d: a.domain, h: 0 })
    expect(await rows(a, '/app/settings/profile')).toHaveLength(1)
    expect(await rows(a, '/app')).toHaveLength(1)
  })

  it('finds a site by its custom domain, and with or without www.', async () => {
    const b = t.b.site
    const custom = `stats.${b.domain.replace('.example.org', '')}.example`
    await t.services.sites.update(b.id, (s) => ({ ...s, tracking: { ...s.tracking, customDomain: custom } }))
    await post({ n: 'pageview', u: url(b, '/by-custom'), d: custom })
    await post({ n: 'pageview', u: url(b, '/by-www'), d: `www.${b.domain}` })
    expect(await rows(b, '/by-custom')).toHaveLength(1)
    expect(await rows(b, '/by-www')).toHaveLength(1)
    // once detached, the custom domain names no site
    await t.services.sites.update(b.id, (s) => ({ ...s, tracking: { ...s.tracking, customDomain: null } }))
    const res = await post({ n: 'pageview', u: url(b, '/by-custom'), d: custom })
    expect(res.headers.get('x-dropped')).toBe('not-kept')
  })

  it('a domain several organizations claim is kept only for one that proved it controls it, and for none before', async () => {
    const domain = `claimed-${crypto.randomUUID().slice(0, 8)}.example`
    const {
      sites: [first],
    } = await orgWithSites(t.services, 'First claimant', [{ domain }])
    // one claim: kept, as before
    expect((await post({ n: 'pageview', u: `https://${domain}/one-claim`, d: domain })).headers.get('x-dropped')).toBeNull()
    expect(await rows(first, '/one-claim')).toHaveLength(1)
    const {
      sites: [second],
    } = await orgWithSites(t.services, 'Second claimant', [{ domain }])
    // two organizations, neither proved the domain: kept by none, answered exactly as a domain nobody tracks
    const contested = await post({ n: 'pageview', u: `https://${domain}/contested`, d: domain })
    const nobody = await post({ n: 'pageview', u: 'https://nobody-at-all.example/contested', d: 'nobody-at-all.example' })
    const answer = (res: Response) => [res.status, ...[...res.headers].filter(([name]) => name !== 'x-request-id')]
    expect(answer(contested)).toEqual(answer(nobody))
    expect(await rows(first, '/contested')).toHaveLength(0)
    expect(await rows(second, '/contested')).toHaveLength(0)
    // the second proves it: an install check found its snippet on the domain's homepage
    await t.services.sites.update(second.id, (s) => ({ ...s, install: { ...s.install, installed: true } }))
    expect((await post({ n: 'pageview', u: `https://${domain}/proved`, d: domain })).headers.get('x-dropped')).toBeNull()
    expect(await rows(second, '/proved')).toHaveLength(1)
    expect(await rows(first, '/proved')).toHaveLength(0)
  })

  it('indexes the sites stored before the domain index existed, once, at the first lookup that misses', async () => {
    const a = t.a.site
    // a process starting on a store written by an older version: no index entry for the site, and no mark of a complete index
    await t.kv.del(`domain-sites:${a.domain}`, 'domain-sites:indexed')
    const started = createApp({ ...t.services, repositories: openRepositories(t.services.kv) })
    const res = await started.request('http://api.test/api/event', {
      method: 'POST',
      headers: { 'user-agent': FIREFOX, 'x-forwarded-for': anyone() },
      body: JSON.stringify({ n: 'pageview', u: url(a, '/backfilled'), d: a.domain }),
    })
    expect([res.status, res.headers.get('x-dropped')]).toEqual([202, null])
    expect(await rows(a, '/backfilled')).toHaveLength(1)
    expect(await t.kv.exists('domain-sites:indexed')).toBe(1)
  })

  it('when sites of two organizations both proved a domain they claim, the site created first answers to it', async () => {
    const domain = `twice-${crypto.randomUUID().slice(0, 8)}.example.com`
    const {
      sites: [first],
    } = await orgWithSites(t.services, 'First', [{ domain }], new Date(Date.now() - 60_000))
    const {
      sites: [second],
    } = await orgWithSites(t.services, 'Second', [{ domain }])
    for (const site of [first, second]) {
      await t.services.sites.update(site.id, (s) => ({ ...s, install: { ...s.install, installed: true } }))
    }
    await post({ n: 'pageview', u: `https://${domain}/claimed`, d: domain })
    expect(await rows(first, '/claimed')).toHaveLength(1)
    expect(await rows(second, '/claimed')).toHaveLength(0)
  })

  it("serves Plausible's script names, in any combination of the extensions it has, and names one it has not", async () => {
    const [plain, variant, reordered] = await Promise.all(
      ['script.js', 'script.hash.outbound-links.tagged-events.js', 'script.tagged-events.hash.outbound-links.js'].map((f) =>
        t.app.request(`http://api.test/js/${f}`),
      ),
    )
    expect([plain.status, variant.status, reordered.status]).toEqual([200, 200, 200])
    const [ours, compatible] = [await plain.text(), await variant.text()]
    // our tracker hands Plausible's tag (data-domain) over to the compatible build, which reads the extensions from its name
    expect(ours).toContain('data-domain')
    expect(compatible).toContain('Outbound Link: Click')
    expect(compatible).not.toBe(ours)
    expect(await reordered.text()).toBe(compatible)
    expect(variant.headers.get('cache-control')).toContain('max-age=3600')
    const unknown = await t.app.request('http://api.test/js/script.outbound-links.amp.js')
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: string }).error).toBe('no such script: the extension "amp" is not supported')
  })

  it('refuses a payload it cannot read, naming the field as sent', async () => {
    const a = t.a.site
    const error = async (body: unknown) => {
      const res = await post(body)
      expect(res.status).toBe(400)
      return ((await res.json()) as { error: string }).error
    }
    expect(await error({ n: 'pageview', name: 'pageview', u: url(a, '/'), d: a.domain })).toBe('n and name: send one of them')
    expect(await error({ n: 'pageview', u: 'not a url', d: a.domain })).toBe('u: must be an absolute http(s) URL')
    expect(await error({ n: 'pageview', u: url(a, '/'), d: a.domain, p: '{oops' })).toBe('p: expected an object or its JSON text')
    expect(await error({ n: 'Buy', u: url(a, '/'), d: a.domain, $: { amount: 'lots', currency: 'EUR' } })).toBe(
      '$.amount: must be a decimal amount',
    )
    expect(await error({ n: 'pageview', u: url(a, '/'), d: `${a.domain},,x.example` })).toBe(
      'd: expected a domain or a comma-separated list of domains',
    )
    expect(await error({ n: 'pageview', u: url(a, '/'), d: a.domain, sd: 50 })).toBe('sd: only on an engagement event')
    expect(await error({ n: 'pageview', u: url(a, '/'), d: a.domain, utm: 'x' })).toBe('unknown field "utm"')
    expect(await error({ u: url(a, '/'), d: a.domain })).toBe('name: expected a string')
  })

  it('still takes our own payload, and never reads a payload with both site and domain as either', async () => {
    const a = t.a.site
    const own = await post({ site: a.snippetId, name: 'pageview', url: url(a, '/own'), screenWidth: 1440 }, { type: 'text/plain' })
    expect(own.status).toBe(202)
    expect(own.headers.get('x-plausible-dropped')).toBeNull()
    expect(await rows(a, '/own')).toMatchObject([{ name: 'pageview', screen_class: 'Desktop' }])
    const mixed = await post({ site: a.snippetId, name: 'pageview', url: url(a, '/mixed'), d: a.domain })
    expect(mixed.status).toBe(400)
    expect(((await mixed.json()) as { error: string }).error).toBe('unknown field "d"')
    // our payload with an unknown site is still a 400, not Plausible's silent drop
    const unknown = await post({ site: 'nosuchsite', name: 'pageview', url: url(a, '/own') })
    expect(unknown.status).toBe(400)
  })
})
