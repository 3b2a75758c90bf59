import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { Temporal } from 'temporal-polyfill'
import { createApp } from '../functions/app'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { nodeServices, openNodeStores } from '../lib/runtime/node'
import { memoryRateLimiter } from '../lib/accounts/ratelimit'
import { newSite } from '../lib/sites/sites'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'

/**
 * Latency of reads with source=ga4 over a year of imported GA4 days on the embedded home: one site
 * with `--days` days of every dataset (about 300 sources rows, 500 pages rows, 200 entry pages,
 * 150 places and 40 events a day, 24 hours, a few devices, browsers and systems), generated in the
 * engine with INSERT ... SELECT, and a re-import of the last three days (newer versions) that FINAL
 * folds. Medians over `--runs` API calls of each read.
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

/** Per dataset: rows a day, and each dimension column's value for row i of a day. */
const DATASETS: { name: string; perDay: number; hourly?: boolean; columns: Record<string, string> }[] = [
  { name: 'visitors', perDay: 1, columns: {} },
  { name: 'visitors_hourly', perDay: 24, hourly: true, columns: {} },
  {
    name: 'sources',
    perDay: 300,
    columns: {
      source_name: "if(i % 10 = 0, '', concat('source', toString(i % 120)))",
      utm_source: "if(i % 4 = 0, concat('newsletter', toString(i % 7)), '')",
      utm_medium: "['organic', 'referral', 'email', 'cpc', ''][1 + i % 5]",
      utm_campaign: "if(i % 4 = 0, concat('campaign', toString(i % 30)), '')",
      channel: "['Organic Search', 'Referral', 'Email', 'Paid Search', 'Direct'][1 + i % 5]",
      referrer: "if(i % 10 = 0, '', concat('https://ref', toString(i % 80), '.example/'))",
    },
  },
  { name: 'pages', perDay: 500, columns: { hostname: "'bench.test'", path: "concat('/page/', toString(i))" } },
  { name: 'entry_pages', perDay: 200, columns: { entry_page: "concat('/page/', toString(i))" } },
  {
    name: 'locations',
    perDay: 150,
    columns: {
      country: "['US', 'DE', 'GB', 'FR', 'IN', 'BR', 'JP'][1 + i % 7]",
      region: "concat('region', toString(i % 40))",
      city: "concat('city', toString(i))",
    },
  },
  { name: 'devices', perDay: 3, columns: { device: "['desktop', 'mobile', 'tablet'][1 + i]" } },
  { name: 'browsers', perDay: 8, columns: { browser: "concat('browser', toString(i))" } },
  { name: 'systems', perDay: 6, columns: { os: "concat('os', toString(i))" } },
  {
    name: 'events',
    perDay: 40,
    columns: {
      event:
        "if(i < 13, ['page_view', 'session_start', 'first_visit', 'user_engagement', 'scroll', 'click', 'file_download', 'form_start', 'form_submit', 'view_search_results', 'video_start', 'video_progress', 'video_complete'][1 + i], concat('custom_', toString(i)))",
    },
  },
]

