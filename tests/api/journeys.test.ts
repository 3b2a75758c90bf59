import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { flowRolledDaysSql } from '../../lib/reports/query/compile/flow'
import { type SignatureRow, rolledDaysOf } from '../../lib/reports/query/plan'
import { resolveRange } from '../../lib/reports/query/range'
import { execute } from '../../lib/storage/clickhouse/execute'
import { newSite } from '../../lib/sites/sites'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../../lib/reports/rollup/refresh'
import { type TestServices, client, getOk, orgWithSites, testServices } from '../helpers'
import { expectedFlow, flowAsMaps } from './flow-reference'
import { NOW, UAS, localDate } from './report-reference'

/**
 * Flow, journeys and activity against a reference over the fixture hits. Two sites in different
 * timezones (Berlin and Los Angeles) get hits from the same addresses and agents at the same
 * instants, so a site-local midnight splits a visitor's day on one site and not on the other.
 * Here a visitor is (site, address, agent, site-local day) and a visit a run of its hits with no
 * gap over 30 minutes: the reference groups the hits itself, independently of the ingestion code.
 */

const IPS: [string, string][] = [
  ['81.2.69.142', 'GB'],
  ['8.8.8.8', 'US'],
  ['46.114.0.1', 'DE'],
  ['1.1.1.1', 'AU'],
]
const BROWSERS = ['Chrome', 'Firefox', 'Safari']
const DEVICES = ['Desktop', 'Desktop', 'Mobile']
/** Referrers of a visit's first pageview, and the source each is classified as. */
const REFERRERS: [string | null, string][] = [
  [null, ''],
  ['https://www.google.com/', 'Google'],
  ['https://news.ycombinator.com/', 'Hacker News'],
  ['https://chatgpt.com/', 'ChatGPT'],
]
/** Skewed, so a small limit folds the rare ones. */
const PATHS = ['/', '/', '/', '/pricing', '/pricing', '/docs', '/docs', '/blog/a', '/blog/b', '/blog/c', '/signup', '/about']

type Kind = 'pageview' | 'custom' | 'engagement' | 'click' | 'error'
interface RefHit {
  site: 'berlin' | 'la'
  ts: number
  kind: Kind
  name: string
  path: string
  ip: number
  ua: number
  referrer: string | null
  dead?: boolean
  message?: string
}
const TZ = { berlin: 'Europe/Berlin', la: 'America/Los_Angeles' } as const

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

/**
 * Visits of a few pages each, with custom events, engagement reports, clicks and errors between
 * them. Each visit starts with a pageview. Times are whole seconds plus a distinct millisecond
 * per hit, so no two hits tie.
 */
