import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LIMITS, memoryRateLimiter } from '../../lib/accounts/ratelimit'
import { addOwner } from '../../lib/accounts/members'
import { runDueImports } from '../../lib/integrations/due-imports'
import type { SearchConsoleConnection } from '../../lib/integrations/search-console/client'
import { bindSearchConsole } from '../../lib/integrations/search-console/connection'
import { backfillDays, importSearchConsole } from '../../lib/integrations/search-console/import'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { type FixtureRow, fakeSearchConsole } from '../fakes/search-console'
import { type Browser, signedIn } from '../google-connect'
import { REDIS_URL, type Harness, harness } from '../helpers'

/**
 * Search Console's 16 months against a fake that enforces its queries a minute per property and
 * per user, with the minute shrunk to a second so that the test takes seconds: the import asks
 * several days at once, paced by the limiter within the quota, goes on until every day is in,
 * shows its progress as it goes, and a quota answer on the way only makes it wait until Google
 * said, with no day counted twice.
 */

const PROPERTY = 'sc-domain:pace.example'
/** The import's pace (LIMITS' half of Search Console's allowance) and the fake's quota, a minute shrunk to a second. */
const PACE = { max: 100, windowMs: 1000 }
const QUOTA = { perMinute: 200, windowMs: 1000 }
const ROW_LIMIT = 20