const program = new Command('bench-ga4-reads')
  .option('--days <n>', 'imported days, ending yesterday', '365')
  .option('--runs <n>', 'runs of each read', '20')
  .action(async (opts: { days: string; runs: string }) => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-ga4-'))
    const stores = await openNodeStores({ DATA_DIR: dir })
    try {
      await migrate(stores.clickhouse, loadMigrations())
      const now = new Date()
      const org = await createOrg(stores.repositories, 'Bench GA4', now)
      const site = newSite({ domain: 'ga4.bench.test', timezone: 'Europe/Berlin', sources: ['ga4'] }, org.id, now)
      await stores.repositories.sites.create(site)
      const key = (await createApiKey(stores.repositories, { orgId: org.id, name: 'bench', scope: 'read' }, now)).key
      const days = Number(opts.days)
      const today = Temporal.Now.plainDateISO(site.timezone)
      const first = today.subtract({ days })
      const load = async (from: string, count: number, version: number) => {
        let rows = 0
        for (const d of DATASETS) {
          const columns = Object.keys(d.columns)
          await stores.clickhouse.command(
            `INSERT INTO imported_aggregates (site_id, source, dataset, date, hour${columns.map((c) => `, ${c}`).join('')},
               visitors, visits, engaged_visits, pageviews, engagement_seconds, events, version)
             SELECT toUUID({site:String}), 'ga4', {dataset:String}, toDate({from:String}) + intDiv(number, {perDay:UInt32}) AS date,
                    ${d.hourly ? 'i' : '0'}${columns.map((c) => `, ${d.columns[c]}`).join('')},
                    1 + cityHash64(number, 1) % 200 AS users, users + cityHash64(number, 2) % 50 AS sessions,
                    cityHash64(number, 3) % (sessions + 1), sessions * (1 + cityHash64(number, 4) % 4), sessions * (cityHash64(number, 5) % 120),
                    sessions * (2 + cityHash64(number, 6) % 6), {version:UInt64}
             FROM (SELECT number, number % {perDay:UInt32} AS i FROM numbers({rows:UInt64}))`,
            { site: site.id, dataset: d.name, from, perDay: d.perDay, rows: d.perDay * count, version },
          )
          rows += d.perDay * count
        }
        return rows
      }
      const started = performance.now()
      const rows = await load(first.toString(), days, 1)
      // a re-import of the last three days, as the daily job does: newer versions of the same rows
      await load(today.subtract({ days: 3 }).toString(), 3, 2)
      console.error(`loaded ${rows} rows over ${days} days in ${((performance.now() - started) / 1000).toFixed(1)} s`)

      const env = parseEnv(nodeEnvSchema, { DATA_DIR: dir, PUBLIC_URL: 'http://bench.test', CRAWLER: '0' })
      const unlimited = { max: 1e9, windowMs: 60_000 }
      const limiter = memoryRateLimiter(Date.now, { default: unlimited, collect: unlimited, ping: unlimited, proxy: unlimited })
      const services = nodeServices(env, { stores: { ...stores, limiter }, log: () => {} })
      const app = createApp(services)
      const window = `range=custom&from=${first}&to=${today.subtract({ days: 1 })}`
      const country = encodeURIComponent(JSON.stringify([{ dimension: 'country', operator: 'is', value: ['DE'] }]))
      const reads: [string, string][] = [
        ['stats', `/api/v1/stats?${window}`],
        ['timeseries (month buckets)', `/api/v1/timeseries?${window}`],
        ['breakdown source', `/api/v1/breakdown?${window}&property=source`],
        ['breakdown path', `/api/v1/breakdown?${window}&property=path`],
        ['breakdown city, country filter', `/api/v1/breakdown?${window}&property=city&filters=${country}`],
        ['ga4-events', `/api/v1/ga4-events?${window}`],
        ['stats 30d', '/api/v1/stats?range=30d'],
      ]
      const results = []
      for (const [name, path] of reads) {
        const url = `http://bench.test${path}&site_id=${site.id}&source=ga4`
        const call = async () => {
          const t = performance.now()
          const res = await app.request(url, { headers: { authorization: `Bearer ${key}` } })
          if (res.status !== 200) throw new Error(`${name}: ${res.status} ${await res.text()}`)
          await res.json()
          return performance.now() - t
        }
        await call()
        const times: number[] = []
        for (let i = 0; i < Number(opts.runs); i++) times.push(await call())
        results.push({ read: name, medianMs: +median(times).toFixed(1), minMs: +Math.min(...times).toFixed(1) })
      }
      console.log(JSON.stringify({ days, rows, runs: Number(opts.runs), load: loadavg()[0], results }, null, 2))
    } finally {
      await stores.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

program.parseAsync()
