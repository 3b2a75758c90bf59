import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { clickRolledDaysSql } from '../../lib/reports/query/compile/clicks'
import { errorRolledDaysSql } from '../../lib/reports/query/compile/errors'
import { type SignatureRow, rolledDaysOf } from '../../lib/reports/query/plan'
import { resolveRange } from '../../lib/reports/query/range'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../../lib/reports/rollup/refresh'
import { execute } from '../../lib/storage/clickhouse/execute'
import { newSite } from '../../lib/sites/sites'
import { client, getOk, testServices } from '../helpers'
import { NOW, UAS, localDate } from './report-reference'

/**
 * The behaviour reads against a reference over the fixture hits: errors whose messages vary in
 * numbers, ids and URLs (each written with the group it must fall in), clicks on elements that
 * are sometimes dead, and custom properties. Visitors are (address, agent, site-local day).
 */

const TZ = 'Europe/Berlin'
const IPS: [string, string][] = [
  ['81.2.69.142', 'GB'],
  ['8.8.8.8', 'US'],
  ['46.114.0.1', 'DE'],
  ['1.1.1.1', 'AU'],
]
const BROWSERS = ['Chrome', 'Firefox', 'Safari']
const DEVICES = ['Desktop', 'Desktop', 'Mobile']
const PATHS = ['/', '/cart', '/checkout', '/blog/x']

type Hit = { ts: number; ip: number; ua: number; path: string }
type ErrorHit = Hit & { group: string; name: string; message: string }
type ClickHit = Hit & { selector: string; text: string; tag: string; url: string; interactive: boolean; dead: boolean }
type PropHit = Hit & { props: Record<string, string> }

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

const ERROR_GROUPS: {
  group: string
  make: (r: () => number) => { name: string; message: string; stack?: string; source?: string; line?: number }
}[] = [
  {
    group: 'render',
    make: (r) => ({
      name: 'TypeError',
      message: "Cannot read properties of undefined (reading 'price')",
      stack: `TypeError: Cannot read properties of undefined (reading 'price')\n    at render (https://shop.test/assets/app.js:1:${Math.floor(r() * 9000)})\n    at main (https://shop.test/assets/app.js:1:20)`,
    }),
  },
  {
    group: 'request',
    make: (r) => {
      const n = Math.floor(r() * 100_000)
      return {
        name: 'Error',
        message: `Request ${n} failed for https://api.shop.test/orders/${n * 7}?t=${Math.floor(r() * 1e9).toString(36)}`,
        stack: `Error: Request ${n} failed\n    at load (https://shop.test/assets/api.js:${Math.floor(r() * 300)}:${Math.floor(r() * 80)})`,
      }
    },
  },
  {
    group: 'order',
    make: (r) => {
      const hex = () =>
        Math.floor(r() * 0xffffffff)
          .toString(16)
          .padStart(8, '0')
      const id = `${hex()}-${hex().slice(0, 4)}-4${hex().slice(0, 3)}-8${hex().slice(0, 3)}-${hex()}${hex().slice(0, 4)}`
      return {
        name: 'NotFoundError',
        message: `Order ${id} not found after ${Math.floor(r() * 900)} ms`,
        source: 'https://shop.test/assets/order.js',
        line: Math.floor(r() * 50),
      }
    },
  },
  {
    group: 'timeout',
    make: (r) => ({
      name: 'UnhandledRejection',
      message: `Timeout of ${Math.floor(r() * 9000)}ms exceeded (session a${Math.floor(r() * 1e12).toString(36)}9)`,
      stack: `fetchCart@https://shop.test/assets/cart.js:${Math.floor(r() * 90)}:5\n@https://shop.test/assets/cart.js:1:1`,
    }),
  },
]

const CLICK_TARGETS = [
  { selector: '#buy', text: 'Buy now', tag: 'button', url: '', interactive: true, deadRate: 0 },
  { selector: 'span.price', text: '€10', tag: 'span', url: '', interactive: false, deadRate: 0.6 },
  { selector: 'img.hero', text: '', tag: 'img', url: '', interactive: false, deadRate: 1 },
  { selector: 'a.partner', text: 'Partner', tag: 'a', url: 'https://partner.test/deal', interactive: true, deadRate: 0 },
  { selector: 'a.docs', text: 'Docs', tag: 'a', url: '/docs', interactive: true, deadRate: 0 },
]

