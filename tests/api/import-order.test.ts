import { describe, expect, it } from 'vitest'
import { importHits, runImport } from '../../lib/ingest/import'
import { dbipGeo } from '../../lib/ingest/geo-node'
import { inTimeOrder } from '../../lib/ingest/import-order-node'
import { parseInWorkers } from '../../lib/ingest/import-workers-node'
import { Ingestor } from '../../lib/ingest/pipeline'
import { directSink } from '../../lib/ingest/sink'
import { SiteDirectory } from '../../lib/sites/site-directory'
import { REDIS_URL, orgWithSites, testServices } from '../helpers'

const kinds = REDIS_URL ? (['embedded', 'redis'] as const) : (['embedded'] as const)
const AGENTS = [
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
]
const GAP = 30 * 60_000

/** A seeded generator, so the fixture is the same on every run. */
function prng(seed: number) {
  let s = seed
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31
    return s / 2 ** 31
  }
}

interface Hit {
  at: number
  ip: string
  agent: string
  name: string
}

/**
 * Visitors with one to four visits over three days (UTC): hits of a visit at most 20 minutes
 * apart, visits at least 40 minutes apart, so each visit is unambiguous.
 */
function fixture(): Hit[] {
  const random = prng(7)
  const hits: Hit[] = []
  const start = Date.UTC(2026, 10, 10)
  for (let v = 0; v < 600; v++) {
    const ip = `8.8.${Math.floor(v / 250)}.${(v % 250) + 1}`
    const agent = AGENTS[v % 2]
    let at = start + Math.floor(random() * 24 * 3600_000)
    const visits = 1 + Math.floor(random() * 4)
    for (let visit = 0; visit < visits; visit++) {
      const count = 1 + Math.floor(random() * 8)
      for (let h = 0; h < count; h++) {
        hits.push({ at, ip, agent, name: random() < 0.8 ? 'pageview' : 'Signup' })
        at += 60_000 + Math.floor(random() * 19 * 60_000)
      }
      at += 40 * 60_000 + Math.floor(random() * 20 * 3600_000)
    }
  }
  return hits
}

/** What the import should store, by the rules of docs/import.md: a visitor per address, agent and (UTC) day; a new visit after 30 minutes without a hit. */
function reference(hits: Hit[]) {
  const byVisitor = new Map<string, number[]>()
  for (const hit of hits) {
    const key = `${new Date(hit.at).toISOString().slice(0, 10)} ${hit.ip} ${hit.agent}`
    byVisitor.set(key, [...(byVisitor.get(key) ?? []), hit.at])
  }
  let visits = 0
  const newest = Math.max(...hits.map((h) => h.at))
  let lastGap = 0
  for (const times of byVisitor.values()) {
    times.sort((a, b) => a - b)
    visits += 1 + times.filter((t, i) => i > 0 && t - times[i - 1] > GAP).length
    if (times[times.length - 1] >= newest - GAP) lastGap++
  }
  return { visitors: byVisitor.size, visits, pageviews: hits.filter((h) => h.name === 'pageview').length, lastGap }
}

const lineOf = (site: { snippetId: string; domain: string }, hit: Hit) =>
  JSON.stringify({
    timestamp: new Date(hit.at).toISOString(),
    site: site.snippetId,
    name: hit.name,
    url: `https://${site.domain}/page`,
    ip: hit.ip,
    userAgent: hit.agent,
  })

