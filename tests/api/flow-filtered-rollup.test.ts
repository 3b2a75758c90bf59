import { rollupBuildsSettled } from '../../lib/reports/query/run'
import { describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { type FlowAnchor, flowSql, rolledFlowSql } from '../../lib/reports/query/compile/flow'
import { foldRolledFlow } from '../../lib/reports/query/journeys'
import type { Query } from '../../lib/reports/query/model'
import { parseFilters } from '../../lib/reports/query/parse'
import { resolveRange } from '../../lib/reports/query/range'
import { filteredFlowDays } from '../../lib/reports/rollup/flow'
import { execute } from '../../lib/storage/clickhouse/execute'
import { type FlowAnswer, expectedFlow, flowAsMaps } from './flow-reference'
import { NOW, type Ref, type RefEvent, type RefVisit, UAS, fixture, localDate } from './report-reference'
import { referenceSite } from './reference-site'

/** Each kept visit's pages in [from, to) in time order, a page repeated right after itself once. */
function pageSequences(ref: Ref, range: { from: string; to: string }, keep: (e: RefEvent, v: RefVisit) => boolean) {
  const [from, to] = [Date.parse(range.from), Date.parse(range.to)]
  const inWindow = ref.events.filter((e) => e.ts >= from && e.ts < to)
  const kept = new Set(inWindow.filter((e) => keep(e, ref.visits.get(e.visit)!)).map((e) => e.visit))
  const pages = new Map<string, RefEvent[]>()
  for (const e of inWindow) if (e.kind === 'pageview' && kept.has(e.visit)) pages.set(e.visit, [...(pages.get(e.visit) ?? []), e])
  return [...pages.values()].map((views) =>
    views
      .sort((a, b) => a.ts - b.ts)
      .map((e) => e.path)
      .filter((p, i, all) => i === 0 || p !== all[i - 1]),
  )
}

/** Rows of the folded graph in one order, to compare two statements' answers. */
const sorted = (rows: Record<string, unknown>[]) =>
  rows.map((r) => JSON.stringify([Number(r.step), r.node, r.next_node, Number(r.visits), Number(r.paths)])).sort()

/**
 * A filtered flow over whole days rolls its anchor's finished days up under its filters on the
 * first read: every read, the first and the later ones, from the landing page, a start page or a
 * focus page, matches the flow worked out from the fixture's visits and the raw read of the same
 * window (today's partial day read from visit_pages in both), and a hit arriving late into a
 * rolled-up day is counted at once.
 */
describe('filtered flow over whole days', () => {
  it('rolls its days up per filter and anchor, exactly, and never serves a day whose events changed', async () => {
    const tz = 'America/New_York'
    const { services, site, ref, get } = await referenceSite('Filtered flow', 'filtered.flow.test', tz, 31)
    const countries = ['US', 'DE']
    const filters = [
      { dimension: 'country', operator: 'is', value: countries },
      { dimension: 'path', operator: 'contains', value: ['blog'] },
    ]
    const keep = (e: RefEvent, v: RefVisit) => countries.includes(v.country) && e.path.includes('blog')
    const param = `&filters=${encodeURIComponent(JSON.stringify(filters))}`
    // parameters, anchor, steps before, steps after, limit
    const cases: [string, string | null, number, number, number][] = [
      ['depth=3', null, 0, 3, 10],
      ['depth=5&limit=2', null, 0, 5, 2],
      ['depth=1', null, 0, 1, 10],
      ['start_path=%2Fblog%2Fa&depth=2', '/blog/a', 0, 2, 10],
      ['start_path=%2Fblog%2Fa&depth=5&limit=1', '/blog/a', 0, 5, 1],
      ['focus_path=%2Fblog%2Fa&depth=2', '/blog/a', 2, 2, 10],
      ['focus_path=%2Fblog%2Fa&depth=5&limit=2', '/blog/a', 5, 5, 2],
      ['focus_path=%2Fpricing&depth=1', '/pricing', 1, 1, 10],
    ]
    const flowKeys = async () =>
      await services.clickhouse.query<{ property: string; days: string }>(
        "SELECT anchor AS property, uniqExact(day) AS days FROM flow_rollups WHERE site_id = {s:UUID} AND startsWith(anchor, 'filters:') AND step = -128 GROUP BY anchor ORDER BY anchor",
        { s: site.id },
      )
    const expectMatches = async (reference: Ref) => {
      let visits = 0
      for (const [params, anchor, before, after, limit] of cases) {
        const json: FlowAnswer & { range: { from: string; to: string } } = await get(`/api/v1/flow?range=30d&${params}${param}`)
        const expected = expectedFlow(pageSequences(reference, json.range, keep), anchor, before, after, limit)
        expect(flowAsMaps(json), params).toEqual(expected)
        expect(json.visits, params).toBeGreaterThan(0)
        if (params === 'depth=3') visits = json.visits
      }
      return visits
    }

    expect(await flowKeys()).toEqual([])
    const range = resolveRange({ range: '30d' }, tz, NOW)
    // the first read answers from visit_pages and rolls the days up after its answer
    const first = await expectMatches(ref)
    await rollupBuildsSettled()
    // today has filtered visits, read from visit_pages
    const today = localDate(NOW.getTime(), tz)
    expect(pageSequences(ref, { from: `${today}T05:00:00Z`, to: NOW.toISOString() }, keep).length).toBeGreaterThan(0)
    // rows for each finished day with events, one key for the landing page and one per page (a start and a focus page share it)
    const finishedDays = new Set(
      ref.events.filter((e) => e.ts >= range.from.epochMilliseconds && localDate(e.ts, tz) < today).map((e) => localDate(e.ts, tz)),
    )
    expect(finishedDays.size).toBeGreaterThan(10)
    const keys = await flowKeys()
    expect(keys.map((k) => k.property.replace(/^filters:[0-9a-f]{32}:/, ''))).toEqual(['flow:(entry)', 'flow:/blog/a', 'flow:/pricing'])
    expect(new Set(keys.map((k) => k.days))).toEqual(new Set([String(finishedDays.size)]))
    // they expire (migration 0026), each day's marker before its cells
    const [expiry] = await services.clickhouse.query<{ first: number }>(
      "SELECT toUInt8(maxIf(built_at, step = -128) < minIf(built_at, step != -128)) AS first FROM flow_rollups WHERE site_id = {s:UUID} AND startsWith(anchor, 'filters:')",
      { s: site.id },
    )
    expect(Number(expiry.first)).toBe(1)
    // the landing pages' cells at step 0 hold the finished days' filtered visits
    const [stored] = await services.clickhouse.query<{ n: string }>(
      'SELECT sum(visits) AS n FROM flow_rollups FINAL WHERE site_id = {s:UUID} AND anchor = {p:String} AND step = 0',
      { s: site.id, p: keys[0].property },
    )
    const finished = pageSequences(ref, { from: range.from.toInstant().toString(), to: `${today}T05:00:00Z` }, keep)
    expect(Number(stored.n)).toBe(finished.length)
    // later reads take the rolled days, with the same answers
    expect(await expectMatches(ref)).toBe(first)

    // the rolled-up read and the raw read of the same window answer the same rows
    const query: Query = {
      siteId: site.id,
      range,
      filters: parseFilters(JSON.stringify(filters), 'standalone'),
      goals: [],
      limit: 2,
      now: NOW,
    }
    const anchors: [FlowAnchor, number][] = [
      [{ kind: 'entry' }, 0],
      [{ kind: 'start', path: '/blog/a' }, 0],
      [{ kind: 'focus', path: '/blog/a' }, 3],
    ]
    for (const [anchor, before] of anchors) {
      const { rolled, buildAfter } = await filteredFlowDays(services.clickhouse, query, anchor)
      expect(buildAfter).toBeUndefined()
      expect(rolled.days).toHaveLength(finishedDays.size)
      for (const depth of [1, 3, 5]) {
        const raw = await execute<Record<string, unknown>>(services.clickhouse, flowSql(query, anchor, before, depth))
        const fromRollup = foldRolledFlow(
          await execute<Record<string, unknown>>(services.clickhouse, rolledFlowSql(query, anchor, before, depth, rolled)),
          query.limit,
          depth,
        )
        expect(raw.length, `${anchor.kind} ${depth}`).toBeGreaterThan(0)
        expect(sorted(fromRollup), `${anchor.kind} ${depth}`).toEqual(sorted(raw))
      }
    }

    // a late hit into a rolled-up day: a US visit landing on a blog page ten days ago, then the pricing page
    const lateHits = [
      { at: '2026-11-12T15:00:00Z', path: '/blog/a' },
      { at: '2026-11-12T15:04:00Z', path: '/pricing' },
    ]
    const lines = lateHits.map((h) =>
      JSON.stringify({
        timestamp: h.at,
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}${h.path}`,
        ip: '8.8.8.8',
        userAgent: UAS[1],
      }),
    )
    expect((await importHits(lines, services.ingestor)).rejected).toBe(0)
    const withLate = fixture(
      site.snippetId,
      site.domain,
      tz,
      31,
      lateHits.map((h) => ({ ts: Date.parse(h.at), name: 'pageview', path: h.path, ip: '8.8.8.8', ua: UAS[1], referrer: null })),
    )
    expect(await expectMatches(withLate)).toBe(first + 1)

    // another filter has its own rows: the visits with a custom event, read twice (built, then rolled up)
    const signups = `&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'event', operator: 'is', value: ['Signup'] }]))}`
    for (let read = 0; read < 2; read++)
      for (const [params, anchor, before, after] of [
        ['depth=4', null, 0, 4],
        ['focus_path=%2Fdocs&depth=2', '/docs', 2, 2],
      ] as const) {
        const json = await get(`/api/v1/flow?range=30d&${params}${signups}`)
        const sequences = pageSequences(withLate, json.range, (e) => e.name === 'Signup')
        expect(flowAsMaps(json), params).toEqual(expectedFlow(sequences, anchor, before, after, 10))
        expect(json.visits, params).toBeGreaterThan(0)
      }
    await rollupBuildsSettled()
    expect(await flowKeys()).toHaveLength(5)
  })
})