function behaviourFixture(snippet: string, domain: string, seed: number) {
  const r = prng(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]
  const start = Date.parse('2026-09-20T00:00:00Z')
  const hit = (): Hit => ({
    ts: start + Math.floor(r() * (NOW.getTime() - 3_600_000 - start)),
    ip: Math.floor(r() * IPS.length),
    ua: Math.floor(r() * UAS.length),
    path: pick(PATHS),
  })
  const errors: ErrorHit[] = []
  const clicks: ClickHit[] = []
  const props: PropHit[] = []
  const lines: string[] = []
  const line = (h: Hit, name: string, extra: Record<string, unknown>) =>
    lines.push(
      JSON.stringify({
        timestamp: new Date(h.ts).toISOString(),
        site: snippet,
        name,
        url: `https://${domain}${h.path}`,
        ip: IPS[h.ip][0],
        userAgent: UAS[h.ua],
        ...extra,
      }),
    )
  for (let i = 0; i < 160; i++) {
    const h = hit()
    const { group, make } = pick(ERROR_GROUPS)
    const error = make(r)
    errors.push({ ...h, group, name: error.name, message: error.message })
    line(h, 'error', { error })
  }
  for (let i = 0; i < 200; i++) {
    const h = hit()
    const t = pick(CLICK_TARGETS)
    const dead = r() < t.deadRate
    clicks.push({ ...h, selector: t.selector, text: t.text, tag: t.tag, url: t.url, interactive: t.interactive, dead })
    line(h, 'click', {
      click: { selector: t.selector, text: t.text, tag: t.tag, ...(t.url ? { href: t.url } : {}), interactive: t.interactive, dead },
    })
  }
  for (let i = 0; i < 120; i++) {
    const h = hit()
    const p: Record<string, string> = { plan: pick(['free', 'pro', 'team']) }
    if (r() < 0.4) p.coupon = pick(['SPRING', 'WELCOME'])
    props.push({ ...h, props: p })
    line(h, 'Signup', { props: p })
    // vitals carry attribution under props too; they are not custom properties
    if (r() < 0.3) line(hit(), 'vital', { vital: { name: 'LCP', value: 1800, rating: 'good', attribution: { element: 'img.hero' } } })
  }
  return { lines, errors, clicks, props }
}

type Fixture = ReturnType<typeof behaviourFixture>
const visitorOf = (h: Hit) => `${h.ip}|${h.ua}|${localDate(h.ts, TZ)}`
const within = <T extends Hit>(hits: T[], range: { from: string; to: string }) =>
  hits.filter((h) => h.ts >= Date.parse(range.from) && h.ts < Date.parse(range.to))
/** The most frequent value, ties to the smallest. */
function mostFrequent(values: string[]): string {
  const counts = new Map<string, number>()
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1)
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0][0]
}
const distinct = (values: string[]) => new Set(values).size
/** Rows of {value, count, visitors}, most first, ties by value. */
function countRows<T extends Hit>(hits: T[], valueFor: (h: T) => string) {
  const by = new Map<string, T[]>()
  for (const h of hits) by.set(valueFor(h), [...(by.get(valueFor(h)) ?? []), h])
  return [...by]
    .map(([value, hs]) => ({ value, count: hs.length, visitors: distinct(hs.map(visitorOf)) }))
    .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1))
}

function expectedErrorGroups(errors: ErrorHit[]) {
  return Object.fromEntries(
    [...new Set(errors.map((e) => e.group))].map((group) => {
      const hits = errors.filter((e) => e.group === group)
      const last = hits.reduce((a, b) => (b.ts > a.ts ? b : a))
      return [
        group,
        {
          errorName: hits[0].name,
          message: last.message,
          count: hits.length,
          visitors: distinct(hits.map(visitorOf)),
          paths: distinct(hits.map((h) => h.path)),
          topPath: mostFrequent(hits.map((h) => h.path)),
          topBrowser: mostFrequent(hits.map((h) => BROWSERS[h.ua])),
          firstSeen: new Date(Math.min(...hits.map((h) => h.ts))).toISOString(),
          lastSeen: new Date(last.ts).toISOString(),
        },
      ]
    }),
  )
}

