import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { createOrg } from '../lib/accounts/admin'
import { bindGa4Property } from '../lib/integrations/ga4/connection'
import { completeGoogleConnect, confirmGoogleConnect, startGoogleConnect } from '../lib/integrations/google/connect'
import { IMPORTS_DUE_JOB } from '../lib/integrations/import-wakeups-repository'
import { SEARCH_CONSOLE_CONNECT_SCOPE, bindSearchConsoleProperty } from '../lib/integrations/search-console/connection'
import { SEARCH_CONSOLE_SCOPE } from '../lib/integrations/search-console/connector'
import { JOBS } from '../lib/jobs/schedule'
import { jobTimers } from '../lib/jobs/timers'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { nodeServices, openNodeStores } from '../lib/runtime/node'
import type { Services } from '../lib/runtime/services'
import { type Site, newSite } from '../lib/sites/sites'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { ga4Sessions } from '../tests/fakes/ga4-fixture'
import { startFakeGoogle } from '../tests/fakes/google'
import { type FixtureRow, fakeSearchConsole } from '../tests/fakes/search-console'

/**
 * How long a bind takes to be done, in real time, on the Node server's scheduler (its timers and
 * the `imports due` job, as `npm start` runs them) and the embedded stores, against the stand-ins
 * for Google in tests/fakes:
 *
 * - GA4: a property with `--ga4-days` days of history whose first report answers 429 with
 *   `Retry-After: 30` (the import goes on when Google said, by the scheduler's timer).
 * - Search Console: its 16 months, `--largest` rows on the largest day and `--typical` on the
 *   others, from a fake that enforces `--qpm` queries a minute per property and per user and
 *   takes `--latency-ms` to answer each.
 *
 * The figures are from the user's bind to the import's `done`; the fakes' own time is part of them.
 */
