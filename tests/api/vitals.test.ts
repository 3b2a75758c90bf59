import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { client, getOk, testServices } from '../helpers'
import { NOW, UAS, localDate } from './report-reference'

/**
 * GET /vitals against a reference over the fixture hits: vital samples on phones and desktops,
 * some carrying the attribution build's fields, on two sites in different timezones. Percentiles
 * are computed here by linear interpolation between the two nearest ranks of the sorted samples;
 * bands by the web.dev thresholds written out again below; visitors are (address, agent,
 * site-local day).
 */

const IPS: [string, string][] = [
  ['81.2.69.142', 'GB'],
  ['8.8.8.8', 'US'],
  ['46.114.0.1', 'DE'],
  ['1.1.1.1', 'AU'],
]
const BROWSERS = ['Chrome', 'Firefox', 'Safari']
const DEVICES = ['Desktop', 'Desktop', 'Mobile']
const PATHS = ['/', '/cart', '/checkout', '/blog/x']
const NAMES = ['LCP', 'INP', 'CLS', 'FCP', 'TTFB'] as const
type Name = (typeof NAMES)[number]
const THRESHOLDS: Record<Name, [number, number]> = {
  LCP: [2500, 4000],
  INP: [200, 500],
  CLS: [0.1, 0.25],
  FCP: [1800, 3000],
  TTFB: [800, 1800],
}
const WEIGHTS: Record<Name, number> = { LCP: 0.3, INP: 0.3, CLS: 0.25, FCP: 0.1, TTFB: 0.05 }
/** Values on each threshold, so both sides of "at or under" are checked. */
const ON_THRESHOLD: Record<Name, number[]> = { LCP: [2500, 4000], INP: [200, 500], CLS: [0.1, 0.25], FCP: [1800, 3000], TTFB: [800, 1800] }

const CONTRIBUTOR_FIELDS = {
  lcpElements: ['LCP', 'target', ['img.hero', 'h1.title', 'div.carousel>img']],
  layoutShifts: ['CLS', 'largestShiftTarget', ['div.ad', 'img.banner']],
  blockingScripts: ['INP', 'scriptUrl', ['https://cdn.test/app.js', 'https://ads.test/tag.js']],
  interactionTargets: ['INP', 'interactionTarget', ['button#buy', 'a.menu', 'input#q']],
} as const
type Kind = keyof typeof CONTRIBUTOR_FIELDS

type Sample = { ts: number; ip: number; ua: number; path: string; name: Name; value: number; attribution: Record<string, string | number> }

const days = new Map<string, string>()
/** The site-local day of a time, remembered (formatting dates is the slow part of the reference). */
function dayOf(ts: number, tz: string) {
  const key = `${ts}|${tz}`
  let day = days.get(key)
  if (day === undefined) days.set(key, (day = localDate(ts, tz)))
  return day
}

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

function vitalsFixture(snippet: string, domain: string, seed: number, count: number) {
  const r = prng(seed)
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]
  const start = Date.parse('2026-10-10T00:00:00Z')
  const samples: Sample[] = []
  for (let i = 0; i < count; i++) {
    const name = NAMES[i % NAMES.length]
    const poor = THRESHOLDS[name][1]
    // phones slower than desktops; spread over all three bands, a few exactly on a threshold
    const ua = Math.floor(r() * UAS.length)
    const spread = poor * (ua === 2 ? 1.6 : 1.1)
    const raw = r() < 0.06 ? pick(ON_THRESHOLD[name]) : r() * spread
    const value = name === 'CLS' ? Math.round(raw * 1000) / 1000 : Math.round(raw)
    const attribution: Record<string, string | number> = {}
    if (r() < 0.6) {
      for (const [metric, field, targets] of Object.values(CONTRIBUTOR_FIELDS))
        if (metric === name && r() < 0.85) attribution[field] = pick(targets)
      if (name === 'FCP') attribution.firstByteToFCP = Math.round(value / 2)
    }
    samples.push({
      ts: start + Math.floor(r() * (NOW.getTime() - 3_600_000 - start)),
      ip: Math.floor(r() * IPS.length),
      ua,
      path: pick(PATHS),
      name,
      value,
      attribution,
    })
  }
  const lines = samples.map((s) =>
    JSON.stringify({
      timestamp: new Date(s.ts).toISOString(),
      site: snippet,
      name: 'vital',
      url: `https://${domain}${s.path}`,
      ip: IPS[s.ip][0],
      userAgent: UAS[s.ua],
      vital: { name: s.name, value: s.value, ...(Object.keys(s.attribution).length ? { attribution: s.attribution } : {}) },
    }),
  )
  // pageviews and a custom event beside them, which vitals must not count
  for (const s of samples.slice(0, 40))
    lines.push(
      JSON.stringify({
        timestamp: new Date(s.ts - 1000).toISOString(),
        site: snippet,
        name: 'pageview',
        url: `https://${domain}${s.path}`,
        ip: IPS[s.ip][0],
        userAgent: UAS[s.ua],
      }),
    )
  return { lines, samples }
}

