import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { resolveRange } from '../../lib/reports/query/range'
import { rolledDays } from '../../lib/reports/query/run'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { newSite } from '../../lib/sites/sites'
import { client, testServices } from '../helpers'
import { NOW, UAS, localDate } from './report-reference'

/**
 * GET /api/v1/geo against a reference over the fixture hits: visitors are (address, agent,
 * site-local day), visits runs of a visitor's hits with no gap over 30 minutes, and each visit is
 * placed where its address is. The places and coordinates of the addresses were read by hand from
 * the DB-IP City Lite database the Node home looks addresses up in; one address (documentation
 * range) is in no database.
 */

type Place = { country: string; region: string; city: string; lat: number; lon: number } | null
const ADDRESSES: [string, Place][] = [
  ['81.2.69.142', { country: 'GB', region: 'England', city: 'London', lat: 51.5143, lon: -0.0912 }],
  ['2.125.160.216', { country: 'GB', region: 'England', city: 'Bugle', lat: 50.3958, lon: -4.7933 }],
  ['8.8.8.8', { country: 'US', region: 'California', city: 'Mountain View', lat: 37.422, lon: -122.085 }],
  ['216.160.83.56', { country: 'US', region: 'Washington', city: 'Puyallup', lat: 47.1426, lon: -122.292 }],
  ['46.114.0.1', { country: 'DE', region: 'North Rhine-Westphalia', city: 'Frechen', lat: 50.9148, lon: 6.8118 }],
  ['2001:db8::1', null],
]
const PATHS = ['/', '/pricing', '/blog/a', '/blog/b']

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

type RefHit = { ts: number; address: number; ua: number; path: string; name: string }
type RefVisit = { id: string; visitor: string; place: Place; hits: RefHit[] }

/** Hits of one site, the import lines, and the reference visits. */
function geoFixture(snippet: string, domain: string, tz: string, seed: number) {
  const r = prng(seed)
  const hits: RefHit[] = []
  const start = NOW.getTime() - 40 * 86_400_000
  for (let v = 0; v < 150; v++) {
    const address = Math.floor(r() * ADDRESSES.length)
    const ua = Math.floor(r() * UAS.length)
    let ts = start + Math.floor(r() * (NOW.getTime() - start - 3_600_000))
    const pages = 1 + Math.floor(r() * 3)
    for (let p = 0; p < pages; p++) {
      hits.push({ ts, address, ua, path: PATHS[Math.floor(r() * PATHS.length)], name: 'pageview' })
      if (r() < 0.2) hits.push({ ts: ts + 20_000, address, ua, path: '/pricing', name: 'Signup' })
      ts += r() < 0.8 ? 4 * 60_000 : 45 * 60_000
    }
  }
  const lines = hits.map((h) =>
    JSON.stringify({
      timestamp: new Date(h.ts).toISOString(),
      site: snippet,
      name: h.name,
      url: `https://${domain}${h.path}`,
      ip: ADDRESSES[h.address][0],
      userAgent: UAS[h.ua],
    }),
  )
  const byVisitor = new Map<string, RefHit[]>()
  for (const h of hits) {
    const visitor = `${h.address}|${h.ua}|${localDate(h.ts, tz)}`
    byVisitor.set(visitor, [...(byVisitor.get(visitor) ?? []), h])
  }
  const visits: RefVisit[] = []
  for (const [visitor, own] of byVisitor) {
    own.sort((a, b) => a.ts - b.ts)
    let visit: RefVisit | null = null
    for (const h of own) {
      if (!visit || h.ts - visit.hits[visit.hits.length - 1].ts > 30 * 60_000)
        visits.push((visit = { id: `${visitor}|${h.ts}`, visitor, place: ADDRESSES[h.address][1], hits: [] }))
      visit.hits.push(h)
    }
  }
  return { lines, visits }
}

