import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { FUNNEL_AHEAD_DAYS } from '../../lib/reports/query/funnels'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../../lib/reports/rollup/refresh'
import { client, getOk, testServices } from '../helpers'
import { NOW, UAS, localDate } from './report-reference'

/**
 * The computed result of GET /funnels against a reference over the fixture hits. Visitors
 * (address, agent, site-local day) and visits (30-minute gaps) are grouped here, and a visit's
 * level is found by walking its hits in time order: each step must come strictly after the one
 * before. The hits follow the happy path with steps swapped, dropped, padded and split across
 * visits, plus hand-written visitors whose level the reference must find as written.
 */

const IPS: [string, string][] = [
  ['81.2.69.142', 'GB'],
  ['8.8.8.8', 'US'],
  ['46.114.0.1', 'DE'],
  ['1.1.1.1', 'AU'],
]
const TZ = 'Europe/Berlin'
type Action = { name: string; path: string }
type RawHit = Action & { ts: number; ip: string; ua: number }
type Step = { type: 'page' | 'event' | 'goal'; value: string }

const page = (path: string): Action => ({ name: 'pageview', path })
const event = (name: string): Action => ({ name, path: '/app' })
const HAPPY = [page('/pricing'), page('/pricing/pro'), event('Start trial'), event('Signup')]
const OTHERS = [page('/'), page('/blog/a'), page('/blog/b'), page('/pricing'), event('Newsletter')]

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

const MINUTE = 60_000
/** Hand-written visitors (an address of their own), each with the level of the main funnel it must reach. */
const HAND: { actions: (Action | 'gap')[]; trialLevel: number }[] = [
  { actions: [page('/pricing'), event('Start trial'), event('Signup')], trialLevel: 3 },
  // out of order: the trial before pricing does not count
  { actions: [event('Start trial'), page('/pricing'), event('Signup')], trialLevel: 1 },
  // across visits: pricing in one, the rest in the next
  { actions: [page('/pricing/x'), 'gap', event('Start trial'), event('Signup')], trialLevel: 1 },
  // other events between the steps are fine
  { actions: [page('/pricing'), page('/blog/a'), event('Newsletter'), event('Start trial'), page('/'), event('Signup')], trialLevel: 3 },
  // two visits the same day: counted once, at the furthest
  { actions: [page('/pricing'), 'gap', page('/pricing'), event('Start trial')], trialLevel: 2 },
]

function funnelFixture(snippet: string, domain: string, seed: number) {
  const r = prng(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]
  const start = Date.parse('2026-10-12T00:00:00Z')
  const hits: RawHit[] = []
  for (let v = 0; v < 260; v++) {
    const actions = [...HAPPY].slice(0, 1 + Math.floor(r() * HAPPY.length))
    if (r() < 0.3 && actions.length > 1) {
      const i = Math.floor(r() * (actions.length - 1))
      ;[actions[i], actions[i + 1]] = [actions[i + 1], actions[i]]
    }
    if (r() < 0.3) actions.splice(Math.floor(r() * actions.length), 1)
    if (r() < 0.4) actions.splice(Math.floor(r() * (actions.length + 1)), 0, pick(OTHERS))
    const ip = pick(IPS)[0]
    const ua = Math.floor(r() * UAS.length)
    let ts = start + Math.floor(r() * (NOW.getTime() - 6 * 3_600_000 - start))
    for (const a of actions) {
      hits.push({ ...a, ts, ip, ua })
      ts += r() < 0.15 ? 40 * MINUTE + Math.floor(r() * 30 * MINUTE) : MINUTE + Math.floor(r() * 5 * MINUTE)
    }
  }
  HAND.forEach((h, n) => {
    let ts = Date.parse('2026-11-18T09:00:00Z') + n * 3_600_000
    for (const a of h.actions) {
      if (a === 'gap') ts += 45 * MINUTE
      else hits.push({ ...a, ts: (ts += 2 * MINUTE), ip: `203.0.113.${n + 1}`, ua: 0 })
    }
  })
  const lines = hits.map((h) =>
    JSON.stringify({
      timestamp: new Date(h.ts).toISOString(),
      site: snippet,
      name: h.name,
      url: `https://${domain}${h.path}`,
      ip: h.ip,
      userAgent: UAS[h.ua],
    }),
  )
  return { lines, hits }
}