const program = new Command('bench-import-resume')
  .description('bind-to-done time of the GA4 and Search Console imports on the Node scheduler, against the fake Google')
  .option('--only <which>', 'ga4, search-console or both', 'both')
  .option('--ga4-days <n>', 'days of GA4 history', '35')
  .option('--largest <n>', 'Search Console rows on the largest day', '25000')
  .option('--typical <n>', 'Search Console rows on every other day', '5000')
  .option('--qpm <n>', "the fake's Search Console queries a minute, per property and per user", '1200')
  .option('--latency-ms <n>', 'how long the fake takes to answer a Search Console query', '100')
  .action(async (opts: { only: string; ga4Days: string; largest: string; typical: string; qpm: string; latencyMs: string }) => {
    const now = new Date()
    const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`)
    const ga4Days = Number(opts.ga4Days)
    const from = new Date(now.getTime() - (ga4Days - 1) * 86_400_000).toISOString().slice(0, 10)
    const google = await startFakeGoogle({
      properties: [
        {
          propertyId: '1',
          displayName: 'Bench',
          accountId: '1',
          accountName: 'Bench',
          sessions: ga4Sessions({ from, days: ga4Days, perDay: 60, users: 2000 }),
        },
      ],
    })
    const siteUrl = 'sc-domain:bench.example'
    const largestDay = new Date(now.getTime() - 30 * 86_400_000).toISOString().slice(0, 10)
    const countries = ['usa', 'deu', 'gbr', 'fra', 'ind']
    const devices = ['DESKTOP', 'MOBILE', 'TABLET'] as const
    const searchConsole = await fakeSearchConsole({
      sites: [{ siteUrl, permissionLevel: 'siteOwner' }],
      rows: {},
      rowsOf: (_siteUrl, day) =>
        Array.from(
          { length: day === largestDay ? Number(opts.largest) : Number(opts.typical) },
          (_, i): FixtureRow => ({
            date: day,
            query: `query ${i}`,
            page: `https://bench.example/page-${i % 997}`,
            country: countries[i % countries.length],
            device: devices[i % devices.length],
            clicks: i % 7,
            impressions: 10 + (i % 50),
            position: 1 + (i % 30),
          }),
        ),
      vouchFor: (token) => google.accessTokenHolds(token, SEARCH_CONSOLE_SCOPE),
      quota: { perMinute: Number(opts.qpm) },
      latencyMs: Number(opts.latencyMs),
    })
    const dir = mkdtempSync(join(tmpdir(), 'bench-resume-'))
    const stores = await openNodeStores({ DATA_DIR: dir })
    await migrate(stores.clickhouse, loadMigrations())
    const env = parseEnv(nodeEnvSchema, {
      DATA_DIR: dir,
      OUTBOUND_ALLOW_PRIVATE: '1',
      CRAWLER: '0',
      SERVER_SECRET: 'bench-server-secret-0123456789abcdef',
      ...google.env(),
      GOOGLE_SEARCH_CONSOLE_URL: searchConsole.url,
    })
    // the Node server's scheduler, as functions/node.ts builds it: the imports' timer wakes the `imports due` job
    let timers: ReturnType<typeof jobTimers> | undefined
    const services = nodeServices(env, { stores, log, wakeJob: (job, atMs) => timers?.wakeAt(job, atMs) })
    timers = jobTimers(
      JOBS.filter((job) => job.name === IMPORTS_DUE_JOB),
      services,
      log,
    )
    timers.start()
    const results: Record<string, unknown>[] = []
    try {
      const org = await createOrg(services.repositories, 'Bench', now)
      const site = newSite({ domain: 'bench.example', timezone: 'UTC' }, org.id, now)
      await services.repositories.sites.create(site)
      await connect(services, site)
      if (opts.only !== 'search-console') {
        google.fail('429')
        const started = performance.now()
        await bindGa4Property(services, site, '1', 'https://bench.test', () => {})
        const run = await until(log, async () => {
          const latest = (await services.repositories.ga4Imports.list(site.id)).at(-1)
          return latest?.state === 'done' || latest?.state === 'failed' ? latest : null
        })
        results.push({
          import: 'ga4',
          days: ga4Days,
          state: run.state,
          rows: run.rows,
          quotaAnswers: 1,
          bindToDoneSeconds: Math.round(performance.now() - started) / 1000,
        })
      }
      if (opts.only !== 'ga4') {
        const fresh = (await services.repositories.sites.get(site.id))!
        const started = performance.now()
        await bindSearchConsoleProperty(services, fresh, siteUrl, 'https://bench.test', () => {})
        let shown = 0
        const state = await until(log, async () => {
          const s = await services.repositories.searchConsoleImports.get(site.id)
          if (s && performance.now() - shown > 10_000) {
            shown = performance.now()
            log(`search console: ${s.state}, ${s.daysDone} of ${s.daysTotal} days, ${s.rows} rows, ${searchConsole.queries.length} queries`)
          }
          return s?.state === 'done' || s?.state === 'failed' ? s : null
        })
        results.push({
          import: 'search_console',
          days: state.daysDone,
          state: state.state,
          rows: state.rows,
          largestDayRows: Number(opts.largest),
          queries: searchConsole.queries.length,
          quotaAnswers: searchConsole.refused,
          mostAtOnce: searchConsole.maxInFlight,
          bindToDoneSeconds: Math.round(performance.now() - started) / 1000,
        })
      }
      process.stdout.write(`${JSON.stringify(results, null, 2)}\n`)
    } finally {
      await timers.stop()
      await stores.close()
      await google.stop()
      await searchConsole.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

/** The user's path to a Google connection with both scopes: the connect, Google's consent, the callback, the confirmation. */
async function connect(services: Services, site: Site) {
  const owner = 'owner@bench.test'
  const baseUrl = 'https://bench.test'
  const { url, binding } = await startGoogleConnect(services, site, baseUrl, SEARCH_CONSOLE_CONNECT_SCOPE, owner)
  const consent = await fetch(url, { redirect: 'manual' })
  const back = new URL(consent.headers.get('location')!)
  await completeGoogleConnect(services, Object.fromEntries(back.searchParams), baseUrl, binding)
  if (!(await confirmGoogleConnect(services, site, binding, owner))) throw new Error('the connection was not confirmed')
}

/** Polls `done` every 250 ms until it answers, for at most an hour. */
async function until<T>(log: (line: string) => void, done: () => Promise<T | null>): Promise<T> {
  const deadline = performance.now() + 3_600_000
  while (performance.now() < deadline) {
    const value = await done()
    if (value) return value
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  log('gave up after an hour')
  throw new Error('the import was not done within an hour')
}

await program.parseAsync()