/** The places of the visits holding a hit in the window that `keep` selects, as the API answers them. */
function expectedPlaces(
  visits: RefVisit[],
  range: { from: string; to: string },
  granularity: 'region' | 'city',
  keep: (h: RefHit, v: RefVisit) => boolean = () => true,
) {
  const [lo, hi] = [Date.parse(range.from), Date.parse(range.to)]
  const counted = visits.filter((v) => v.hits.some((h) => h.ts >= lo && h.ts < hi && keep(h, v)))
  const byPlace = new Map<string, RefVisit[]>()
  const keyOf = (p: Place) =>
    JSON.stringify(granularity === 'city' ? [p?.country ?? '', p?.region ?? '', p?.city ?? ''] : [p?.country ?? '', p?.region ?? ''])
  for (const v of counted) byPlace.set(keyOf(v.place), [...(byPlace.get(keyOf(v.place)) ?? []), v])
  return [...byPlace]
    .map(([key, vs]) => {
      const [country, region, city] = JSON.parse(key) as string[]
      const located = vs.filter((v) => v.place)
      const mean = (f: (p: NonNullable<Place>) => number) =>
        located.length ? located.reduce((s, v) => s + f(v.place!), 0) / located.length : null
      return {
        country,
        region,
        ...(granularity === 'city' ? { city } : {}),
        latitude: mean((p) => p.lat),
        longitude: mean((p) => p.lon),
        visitors: new Set(vs.map((v) => v.visitor)).size,
        visits: vs.length,
      }
    })
    .sort(
      (a, b) =>
        b.visitors - a.visitors ||
        b.visits - a.visits ||
        byText(a.country, b.country) ||
        byText(a.region, b.region) ||
        byText(a.city ?? '', b.city ?? ''),
    )
}

/** The engine orders text by bytes. */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

type Answer = { latitude: number | null; longitude: number | null }
/** Coordinates agree to about 100 m (the database stores 32-bit floats; the table above 4 decimals). */
function expectSamePlaces(actual: Answer[], expected: Answer[]) {
  const strip = (rows: Answer[]) => rows.map(({ latitude, longitude, ...rest }) => rest)
  expect(strip(actual)).toEqual(strip(expected))
  actual.forEach((row, i) => {
    for (const axis of ['latitude', 'longitude'] as const) {
      const want = expected[i][axis]
      if (want === null) expect(row[axis]).toBeNull()
      else expect(Math.abs(row[axis]! - want), `${axis} of row ${i}`).toBeLessThan(0.001)
    }
  })
}