describe.each(kinds)('an import in time order (%s key/value store)', (kind) => {
  it('stores the same visitors, visits and pageviews from a file in time order and one out of it, as the reference', async () => {
    const services = await testServices({ kv: kind, now: () => new Date('2026-11-20T12:00:00Z') })
    const {
      sites: [ordered, shuffled],
    } = await orgWithSites(services, 'Order', [
      { domain: 'ordered.import.test', timezone: 'UTC' },
      { domain: 'shuffled.import.test', timezone: 'UTC' },
    ])
    const hits = fixture()
    const expected = reference(hits)
    // more lines than an import chunk (5,000), so visits are forgotten between chunks
    expect(hits.length).toBeGreaterThan(6000)
    expect(expected.visits).toBeGreaterThan(expected.visitors)

    const inOrder = [...hits].sort((a, b) => a.at - b.at)
    // out of order: a seeded shuffle
    const random = prng(11)
    const outOfOrder = hits
      .map((hit) => ({ hit, key: random() }))
      .sort((a, b) => a.key - b.key)
      .map((h) => h.hit)
    const deps = { clickhouse: services.clickhouse, repositories: services.repositories }
    const first = await runImport(
      inOrder.map((h) => lineOf(ordered, h)),
      deps,
      undefined,
      { inTimeOrder: true },
    )
    expect(first.imported).toBe(hits.length)
    // sorted in runs of 1,000 lines, merged
    const second = await runImport(
      inTimeOrder(
        (async function* () {
          yield* outOfOrder.map((h) => lineOf(shuffled, h))
        })(),
        { runLines: 1000 },
      ),
      deps,
      undefined,
      { inTimeOrder: true },
    )
    expect(second.imported).toBe(hits.length)

    for (const site of [ordered, shuffled]) {
      const [stored] = await services.clickhouse.query<Record<string, string>>(
        `SELECT uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits, countIf(name = 'pageview') AS pageviews
         FROM events WHERE site_id = {site:UUID}`,
        { site: site.id },
      )
      expect(
        { visitors: Number(stored.visitors), visits: Number(stored.visits), pageviews: Number(stored.pageviews) },
        site.domain,
      ).toEqual({
        visitors: expected.visitors,
        visits: expected.visits,
        pageviews: expected.pageviews,
      })
    }
  }, 120_000)

  it('parses and enriches on worker threads: the same visitors, visits and pageviews as the reference, rejected lines named, and the same places and browsers as on one thread', async () => {
    const services = await testServices({ kv: kind, now: () => new Date('2026-11-20T12:00:00Z') })
    const {
      sites: [threads, one],
    } = await orgWithSites(services, 'Threads', [
      { domain: 'threads.import.test', timezone: 'UTC' },
      { domain: 'one.import.test', timezone: 'UTC' },
    ])
    const hits = fixture().sort((a, b) => a.at - b.at)
    const expected = reference(hits)
    const linesOf = (site: typeof threads) => {
      const lines = hits.map((h) => lineOf(site, h))
      // a bad line, a blank one and one with an unknown field, among the first batch sent to a worker and the last
      lines.splice(10, 0, 'not json', '', lineOf(site, hits[10]).replace('"name"', '"nmae"'))
      lines.push('{"timestamp": "2026-11-13T00:00:00Z"}')
      return lines
    }
    const deps = { clickhouse: services.clickhouse, repositories: services.repositories, geo: dbipGeo() }
    // three threads for batches of 1,000 lines: every worker gets several, and they come back in order
    const onThreads = await runImport(linesOf(threads), deps, undefined, { inTimeOrder: true, parse: parseInWorkers(3) })
    const onOne = await runImport(linesOf(one), deps, undefined, { inTimeOrder: true })
    for (const result of [onThreads, onOne]) {
      expect(result.imported).toBe(hits.length)
      expect(result.errors.map((e) => e.line)).toEqual([11, 13, hits.length + 4])
      expect(result.errors[0].error).toBe('not valid JSON')
    }

    const stored = async (site: typeof threads) => {
      const [counts] = await services.clickhouse.query<Record<string, string>>(
        `SELECT uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits, countIf(name = 'pageview') AS pageviews
         FROM events WHERE site_id = {site:UUID}`,
        { site: site.id },
      )
      const places = await services.clickhouse.query<Record<string, string>>(
        `SELECT country_code, city, browser, os, count() AS n FROM events WHERE site_id = {site:UUID}
         GROUP BY country_code, city, browser, os ORDER BY country_code, city, browser, os`,
        { site: site.id },
      )
      return { counts: { visitors: Number(counts.visitors), visits: Number(counts.visits), pageviews: Number(counts.pageviews) }, places }
    }
    const [fromThreads, fromOne] = [await stored(threads), await stored(one)]
    expect(fromThreads.counts).toEqual({ visitors: expected.visitors, visits: expected.visits, pageviews: expected.pageviews })
    expect(fromOne.counts).toEqual(fromThreads.counts)
    // the fixture's two browsers, placed by their addresses (8.8.x.x is in the United States)
    expect(new Set(fromThreads.places.map((p) => p.browser))).toEqual(new Set(['Firefox', 'Chrome']))
    expect(new Set(fromThreads.places.map((p) => p.country_code))).toEqual(new Set(['US']))
    expect(fromThreads.places).toEqual(fromOne.places)
  }, 120_000)

  it('forgets the visits no later hit can extend, and refuses a line older than what it forgot', async () => {
    const services = await testServices({ kv: kind, now: () => new Date('2026-11-20T12:00:00Z') })
    const {
      sites: [site],
    } = await orgWithSites(services, 'Forget', [{ domain: 'forget.import.test', timezone: 'UTC' }])
    const hits = fixture().sort((a, b) => a.at - b.at)
    const visits = services.repositories.visits.forImport()
    const ingestor = new Ingestor({
      sites: new SiteDirectory(services.repositories.sites),
      repositories: { salts: services.repositories.salts, visits },
      sink: directSink(services.clickhouse, services.repositories),
      now: services.now,
    })
    const lines = hits.map((h) => lineOf(site, h))
    const result = await importHits(lines, ingestor, undefined, undefined, { visits })
    expect(result.imported).toBe(hits.length)
    // what is left is the visits of the file's last half hour
    expect(visits.remembered).toBe(reference(hits).lastGap)

    // a hit older than the newest read, once visits were forgotten, fails the import
    const late = lineOf(site, { ...hits[0], at: hits[0].at + 1000 })
    await expect(importHits([...lines.slice(0, 6000), late], ingestor, undefined, undefined, { visits })).rejects.toThrow(
      /^line 6001: .* is older than hits imported before it/,
    )
  }, 120_000)
})

describe('inTimeOrder', () => {
  it('sorts by timestamp in runs written to files, keeps the input order of equal times and lines without one, and numbers lines as read', async () => {
    const line = (at: string, n: number) => JSON.stringify({ timestamp: at, n })
    const input = [
      line('2026-11-02T10:00:00Z', 1),
      'not json',
      line('2026-11-01T10:00:00+02:00', 3),
      line('2026-11-02T10:00:00Z', 4),
      line('2026-11-01T09:00:00Z', 5),
      '{"timestamp": 5}',
      line('2026-11-01T07:59:59.999Z', 7),
    ]
    for (const runLines of [1, 2, 3, 100]) {
      const out: (readonly [number, string])[] = []
      for await (const numbered of inTimeOrder(
        (async function* () {
          yield* input
        })(),
        { runLines },
      ))
        out.push(numbered)
      // 10:00+02:00 is 08:00Z, after 07:59:59.999Z; lines without a timestamp first
      expect(
        out.map(([n]) => n),
        `runs of ${runLines}`,
      ).toEqual([2, 6, 7, 3, 5, 1, 4])
      expect(out.map(([n, text]) => text === input[n - 1])).not.toContain(false)
    }
  })
})