/** The percentile by linear interpolation between the nearest ranks (numpy's default, Excel's PERCENTILE.INC). */
function percentile(values: number[], p: number): number | null {
  if (!values.length) return null
  const sorted = [...values].sort((a, b) => a - b)
  const h = (sorted.length - 1) * p
  const lo = Math.floor(h)
  return lo + 1 < sorted.length ? sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]) : sorted[lo]
}
const bandOf = (name: Name, v: number) => (v <= THRESHOLDS[name][0] ? 'good' : v > THRESHOLDS[name][1] ? 'poor' : 'ni')

function score(samples: Sample[]): number | null {
  let sum = 0
  let weights = 0
  for (const name of NAMES) {
    const of = samples.filter((s) => s.name === name)
    if (!of.length) continue
    const points = of.reduce((acc, s) => acc + ({ good: 100, ni: 50, poor: 0 } as const)[bandOf(name, s.value)], 0) / of.length
    sum += WEIGHTS[name] * points
    weights += WEIGHTS[name]
  }
  return weights ? sum / weights : null
}

describe('vitals', () => {
  let call: ReturnType<typeof client>
  let key = ''
  const sites = [
    { name: 'berlin', tz: 'Europe/Berlin', id: '', samples: [] as Sample[] },
    { name: 'new york', tz: 'America/New_York', id: '', samples: [] as Sample[] },
  ]
  const ids = { empty: '', ga4: '' }

  beforeAll(async () => {
    const services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Vitals', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    for (const [i, s] of sites.entries()) {
      const site = newSite({ domain: `site${i}.vitals.test`, timezone: s.tz }, org.id, NOW)
      await services.repositories.sites.create(site)
      const fx = vitalsFixture(site.snippetId, site.domain, 11 + i, i === 0 ? 900 : 300)
      const result = await importHits(fx.lines, services.ingestor)
      expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
      Object.assign(s, { id: site.id, samples: fx.samples })
    }
    const empty = newSite({ domain: 'empty.vitals.test', timezone: 'Europe/Berlin' }, org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.vitals.test', timezone: 'UTC' }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [empty, ga4]) await services.repositories.sites.create(site)
    Object.assign(ids, { empty: empty.id, ga4: ga4.id })
  })

  const get = (path: string) => getOk(call, path, key)
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`
  const within = (samples: Sample[], range: { from: string; to: string }) =>
    samples.filter((s) => s.ts >= Date.parse(range.from) && s.ts < Date.parse(range.to))
  const visitors = (samples: Sample[], tz: string) => new Set(samples.map((s) => `${s.ip}|${s.ua}|${dayOf(s.ts, tz)}`)).size
  /**
   * Answers are rounded, fractions (and CLS) to 4 decimals and milliseconds to 1: within half a
   * unit of that last place of the reference (`units` of them where rounded values are subtracted).
   */
  const near = (actual: number, expected: number, digits: number, what: string, units = 1) => {
    expect(Math.abs(actual - expected), what).toBeLessThanOrEqual(units * 0.5 * 10 ** -digits + 1e-9)
    expect((String(actual).split('.')[1] ?? '').length, `${what} decimals`).toBeLessThanOrEqual(digits)
  }
  const digitsOf = (name: string) => (name === 'CLS' ? 4 : 1)
  const closeOrNull = (actual: number | null, expected: number | null, what: string, name: string) => {
    if (expected === null) expect(actual, what).toBeNull()
    else near(actual as number, expected, digitsOf(name), what)
  }
  /** A row of the trend or a table against the reference over its samples. */
  const expectRow = (row: Record<string, unknown>, samples: Sample[], p: number, tz: string, what: string) => {
    expect(row.samples, what).toBe(samples.length)
    expect(row.visitors, what).toBe(visitors(samples, tz))
    const s = score(samples)
    if (s === null) expect(row.score, what).toBeNull()
    else expect(Math.abs((row.score as number) - s), `${what} score`).toBeLessThanOrEqual(0.05 + 1e-9)
    for (const name of NAMES)
      closeOrNull(
        row[name] as number | null,
        percentile(
          samples.filter((x) => x.name === name).map((x) => x.value),
          p,
        ),
        `${what} ${name}`,
        name,
      )
  }
  /** Everything but the contributors, against the reference over `samples` (already narrowed by filters). */
  function expectVitals(json: Record<string, any>, all: Sample[], p: number, tz: string) {
    const samples = within(all, json.range)
    expect(json.available).toBe(true)
    expect(json.percentile).toBe(p * 100)
    expectRow(json.summary, samples, p, tz, 'summary')
    for (const name of NAMES) {
      const of = samples.filter((s) => s.name === name)
      const share = (band: string) => (of.length ? of.filter((s) => bandOf(name, s.value) === band).length / of.length : 0)
      const m = json.metrics[name]
      closeOrNull(
        m.value,
        percentile(
          of.map((s) => s.value),
          p,
        ),
        name,
        name,
      )
      expect(m.samples, name).toBe(of.length)
      near(m.good, share('good'), 4, `${name} good`)
      near(m.needsImprovement, share('ni'), 4, `${name} needsImprovement`)
      near(m.poor, share('poor'), 4, `${name} poor`)
      expect(m.thresholds).toEqual({ good: THRESHOLDS[name][0], poor: THRESHOLDS[name][1] })
    }
    // every site-local day of the window, empty ones with nulls
    const windowDays: string[] = []
    for (let t = Date.parse(json.range.from); t < Date.parse(json.range.to); t += 3_600_000)
      if (windowDays.at(-1) !== dayOf(t, tz)) windowDays.push(dayOf(t, tz))
    expect(json.trend.map((d: { date: string }) => d.date)).toEqual(windowDays)
    for (const day of json.trend)
      expectRow(
        day,
        samples.filter((s) => dayOf(s.ts, tz) === day.date),
        p,
        tz,
        day.date,
      )
    const tables: Record<string, (s: Sample) => string> = {
      pages: (s) => s.path,
      countries: (s) => IPS[s.ip][1],
      devices: (s) => DEVICES[s.ua],
      browsers: (s) => BROWSERS[s.ua],
    }
    for (const [table, valueFor] of Object.entries(tables)) {
      const by = new Map<string, Sample[]>()
      for (const s of samples) by.set(valueFor(s), [...(by.get(valueFor(s)) ?? []), s])
      const order = [...by].sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1)).slice(0, json.tables[table].length)
      expect(
        json.tables[table].map((r: { value: string }) => r.value),
        table,
      ).toEqual(order.map(([v]) => v))
      expect(json.tables[table].length, table).toBe(Math.min(by.size, 100))
      for (const row of json.tables[table]) expectRow(row, by.get(row.value)!, p, tz, `${table} ${row.value}`)
    }
    expect(json.tables.os.reduce((n: number, r: { samples: number }) => n + r.samples, 0)).toBe(samples.length)
  }

  it.each([0, 1])('reports each metric at p75 with bands, score, daily trend and tables (site %i)', async (i) => {
    const site = sites[i]
    const json = await get(`/api/v1/vitals?site_id=${site.id}&range=30d`)
    expect(json.formFactor).toBeNull()
    expect(json.contributors).toBeUndefined()
    expectVitals(json, site.samples, 0.75, site.tz)
    // the fixture reaches every band of every metric
    for (const name of NAMES)
      for (const band of ['good', 'needsImprovement', 'poor']) expect(json.metrics[name][band], `${name} ${band}`).toBeGreaterThan(0)
    expect(json.trend).toHaveLength(30)
  })

  it('takes the percentile, a form factor, filters and limit', async () => {
    const site = sites[0]
    for (const [percent, p] of [
      ['50', 0.5],
      ['90', 0.9],
      ['99', 0.99],
    ] as const)
      expectVitals(await get(`/api/v1/vitals?site_id=${site.id}&range=30d&percentile=${percent}`), site.samples, p, site.tz)
    const phones = await get(`/api/v1/vitals?site_id=${site.id}&range=30d&form_factor=phone`)
    expect(phones.formFactor).toBe('phone')
    expectVitals(
      phones,
      site.samples.filter((s) => DEVICES[s.ua] === 'Mobile'),
      0.75,
      site.tz,
    )
    const desktops = await get(`/api/v1/vitals?site_id=${site.id}&range=30d&form_factor=desktop&percentile=90`)
    expectVitals(
      desktops,
      site.samples.filter((s) => DEVICES[s.ua] === 'Desktop'),
      0.9,
      site.tz,
    )
    // phones are slower in the fixture, so the two differ
    expect(phones.metrics.LCP.value).toBeGreaterThan(desktops.metrics.LCP.value * 0.9)
    const filtered = await get(
      `/api/v1/vitals?site_id=${site.id}&range=30d${filtersParam([
        { dimension: 'path', operator: 'is', value: ['/checkout', '/cart'] },
        { dimension: 'country', operator: 'is_not', value: ['US'] },
      ])}`,
    )
    expectVitals(
      filtered,
      site.samples.filter((s) => ['/checkout', '/cart'].includes(s.path) && IPS[s.ip][1] !== 'US'),
      0.75,
      site.tz,
    )
    const limited = await get(`/api/v1/vitals?site_id=${site.id}&range=30d&limit=2`)
    expect(limited.tables.pages).toHaveLength(2)
    expect(limited.tables.countries).toHaveLength(2)
    const week = await get(`/api/v1/vitals?site_id=${site.id}&range=7d`)
    expectVitals(week, site.samples, 0.75, site.tz)
    expect(week.trend).toHaveLength(7)
  })

  it('attribution=1 adds the contributors behind each metric with share and effect', async () => {
    const site = sites[0]
    for (const [query, p, keep] of [
      ['', 0.75, () => true],
      ['&percentile=90&form_factor=phone', 0.9, (s: Sample) => DEVICES[s.ua] === 'Mobile'],
    ] as const) {
      const json = await get(`/api/v1/vitals?site_id=${site.id}&range=30d&attribution=1${query}`)
      const samples = within(site.samples, json.range).filter(keep)
      for (const [kind, [metric, field]] of Object.entries(CONTRIBUTOR_FIELDS) as [Kind, (typeof CONTRIBUTOR_FIELDS)[Kind]][]) {
        const named = samples.filter((s) => s.name === metric && field in s.attribution)
        const by = new Map<string, Sample[]>()
        for (const s of named) by.set(String(s.attribution[field]), [...(by.get(String(s.attribution[field])) ?? []), s])
        const overall = percentile(
          samples.filter((s) => s.name === metric).map((s) => s.value),
          p,
        )!
        const expected = [...by]
          .sort((a, b) => b[1].length - a[1].length || (a[0] < b[0] ? -1 : 1))
          .map(([target, of]) => ({
            target,
            samples: of.length,
            share: of.length / named.length,
            value: percentile(
              of.map((s) => s.value),
              p,
            )!,
            effect:
              percentile(
                of.map((s) => s.value),
                p,
              )! - overall,
          }))
        expect(
          json.contributors[kind].map((c: { target: string; samples: number }) => [c.target, c.samples]),
          kind,
        ).toEqual(expected.map((c) => [c.target, c.samples]))
        expect(json.contributors[kind].length, kind).toBeGreaterThan(1)
        json.contributors[kind].forEach((c: (typeof expected)[number], n: number) => {
          const what = `${kind} ${c.target}`
          near(c.share, expected[n].share, 4, `${what} share`)
          near(c.value, expected[n].value, digitsOf(metric), `${what} value`)
          // the difference of two rounded values, rounded
          near(c.effect, expected[n].effect, digitsOf(metric), `${what} effect`, 3)
        })
      }
    }
    const limited = await get(`/api/v1/vitals?site_id=${site.id}&range=30d&attribution=1&limit=1`)
    expect(limited.contributors.lcpElements).toHaveLength(1)
  })

  it('refuses a percentile, form factor or attribution outside its values, naming the parameter', async () => {
    for (const [bad, name] of [
      ['percentile=80', 'percentile'],
      ['percentile=', 'percentile'],
      ['form_factor=tablet', 'form_factor'],
      ['attribution=yes', 'attribution'],
      ['range=week2', 'range'],
    ]) {
      const res = await call('GET', `/api/v1/vitals?site_id=${sites[0].id}&${bad}`, { key })
      expect(res.status, bad).toBe(400)
      expect(res.json.error, bad).toMatch(new RegExp(`^${name}`))
    }
  })

  it('an empty site answers zero samples, null values and empty days', async () => {
    const json = await get(`/api/v1/vitals?site_id=${ids.empty}&range=7d&attribution=1`)
    expect(json.summary).toEqual({ samples: 0, visitors: 0, score: null, LCP: null, INP: null, CLS: null, FCP: null, TTFB: null })
    expect(json.metrics.INP).toEqual({
      value: null,
      samples: 0,
      good: 0,
      needsImprovement: 0,
      poor: 0,
      thresholds: { good: 200, poor: 500 },
    })
    expect(json.trend).toHaveLength(7)
    expect(json.trend.every((d: { samples: number; score: null }) => d.samples === 0 && d.score === null)).toBe(true)
    expect(json.tables).toEqual({ pages: [], countries: [], devices: [], browsers: [], os: [] })
    expect(json.contributors).toEqual({ lcpElements: [], layoutShifts: [], blockingScripts: [], interactionTargets: [] })
  })

  it('a site that reads only ga4 answers available: false', async () => {
    const json = await get(`/api/v1/vitals?site_id=${ids.ga4}`)
    expect(json).toMatchObject({ available: false, percentile: 75, summary: { samples: 0, score: null }, trend: [], tables: { pages: [] } })
    expect(json.range).toBeUndefined()
  })
})