describe('Search Console: the 16 months in one run, paced within the quota', () => {
  let t: Harness
  let fake: Awaited<ReturnType<typeof fakeSearchConsole>>
  let connection: SearchConsoleConnection
  let owner: Browser
  let clock = new Date()
  const days = backfillDays(clock)
  /** Two queries a day, and on the largest day enough for three pages of ROW_LIMIT rows. */
  const largest = days[100]
  const rows: FixtureRow[] = days.flatMap((date, d) =>
    Array.from({ length: date === largest ? 2 * ROW_LIMIT + 5 : 2 }, (_, i) => ({
      date,
      query: `query ${i}`,
      page: `https://pace.example/page-${i % 7}`,
      country: i % 2 ? 'usa' : 'deu',
      device: i % 3 ? ('MOBILE' as const) : ('DESKTOP' as const),
      clicks: 1 + ((d + i) % 5),
      impressions: 10 + i,
      position: 1 + (i % 9),
    })),
  )
  const clicksOf = (date: string) => rows.filter((r) => r.date === date).reduce((n, r) => n + r.clicks, 0)

  beforeAll(async () => {
    fake = await fakeSearchConsole({
      sites: [{ siteUrl: PROPERTY, permissionLevel: 'siteOwner' }],
      rows: { [PROPERTY]: rows },
      quota: QUOTA,
      latencyMs: 20,
    })
    connection = {
      baseUrl: fake.url,
      fetch: guardedFetch({ allowPrivate: true }),
      accessToken: async () => 'token-1',
      account: 'pace@example.com',
    }
    t = await harness({
      kv: REDIS_URL ? 'redis' : 'embedded',
      now: () => clock,
      // the limiter on the real clock (the test's clock moves only when it says so)
      limiter: memoryRateLimiter(Date.now, { ...LIMITS, searchConsoleSite: PACE, searchConsoleUser: PACE }),
      with: { searchConsole: { connectionFor: async () => connection } },
    })
    await addOwner(t.repositories, t.a.org.id, 'owner@example.com', clock)
    owner = await signedIn(t.services, 'https://api.test', (url, init) => t.app.request(url, init), 'owner@example.com')
  })

  afterAll(async () => {
    await fake?.close()
  })

  /** Per day, the clicks of the stored totals and of the stored rows (FINAL: as every read sees them). */
  async function storedClicks() {
    const perDay = async (table: string) =>
      new Map(
        (
          await t.clickhouse.query<{ d: string; c: string }>(
            `SELECT toString(date) AS d, sum(clicks) AS c FROM ${table} FINAL WHERE site_id = {s:UUID} GROUP BY d`,
            { s: t.a.site.id },
          )
        ).map((r) => [r.d, Number(r.c)]),
      )
    return { totals: await perDay('search_console_totals'), rows: await perDay('search_console_rows') }
  }
  const expectEveryDayOnce = async () => {
    const { totals, rows: byRows } = await storedClicks()
    expect(totals.size).toBe(days.length)
    expect(days.filter((d) => totals.get(d) !== clicksOf(d) || byRows.get(d) !== clicksOf(d))).toEqual([])
  }

  it('imports every day in one run, several at once, never past the quota, with its progress shown as it goes', async () => {
    const site = (await t.repositories.sites.get(t.a.site.id))!
    const bound = await bindSearchConsole(t.services, connection, site, PROPERTY)
    expect(bound.import.daysTotal).toBe(days.length)
    const progress: number[] = []
    let page = ''
    let importing = true
    const watching = (async () => {
      while (importing) {
        const listed = await t.call('GET', `/api/v1/sites/${site.id}/imports`, { key: t.a.read.key })
        const under = listed.json.imports.find((i: { kind: string }) => i.kind === 'search_console')
        if (under?.state === 'running') {
          progress.push(under.progress.fraction)
          if (!page && under.progress.fraction >= 0.05) page = await (await owner.open(`/app/sites/${site.id}/settings/imports`)).text()
        }
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    })()
    const started = performance.now()
    const state = await importSearchConsole({ ...t.services, connection }, bound.site, clock, { rowLimit: ROW_LIMIT })
    const seconds = (performance.now() - started) / 1000
    importing = false
    await watching
    expect(state).toMatchObject({ state: 'done', daysDone: days.length, daysTotal: days.length, underway: [], error: null })
    // a day's rows in three pages on the largest day, then its totals: two queries on the others
    const asked = fake.queries.filter((q) => q.status === 200)
    expect(asked.length).toBe(2 * days.length + 2)
    // never a quota answer, though asking as fast as it can would have drawn them: the pace held it within
    expect(fake.refused).toBe(0)
    expect(seconds).toBeGreaterThan(asked.length / QUOTA.perMinute)
    expect(fake.maxInFlight).toBeGreaterThan(1)
    // the imports list and the integrations page showed it moving
    expect(progress.some((f) => f > 0 && f < 1)).toBe(true)
    expect(progress).toEqual(progress.toSorted((a, b) => a - b))
    const percent = Number(page.match(/<progress max="100" value="(\d+)"/)?.[1])
    expect(percent).toBeGreaterThan(0)
    expect(percent).toBeLessThan(100)
    await expectEveryDayOnce()
  }, 120_000)

  it('a quota answer midway only waits: the run stops, goes on when Google said, and counts no day twice', async () => {
    const site = (await t.repositories.sites.get(t.a.site.id))!
    // a re-import of the whole history, from the start
    const bound = await bindSearchConsole(t.services, connection, site, PROPERTY)
    fake.failNext(429, 150)
    const first = (await importSearchConsole({ ...t.services, connection }, bound.site, clock, { rowLimit: ROW_LIMIT }))!
    expect(first).toMatchObject({ state: 'waiting', failures: 1 })
    expect(first.error).toMatch(/quota/)
    expect(first.daysDone).toBeGreaterThan(0)
    expect(first.daysDone).toBeLessThan(days.length)
    const listed = await t.call('GET', `/api/v1/sites/${site.id}/imports`, { key: t.a.read.key })
    expect(listed.json.imports.find((i: { kind: string }) => i.kind === 'search_console')).toMatchObject({
      state: 'waiting',
      retryAt: first.retryAt,
    })
    const retryAt = Date.parse(first.retryAt!)
    expect(retryAt - clock.getTime()).toBeGreaterThanOrEqual(30_000)
    expect(await t.repositories.importWakeups.list()).toContainEqual({ kind: 'search_console', siteId: site.id, atMs: retryAt })
    // before then the job of due imports asks nothing
    const askedBefore = fake.queries.length
    const context = { log: (line: string) => expect.fail(line), shouldStop: () => false }
    await runDueImports(t.services, context)
    expect(fake.queries.length).toBe(askedBefore)
    clock = new Date(retryAt)
    await runDueImports(t.services, context)
    expect(await t.repositories.searchConsoleImports.get(site.id)).toMatchObject({
      state: 'done',
      daysDone: days.length,
      failures: 0,
      retryAt: null,
      error: null,
    })
    await expectEveryDayOnce()
  }, 120_000)
})