type Visit = { visitor: string; country: string; hits: RawHit[] }

/** Visitors and visits as the collector defines them, independently of its code. */
function visitsOf(hits: RawHit[]): Visit[] {
  const byVisitor = new Map<string, RawHit[]>()
  for (const h of hits) {
    const key = `${h.ip}|${h.ua}|${localDate(h.ts, TZ)}`
    byVisitor.set(key, [...(byVisitor.get(key) ?? []), h])
  }
  const visits: Visit[] = []
  for (const [visitor, of] of byVisitor) {
    of.sort((a, b) => a.ts - b.ts)
    let visit: Visit | null = null
    for (const h of of) {
      if (!visit || h.ts - visit.hits[visit.hits.length - 1].ts > 30 * MINUTE)
        visits.push((visit = { visitor, country: IPS.find(([ip]) => ip === h.ip)?.[1] ?? '', hits: [] }))
      visit.hits.push(h)
    }
  }
  return visits
}

const glob = (pattern: string) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`)

describe('funnel results', () => {
  let call: ReturnType<typeof client>
  let read = ''
  let write = ''
  let fx: ReturnType<typeof funnelFixture>
  const ids = { shop: '', empty: '', ga4: '', none: '' }
  const funnels: Record<'trial' | 'pro' | 'blog', { id: string; steps: Step[] }> = {
    trial: { id: '', steps: [] },
    pro: { id: '', steps: [] },
    blog: { id: '', steps: [] },
  }
  const goalMatch = new Map<string, (h: RawHit) => boolean>()
  let services: Awaited<ReturnType<typeof testServices>>

  beforeAll(async () => {
    // funnels are listed oldest first: each is saved a second after the one before
    let clock = NOW
    services = await testServices({ now: () => clock })
    call = client(services)
    const org = await createOrg(services.repositories, 'Funnels', NOW)
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    const shop = newSite({ domain: 'shop.funnels.test', timezone: TZ }, org.id, NOW)
    const empty = newSite({ domain: 'empty.funnels.test', timezone: TZ }, org.id, NOW)
    const none = newSite({ domain: 'none.funnels.test', timezone: TZ }, org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.funnels.test', timezone: TZ }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [shop, empty, none, ga4]) await services.repositories.sites.create(site)
    Object.assign(ids, { shop: shop.id, empty: empty.id, ga4: ga4.id, none: none.id })
    fx = funnelFixture(shop.snippetId, shop.domain, 5)
    const result = await importHits(fx.lines, services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)

    const post = async (path: string, body: unknown) => {
      const res = await call('POST', path, { key: write, body })
      expect(res.status, JSON.stringify(res.json)).toBe(201)
      return res.json
    }
    const signup = await post('/api/v1/goals', { site_id: shop.id, type: 'event', matchValue: 'Signup' })
    const blog = await post('/api/v1/goals', { site_id: shop.id, type: 'page', matchValue: '/blog/*' })
    goalMatch.set(signup.id, (h) => h.name === 'Signup')
    goalMatch.set(blog.id, (h) => h.name === 'pageview' && glob('/blog/*').test(h.path))
    const save = async (site: string, name: string, steps: Step[]) => {
      clock = new Date(clock.getTime() + 1000)
      return { id: (await post('/api/v1/funnels', { site_id: site, name, steps })).id as string, steps }
    }
    funnels.trial = await save(shop.id, 'Trial', [
      { type: 'page', value: '/pricing*' },
      { type: 'event', value: 'Start trial' },
      { type: 'goal', value: signup.id },
    ])
    // one pageview of /pricing/pro meets the first two steps, but fills only one
    funnels.pro = await save(shop.id, 'Pro', [
      { type: 'page', value: '/pricing*' },
      { type: 'page', value: '/pricing/pro' },
      { type: 'event', value: 'Start trial' },
    ])
    funnels.blog = await save(shop.id, 'Blog', [
      { type: 'goal', value: blog.id },
      { type: 'page', value: '/pricing' },
    ])
    await save(empty.id, 'Trial', [
      { type: 'page', value: '/pricing*' },
      { type: 'event', value: 'Start trial' },
    ])
    await save(ga4.id, 'Trial', [
      { type: 'page', value: '/pricing*' },
      { type: 'event', value: 'Start trial' },
    ])
    clock = NOW
  })

  const get = (path: string) => getOk(call, path, read)
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`

  const meets = (step: Step, h: RawHit) =>
    step.type === 'page'
      ? h.name === 'pageview' && glob(step.value).test(h.path)
      : step.type === 'event'
        ? h.name === step.value
        : goalMatch.get(step.value)!(h)

  /** The furthest step a visit reaches: its hits in time order, each step strictly after the one before. */
  function levelOf(hits: RawHit[], steps: Step[]): number {
    let level = 0
    let last = -Infinity
    for (const h of hits) {
      if (level < steps.length && h.ts > last && meets(steps[level], h)) {
        level++
        last = h.ts
      }
    }
    return level
  }

  /** Per step: visitors whose furthest visit (its hits in the window) reached it; conversions and drop-off from those. */
  function expectedSteps(
    steps: Step[],
    range: { from: string; to: string },
    keepVisit: (v: Visit, inWindow: RawHit[]) => boolean = () => true,
  ) {
    const furthest = new Map<string, number>()
    for (const v of visitsOf(fx.hits)) {
      const inWindow = v.hits.filter((h) => h.ts >= Date.parse(range.from) && h.ts < Date.parse(range.to))
      if (!inWindow.length || !keepVisit(v, inWindow)) continue
      furthest.set(v.visitor, Math.max(furthest.get(v.visitor) ?? 0, levelOf(inWindow, steps)))
    }
    const reached = steps.map((_, i) => [...furthest.values()].filter((level) => level > i).length)
    // conversions are answered as every fraction is, to 4 decimals
    const fraction = (v: number) => Math.round(v * 1e4) / 1e4
    return steps.map((s, i) => ({
      type: s.type,
      value: s.value,
      visitors: reached[i],
      conversionFromPrevious: fraction(i ? (reached[i - 1] ? reached[i] / reached[i - 1] : 0) : reached[0] ? 1 : 0),
      conversionFromFirst: fraction(reached[0] ? reached[i] / reached[0] : 0),
      dropOff: i ? reached[i - 1] - reached[i] : 0,
    }))
  }

  const stepsOf = (json: { result: { steps: Record<string, unknown>[] } }) => json.result.steps.map(({ label, ...rest }) => rest)

  it('the reference finds the hand-written levels, and the fixture has out-of-order and cross-visit steps', () => {
    const visits = visitsOf(fx.hits)
    HAND.forEach((h, n) => {
      const of = visits.filter((v) => v.visitor.startsWith(`203.0.113.${n + 1}|`))
      expect(Math.max(...of.map((v) => levelOf(v.hits, funnels.trial.steps))), JSON.stringify(h.actions)).toBe(h.trialLevel)
    })
    // visitors who did every step of the main funnel, though not in order within one visit
    const all = new Map<string, RawHit[]>()
    for (const v of visits) all.set(v.visitor, [...(all.get(v.visitor) ?? []), ...v.hits])
    const unordered = [...all].filter(([visitor, hits]) => {
      const best = Math.max(...visits.filter((v) => v.visitor === visitor).map((v) => levelOf(v.hits, funnels.trial.steps)))
      return best < 3 && funnels.trial.steps.every((s) => hits.some((h) => meets(s, h)))
    })
    expect(unordered.length).toBeGreaterThan(5)
  })

  it('computes the first funnel by default: visitors per step in order within a visit, conversions and drop-off', async () => {
    const json = await get(`/api/v1/funnels?site_id=${ids.shop}&range=30d`)
    expect(json.available).toBe(true)
    expect(json.funnels.map((f: { name: string }) => f.name)).toEqual(['Trial', 'Pro', 'Blog'])
    expect(json.result).toMatchObject({ funnelId: funnels.trial.id, name: 'Trial' })
    const expected = expectedSteps(funnels.trial.steps, json.range)
    expect(stepsOf(json)).toEqual(expected)
    expect(expected.at(-1)!.visitors).toBeGreaterThan(0)
    expect(expected.at(-1)!.visitors).toBeLessThan(expected[0].visitors)
    expect(json.result.steps.map((s: { label: string | null }) => s.label)).toEqual([null, null, null])
  })

  it('computes a funnel by id: one event never fills two steps; goal steps of either kind', async () => {
    for (const which of ['pro', 'blog'] as const) {
      const json = await get(`/api/v1/funnels?site_id=${ids.shop}&range=30d&funnel_id=${funnels[which].id.toUpperCase()}`)
      expect(json.result.funnelId).toBe(funnels[which].id)
      const expected = expectedSteps(funnels[which].steps, json.range)
      expect(stepsOf(json), which).toEqual(expected)
      expect(expected[1].visitors, which).toBeGreaterThan(0)
    }
  })

  it('honours the range and filters: visit-scoped ones keep whole visits, event-scoped ones the visits holding a selected event', async () => {
    const week = await get(`/api/v1/funnels?site_id=${ids.shop}&range=7d`)
    expect(stepsOf(week)).toEqual(expectedSteps(funnels.trial.steps, week.range))
    const gb = await get(
      `/api/v1/funnels?site_id=${ids.shop}&range=30d${filtersParam([{ dimension: 'country', operator: 'is', value: ['GB'] }])}`,
    )
    expect(stepsOf(gb)).toEqual(expectedSteps(funnels.trial.steps, gb.range, (v) => v.country === 'GB'))
    const pro = await get(
      `/api/v1/funnels?site_id=${ids.shop}&range=30d${filtersParam([{ dimension: 'path', operator: 'is', value: ['/pricing/pro'] }])}`,
    )
    const expected = expectedSteps(funnels.trial.steps, pro.range, (_, hits) => hits.some((h) => h.path === '/pricing/pro'))
    expect(stepsOf(pro)).toEqual(expected)
    expect(expected[0].visitors).toBeLessThan(expectedSteps(funnels.trial.steps, pro.range)[0].visitors)
  })

  it('an empty site computes zeros; a site without funnels answers result null', async () => {
    const empty = await get(`/api/v1/funnels?site_id=${ids.empty}`)
    expect(
      empty.result.steps.map(({ visitors, conversionFromPrevious, conversionFromFirst, dropOff }: Record<string, number>) => [
        visitors,
        conversionFromPrevious,
        conversionFromFirst,
        dropOff,
      ]),
    ).toEqual([
      [0, 0, 0, 0],
      [0, 0, 0, 0],
    ])
    expect(await get(`/api/v1/funnels?site_id=${ids.none}`)).toEqual({
      source: 'standalone',
      available: true,
      range: expect.any(Object),
      funnels: [],
      result: null,
    })
  })

  it('a site that reads only ga4 lists its funnels and answers available: false', async () => {
    const json = await get(`/api/v1/funnels?site_id=${ids.ga4}`)
    expect(json).toEqual({ source: 'ga4', available: false, funnels: [expect.objectContaining({ name: 'Trial' })], result: null })
  })

  it('reads finished days from their rolled-up levels, and a late hit sends its day back to events until it is rolled up again', async () => {
    const storedDays = async () =>
      Number(
        (
          await services.clickhouse.query<{ n: string }>(
            "SELECT count() AS n FROM day_rollups FINAL WHERE site_id = {site:UUID} AND startsWith(property, 'filters:funnel:') AND value = ''",
            { site: ids.shop },
          )
        )[0].n,
      )
    // the reads above rolled up the finished days of each funnel they computed; reading again uses them
    expect(await storedDays()).toBeGreaterThan(20)
    for (const which of ['trial', 'pro', 'blog'] as const)
      for (const range of ['30d', '7d']) {
        const json = await get(`/api/v1/funnels?site_id=${ids.shop}&range=${range}&funnel_id=${funnels[which].id}`)
        expect(stepsOf(json), `${which} ${range}`).toEqual(expectedSteps(funnels[which].steps, json.range))
      }
    const before = stepsOf(await get(`/api/v1/funnels?site_id=${ids.shop}&range=30d`))
    // a visitor of a finished day who completes the trial funnel, imported late
    const late = [page('/pricing'), event('Start trial'), event('Signup')].map((a, i) => ({
      ...a,
      ts: Date.parse('2026-11-19T10:00:00Z') + i * MINUTE,
      ip: '203.0.113.99',
      ua: 0,
    }))
    const lines = late.map((h) =>
      JSON.stringify({
        timestamp: new Date(h.ts).toISOString(),
        site: JSON.parse(fx.lines[0]).site,
        name: h.name,
        url: `https://shop.funnels.test${h.path}`,
        ip: h.ip,
        userAgent: UAS[h.ua],
      }),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
    fx.hits.push(...late)
    const json = await get(`/api/v1/funnels?site_id=${ids.shop}&range=30d`)
    const expected = expectedSteps(funnels.trial.steps, json.range)
    expect(stepsOf(json)).toEqual(expected)
    expect(expected.map((s) => s.visitors)).toEqual(before.map((s) => Number(s.visitors) + 1))
  })

  it("the rollup refresh builds each saved funnel's finished days of the last month ahead of its first read", async () => {
    const funnelRows = async () =>
      (
        await services.clickhouse.query<{ property: string; d: string }>(
          "SELECT property, toString(day) AS d FROM day_rollups FINAL WHERE site_id = {site:UUID} AND startsWith(property, 'filters:funnel:') AND value = '' ORDER BY property, d",
          { site: ids.shop },
        )
      ).map((r) => `${r.property} ${r.d}`)
    await services.clickhouse.command(
      "ALTER TABLE day_rollups DELETE WHERE site_id = {site:UUID} AND startsWith(property, 'filters:funnel:') SETTINGS mutations_sync = 2",
      { site: ids.shop },
    )
    expect(await funnelRows()).toEqual([])
    await refreshRollups(services.clickhouse, services.repositories, NOW, ROLLUP_ALL_DAYS)
    // every finished site-local day with hits since a month before today, once per saved funnel (three, each its own key)
    const today = localDate(NOW.getTime(), TZ)
    const monthAgo = localDate(NOW.getTime() - FUNNEL_AHEAD_DAYS * 86_400_000, TZ)
    const days = [...new Set(fx.hits.map((h) => localDate(h.ts, TZ)))].filter((d) => d >= monthAgo && d < today).sort()
    const rows = await funnelRows()
    expect(days.length).toBeGreaterThan(20)
    expect(new Set(rows.map((r) => r.split(' ')[0])).size).toBe(3)
    expect(rows.map((r) => r.split(' ')[1]).sort()).toEqual([...days, ...days, ...days].sort())
    // a read finds them built: it answers the reference and builds nothing more
    for (const which of ['trial', 'pro', 'blog'] as const) {
      const json = await get(`/api/v1/funnels?site_id=${ids.shop}&range=30d&funnel_id=${funnels[which].id}`)
      expect(stepsOf(json), which).toEqual(expectedSteps(funnels[which].steps, json.range))
    }
    expect(await funnelRows()).toEqual(rows)
  })

  it('refuses a malformed or unknown funnel id', async () => {
    const bad = await call('GET', `/api/v1/funnels?site_id=${ids.shop}&funnel_id=first`, { key: read })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatch(/^funnel_id/)
    const unknown = await call('GET', `/api/v1/funnels?site_id=${ids.shop}&funnel_id=${crypto.randomUUID()}`, { key: read })
    expect(unknown.status).toBe(404)
    expect(unknown.json.error).toMatch(/^funnel_id/)
    const badRange = await call('GET', `/api/v1/funnels?site_id=${ids.shop}&range=forever`, { key: read })
    expect(badRange.status).toBe(400)
  })
})