describe('GET /api/v1/geo', () => {
  let call: ReturnType<typeof client>
  let services: Awaited<ReturnType<typeof testServices>>
  let key = ''
  const ids = { berlin: '', newYork: '', empty: '', ga4: '' }
  const fx = {} as Record<'berlin' | 'newYork', ReturnType<typeof geoFixture>>

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Geo', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const berlin = newSite({ domain: 'berlin.geo.test', timezone: 'Europe/Berlin' }, org.id, NOW)
    const newYork = newSite({ domain: 'ny.geo.test', timezone: 'America/New_York' }, org.id, NOW)
    const empty = newSite({ domain: 'empty.geo.test', timezone: 'UTC' }, org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.geo.test', timezone: 'UTC' }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [berlin, newYork, empty, ga4]) await services.repositories.sites.create(site)
    fx.berlin = geoFixture(berlin.snippetId, berlin.domain, berlin.timezone, 3)
    fx.newYork = geoFixture(newYork.snippetId, newYork.domain, newYork.timezone, 11)
    const result = await importHits([...fx.berlin.lines, ...fx.newYork.lines], services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
    Object.assign(ids, { berlin: berlin.id, newYork: newYork.id, empty: empty.id, ga4: ga4.id })
  })

  const get = async (path: string, status = 200) => {
    const res = await call('GET', path, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(status)
    return res.json
  }
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`

  for (const site of ['berlin', 'newYork'] as const) {
    for (const granularity of ['region', 'city'] as const) {
      it(`${site}: visitors and visits per ${granularity}, with the mean coordinates of its visits`, async () => {
        const json = await get(`/api/v1/geo?site_id=${ids[site]}&range=30d&granularity=${granularity}`)
        expect(json.available).toBe(true)
        expect(json.granularity).toBe(granularity)
        const expected = expectedPlaces(fx[site].visits, json.range, granularity)
        // the fixture has places with and without coordinates, and a region of two cities
        expect(expected.some((p) => p.latitude === null)).toBe(true)
        expect(expected.length).toBeGreaterThan(3)
        expectSamePlaces(json.places, expected)
      })
    }
  }

  it('reads finished days from the daily rollup once they are rolled up: the same places, visitors, visits and coordinates', async () => {
    const window = (site: 'berlin' | 'newYork') => ({
      siteId: ids[site],
      range: resolveRange({ range: '30d' }, site === 'berlin' ? 'Europe/Berlin' : 'America/New_York', NOW),
      filters: [],
      goals: [],
      limit: 100,
    })
    expect((await rolledDays(services.clickhouse, window('berlin'))).days).toEqual([])
    expect(await refreshRollups(services.clickhouse, services.repositories, NOW, 60)).toBeGreaterThan(0)
    for (const site of ['berlin', 'newYork'] as const) {
      // every day of the window with hits but today is rolled up
      const { range } = window(site)
      const today = localDate(NOW.getTime(), range.timezone)
      const hitDays = fx[site].visits.flatMap((v) => v.hits.map((h) => localDate(h.ts, range.timezone)))
      const finished = [...new Set(hitDays)].filter((d) => d >= range.from.toPlainDate().toString() && d < today).sort()
      expect(finished.length).toBeGreaterThan(20)
      expect((await rolledDays(services.clickhouse, window(site))).days).toEqual(finished)
      for (const granularity of ['region', 'city'] as const) {
        const json = await get(`/api/v1/geo?site_id=${ids[site]}&range=30d&granularity=${granularity}`)
        expectSamePlaces(json.places, expectedPlaces(fx[site].visits, json.range, granularity))
        // a window of rolled days only
        const week = await get(`/api/v1/geo?site_id=${ids[site]}&range=custom&from=2026-11-10&to=2026-11-16&granularity=${granularity}`)
        expect(week.places.length).toBeGreaterThan(0)
        expectSamePlaces(week.places, expectedPlaces(fx[site].visits, week.range, granularity))
      }
    }
  })

  it('England (two cities) sits between London and Bugle, weighted by visits', async () => {
    const json = await get(`/api/v1/geo?site_id=${ids.berlin}&range=30d&granularity=region`)
    const england = json.places.find((p: { region: string }) => p.region === 'England')
    expect(england.latitude).toBeGreaterThan(50.3958)
    expect(england.latitude).toBeLessThan(51.5143)
  })

  it('honours filters: an event-scoped path filter and a visit-scoped country filter', async () => {
    const blog = [{ dimension: 'path', operator: 'contains', value: ['blog'] }]
    let json = await get(`/api/v1/geo?site_id=${ids.berlin}&range=30d&granularity=city${filtersParam(blog)}`)
    expectSamePlaces(
      json.places,
      expectedPlaces(fx.berlin.visits, json.range, 'city', (h) => h.name === 'pageview' && h.path.includes('blog')),
    )
    const gb = [{ dimension: 'country', operator: 'is', value: ['GB'] }]
    json = await get(`/api/v1/geo?site_id=${ids.newYork}&range=7d&granularity=city${filtersParam(gb)}`)
    const expected = expectedPlaces(fx.newYork.visits, json.range, 'city', (_, v) => v.place?.country === 'GB')
    expect(expected.map((p) => p.city).sort()).toEqual(['Bugle', 'London'])
    expectSamePlaces(json.places, expected)
  })

  it('honours limit: the places with most visitors', async () => {
    const json = await get(`/api/v1/geo?site_id=${ids.berlin}&range=30d&granularity=city&limit=2`)
    expectSamePlaces(json.places, expectedPlaces(fx.berlin.visits, json.range, 'city').slice(0, 2))
  })

  it('an empty site has no places; a ga4-only site without imports has none either, and says GA4 gives no coordinates', async () => {
    expect((await get(`/api/v1/geo?site_id=${ids.empty}&granularity=region`)).places).toEqual([])
    expect(await get(`/api/v1/geo?site_id=${ids.ga4}&granularity=city`)).toMatchObject({
      source: 'ga4',
      available: true,
      granularity: 'city',
      places: [],
      notAvailable: [{ part: 'latitude, longitude', reason: expect.stringMatching(/without coordinates/) }],
    })
  })

  it('granularity is required and must be region or city; bot_kind is refused', async () => {
    expect((await get(`/api/v1/geo?site_id=${ids.berlin}`, 400)).error).toMatch(/^granularity: /)
    expect((await get(`/api/v1/geo?site_id=${ids.berlin}&granularity=country`, 400)).error).toBe('granularity: must be region or city')
    const bots = [{ dimension: 'bot_kind', operator: 'is', value: ['seo'] }]
    expect((await get(`/api/v1/geo?site_id=${ids.berlin}&granularity=city${filtersParam(bots)}`, 400)).error).toMatch(/^filters: bot_kind/)
  })
})