const errorSummary = (errors: ErrorHit[]) => ({
  errors: errors.length,
  groups: distinct(errors.map((e) => e.group)),
  visitors: distinct(errors.map(visitorOf)),
})

function expectedClicks(clicks: ClickHit[]) {
  const key = (c: ClickHit) => JSON.stringify([c.selector, c.text, c.tag, c.url])
  const groups = new Map<string, ClickHit[]>()
  for (const c of clicks) groups.set(key(c), [...(groups.get(key(c)) ?? []), c])
  return [...groups.values()]
    .map((hs) => ({
      selector: hs[0].selector,
      text: hs[0].text,
      tag: hs[0].tag,
      url: hs[0].url,
      interactive: hs[0].interactive,
      count: hs.length,
      visitors: distinct(hs.map(visitorOf)),
      deadClicks: hs.filter((h) => h.dead).length,
      topPath: mostFrequent(hs.map((h) => h.path)),
      paths: distinct(hs.map((h) => h.path)),
    }))
    .sort(
      (a, b) =>
        b.count - a.count ||
        [a.selector, a.text, a.tag, a.url].join('\u0000').localeCompare([b.selector, b.text, b.tag, b.url].join('\u0000')),
    )
}

describe('behaviour reads', () => {
  let call: ReturnType<typeof client>
  let key = ''
  let fx: Fixture
  const ids: Record<'shop' | 'empty' | 'ga4', string> = { shop: '', empty: '', ga4: '' }

  beforeAll(async () => {
    const services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Behaviour', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const shop = newSite({ domain: 'shop.behaviour.test', timezone: TZ }, org.id, NOW)
    const empty = newSite({ domain: 'empty.behaviour.test', timezone: TZ }, org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.behaviour.test', timezone: TZ }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [shop, empty, ga4]) await services.repositories.sites.create(site)
    fx = behaviourFixture(shop.snippetId, shop.domain, 7)
    const result = await importHits(fx.lines, services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
    Object.assign(ids, { shop: shop.id, empty: empty.id, ga4: ga4.id })
  })

  const get = (path: string) => getOk(call, path, key)
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`
  /** The fixture's groups by the name they were written with, keyed by the fingerprint the API gave them. */
  const groupOfFingerprint = (json: { groups: { fingerprint: string; errorName: string }[] }) =>
    new Map(json.groups.map((g) => [g.fingerprint, fx.errors.find((e) => e.name === g.errorName)!.group]))

  describe('errors', () => {
    it('groups messages that vary in numbers, ids and URLs into one group each, with totals against the previous window', async () => {
      const json = await get(`/api/v1/errors?site_id=${ids.shop}&range=30d`)
      const current = within(fx.errors, json.range)
      expect(json.available).toBe(true)
      expect(json.summary).toEqual(errorSummary(current))
      const length = Date.parse(json.range.to) - Date.parse(json.range.from)
      expect(json.previous).toEqual(
        errorSummary(within(fx.errors, { from: new Date(Date.parse(json.range.from) - length).toISOString(), to: json.range.from })),
      )
      expect(json.groups).toHaveLength(ERROR_GROUPS.length)
      const expected = expectedErrorGroups(current)
      const groups = groupOfFingerprint(json)
      for (const g of json.groups) {
        const { fingerprint, kind, sparkline, ...rest } = g
        expect(kind).toBe('error')
        expect(rest, groups.get(fingerprint)).toEqual(expected[groups.get(fingerprint)!])
        expect(sparkline).toHaveLength(30)
        expect(sparkline.reduce((a: number, b: number) => a + b, 0)).toBe(rest.count)
      }
      expect(json.groups.map((g: { count: number }) => g.count)).toEqual(
        [...json.groups.map((g: { count: number }) => g.count)].sort((a, b) => b - a),
      )
    })

    it('puts each day of the sparkline in its bucket', async () => {
      const json = await get(`/api/v1/errors?site_id=${ids.shop}&range=7d`)
      const group = json.groups[0]
      const name = groupOfFingerprint(json).get(group.fingerprint)
      const days: string[] = []
      for (let d = new Date(json.range.from); days.length < 7; d = new Date(d.getTime() + 86_400_000))
        days.push(localDate(d.getTime() + 3_600_000 * 12, TZ))
      expect(group.sparkline).toEqual(
        days.map((day) => within(fx.errors, json.range).filter((e) => e.group === name && localDate(e.ts, TZ) === day).length),
      )
    })

    it('honours filters and limit', async () => {
      const json = await get(
        `/api/v1/errors?site_id=${ids.shop}&range=30d&limit=2${filtersParam([{ dimension: 'path', operator: 'is', value: ['/checkout'] }])}`,
      )
      const current = within(fx.errors, json.range).filter((e) => e.path === '/checkout')
      expect(json.summary).toEqual(errorSummary(current))
      expect(json.groups).toHaveLength(2)
      const expected = expectedErrorGroups(current)
      for (const g of json.groups) expect(g.count).toBe(expected[groupOfFingerprint(json).get(g.fingerprint)!].count)
      for (const g of json.groups) expect(g.topPath).toBe('/checkout')
    })

    it('details one group: breakdowns and the 20 most recent occurrences; pages paged by offset', async () => {
      const list = await get(`/api/v1/errors?site_id=${ids.shop}&range=30d`)
      const fp = list.groups.find((g: { errorName: string }) => g.errorName === 'Error').fingerprint
      const hits = within(fx.errors, list.range).filter((e) => e.group === 'request')
      const detail = await get(`/api/v1/errors?site_id=${ids.shop}&range=30d&fingerprint=${fp}`)
      expect(detail.group).toEqual(list.groups.find((g: { fingerprint: string }) => g.fingerprint === fp))
      expect(detail.breakdowns.pages).toEqual(countRows(hits, (h) => h.path))
      expect(detail.breakdowns.browsers).toEqual(countRows(hits, (h) => BROWSERS[h.ua]))
      expect(detail.breakdowns.devices).toEqual(countRows(hits, (h) => DEVICES[h.ua]))
      expect(detail.breakdowns.countries).toEqual(countRows(hits, (h) => IPS[h.ip][1]))
      expect(detail.breakdowns.os.reduce((s: number, r: { count: number }) => s + r.count, 0)).toBe(hits.length)
      const recent = [...hits].sort((a, b) => b.ts - a.ts).slice(0, 20)
      expect(
        detail.recent.map((r: { timestamp: string; path: string; message: string; country: string }) => [
          r.timestamp,
          r.path,
          r.message,
          r.country,
        ]),
      ).toEqual(recent.map((h) => [new Date(h.ts).toISOString(), h.path, h.message, IPS[h.ip][1]]))
      const pages = countRows(hits, (h) => h.path)
      const first = await get(`/api/v1/errors?site_id=${ids.shop}&range=30d&fingerprint=${fp}&pages=1&limit=2`)
      expect(first).toMatchObject({ available: true, fingerprint: fp, offset: 0, total: pages.length, pages: pages.slice(0, 2) })
      const second = await get(`/api/v1/errors?site_id=${ids.shop}&range=30d&fingerprint=${fp}&pages=1&limit=2&offset=2`)
      expect(second).toMatchObject({ offset: 2, total: pages.length, pages: pages.slice(2, 4) })
      // a fingerprint with no occurrences in the window
      expect((await get(`/api/v1/errors?site_id=${ids.shop}&range=30d&fingerprint=1`)).group).toBeNull()
    })

    it('refuses bad fingerprints and pages without a fingerprint', async () => {
      for (const bad of ['fingerprint=abc', 'fingerprint=18446744073709551616', 'pages=1', 'fingerprint=1&pages=1&offset=-1']) {
        const res = await call('GET', `/api/v1/errors?site_id=${ids.shop}&${bad}`, { key })
        expect(res.status, bad).toBe(400)
      }
    })
  })

  describe('clicks', () => {
    it('groups clicks by selector, text, tag and link, counting dead ones', async () => {
      const json = await get(`/api/v1/clicks?site_id=${ids.shop}&range=30d`)
      const current = within(fx.clicks, json.range)
      expect(json.available).toBe(true)
      expect(json.summary).toEqual({
        clicks: current.length,
        visitors: distinct(current.map(visitorOf)),
        deadClicks: current.filter((c) => c.dead).length,
      })
      expect(json.clicks).toEqual(expectedClicks(current))
      // the same element is sometimes dead and sometimes not
      const price = json.clicks.find((c: { selector: string }) => c.selector === 'span.price')
      expect(price.deadClicks).toBeGreaterThan(0)
      expect(price.deadClicks).toBeLessThan(price.count)
    })

    it('honours filters and limit', async () => {
      const json = await get(
        `/api/v1/clicks?site_id=${ids.shop}&range=90d&limit=3${filtersParam([{ dimension: 'device', operator: 'is', value: ['Mobile'] }])}`,
      )
      const current = within(fx.clicks, json.range).filter((c) => DEVICES[c.ua] === 'Mobile')
      expect(json.summary.clicks).toBe(current.length)
      expect(json.clicks).toEqual(expectedClicks(current).slice(0, 3))
    })
  })

  describe('properties', () => {
    it('lists custom keys with event and visitor counts, without the collector’s attribution keys', async () => {
      const json = await get(`/api/v1/properties?site_id=${ids.shop}&range=30d`)
      const current = within(fx.props, json.range)
      const keys = ['plan', 'coupon'].map((k) => {
        const hits = current.filter((p) => k in p.props)
        return { key: k, events: hits.length, visitors: distinct(hits.map(visitorOf)) }
      })
      expect(json).toEqual({
        source: 'standalone',
        available: true,
        range: json.range,
        keys: keys.sort((a, b) => b.events - a.events || a.key.localeCompare(b.key)),
      })
    })

    it('lists the values of one key, with filters and limit', async () => {
      const json = await get(`/api/v1/properties?site_id=${ids.shop}&range=30d&property=plan`)
      const current = within(fx.props, json.range)
      const rows = (hits: PropHit[]) =>
        countRows(hits, (p) => p.props.plan).map(({ value, count, visitors }) => ({ value, events: count, visitors }))
      expect(json.values).toEqual(rows(current))
      const gb = await get(
        `/api/v1/properties?site_id=${ids.shop}&range=30d&property=plan&limit=1${filtersParam([{ dimension: 'country', operator: 'is', value: ['GB'] }])}`,
      )
      expect(gb.values).toEqual(rows(current.filter((p) => IPS[p.ip][1] === 'GB')).slice(0, 1))
      const coupon = await get(`/api/v1/properties?site_id=${ids.shop}&range=30d&property=coupon`)
      expect(coupon.values.reduce((s: number, r: { events: number }) => s + r.events, 0)).toBe(
        current.filter((p) => 'coupon' in p.props).length,
      )
      expect((await call('GET', `/api/v1/properties?site_id=${ids.shop}&property=attribution.element`, { key })).status).toBe(400)
    })
  })

  it('an empty site answers zeros and empty lists', async () => {
    const errors = await get(`/api/v1/errors?site_id=${ids.empty}`)
    expect(errors).toMatchObject({
      available: true,
      summary: { errors: 0, groups: 0, visitors: 0 },
      previous: { errors: 0, groups: 0, visitors: 0 },
      groups: [],
    })
    expect(await get(`/api/v1/clicks?site_id=${ids.empty}`)).toMatchObject({
      available: true,
      summary: { clicks: 0, visitors: 0, deadClicks: 0 },
      clicks: [],
    })
    expect(await get(`/api/v1/properties?site_id=${ids.empty}`)).toMatchObject({ available: true, keys: [] })
    expect(await get(`/api/v1/properties?site_id=${ids.empty}&property=plan`)).toMatchObject({ available: true, values: [] })
  })

  it('a site that reads only ga4 answers available: false', async () => {
    expect(await get(`/api/v1/errors?site_id=${ids.ga4}`)).toEqual({
      source: 'ga4',
      available: false,
      summary: { errors: 0, groups: 0, visitors: 0 },
      previous: { errors: 0, groups: 0, visitors: 0 },
      groups: [],
    })
    expect((await get(`/api/v1/errors?site_id=${ids.ga4}&fingerprint=1`)).available).toBe(false)
    expect((await get(`/api/v1/errors?site_id=${ids.ga4}&fingerprint=1&pages=1`)).available).toBe(false)
    expect(await get(`/api/v1/clicks?site_id=${ids.ga4}`)).toEqual({
      source: 'ga4',
      available: false,
      summary: { clicks: 0, visitors: 0, deadClicks: 0 },
      clicks: [],
    })
    expect(await get(`/api/v1/properties?site_id=${ids.ga4}`)).toEqual({ source: 'ga4', available: false, keys: [] })
  })
})

describe('clicks over rolled-up days', () => {
  it('answers what events alone answer: finished days from the rollup, today and a day changed by a late hit from events, filters from events', async () => {
    const services = await testServices({ now: () => NOW })
    const org = await createOrg(services.repositories, 'Clicks rollup', NOW)
    const key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'rolled.behaviour.test', timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    const fx = behaviourFixture(site.snippetId, site.domain, 11)
    expect((await importHits(fx.lines, services.ingestor)).rejected).toBe(0)
    const call = client(services)
    const get = (path: string) => getOk(call, path, key)
    const mobile = [{ dimension: 'device', operator: 'is', value: ['Mobile'] }]
    const reads: { params: string; limit?: number; mobileOnly?: boolean }[] = [
      { params: 'range=30d' },
      { params: 'range=7d' },
      { params: 'range=custom&from=2026-10-01&to=2026-11-20' },
      { params: 'range=90d&limit=2', limit: 2 },
      { params: 'range=yesterday' },
      { params: 'range=today' },
      { params: `range=30d&filters=${encodeURIComponent(JSON.stringify(mobile))}`, mobileOnly: true },
    ]
    const answers = () => Promise.all(reads.map((r) => get(`/api/v1/clicks?site_id=${site.id}&${r.params}`)))
    /** Every read against the reference over these clicks. */
    const expectReference = async (clicks: ClickHit[]) => {
      const jsons = await answers()
      reads.forEach((r, i) => {
        const current = within(clicks, jsons[i].range).filter((c) => !r.mobileOnly || DEVICES[c.ua] === 'Mobile')
        expect(current.length, r.params).toBeGreaterThan(0)
        expect(jsons[i].summary, r.params).toEqual({
          clicks: current.length,
          visitors: distinct(current.map(visitorOf)),
          deadClicks: current.filter((c) => c.dead).length,
        })
        expect(jsons[i].clicks, r.params).toEqual(expectedClicks(current).slice(0, r.limit ?? 100))
      })
      return jsons
    }
    const month = resolveRange({ range: '30d' }, TZ, NOW)
    const today = localDate(NOW.getTime(), TZ)
    const rolledDays = async () =>
      rolledDaysOf({ range: month }, await execute<SignatureRow>(services.clickhouse, clickRolledDaysSql(site.id, month))).days

    const fromEvents = await expectReference(fx.clicks)
    expect(await rolledDays()).toEqual([])
    await refreshRollups(services.clickhouse, services.repositories, NOW, ROLLUP_ALL_DAYS)
    // every finished day of the window with events is rolled up, today is not
    const rolled = await rolledDays()
    expect(rolled.length).toBeGreaterThan(20)
    expect(rolled).not.toContain(today)
    expect(await expectReference(fx.clicks)).toEqual(fromEvents)

    // late hits on a rolled day (a new element, and a known one on a new page, dead) and today: that day goes back to events
    const lateAt = NOW.getTime() - 3 * 86_400_000
    const lateDay = localDate(lateAt, TZ)
    expect(rolled).toContain(lateDay)
    const late: ClickHit[] = [
      {
        ts: lateAt,
        ip: 0,
        ua: 2,
        path: '/late',
        selector: 'button.late',
        text: 'Late',
        tag: 'button',
        url: '',
        interactive: true,
        dead: false,
      },
      {
        ts: lateAt + 60_000,
        ip: 1,
        ua: 0,
        path: '/late',
        selector: '#buy',
        text: 'Buy now',
        tag: 'button',
        url: '',
        interactive: true,
        dead: true,
      },
      {
        ts: NOW.getTime() - 600_000,
        ip: 2,
        ua: 1,
        path: '/cart',
        selector: 'span.price',
        text: '€10',
        tag: 'span',
        url: '',
        interactive: false,
        dead: true,
      },
    ]
    const lines = late.map((c) =>
      JSON.stringify({
        timestamp: new Date(c.ts).toISOString(),
        site: site.snippetId,
        name: 'click',
        url: `https://${site.domain}${c.path}`,
        ip: IPS[c.ip][0],
        userAgent: UAS[c.ua],
        click: { selector: c.selector, text: c.text, tag: c.tag, interactive: c.interactive, dead: c.dead },
      }),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
    const afterLate = await rolledDays()
    expect(afterLate).not.toContain(lateDay)
    expect(afterLate).toHaveLength(rolled.length - 1)
    const withLate = await expectReference([...fx.clicks, ...late])
    // the next refresh rolls that day up again, at its new signature: the same answers
    await refreshRollups(services.clickhouse, services.repositories, NOW, ROLLUP_ALL_DAYS)
    expect(await rolledDays()).toEqual(rolled)
    expect(await expectReference([...fx.clicks, ...late])).toEqual(withLate)
  })
})

