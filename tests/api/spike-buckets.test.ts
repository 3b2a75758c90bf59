import { beforeAll, describe, expect, it } from 'vitest'
import { Temporal } from 'temporal-polyfill'
import { createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { type Site, newSite } from '../../lib/sites/sites'
import { visitorsByBucket } from '../../lib/insights/why/bucket-rollup'
import type { Grain } from '../../lib/insights/why/compile'
import type { WhyDeps } from '../../lib/reports/query/window'
import { testServices } from '../helpers'
import { UAS } from './report-reference'

/**
 * The spike rule's visitors per site-local hour and day (lib/reports/why/bucket-rollup.ts): finished
 * days come from rows built into the daily rollup, today from events. Expected numbers are counted
 * here from the raw hits: a visitor is an address (one agent) within a site-local day, and the
 * site's zone (UTC+05:30, no daylight saving) puts every hour's start at :30 UTC.
 */

const NOW = new Date('2026-11-22T15:00:00Z')
const TZ = 'Asia/Kolkata'
const OFFSET = 5.5 * 3_600_000
const HOUR = 3_600_000
const DAY = 86_400_000
const START = NOW.getTime() - 12 * DAY

type Hit = { ts: number; address: number }

function hitsOf(seed: number): Hit[] {
  let s = seed
  const random = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  const hits: Hit[] = []
  // up to 6 hits a quarter hour from 30 addresses, so most visitors come back within the hour and the day
  for (let t = START; t < NOW.getTime() - HOUR; t += HOUR / 4) {
    const n = Math.floor(random() * 7)
    for (let i = 0; i < n; i++) hits.push({ ts: t + Math.floor(random() * (HOUR / 4)), address: Math.floor(random() * 30) })
  }
  return hits
}

const lines = (site: Site, hits: Hit[]) =>
  hits.map((h) =>
    JSON.stringify({
      timestamp: new Date(h.ts).toISOString(),
      site: site.snippetId,
      name: 'pageview',
      url: `https://${site.domain}/`,
      referrer: null,
      ip: `198.51.100.${h.address}`,
      userAgent: UAS[0],
    }),
  )

/** Distinct addresses per site-local hour or day (bucket start, epoch seconds) among hits in [from, to). */
function reference(hits: Hit[], grain: Grain, from: number, to: number): Map<number, number> {
  const size = grain === 'hour' ? HOUR : DAY
  const sets = new Map<number, Set<number>>()
  for (const h of hits) {
    if (h.ts < from || h.ts >= to) continue
    const bucket = (Math.floor((h.ts + OFFSET) / size) * size - OFFSET) / 1000
    sets.set(bucket, (sets.get(bucket) ?? new Set()).add(h.address))
  }
  return new Map([...sets].map(([bucket, set]) => [bucket, set.size]))
}

describe('spike buckets from the daily rollup', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let site: Site
  let hits: Hit[]
  const window = () => {
    const to = Temporal.Instant.fromEpochMilliseconds(NOW.getTime()).toZonedDateTimeISO(TZ)
    return { from: to.subtract({ days: 12 }).startOfDay(), to }
  }
  // the statements a read ran: queries and commands (the builds)
  let ran: { queries: number; commands: number }
  const counted = (): WhyDeps => ({
    now: services.now,
    clickhouse: {
      ...services.clickhouse,
      query: (sql, params) => {
        ran.queries++
        return services.clickhouse.query(sql, params)
      },
      command: (sql, params) => {
        ran.commands++
        return services.clickhouse.command(sql, params)
      },
    },
  })
  const read = async (grain: Grain, of = site) => {
    const { from, to } = window()
    ran = { queries: 0, commands: 0 }
    const { rows, first } = await visitorsByBucket(counted(), of, grain, from, to)
    return { buckets: new Map(rows.map((r) => [Number(r.bucket), Number(r.visitors)])), first }
  }
  // the quarter hour of the earliest hit
  const firstQuarter = () => Math.floor(Math.min(...hits.map((h) => h.ts)) / (HOUR / 4)) * (HOUR / 4)
  const expected = (grain: Grain) => reference(hits, grain, window().from.epochMilliseconds, NOW.getTime())
  const stored = async (grain: Grain) => {
    const rows = await services.clickhouse.query<{ value: string; visitors: string }>(
      'SELECT value, visitors FROM day_rollups FINAL WHERE site_id = {site:UUID} AND property = {property:String}',
      { site: site.id, property: `visitors:${grain}` },
    )
    return rows
  }

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    const org = await createOrg(services.repositories, 'Buckets', NOW)
    site = newSite({ domain: 'buckets.test', timezone: TZ }, org.id, NOW)
    await services.repositories.sites.create(site)
    hits = hitsOf(7)
    const result = await importHits(lines(site, hits), services.ingestor)
    expect(result.rejected).toBe(0)
  }, 300_000)

  it('counts what the raw hits give, and stores exactly those numbers for the finished days', async () => {
    const today = (Math.floor((NOW.getTime() + OFFSET) / DAY) * DAY - OFFSET) / 1000
    for (const grain of ['hour', 'day'] as const) {
      const want = expected(grain)
      // most hours have a visitor who came back within them: the counts are of visitors, not hits
      expect([...want.values()].reduce((a, b) => a + b, 0)).toBeLessThan(hits.length)
      expect(await read(grain)).toEqual({ buckets: want, first: firstQuarter() })
      // the first read built the finished days (not today), then read them in a statement of their own
      expect(ran).toEqual({ queries: 2, commands: 1 })
      // their rows are the reference's buckets
      const rows = await stored(grain)
      const finished = [...want].filter(([bucket]) => bucket < today)
      expect(new Map(rows.map((r) => [Number(r.value), Number(r.visitors)]))).toEqual(new Map(finished))
      // read again, from those rows: one statement, nothing built
      expect(await read(grain)).toEqual({ buckets: want, first: firstQuarter() })
      expect(ran).toEqual({ queries: 1, commands: 0 })
    }
  })

  it('says a site has no first event before its first hit', async () => {
    const empty = newSite({ domain: 'empty-buckets.test', timezone: TZ }, site.orgId, NOW)
    await services.repositories.sites.create(empty)
    expect(await read('hour', empty)).toEqual({ buckets: new Map(), first: null })
    expect(ran).toEqual({ queries: 1, commands: 0 })
  })

  it('rebuilds a finished day that changed: a late hit counts at once', async () => {
    const late: Hit[] = [
      { ts: START + 3 * DAY + 20 * 60_000, address: 99 },
      { ts: START + 3 * DAY + 25 * 60_000, address: 99 },
      { ts: START + 5 * DAY, address: 3 },
    ]
    const result = await importHits(lines(site, late), services.ingestor)
    expect(result.rejected).toBe(0)
    hits = [...hits, ...late]
    for (const grain of ['hour', 'day'] as const) {
      expect(await read(grain)).toEqual({ buckets: expected(grain), first: firstQuarter() })
      // the two changed days were built again
      expect(ran).toEqual({ queries: 2, commands: 1 })
    }
  })
})