function generate(seed: number): RefHit[] {
  const r = prng(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]
  const hits: RefHit[] = []
  let unique = 0
  const at = (ts: number) => Math.floor(ts / 1000) * 1000 + (++unique % 1000)
  const visit = (site: RefHit['site'], start: number, ip: number, ua: number, pages: number) => {
    let ts = start
    const referrer = pick(REFERRERS)[0]
    for (let p = 0; p < pages; p++) {
      // sometimes the same page again (a reload)
      const path = p > 0 && r() < 0.15 ? hits[hits.length - 1].path : pick(PATHS)
      hits.push({ site, ts: at(ts), kind: 'pageview', name: 'pageview', path, ip, ua, referrer: p === 0 ? referrer : null })
      if (r() < 0.3)
        hits.push({ site, ts: at(ts + 20_000), kind: 'custom', name: pick(['Signup', 'Download']), path, ip, ua, referrer: null })
      if (r() < 0.3) hits.push({ site, ts: at(ts + 30_000), kind: 'click', name: 'click', path, ip, ua, referrer: null, dead: r() < 0.5 })
      if (r() < 0.15)
        hits.push({
          site,
          ts: at(ts + 40_000),
          kind: 'error',
          name: 'error',
          path,
          ip,
          ua,
          referrer: null,
          message: `Boom ${Math.floor(r() * 10)}`,
        })
      if (r() < 0.5) hits.push({ site, ts: at(ts + 50_000), kind: 'engagement', name: 'engagement', path, ip, ua, referrer: null })
      ts += 60_000 + Math.floor(r() * 4 * 60_000)
    }
    return ts
  }
  // days spread over the last three weeks, and one more outside 30d
  for (let i = 0; i < 70; i++) {
    const site = r() < 0.6 ? 'berlin' : 'la'
    const daysAgo = i === 0 ? 40 : Math.floor(r() * 20) + 1
    const start = NOW.getTime() - daysAgo * 86_400_000 + Math.floor(r() * 86_400_000) - 43_200_000
    const ip = Math.floor(r() * IPS.length)
    const ua = Math.floor(r() * UAS.length)
    const end = visit(site, start, ip, ua, 1 + Math.floor(r() * 5))
    // a second visit of the same visitor after a long gap, sometimes
    if (r() < 0.4) visit(site, end + 45 * 60_000 + Math.floor(r() * 3 * 3_600_000), ip, ua, 1 + Math.floor(r() * 3))
  }
  // the same address and agent on both sites at the same instants around 08:00 UTC on 21 November:
  // one Berlin day (09:50 to 10:10) but two Los Angeles days (23:50 on the 20th, 00:10 on the 21st)
  for (const site of ['berlin', 'la'] as const) {
    hits.push({
      site,
      ts: at(Date.parse('2026-11-21T07:50:00Z')),
      kind: 'pageview',
      name: 'pageview',
      path: '/docs',
      ip: 3,
      ua: 1,
      referrer: 'https://www.google.com/',
    })
    hits.push({
      site,
      ts: at(Date.parse('2026-11-21T08:10:00Z')),
      kind: 'pageview',
      name: 'pageview',
      path: '/pricing',
      ip: 3,
      ua: 1,
      referrer: null,
    })
  }
  // a visit cut by the Berlin midnight: its engagement report opens a day whose first pageview comes in a later visit
  hits.push({
    site: 'berlin',
    ts: at(Date.parse('2026-11-18T22:58:00Z')),
    kind: 'pageview',
    name: 'pageview',
    path: '/blog/a',
    ip: 0,
    ua: 2,
    referrer: 'https://news.ycombinator.com/',
  })
  hits.push({
    site: 'berlin',
    ts: at(Date.parse('2026-11-18T23:00:30Z')),
    kind: 'engagement',
    name: 'engagement',
    path: '/blog/a',
    ip: 0,
    ua: 2,
    referrer: null,
  })
  hits.push({
    site: 'berlin',
    ts: at(Date.parse('2026-11-19T09:00:00Z')),
    kind: 'pageview',
    name: 'pageview',
    path: '/signup',
    ip: 0,
    ua: 2,
    referrer: 'https://www.google.com/',
  })
  hits.push({
    site: 'berlin',
    ts: at(Date.parse('2026-11-19T09:03:00Z')),
    kind: 'pageview',
    name: 'pageview',
    path: '/docs',
    ip: 0,
    ua: 2,
    referrer: null,
  })
  // the live tape: visitors of the last half hour, some of whom came earlier today from elsewhere
  for (let i = 0; i < 12; i++) {
    const site = i % 3 === 2 ? 'la' : 'berlin'
    const ip = i % IPS.length
    const ua = Math.floor(i / IPS.length) % UAS.length
    // this morning (site-local) for Berlin; the Los Angeles day began at 08:00 UTC
    if (i % 2 === 0) visit(site, NOW.getTime() - (site === 'la' ? 5 : 4) * 3_600_000, ip, ua, 2)
    visit(site, NOW.getTime() - 29 * 60_000 + i * 60_000, ip, ua, 3)
  }
  return hits.filter((h) => h.ts < NOW.getTime() - 1000).sort((a, b) => a.ts - b.ts)
}

function line(h: RefHit, snippet: string, domain: string): string {
  const hit: Record<string, unknown> = {
    timestamp: new Date(h.ts).toISOString(),
    site: snippet,
    name: h.name,
    url: `https://${domain}${h.path}`,
    referrer: h.referrer,
    ip: IPS[h.ip][0],
    userAgent: UAS[h.ua],
  }
  if (h.kind === 'engagement') hit.engagement = { ms: 12_000, scroll: 40 }
  if (h.kind === 'click') hit.click = { selector: 'button.buy', text: 'Buy', tag: 'button', interactive: !h.dead, dead: h.dead }
  if (h.kind === 'error') hit.error = { name: 'Error', message: h.message }
  if (h.kind === 'custom') hit.props = { plan: 'pro' }
  return JSON.stringify(hit)
}