describe('errors over rolled-up days', () => {
  /** Site-local dates and hours, formatted once per call (a formatter is costly to make). */
  const local = (hour: boolean) =>
    new Intl.DateTimeFormat('en-CA', {
      timeZone: TZ,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      ...(hour ? { hour: '2-digit', hourCycle: 'h23' } : {}),
    })
  const [localDay, localHour] = [local(false), local(true)]
  const bucketOf = (interval: string) => (ts: number) =>
    interval === 'hour' ? localHour.format(ts) : interval === 'month' ? localDay.format(ts).slice(0, 7) : localDay.format(ts)
  /** The window's buckets in order, found by walking it an hour at a time. */
  function windowBuckets(range: { from: string; to: string; interval: string }) {
    const bucket = bucketOf(range.interval)
    const keys: string[] = []
    for (let t = Date.parse(range.from); t < Date.parse(range.to); t += 3_600_000) if (keys.at(-1) !== bucket(t)) keys.push(bucket(t))
    return keys
  }
  /** The groups read over these errors: most occurrences first, ties by visitors, then by fingerprint as text. */
  function expectedGroupList(errors: ErrorHit[], range: { from: string; to: string; interval: string }, fingerprints: Map<string, string>) {
    const bucket = bucketOf(range.interval)
    const perBucket = new Map<string, number>()
    for (const e of errors) perBucket.set(`${e.group}|${bucket(e.ts)}`, (perBucket.get(`${e.group}|${bucket(e.ts)}`) ?? 0) + 1)
    const keys = windowBuckets(range)
    return Object.entries(expectedErrorGroups(errors))
      .map(([group, g]) => ({
        fingerprint: fingerprints.get(group)!,
        kind: 'error',
        ...g,
        sparkline: keys.map((k) => perBucket.get(`${group}|${k}`) ?? 0),
      }))
      .sort((a, b) => b.count - a.count || b.visitors - a.visitors || (a.fingerprint < b.fingerprint ? -1 : 1))
  }

  it('answers what events alone answer: finished days of both windows from the rollup, today and a day changed by a late error from events, filters from events', async () => {
    const services = await testServices({ now: () => NOW })
    const org = await createOrg(services.repositories, 'Errors rollup', NOW)
    const key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: 'errors.behaviour.test', timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    const fx = behaviourFixture(site.snippetId, site.domain, 13)
    expect((await importHits(fx.lines, services.ingestor)).rejected).toBe(0)
    const call = client(services)
    const get = (path: string) => getOk(call, path, key)
    const checkout = [{ dimension: 'path', operator: 'is', value: ['/checkout'] }]
    const reads: { params: string; limit?: number; checkoutOnly?: boolean }[] = [
      { params: 'range=30d' },
      { params: 'range=7d' },
      { params: 'range=custom&from=2026-10-01&to=2026-11-20' },
      { params: 'range=90d&limit=2', limit: 2 },
      { params: 'range=12mo' },
      { params: 'range=yesterday' },
      { params: 'range=today' },
      { params: `range=30d&filters=${encodeURIComponent(JSON.stringify(checkout))}`, checkoutOnly: true },
    ]
    const answers = () => Promise.all(reads.map((r) => get(`/api/v1/errors?site_id=${site.id}&${r.params}`)))
    /** Every read against the reference over these errors; fingerprints are the API's, found by each group's name. */
    const expectReference = async (errors: ErrorHit[]) => {
      const jsons = await answers()
      const fingerprints = new Map<string, string>(
        jsons[4].groups.map((g: { fingerprint: string; errorName: string }) => [
          errors.find((e) => e.name === g.errorName)!.group,
          g.fingerprint,
        ]),
      )
      reads.forEach((r, i) => {
        const { range } = jsons[i]
        const among = errors.filter((e) => !r.checkoutOnly || e.path === '/checkout')
        const current = within(among, range)
        const length = Date.parse(range.to) - Date.parse(range.from)
        const before = within(among, { from: new Date(Date.parse(range.from) - length).toISOString(), to: range.from })
        expect(current.length, r.params).toBeGreaterThan(0)
        expect(jsons[i].summary, r.params).toEqual(errorSummary(current))
        expect(jsons[i].previous, r.params).toEqual(errorSummary(before))
        expect(jsons[i].groups, r.params).toEqual(expectedGroupList(current, range, fingerprints).slice(0, r.limit ?? 100))
      })
      return jsons
    }
    // the days of the 30d window and of the one before it
    const range = resolveRange({ range: '30d' }, TZ, NOW)
    const both = { ...range, from: range.from.subtract({ days: 30 }) }
    const today = localDate(NOW.getTime(), TZ)
    const rolledDays = async () =>
      rolledDaysOf({ range: both }, await execute<SignatureRow>(services.clickhouse, errorRolledDaysSql(site.id, both))).days

    const fromEvents = await expectReference(fx.errors)
    expect(await rolledDays()).toEqual([])
    await refreshRollups(services.clickhouse, services.repositories, NOW, ROLLUP_ALL_DAYS)
    // every finished day with events is rolled up, in the previous window too; today is not
    const rolled = await rolledDays()
    expect(rolled.length).toBeGreaterThan(45)
    expect(rolled.filter((d) => d < range.from.toPlainDate().toString()).length).toBeGreaterThan(20)
    expect(rolled).not.toContain(today)
    expect(await expectReference(fx.errors)).toEqual(fromEvents)

    // late errors on a rolled day (a new group, and a known one on a new page) and today: that day goes back to events
    const lateAt = NOW.getTime() - 3 * 86_400_000
    const lateDay = localDate(lateAt, TZ)
    expect(rolled).toContain(lateDay)
    const r = prng(99)
    const render = ERROR_GROUPS[0].make(r)
    const late: (ErrorHit & { error: object })[] = [
      {
        ts: lateAt,
        ip: 0,
        ua: 2,
        path: '/late',
        group: 'late',
        error: { name: 'RangeError', message: 'Late 1', stack: 'at late (https://shop.test/late.js:1:1)' },
      },
      {
        ts: lateAt + 60_000,
        ip: 0,
        ua: 2,
        path: '/late',
        group: 'late',
        error: { name: 'RangeError', message: 'Late 2', stack: 'at late (https://shop.test/late.js:1:1)' },
      },
      { ts: lateAt + 120_000, ip: 1, ua: 0, path: '/late', group: 'render', error: render },
      { ts: NOW.getTime() - 600_000, ip: 2, ua: 1, path: '/cart', group: 'render', error: ERROR_GROUPS[0].make(r) },
    ].map((e) => ({ ...e, name: (e.error as { name: string }).name, message: (e.error as { message: string }).message }))
    const lines = late.map((e) =>
      JSON.stringify({
        timestamp: new Date(e.ts).toISOString(),
        site: site.snippetId,
        name: 'error',
        url: `https://${site.domain}${e.path}`,
        ip: IPS[e.ip][0],
        userAgent: UAS[e.ua],
        error: e.error,
      }),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
    const afterLate = await rolledDays()
    expect(afterLate).not.toContain(lateDay)
    expect(afterLate).toHaveLength(rolled.length - 1)
    const withLate = await expectReference([...fx.errors, ...late])
    // the new group is read from events beside the rolled days
    expect(withLate[0].groups.find((g: { errorName: string }) => g.errorName === 'RangeError')).toMatchObject({
      count: 2,
      message: 'Late 2',
    })
    // the next refresh rolls that day up again, at its new signature: the same answers
    await refreshRollups(services.clickhouse, services.repositories, NOW, ROLLUP_ALL_DAYS)
    expect(await rolledDays()).toEqual(rolled)
    expect(await expectReference([...fx.errors, ...late])).toEqual(withLate)
  })
})
