import { Command, InvalidArgumentError } from 'commander'
import { UserError } from '../lib/core/errors'
import { runCli } from '../lib/runtime/failure'
import { openNodeStores } from '../lib/runtime/node'
import { demoHits } from '../lib/ingest/demo-traffic'
import { dbipGeo } from '../lib/ingest/geo-node'
import { runImport } from '../lib/ingest/import'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'

const positive = (v: string) => {
  const n = Number(v)
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer')
  return n
}

const program = new Command('demo-traffic')
  .description('Generate realistic traffic for a site through the raw-hit import path. Works while the server runs.')
  .requiredOption('--site <snippet>', "the site's snippet id")
  .option('--days <n>', 'days of traffic, ending now', positive, 30)
  .option('--visitors-per-day <n>', 'average visitors a weekday', positive, 200)
  .option('--seed <n>', 'random seed', positive, 42)
  .action(async (opts: { site: string; days: number; visitorsPerDay: number; seed: number }) => {
    const stores = await openNodeStores(process.env, { viaRunningServer: true })
    try {
      const siteId = await stores.repositories.sites.idBySnippet(opts.site)
      const site = siteId ? await stores.repositories.sites.get(siteId) : null
      if (!site) throw new UserError(`no site has the snippet id "${opts.site}": GET /api/v1/sites lists each site's snippetId`)
      const hits = demoHits({
        site: opts.site,
        domain: site.domain,
        days: opts.days,
        visitorsPerDay: opts.visitorsPerDay,
        end: new Date(),
        seed: opts.seed,
      })
      const result = await runImport(
        (function* () {
          for (const h of hits) yield JSON.stringify(h)
        })(),
        { clickhouse: stores.clickhouse, repositories: stores.repositories, geo: dbipGeo() },
      )
      // days the hits landed in are rebuilt now rather than at the server's next refresh
      if (result.imported) await refreshRollups(stores.clickhouse, stores.repositories, new Date(), ROLLUP_ALL_DAYS)
      process.stdout.write(`${JSON.stringify({ imported: result.imported, rejected: result.rejected })}\n`)
    } finally {
      await stores.close()
    }
  })
await runCli(program)