// --- the reference grouping

interface RefVisit {
  hits: RefHit[]
}
interface RefDay {
  key: string
  site: RefHit['site']
  ip: number
  ua: number
  day: string
  hits: RefHit[]
  visits: RefVisit[]
}

function group(hits: RefHit[]): RefDay[] {
  const days = new Map<string, RefDay>()
  for (const h of hits) {
    const day = localDate(h.ts, TZ[h.site])
    const key = `${h.site}|${h.ip}|${h.ua}|${day}`
    if (!days.has(key)) days.set(key, { key, site: h.site, ip: h.ip, ua: h.ua, day, hits: [], visits: [] })
    days.get(key)!.hits.push(h)
  }
  for (const d of days.values()) {
    for (const h of d.hits) {
      const last = d.visits[d.visits.length - 1]
      if (last && h.ts - last.hits[last.hits.length - 1].ts <= 30 * 60_000) last.hits.push(h)
      else d.visits.push({ hits: [h] })
    }
  }
  return [...days.values()]
}

const pageviews = (hs: RefHit[]) => hs.filter((h) => h.kind === 'pageview')
const inWindow = (h: RefHit, range: { from: string; to: string }) => h.ts >= Date.parse(range.from) && h.ts < Date.parse(range.to)

function expectedJourney(d: RefDay) {
  const views = pageviews(d.hits)
  // a visit cut by the site-local midnight may leave a day without a pageview
  const first: RefHit | undefined = views[0]
  return {
    day: d.day,
    firstSeen: new Date(d.hits[0].ts).toISOString(),
    lastSeen: new Date(d.hits[d.hits.length - 1].ts).toISOString(),
    landingPage: first?.path ?? '',
    exitPage: views[views.length - 1]?.path ?? '',
    duration: Math.round(d.visits.reduce((s, v) => s + v.hits[v.hits.length - 1].ts - v.hits[0].ts, 0) / 1000),
    visits: d.visits.length,
    pageviews: views.length,
    events: d.hits.filter((h) => h.kind === 'custom').length,
    source: REFERRERS.find(([r]) => r === (first?.referrer ?? null))![1],
    referrer: first?.referrer ?? '',
    country: IPS[d.ip][1],
    device: DEVICES[d.ua],
    browser: BROWSERS[d.ua],
  }
}

/** Journeys with a hit in the window (and, with `keep`, a kept hit there), newest last hit first. */
function expectedJourneys(days: RefDay[], range: { from: string; to: string }, keep: (h: RefHit) => boolean = () => true) {
  return days
    .filter((d) => d.hits.some((h) => inWindow(h, range) && keep(h)))
    .sort((a, b) => b.hits[b.hits.length - 1].ts - a.hits[a.hits.length - 1].ts)
    .map(expectedJourney)
}

/** Each visit's pages in the window in time order, a page repeated right after itself once. */
function pageSequences(days: RefDay[], range: { from: string; to: string }, keepVisit: (v: RefVisit) => boolean = () => true) {
  return days
    .flatMap((d) =>
      d.visits.filter(keepVisit).map((v) =>
        pageviews(v.hits)
          .filter((h) => inWindow(h, range))
          .map((h) => h.path)
          .filter((p, i, all) => i === 0 || p !== all[i - 1]),
      ),
    )
    .filter((s) => s.length)
}

