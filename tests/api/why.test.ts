import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../../lib/reports/rollup/refresh'
import { newSite } from '../../lib/sites/sites'
import { client, getOk, testServices } from '../helpers'
import {
  type FixtureHit,
  GOOGLE,
  localDay,
  HN,
  NOW,
  TZ,
  dailyVisits,
  flatHits,
  importLines,
  median,
  plantedHits,
  referenceDecay,
  referenceMovers,
  referenceSpikeHours,
} from './why-fixture'

/**
 * The "why traffic changed" reads on a site with planted effects (a spike from one Hacker News
 * thread, a guide that peaks and fades, a cohort of launched pages, a page that halves on a known
 * day, a page that goes quiet) and on a control site with flat traffic, where each finds nothing.
 * Expected numbers come from the reference computations of why-fixture.ts over the raw hits.
 */

describe('why traffic changed', () => {
  let call: ReturnType<typeof client>
  let services: Awaited<ReturnType<typeof testServices>>
  let read = ''
  let write = ''
  let planted: FixtureHit[]
  const ids = { news: '', flat: '', ga4: '' }

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Why', NOW)
    read = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    const news = newSite({ domain: 'news.why.test', timezone: TZ }, org.id, NOW)
    const flat = newSite({ domain: 'flat.why.test', timezone: TZ }, org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.why.test', timezone: TZ }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [news, flat, ga4]) await services.repositories.sites.create(site)
    planted = plantedHits(16)
    const lines = [...importLines(planted, news.snippetId, news.domain, 0), ...importLines(flatHits(), flat.snippetId, flat.domain, 0)]
    const result = await importHits(lines, services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors.slice(0, 3))).toBe(0)
    expect(result.imported).toBe(lines.length)
    Object.assign(ids, { news: news.id, flat: flat.id, ga4: ga4.id })
  }, 600_000)

  const get = (path: string, key = read) => getOk(call, path, key)

  describe('spikes', () => {
    it('finds the planted spike alone, with the referrer that brought it and its share', async () => {
      const json = await get(`/api/v1/spikes?site_id=${ids.news}&range=30d`)
      const reference = referenceSpikeHours(planted, json.range.from, json.range.to)
      // the fixture plants exactly one: the reference agrees
      expect(reference.map((s) => s.hour)).toEqual(['2026-11-18T14'])
      const [hour] = reference
      expect(json.spikes).toHaveLength(1)
      const [spike] = json.spikes
      expect(spike).toMatchObject({
        start: '2026-11-18T14:00:00+01:00',
        end: '2026-11-18T15:00:00+01:00',
        visitors: hour.visitors,
        expected: hour.expected,
        excess: hour.visitors - hour.expected,
      })
      expect(spike.peak).toEqual({ start: spike.start, visitors: hour.visitors, expected: hour.expected })
      expect(spike.id).toMatch(/^h\d+-[0-9a-f]{8}$/)
      // Hacker News: 60 visitors, none in the same hour of the 8 weeks before
      const hnBefore = planted.filter((h) => h.referrer === HN && h.ts < Date.parse('2026-11-18T13:00:00Z')).length
      expect(hnBefore).toBe(0)
      expect(spike.source).toEqual({
        dimension: 'source',
        value: 'Hacker News',
        referrerUrl: HN,
        visitors: 60,
        expected: 0,
        excess: 60,
        share: Math.min(1, +(60 / (hour.visitors - hour.expected)).toFixed(4)),
      })
      expect(spike.attached).toBeNull()
      // the id is stable
      expect((await get(`/api/v1/spikes?site_id=${ids.news}&range=7d`)).spikes.map((s: { id: string }) => s.id)).toEqual([spike.id])
    })

    it('by day: the spike hour alone does not lift its day past the rule', async () => {
      const json = await get(`/api/v1/spikes?site_id=${ids.news}&range=30d&interval=day`)
      expect(json.rule).toEqual({ interval: 'day', baselineWeeks: 8, k: 5, minExcess: 30 })
      // the 18th: its visitors against the median of the same weekday in the 8 weeks before
      const daily = new Map<string, number>()
      for (const h of planted) daily.set(localDay(h.ts), (daily.get(localDay(h.ts)) ?? 0) + 1)
      const baseline = Array.from(
        { length: 8 },
        (_, w) => daily.get(new Date(Date.parse('2026-11-18T00:00:00Z') - 7 * (w + 1) * 86_400_000).toISOString().slice(0, 10)) ?? 0,
      )
      const m = median(baseline)
      const spread = Math.max(1.4826 * median(baseline.map((x) => Math.abs(x - m))), Math.sqrt(m), 1)
      const spiking = (daily.get('2026-11-18') ?? 0) - m >= Math.max(5 * spread, 30)
      expect(json.spikes.map((s: { start: string }) => s.start.slice(0, 10))).toEqual(spiking ? ['2026-11-18'] : [])
    })

    it('attaches a source by hand as a spike_source annotation, shown with the spike and among the markers', async () => {
      const [spike] = (await get(`/api/v1/spikes?site_id=${ids.news}&range=7d`)).spikes
      const res = await call('POST', '/api/v1/spikes', {
        key: write,
        body: { site_id: ids.news, spike_id: spike.id, url: 'https://news.ycombinator.com/item?id=4242', title: 'Show HN thread' },
      })
      expect(res.status, JSON.stringify(res.json)).toBe(201)
      expect(res.json.annotation).toMatchObject({
        kind: 'spike_source',
        at: '2026-11-18T13:00:00.000Z',
        title: 'Show HN thread',
        url: 'https://news.ycombinator.com/item?id=4242',
      })
      const again = (await get(`/api/v1/spikes?site_id=${ids.news}&range=7d`)).spikes[0]
      expect(again.attached).toEqual({
        annotationId: res.json.annotation.id,
        title: 'Show HN thread',
        url: 'https://news.ycombinator.com/item?id=4242',
      })
      const markers = await get(`/api/v1/markers?site_id=${ids.news}&range=7d`)
      expect(markers.markers.annotations.map((a: { id: string; kind: string }) => [a.id, a.kind])).toEqual([
        [res.json.annotation.id, 'spike_source'],
      ])
    })

    it('refuses ids that name no spike of the site, and a read key', async () => {
      const [spike] = (await get(`/api/v1/spikes?site_id=${ids.news}&range=7d`)).spikes
      const start = Number(/^h(\d+)-/.exec(spike.id)![1])
      for (const [site, id] of [
        [ids.flat, spike.id],
        [ids.news, 'nope'],
        [ids.news, `h${start + 3600}-${spike.id.slice(-8)}`],
        [ids.news, `h${start - 86400 * 7}-00000000`],
      ]) {
        const res = await call('POST', '/api/v1/spikes', {
          key: write,
          body: { site_id: site, spike_id: id, url: 'https://x.test/', title: 'x' },
        })
        expect(res.status, `${id}: ${JSON.stringify(res.json)}`).toBe(404)
        expect(res.json.error).toMatch(/^spike_id: /)
      }
      expect(
        (
          await call('POST', '/api/v1/spikes', {
            key: read,
            body: { site_id: ids.news, spike_id: spike.id, url: 'https://x.test/', title: 'x' },
          })
        ).status,
      ).toBe(403)
      const bad = await call('POST', '/api/v1/spikes', {
        key: write,
        body: { site_id: ids.news, spike_id: spike.id, url: 'javascript:alert(1)', title: 'x' },
      })
      expect(bad.status).toBe(400)
      expect(bad.json.error).toMatch(/^url: /)
    })
  })

  describe('anomalies', () => {
    it('ranks the page that halved first, then the new post, then the page that went quiet, with their numbers', async () => {
      const json = await get(`/api/v1/anomalies?site_id=${ids.news}`)
      expect(json.range.name).toBe('7d')
      const from = Date.parse(json.range.from)
      const to = Date.parse(json.range.to)
      expect(Date.parse(json.previousRange.to)).toBe(from)
      const expected = referenceMovers(planted, from, to)
      expect(expected.slice(0, 3).map((m) => m.path)).toEqual(['/pricing', '/blog/launch-post', '/old'])
      const status = (m: (typeof expected)[number]) =>
        m.previous === 0 ? 'appeared' : m.current === 0 ? 'went_quiet' : m.change > 0 ? 'rose' : 'fell'
      const round = (x: number | null) => (x === null ? null : Math.round(x * 10_000) / 10_000)
      expect(json.pages).toEqual(
        expected.map((m) => ({
          path: m.path,
          status: status(m),
          current: m.current,
          previous: m.previous,
          change: m.change,
          relativeChange: round(m.relativeChange),
          impact: round(m.impact),
          candidates: [],
          // the site has no Search Console property bound
          search: null,
        })),
      )
      expect(json.pages.slice(0, 3).map((p: { status: string }) => p.status)).toEqual(['fell', 'appeared', 'went_quiet'])
      const siteCurrent = planted.filter((h) => h.ts >= from && h.ts < to).length
      const sitePrevious = planted.filter((h) => h.ts >= from - (to - from) && h.ts < from).length
      expect(json.site).toEqual({
        current: siteCurrent,
        previous: sitePrevious,
        change: siteCurrent - sitePrevious,
        relativeChange: round((siteCurrent - sitePrevious) / sitePrevious),
      })
      // the page too small to be news is left out
      expect(json.pages.map((p: { path: string }) => p.path)).not.toContain('/rare')
    })

    it('honours filters and limit', async () => {
      const filters = encodeURIComponent(JSON.stringify([{ dimension: 'source', operator: 'is', value: ['Google'] }]))
      const json = await get(`/api/v1/anomalies?site_id=${ids.news}&filters=${filters}&limit=1`)
      const fromGoogle = planted.filter((h) => h.referrer === GOOGLE)
      const expected = referenceMovers(fromGoogle, Date.parse(json.range.from), Date.parse(json.range.to))
      expect(expected.length).toBeGreaterThan(0)
      expect(json.pages.map((p: { path: string; change: number }) => [p.path, p.change])).toEqual(
        expected.slice(0, 1).map((m) => [m.path, m.change]),
      )
    })
  })

  describe('decay', () => {
    it('finds the guide fading, from lost search traffic, adjusted for the site', async () => {
      const json = await get(`/api/v1/decay?site_id=${ids.news}`)
      // decay takes no range: one sent is refused, not ignored
      const ranged = await call('GET', `/api/v1/decay?site_id=${ids.news}&range=7d`, { key: read })
      expect(ranged).toMatchObject({ status: 400, json: { error: expect.stringMatching(/^range: unknown parameter/) } })
      const today = localDay(NOW.getTime())
      expect(json.windows.current).toEqual({ from: '2026-10-25', to: '2026-11-21' })
      const expected = referenceDecay(planted, today)
      expect(expected.map((p) => p.path)).toEqual(['/guide'])
      const [guide] = expected
      const [page] = json.pages
      expect(json.pages).toHaveLength(1)
      expect(page).toMatchObject({ path: '/guide', peak: guide.peak, peakTo: guide.peakTo, current: guide.current, lost: guide.lost })
      expect(page.siteChange).toBeCloseTo(guide.siteChange, 4)
      expect(page.adjustedChange).toBeCloseTo(guide.adjustedChange, 4)
      // the peak's visits came from search, the current ones mostly direct
      const inWindow = (h: FixtureHit, to: string) => h.path === '/guide' && localDay(h.ts) <= to && localDay(h.ts) >= page.peakFrom
      const searchAtPeak = planted.filter((h) => inWindow(h, page.peakTo) && h.referrer === GOOGLE).length
      const searchNow = planted.filter(
        (h) => h.path === '/guide' && h.referrer === GOOGLE && localDay(h.ts) >= '2026-10-25' && localDay(h.ts) <= '2026-11-21',
      ).length
      expect(page.diagnosis.kind).toBe('lost_search')
      expect(page.diagnosis.evidence[0]).toEqual({
        kind: 'channel_loss',
        channel: 'Organic Search',
        peak: searchAtPeak,
        current: searchNow,
        lost: searchAtPeak - searchNow,
        share: Math.min(1, Math.round(((searchAtPeak - searchNow) / guide.lost) * 10_000) / 10_000),
      })
      expect(page.diagnosis.confidence).toBe(page.diagnosis.evidence[0].share)
    })
  })

  describe('launches', () => {
    const launchedIn = (from: number, to: number) => {
      const first = new Map<string, number>()
      for (const h of planted) if (!first.has(h.path)) first.set(h.path, h.ts)
      return [...first].filter(([, ts]) => ts >= from && ts < to)
    }

    it('measures the cohort over each page’s first 30 days and bands it against pages as old', async () => {
      const json = await get(`/api/v1/pages/launches?site_id=${ids.news}&range=30d`)
      const cohort = launchedIn(Date.parse(json.range.from), Date.parse(json.range.to))
      expect(cohort.map(([p]) => p).sort()).toEqual(['/blog/launch-post', '/new/1', '/new/2', '/new/3', '/new/4', '/new/5', '/new/6'])
      const daily = dailyVisits(planted)
      const today = localDay(NOW.getTime())
      const dayIndex = (a: string, b: string) => Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000)
      const pages = cohort.map(([path, ts]) => {
        const launch = localDay(ts)
        const days = Math.min(30, dayIndex(launch, today) + 1)
        const perDay = Array.from(
          { length: days },
          (_, d) => daily.get(path)!.get(new Date(Date.parse(`${launch}T00:00:00Z`) + d * 86_400_000).toISOString().slice(0, 10)) ?? 0,
        )
        return { path, days, perDay }
      })
      const firstDays = (p: (typeof pages)[number], n: number) => p.perDay.slice(0, n).reduce((a, b) => a + b, 0)
      const medianAt = (n: number) => median(pages.filter((p) => p.days >= n).map((p) => firstDays(p, n)))
      const expected = pages
        .map((p) => {
          const visits = firstDays(p, p.days)
          const mid = medianAt(p.days)
          return {
            path: p.path,
            measuredDays: p.days,
            visits,
            cohortMedian: mid,
            band: visits > mid * 1.2 ? 'over' : visits < mid * 0.8 ? 'under' : 'at',
          }
        })
        .sort((a, b) => b.visits - a.visits || (a.path < b.path ? -1 : 1))
      expect(
        json.pages.map(({ path, measuredDays, visits, cohortMedian, band }: Record<string, unknown>) => ({
          path,
          measuredDays,
          visits,
          cohortMedian,
          band,
        })),
      ).toEqual(expected)
      // the newest /new pages have the fewest visits a day: under; the post with its one-hour spike: over
      const bandOf = (path: string) => json.pages.find((p: { path: string }) => p.path === path).band
      expect([bandOf('/new/5'), bandOf('/new/6'), bandOf('/blog/launch-post')]).toEqual(['under', 'under', 'over'])
      expect(json.cohort.pages).toBe(7)
      expect(json.cohort.shape[0]).toEqual({ day: 0, medianVisits: median(pages.map((p) => p.perDay[0])), pages: 7 })
      expect(json.cohort.shape).toHaveLength(Math.max(...pages.map((p) => p.days)))
      for (const s of json.cohort.shape)
        expect(s.medianVisits).toBe(median(pages.filter((p) => p.days > s.day).map((p) => p.perDay[s.day])))
      // a page's detail says the same first days; launched inside its daily series, they are taken from that series
      for (const page of pages.filter((p) => ['/new/1', '/blog/launch-post'].includes(p.path))) {
        const detail = await get(`/api/v1/pages/detail?site_id=${ids.news}&path=${page.path}&range=30d`)
        expect(detail.first30).toMatchObject({ days: page.days, complete: page.days === 30, visits: firstDays(page, page.days) })
        expect(detail.first30.byDay.map((d: { visits: number }) => d.visits)).toEqual(page.perDay)
      }
    })

    it('measure=30d: every page over the same last 30 days', async () => {
      const json = await get(`/api/v1/pages/launches?site_id=${ids.news}&range=30d&measure=30d`)
      expect(json.sharedWindow).toEqual({ from: '2026-10-24', to: '2026-11-22' })
      const cohort = launchedIn(Date.parse(json.range.from), Date.parse(json.range.to)).map(([p]) => p)
      const visits = cohort.map((path) => ({
        path,
        visits: planted.filter((h) => h.path === path && localDay(h.ts) >= '2026-10-24').length,
      }))
      const mid = median(visits.map((v) => v.visits))
      expect(json.cohort.median).toBe(mid)
      expect(json.pages.map((p: { path: string; visits: number; band: string }) => [p.path, p.visits, p.band]).sort()).toEqual(
        visits.map((v) => [v.path, v.visits, v.visits > mid * 1.2 ? 'over' : v.visits < mid * 0.8 ? 'under' : 'at']).sort(),
      )
    })
  })

  describe('markers', () => {
    it('lists the annotations of the window and the ranking updates whose rollout overlaps it', async () => {
      const inside = await call('POST', '/api/v1/annotations', {
        key: write,
        body: { siteId: ids.flat, title: 'Redesign', kind: 'deploy', at: '2024-11-20T09:00:00Z' },
      })
      await call('POST', '/api/v1/annotations', { key: write, body: { siteId: ids.flat, title: 'Earlier', at: '2024-10-31T22:59:00Z' } })
      const json = await get(`/api/v1/markers?site_id=${ids.flat}&range=custom&from=2024-11-01&to=2024-12-31`)
      expect(json.markers.annotations.map((a: { id: string }) => a.id)).toEqual([inside.json.id])
      expect(json.markers.algorithmUpdates.map((u: { name: string }) => u.name)).toEqual([
        'November 2024 core update',
        'December 2024 core update',
        'December 2024 spam update',
      ])
      for (const u of json.markers.algorithmUpdates) expect(u.source).toMatch(/^https:\/\/developers\.google\.com\/search\//)
      expect(json.counts).toEqual({
        annotations: 1,
        algorithmUpdates: 3,
        pageChanges: 0,
        siteChanges: 0,
        vitalsRegressions: 0,
        backlinks: 0,
      })
    })
  })

  describe('the daily rollup', () => {
    // building the rollup of five months of days takes a while on a busy machine
    it('gives the same answers once the finished days are rolled up', { timeout: 300_000 }, async () => {
      const paths = [
        `anomalies?site_id=${ids.news}`,
        `anomalies?site_id=${ids.news}&range=30d`,
        `decay?site_id=${ids.news}`,
        `pages/launches?site_id=${ids.news}&range=30d`,
        `pages/launches?site_id=${ids.news}&range=30d&measure=30d`,
      ]
      const before = await Promise.all(paths.map((p) => get(`/api/v1/${p}`)))
      expect(await refreshRollups(services.clickhouse, services.repositories, NOW, ROLLUP_ALL_DAYS)).toBeGreaterThan(100)
      const after = await Promise.all(paths.map((p) => get(`/api/v1/${p}`)))
      expect(after).toEqual(before)
    })
  })

  describe('the control site and a site without the collector', () => {
    it('finds nothing on flat traffic', async () => {
      expect((await get(`/api/v1/spikes?site_id=${ids.flat}&range=90d`)).spikes).toEqual([])
      expect((await get(`/api/v1/spikes?site_id=${ids.flat}&range=90d&interval=day`)).spikes).toEqual([])
      expect((await get(`/api/v1/anomalies?site_id=${ids.flat}`)).pages).toEqual([])
      expect((await get(`/api/v1/anomalies?site_id=${ids.flat}&range=30d`)).pages).toEqual([])
      expect((await get(`/api/v1/decay?site_id=${ids.flat}`)).pages).toEqual([])
      expect((await get(`/api/v1/pages/launches?site_id=${ids.flat}&range=30d`)).pages).toEqual([])
      const markers = await get(`/api/v1/markers?site_id=${ids.flat}&range=30d`)
      expect(markers.markers).toEqual({
        annotations: [],
        algorithmUpdates: [],
        pageChanges: [],
        siteChanges: [],
        vitalsRegressions: [],
        backlinks: [],
      })
      // while the site does have traffic
      expect((await get(`/api/v1/anomalies?site_id=${ids.flat}`)).site.current).toBeGreaterThan(0)
    })

    it('reads the ga4 source of a site that reads only ga4 (nothing imported: nothing found), and refuses the collector for it', async () => {
      for (const path of ['spikes', 'anomalies', 'decay', 'pages/launches']) {
        const json = await get(`/api/v1/${path}?site_id=${ids.ga4}`)
        expect(json, path).toMatchObject({ source: 'ga4', available: true })
        expect(json[path === 'spikes' ? 'spikes' : 'pages'], path).toEqual([])
        const refused = await call('GET', `/api/v1/${path}?site_id=${ids.ga4}&source=standalone`, { key: read })
        expect(refused.status, path).toBe(400)
        expect(refused.json.error, path).toMatch(/^source: .*standalone/)
      }
    })

    it('refuses bad parameters naming them', async () => {
      for (const [path, name] of [
        ['spikes?interval=week', 'interval'],
        ['pages/launches?measure=90d', 'measure'],
        ['anomalies?range=fortnight', 'range'],
        ['markers?range=custom&from=2024-13-01&to=2024-12-01', 'from'],
      ]) {
        const [route, query] = path.split('?')
        const res = await call('GET', `/api/v1/${route}?site_id=${ids.news}&${query}`, { key: read })
        expect(res.status, path).toBe(400)
        expect(res.json.error, path).toMatch(new RegExp(`^${name}: `))
      }
    })
  })

  describe('the common filters on spikes, launches, page detail and pages', () => {
    const filterOf = (goal: string) =>
      `&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'goal', operator: 'is', value: [goal] }]))}`
    beforeAll(async () => {
      // every planted hit is a visitor and a visit of its own: a page goal keeps the visits of that page
      for (const [name, matchValue] of [
        ['Launch post', '/blog/launch-post'],
        ['First new page', '/new/1'],
      ]) {
        const res = await call('POST', '/api/v1/goals', { key: write, body: { site_id: ids.news, name, type: 'page', matchValue } })
        expect(res.status, JSON.stringify(res.json)).toBe(201)
      }
    })

    it('spikes: a goal keeps the visitors that converted; the spike of visitors who did not is gone', async () => {
      const launch = await get(`/api/v1/spikes?site_id=${ids.news}&range=30d${filterOf('Launch post')}`)
      // the 60 Hacker News visitors all read the post; no one did in that hour of the weeks before
      expect(launch.spikes).toHaveLength(1)
      expect(launch.spikes[0]).toMatchObject({ start: '2026-11-18T14:00:00+01:00', visitors: 60, expected: 0, excess: 60 })
      expect(launch.spikes[0].source).toMatchObject({ dimension: 'source', value: 'Hacker News', visitors: 60, share: 1 })
      const other = await get(`/api/v1/spikes?site_id=${ids.news}&range=30d${filterOf('First new page')}`)
      expect(other.spikes.map((s: { start: string }) => s.start)).not.toContain('2026-11-18T14:00:00+01:00')
      // a goal the site does not have is named
      const res = await call('GET', `/api/v1/spikes?site_id=${ids.news}${filterOf('Nope')}`, { key: read })
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(/^filters: /)
    })

    it('launches and page detail: a page counts only the visits the goal keeps', async () => {
      const all = await get(`/api/v1/pages/launches?site_id=${ids.news}&range=30d`)
      const kept = await get(`/api/v1/pages/launches?site_id=${ids.news}&range=30d${filterOf('First new page')}`)
      const visits = (json: { pages: { path: string; visits: number }[] }) => new Map(json.pages.map((p) => [p.path, p.visits]))
      // the same pages launched; /new/1's visits all converted, the others' none
      expect([...visits(kept).keys()].sort()).toEqual([...visits(all).keys()].sort())
      expect(visits(all).get('/new/1')).toBeGreaterThan(0)
      for (const [path, n] of visits(kept)) expect(n, path).toBe(path === '/new/1' ? visits(all).get(path) : 0)

      const detail = (path: string, goal = '') => get(`/api/v1/pages/detail?site_id=${ids.news}&path=${path}&range=30d${goal}`)
      const one = await detail('/new/1')
      expect(one.totals.visits).toBeGreaterThan(0)
      expect((await detail('/new/1', filterOf('First new page'))).totals).toEqual(one.totals)
      const two = await detail('/new/2', filterOf('First new page'))
      expect(two.totals).toEqual({ visits: 0, visitors: 0, pageviews: 0 })
      expect((await detail('/new/2')).totals.visits).toBeGreaterThan(0)
    })

    it('pages: the inventory with the traffic the goal keeps; trends are not taken with filters', async () => {
      await services.clickhouse.insert(
        'crawl_snapshots',
        ['/new/1', '/new/2'].map((path) => ({
          site_id: ids.news,
          path,
          fetched_at: '2026-11-21 00:00:00.000',
          id: crypto.randomUUID(),
          status: 200,
          title: path,
          launched_at: '2026-11-21 00:00:00.000',
        })),
      )
      const by = (json: { pages: { path: string; visitors: number }[] }) => new Map(json.pages.map((p) => [p.path, p.visitors]))
      const all = by(await get(`/api/v1/pages?site_id=${ids.news}&range=30d`))
      const kept = by(await get(`/api/v1/pages?site_id=${ids.news}&range=30d${filterOf('First new page')}`))
      expect(all.get('/new/1')).toBeGreaterThan(0)
      expect(kept.get('/new/1')).toBe(all.get('/new/1'))
      expect(kept.get('/new/2')).toBe(0)
      expect(all.get('/new/2')).toBeGreaterThan(0)
      const refused = await call('GET', `/api/v1/pages?site_id=${ids.news}&trends=1${filterOf('First new page')}`, { key: read })
      expect(refused.status).toBe(400)
      expect(refused.json.error).toMatch(/^trends: /)
    })
  })
})
