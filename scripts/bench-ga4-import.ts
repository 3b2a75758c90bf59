import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { createOrg } from '../lib/accounts/admin'
import { bindGa4Property } from '../lib/integrations/ga4/connection'
import { completeGoogleConnect, confirmGoogleConnect, startGoogleConnect } from '../lib/integrations/google/connect'
import { GA4_SCOPE } from '../lib/integrations/google/oauth'
import { historyDays, importSite, queueGa4Import } from '../lib/integrations/ga4/import'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { nodeServices, openNodeStores } from '../lib/runtime/node'
import { newSite } from '../lib/sites/sites'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { ga4Sessions } from '../tests/fakes/ga4-fixture'
import { startFakeGoogle } from '../tests/fakes/google'

/**
 * The GA4 import's speed: rows of imported aggregates stored per second, importing a property's
 * history from the stand-in for Google (tests/fakes/google.ts, which computes every report from
 * fixture sessions) into the embedded stores. The first run follows the user's path (connect,
 * bind); each further run is a new history import of the same property, replacing the last. The
 * fake's own time to compute its reports is part of the figure, so it is a floor of what the
 * import does, not of what Google answers.
 */
const program = new Command('bench-ga4-import')
  .description('GA4 import speed (rows per second) against the fake Google, on the embedded stores')
  .option('--days <n>', 'days of history', '365')
  .option('--sessions <n>', 'sessions a day', '60')
  .option('--users <n>', 'distinct users the sessions are drawn from', '2000')
  .option('--runs <n>', 'history imports measured (the median is reported)', '5')
  .option('--page-rows <n>', 'rows a report page holds (the Data API allows 100000)', '100000')
  .action(async (opts: { days: string; sessions: string; users: string; runs: string; pageRows: string }) => {
    const days = Number(opts.days)
    const now = new Date()
    const from = new Date(now.getTime() - days * 86_400_000).toISOString().slice(0, 10)
    const sessions = ga4Sessions({ from, days, perDay: Number(opts.sessions), users: Number(opts.users) })
    const fake = await startFakeGoogle({
      properties: [{ propertyId: '1', displayName: 'Bench', accountId: '1', accountName: 'Bench', sessions }],
      maxPageRows: Number(opts.pageRows),
    })
    const dir = mkdtempSync(join(tmpdir(), 'bench-ga4-'))
    try {
      const stores = await openNodeStores({ DATA_DIR: dir })
      await migrate(stores.clickhouse, loadMigrations())
      const env = parseEnv(nodeEnvSchema, {
        DATA_DIR: dir,
        OUTBOUND_ALLOW_PRIVATE: '1',
        CRAWLER: '0',
        SERVER_SECRET: 'bench-server-secret-0123456789abcdef',
        ...fake.env(),
      })
      const services = nodeServices(env, { stores, log: () => {} })
      const org = await createOrg(services.repositories, 'Bench', now)
      const site = newSite({ domain: 'ga4.bench.test', timezone: 'UTC' }, org.id, now)
      await services.repositories.sites.create(site)
      const baseUrl = 'https://bench.test'
      // the user's path: the connect started in their browser, Google's consent, the callback, the confirmation, the binding
      const owner = 'owner@bench.test'
      const { url, binding } = await startGoogleConnect(services, site, baseUrl, GA4_SCOPE, owner)
      const consent = await fetch(url, { redirect: 'manual' })
      const back = new URL(consent.headers.get('location')!)
      await completeGoogleConnect(services, Object.fromEntries(back.searchParams), baseUrl, binding)
      if (!(await confirmGoogleConnect(services, site, binding, owner))) throw new Error('the connection was not confirmed')
      const deps = { ...services, google: services.google! }
      let first: Promise<unknown> = Promise.resolve()
      const started = performance.now()
      await bindGa4Property(services, site, '1', baseUrl, (task) => (first = task))
      await first
      const results = [{ rows: (await services.repositories.ga4Imports.list(site.id)).at(-1)!.rows, ms: performance.now() - started }]
      for (let i = 1; i < Number(opts.runs); i++) {
        const fresh = (await services.repositories.sites.get(site.id))!
        await queueGa4Import(services, fresh, '1', 'bind', historyDays(fresh, new Date()))
        const t0 = performance.now()
        await importSite(deps, site.id, { pageRows: Number(opts.pageRows) })
        const run = (await services.repositories.ga4Imports.list(site.id)).at(-1)!
        if (run.state !== 'done') throw new Error(`run ${i} ended ${run.state}: ${run.reason}`)
        results.push({ rows: run.rows, ms: performance.now() - t0 })
      }
      const rates = results.map((r) => (r.rows / r.ms) * 1000).sort((a, b) => a - b)
      const median = rates[Math.floor(rates.length / 2)]
      const reports = fake.reports.length
      console.log(
        JSON.stringify(
          {
            days,
            sessions: sessions.length,
            rowsPerImport: results[0].rows,
            reportsAsked: reports,
            runs: results.map((r) => ({
              rows: r.rows,
              seconds: Math.round(r.ms) / 1000,
              rowsPerSecond: Math.round((r.rows / r.ms) * 1000),
            })),
            medianRowsPerSecond: Math.round(median),
          },
          null,
          2,
        ),
      )
      await stores.close()
    } finally {
      await fake.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

await program.parseAsync()