describe('flow, journeys and activity', () => {
  let call: ReturnType<typeof client>
  let key = ''
  let hits: RefHit[]
  let days: RefDay[]
  const ids = { berlin: '', la: '', empty: '', ga4: '' }

  let services: TestServices

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Journeys', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const berlin = newSite({ domain: 'berlin.journeys.test', timezone: TZ.berlin }, org.id, NOW)
    const la = newSite({ domain: 'la.journeys.test', timezone: TZ.la }, org.id, NOW)
    const empty = newSite({ domain: 'empty.journeys.test', timezone: TZ.berlin }, org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.journeys.test', timezone: TZ.berlin }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [berlin, la, empty, ga4]) await services.repositories.sites.create(site)
    hits = generate(11)
    days = group(hits)
    const sites = { berlin, la }
    const result = await importHits(
      hits.map((h) => line(h, sites[h.site].snippetId, sites[h.site].domain)),
      services.ingestor,
    )
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
    Object.assign(ids, { berlin: berlin.id, la: la.id, empty: empty.id, ga4: ga4.id })
  })

  const get = (path: string) => getOk(call, path, key)
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`
  const daysOf = (site: RefHit['site']) => days.filter((d) => d.site === site)

  describe('journeys', () => {
    it('lists one row per visitor and site-local day, newest first, on each site in its own timezone', async () => {
      for (const site of ['berlin', 'la'] as const) {
        const json = await get(`/api/v1/journeys?site_id=${ids[site]}&range=30d&limit=1000`)
        const expected = expectedJourneys(daysOf(site), json.range)
        expect(json.available).toBe(true)
        expect(json.note).toMatch(/day/)
        expect(json.total).toBe(expected.length)
        expect(json.nextOffset).toBeNull()
        expect(
          json.journeys.map(({ visitor, ...rest }: { visitor: string }) => rest),
          site,
        ).toEqual(expected)
        expect(new Set(json.journeys.map((j: { visitor: string }) => j.visitor)).size).toBe(expected.length)
      }
      // 07:50 and 08:10 UTC on 21 November: one Berlin day, two Los Angeles days
      const at = (site: RefHit['site']) =>
        expectedJourneys(daysOf(site), { from: '2026-11-21T07:00:00Z', to: '2026-11-21T09:00:00Z' }).filter(
          (j) => j.country === 'AU' && j.browser === 'Firefox',
        )
      expect(at('berlin')).toHaveLength(1)
      expect(at('la').map((j) => j.day)).toEqual(['2026-11-21', '2026-11-20'])
      const la = await get(`/api/v1/journeys?site_id=${ids.la}&range=custom&from=2026-11-20&to=2026-11-21`)
      // the Berlin day of 19 November for that address and agent opens with an engagement report past midnight
      const cut = expectedJourneys(daysOf('berlin'), { from: '2026-11-18T23:00:00Z', to: '2026-11-19T10:00:00Z' }).find((j) =>
        j.firstSeen.startsWith('2026-11-18T23:00:30'),
      )
      expect(cut).toMatchObject({ day: '2026-11-19', landingPage: '/signup', source: 'Google' })
      expect(
        la.journeys
          .filter((j: { country: string; browser: string }) => j.country === 'AU' && j.browser === 'Firefox')
          .map((j: { day: string }) => j.day),
      ).toEqual(
        expectedJourneys(daysOf('la'), la.range)
          .filter((j) => j.country === 'AU' && j.browser === 'Firefox')
          .map((j) => j.day),
      )
    })

    it('pages by limit and offset', async () => {
      const all = (await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&limit=1000`)).journeys
      const first = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&limit=5`)
      expect(first).toMatchObject({ total: all.length, offset: 0, nextOffset: 5, journeys: all.slice(0, 5) })
      const second = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&limit=5&offset=5`)
      expect(second).toMatchObject({ total: all.length, offset: 5, nextOffset: 10, journeys: all.slice(5, 10) })
      const last = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&limit=5&offset=${all.length - 2}`)
      expect(last).toMatchObject({ total: all.length, nextOffset: null, journeys: all.slice(-2) })
      const past = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&limit=5&offset=${all.length + 3}`)
      expect(past).toMatchObject({ total: all.length, nextOffset: null, journeys: [] })
    })

    it('honours filters: visit attributes and pages', async () => {
      const gb = await get(
        `/api/v1/journeys?site_id=${ids.berlin}&range=30d&limit=1000${filtersParam([{ dimension: 'country', operator: 'is', value: ['GB'] }])}`,
      )
      expect(gb.journeys.map(({ visitor, ...rest }: { visitor: string }) => rest)).toEqual(
        expectedJourneys(daysOf('berlin'), gb.range, (h) => IPS[h.ip][1] === 'GB'),
      )
      expect(gb.journeys.length).toBeGreaterThan(0)
      const pricing = await get(
        `/api/v1/journeys?site_id=${ids.berlin}&range=7d&limit=1000${filtersParam([{ dimension: 'path', operator: 'is', value: ['/pricing'] }])}`,
      )
      const expected = expectedJourneys(daysOf('berlin'), pricing.range, (h) => h.path === '/pricing')
      expect(pricing.journeys.map(({ visitor, ...rest }: { visitor: string }) => rest)).toEqual(expected)
      expect(pricing.total).toBe(expected.length)
      expect(expected.length).toBeLessThan(expectedJourneys(daysOf('berlin'), pricing.range).length)
    })

    it('gives one visitor-day’s every event, oldest first; ids differ across days and sites', async () => {
      const list = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&limit=1000`)
      const expected = expectedJourneys(daysOf('berlin'), list.range)
      // the journey with the most hits
      const index = expected.reduce((best, j, i) => (j.pageviews > expected[best].pageviews ? i : best), 0)
      const ref = daysOf('berlin').find((d) => expectedJourney(d).lastSeen === expected[index].lastSeen)!
      const json = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&visitor=${list.journeys[index].visitor}`)
      expect(json).toMatchObject({ available: true, visitor: list.journeys[index].visitor, truncated: false })
      expect(json.note).toMatch(/cannot be joined/)
      expect(json.journey).toEqual(list.journeys[index])
      expect(
        json.events.map((e: { timestamp: string; kind: string; name: string; path: string }) => [e.timestamp, e.kind, e.name, e.path]),
      ).toEqual(ref.hits.map((h) => [new Date(h.ts).toISOString(), h.kind, h.name, h.path]))
      for (const e of json.events) {
        const h = ref.hits.find((x) => new Date(x.ts).toISOString() === e.timestamp)!
        if (h.kind === 'click') expect(e.element).toMatchObject({ selector: 'button.buy', dead: h.dead })
        if (h.kind === 'error') expect(e.error).toEqual({ name: 'Error', message: h.message })
        if (h.kind === 'engagement') expect(e.engagement).toEqual({ ms: 12_000, scroll: 40 })
        if (h.kind === 'custom') expect(e.props).toEqual({ plan: 'pro' })
        if (h.kind === 'pageview') expect(e.element ?? e.error ?? e.engagement ?? e.props).toBeUndefined()
      }
      // the same address and agent: a different id on the other site, and on another day
      const la = await get(`/api/v1/journeys?site_id=${ids.la}&range=30d&limit=1000`)
      const laIds = new Set(la.journeys.map((j: { visitor: string }) => j.visitor))
      for (const j of list.journeys) expect(laIds.has(j.visitor)).toBe(false)
      // an id of another site or outside the window has no journey here
      const foreign = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=30d&visitor=${la.journeys[0].visitor}`)
      expect(foreign).toMatchObject({ journey: null, events: [] })
      const yesterday = await get(`/api/v1/journeys?site_id=${ids.berlin}&range=yesterday&visitor=${list.journeys[0].visitor}`)
      expect(yesterday).toMatchObject({ journey: null, events: [] })
    })

    it('pages the same once the finished days are rolled up: the total from the days, each page from its last days', async () => {
      await refreshRollups(services.clickhouse, services.repositories, NOW, ROLLUP_ALL_DAYS)
      for (const site of ['berlin', 'la'] as const) {
        const range = (await get(`/api/v1/journeys?site_id=${ids[site]}&range=30d&limit=1`)).range
        const expected = expectedJourneys(daysOf(site), range)
        // pages within the last day, across days, and the last one
        for (const offset of [0, 3, 17, 40, expected.length - 4]) {
          const page = await get(`/api/v1/journeys?site_id=${ids[site]}&range=30d&limit=7&offset=${offset}`)
          expect(page.total, `${site} ${offset}`).toBe(expected.length)
          expect(
            page.journeys.map(({ visitor, ...rest }: { visitor: string }) => rest),
            `${site} ${offset}`,
          ).toEqual(expected.slice(offset, offset + 7))
        }
      }
    })
  })

  describe('flow', () => {
    it('follows each visit from its landing page, folding rare pages per step', async () => {
      const json = await get(`/api/v1/flow?site_id=${ids.berlin}&range=30d&depth=3&limit=3`)
      expect(json).toMatchObject({ available: true, anchor: 'entry', path: null, depth: 3 })
      const sequences = pageSequences(daysOf('berlin'), json.range)
      expect(flowAsMaps(json)).toEqual(expectedFlow(sequences, null, 0, 3, 3))
      expect(json.visits).toBe(sequences.length)
      // at most limit pages and one folded node per step, which says how many pages it holds
      for (const step of [0, 1, 2, 3]) {
        const at = json.nodes.filter((n: { step: number }) => n.step === step)
        expect(at.filter((n: { other: boolean }) => !n.other).length).toBeLessThanOrEqual(3)
        expect(at.filter((n: { other: boolean }) => n.other).length).toBeLessThanOrEqual(1)
      }
      const other = json.nodes.find((n: { id: string }) => n.id === '0:(other)')
      const landings = new Set(sequences.map((s) => s[0]))
      expect(other).toMatchObject({ step: 0, path: '(other)', other: true, folded: landings.size - 3 })
      // with a large limit nothing folds
      const whole = await get(`/api/v1/flow?site_id=${ids.berlin}&range=30d&depth=2`)
      expect(flowAsMaps(whole)).toEqual(expectedFlow(sequences, null, 0, 2, 10))
      expect(whole.nodes.some((n: { other: boolean }) => n.other)).toBe(false)
    })

    it('roots a forward flow at start_path and shows the steps around focus_path', async () => {
      const start = await get(`/api/v1/flow?site_id=${ids.la}&range=30d&start_path=%2Fpricing&depth=2`)
      const sequences = pageSequences(daysOf('la'), start.range)
      expect(start).toMatchObject({ anchor: 'start', path: '/pricing', depth: 2 })
      expect(flowAsMaps(start)).toEqual(expectedFlow(sequences, '/pricing', 0, 2, 10))
      const focus = await get(`/api/v1/flow?site_id=${ids.la}&range=30d&focus_path=%2Fdocs&depth=2`)
      expect(focus).toMatchObject({ anchor: 'focus', path: '/docs' })
      const expected = expectedFlow(sequences, '/docs', 2, 2, 10)
      expect(flowAsMaps(focus)).toEqual(expected)
      expect(Object.keys(expected.nodes).some((id) => id.startsWith('-1:'))).toBe(true)
      expect(Object.keys(expected.nodes).some((id) => id.startsWith('1:'))).toBe(true)
      // a page nobody saw: an empty graph
      expect(await get(`/api/v1/flow?site_id=${ids.la}&range=30d&focus_path=%2Fnowhere`)).toMatchObject({ visits: 0, nodes: [], links: [] })
    })

    it('honours filters: the visits holding a selected event', async () => {
      const json = await get(
        `/api/v1/flow?site_id=${ids.berlin}&range=30d&depth=4${filtersParam([{ dimension: 'event', operator: 'is', value: ['Signup'] }])}`,
      )
      const keep = (v: RefVisit) => v.hits.some((h) => h.name === 'Signup' && inWindow(h, json.range))
      const expected = expectedFlow(pageSequences(daysOf('berlin'), json.range, keep), null, 0, 4, 10)
      expect(flowAsMaps(json)).toEqual(expected)
      expect(json.visits).toBeLessThan(pageSequences(daysOf('berlin'), json.range).length)
    })
  })

  describe('activity', () => {
    /** The tape over the reference: the window's actions, newest first, with the source of the visitor-day's first pageview. */
    function expectedTape(site: RefHit['site'], minutes: number, keep: (h: RefHit) => boolean = () => true) {
      const from = NOW.getTime() - minutes * 60_000
      return daysOf(site)
        .flatMap((d) => d.hits.filter((h) => h.ts >= from && h.ts < NOW.getTime() && keep(h)).map((h) => ({ h, d })))
        .sort((a, b) => b.h.ts - a.h.ts)
        .map(({ h, d }) => {
          const first: RefHit | undefined = pageviews(d.hits)[0]
          const referrer = first?.referrer ?? null
          return {
            timestamp: new Date(h.ts).toISOString(),
            kind: h.kind,
            path: h.path,
            source: REFERRERS.find(([r]) => r === referrer)![1],
            referrer: referrer ?? '',
            country: IPS[h.ip][1],
            day: d.key,
          }
        })
    }
    const shape = (actions: { timestamp: string; kind: string; path: string; source: string; referrer: string; country: string }[]) =>
      actions.map(({ timestamp, kind, path, source, referrer, country }) => ({ timestamp, kind, path, source, referrer, country }))

    it('lists the last 30 minutes newest first, each with the source of its visitor’s first pageview of the day', async () => {
      for (const site of ['berlin', 'la'] as const) {
        const json = await get(`/api/v1/activity?site_id=${ids[site]}`)
        const expected = expectedTape(site, 30)
        expect(json).toMatchObject({ available: true, window: '30m' })
        expect(shape(json.actions)).toEqual(expected.map(({ day, ...rest }) => rest))
        // one visitor id per visitor-day
        const idOf = new Map<string, string>()
        json.actions.forEach((a: { visitor: string }, i: number) => {
          expect(idOf.get(expected[i].day) ?? a.visitor).toBe(a.visitor)
          idOf.set(expected[i].day, a.visitor)
        })
        expect(new Set(idOf.values()).size).toBe(idOf.size)
      }
      // some tape visitors came earlier today from another referrer than their current visit's
      const tape = expectedTape('berlin', 30)
      expect(tape.some((t) => t.source !== '')).toBe(true)
      expect(tape.some((t) => t.source === '')).toBe(true)
    })

    it('takes window=5m, limit and filters', async () => {
      const five = await get(`/api/v1/activity?site_id=${ids.berlin}&window=5m`)
      expect(five.range.name).toBe('5m')
      expect(shape(five.actions)).toEqual(expectedTape('berlin', 5).map(({ day, ...rest }) => rest))
      const limited = await get(`/api/v1/activity?site_id=${ids.berlin}&limit=4`)
      expect(shape(limited.actions)).toEqual(
        expectedTape('berlin', 30)
          .slice(0, 4)
          .map(({ day, ...rest }) => rest),
      )
      const clicks = await get(
        `/api/v1/activity?site_id=${ids.berlin}${filtersParam([{ dimension: 'country', operator: 'is', value: ['US'] }])}`,
      )
      const expected = expectedTape('berlin', 30, (h) => IPS[h.ip][1] === 'US')
      expect(expected.length).toBeGreaterThan(0)
      expect(shape(clicks.actions)).toEqual(expected.map(({ day, ...rest }) => rest))
    })
  })

  it('an empty site answers empty lists', async () => {
    expect(await get(`/api/v1/flow?site_id=${ids.empty}`)).toMatchObject({ available: true, visits: 0, nodes: [], links: [] })
    expect(await get(`/api/v1/journeys?site_id=${ids.empty}`)).toMatchObject({ available: true, total: 0, nextOffset: null, journeys: [] })
    expect(await get(`/api/v1/activity?site_id=${ids.empty}`)).toMatchObject({ available: true, actions: [] })
  })

  it('a site that reads only ga4 answers available: false', async () => {
    expect(await get(`/api/v1/flow?site_id=${ids.ga4}`)).toMatchObject({ available: false, nodes: [], links: [] })
    expect(await get(`/api/v1/journeys?site_id=${ids.ga4}`)).toMatchObject({ available: false, journeys: [] })
    expect(await get(`/api/v1/journeys?site_id=${ids.ga4}&visitor=1`)).toMatchObject({ available: false, journey: null, events: [] })
    expect(await get(`/api/v1/activity?site_id=${ids.ga4}`)).toMatchObject({ available: false, actions: [] })
  })

  it('refuses bad input with a 400 naming the parameter', async () => {
    const cases: [string, string][] = [
      ['flow', 'depth=0'],
      ['flow', 'depth=6'],
      ['flow', 'depth=two'],
      ['flow', 'start_path=%2Fa&focus_path=%2Fb'],
      ['flow', 'start_path='],
      ['journeys', 'visitor=abc'],
      ['journeys', 'visitor=18446744073709551616'],
      ['journeys', 'offset=-1'],
      ['activity', 'window=1h'],
    ]
    for (const [path, query] of cases) {
      const res = await call('GET', `/api/v1/${path}?site_id=${ids.berlin}&${query}`, { key })
      expect(res.status, `${path}?${query}`).toBe(400)
      expect(res.json.error, `${path}?${query}`).toMatch(
        new RegExp(`^${query.split('=')[0] === 'start_path' && query.includes('focus') ? 'focus_path' : query.split('=')[0]}`),
      )
    }
  })

  // last: the sites' finished days are rolled up (by the journeys paging test above, or here), and the flow
  // tests before that one read them from raw pageviews
  it('flow: the same graphs once finished days are rolled up, the days rolled up summed and today read from visit_pages', async () => {
    await refreshRollups(services.clickhouse, services.repositories, NOW, 40)
    const builtDays = async (site: string) =>
      Number(
        (
          await services.clickhouse.query<{ n: string }>(
            "SELECT count() AS n FROM flow_rollups WHERE site_id = {site:UUID} AND anchor = '(built)'",
            { site },
          )
        )[0].n,
      )
    // the finished days with events have their flow rolled up
    expect(await builtDays(ids.berlin)).toBeGreaterThan(5)
    expect(await builtDays(ids.la)).toBeGreaterThan(5)
    // and a flow over the last 30 days takes them from the rollup: every finished day with events
    const range = resolveRange({ range: '30d' }, TZ.berlin, NOW)
    const rolled = rolledDaysOf({ range }, await execute<SignatureRow>(services.clickhouse, flowRolledDaysSql(ids.berlin, range)))
    expect(rolled.days).toHaveLength(await builtDays(ids.berlin))
    const cases: [RefHit['site'], string, string | null, number, number][] = [
      // site, parameters, anchor, steps before, steps after (limit 10 unless given)
      ['berlin', 'depth=3&limit=3', null, 0, 3],
      ['berlin', 'depth=2', null, 0, 2],
      ['berlin', 'depth=5', null, 0, 5],
      ['la', 'depth=1', null, 0, 1],
      ['la', 'start_path=%2Fpricing&depth=2', '/pricing', 0, 2],
      ['berlin', 'start_path=%2Fdocs&depth=5&limit=2', '/docs', 0, 5],
      ['la', 'focus_path=%2Fdocs&depth=2', '/docs', 2, 2],
      ['berlin', 'focus_path=%2Fpricing&depth=5', '/pricing', 5, 5],
      ['berlin', 'focus_path=%2Fsignup&depth=1&limit=1', '/signup', 1, 1],
    ]
    for (const range of ['range=30d', 'range=7d', 'range=custom&from=2026-11-01&to=2026-11-20']) {
      for (const [site, params, anchor, before, after] of cases) {
        const json = await get(`/api/v1/flow?site_id=${ids[site]}&${range}&${params}`)
        const limit = Number(/limit=(\d+)/.exec(params)?.[1] ?? 10)
        const expected = expectedFlow(pageSequences(daysOf(site), json.range), anchor, before, after, limit)
        expect(flowAsMaps(json), `${site} ${range} ${params}`).toEqual(expected)
        expect(json.visits, `${site} ${range} ${params}`).toBeGreaterThan(0)
      }
    }
  })
})

describe('flow limit', () => {
  it("keeps at most 100 pages a step: a larger limit is clamped, and the rest fold into the step's other node", async () => {
    const services = await testServices({ now: () => NOW })
    const {
      key,
      sites: [site],
    } = await orgWithSites(services, 'Flow limit', [{ domain: 'wide.journeys.test', timezone: 'UTC' }], NOW)
    // 105 visitors landing on 105 pages, one each: every page ties, so the smaller paths keep their nodes
    const at = new Date(NOW.getTime() - 2 * 3_600_000).toISOString()
    const lines = Array.from({ length: 105 }, (_, i) =>
      JSON.stringify({
        timestamp: at,
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/p${String(i).padStart(3, '0')}`,
        ip: `203.0.113.${i + 1}`,
        userAgent: UAS[0],
      }),
    )
    expect((await importHits(lines, services.ingestor)).imported).toBe(105)
    const res = await client(services)('GET', `/api/v1/flow?site_id=${site.id}&range=7d&depth=1&limit=1000`, { key })
    expect(res.status).toBe(200)
    const kept = res.json.nodes.filter((n: { other: boolean }) => !n.other).map((n: { path: string }) => n.path)
    expect(kept).toHaveLength(100)
    expect(new Set(kept)).toEqual(new Set(Array.from({ length: 100 }, (_, i) => `/p${String(i).padStart(3, '0')}`)))
    expect(res.json.nodes.find((n: { other: boolean }) => n.other)).toMatchObject({ id: '0:(other)', visits: 5, folded: 5 })
    expect(res.json.visits).toBe(105)
  })
})
