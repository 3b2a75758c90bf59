import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from '@upstash/redis'
import { Command } from 'commander'
import { memoryRateLimiter } from '../lib/accounts/ratelimit'
import { importSearchConsole } from '../lib/integrations/search-console/import'
import { guardedFetch } from '../lib/network/guarded-fetch'
import { openRepositories } from '../lib/runtime/repositories'
import { searchReport, seoReport } from '../lib/insights/search/search'
import { newSite } from '../lib/sites/sites'
import { EmbeddedClickHouse } from '../lib/storage/clickhouse/chdb'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { EmbeddedRedis } from '../lib/storage/kv/embedded'
import { rawRequester } from '../lib/storage/kv/raw'
import { type FixtureRow, fakeSearchConsole } from '../tests/fakes/search-console'

/**
 * Search Console on the embedded engine. Reads: 16 months of one site with 5,000 landing pages and
 * 50,000 queries (each query ranking one page, every row a query, country and device of a day),
 * generated in the engine (an INSERT ... SELECT standing in for the import, which would take
 * long), with the day totals; then the medians over N runs of the `search` and `seo` verbs. Import:
 * rows per second of importSearchConsole from the local fake Search Console (tests/fakes), which
 * answers from fixture rows, over days of --import-rows rows each.
 *
 *   npx tsx scripts/bench-search.ts [--rows-per-day 20000] [--runs 9] [--import-days 20] [--import-rows 10000]
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

const program = new Command('bench-search')
  .option('--rows-per-day <n>', 'query rows a day (query, page, country and device)', '20000')
  .option('--runs <n>', 'runs of each read after one warm-up', '9')
  .option('--import-days <n>', 'days with rows that the import measure fetches from the fake', '20')
  .option('--import-rows <n>', 'query rows of each of those days', '10000')
  .parse()
const options = program.opts<{ rowsPerDay: string; runs: string; importDays: string; importRows: string }>()
const rowsPerDay = Number(options.rowsPerDay)
const runs = Number(options.runs)
const NOW = new Date('2026-11-22T12:00:00Z')
const DAYS = 486

const dir = mkdtempSync(join(tmpdir(), 'bench-search-'))
const clickhouse = new EmbeddedClickHouse(join(dir, 'clickhouse'))
const log = (line: string) => process.stderr.write(`${line}\n`)
try {
  await migrate(clickhouse, loadMigrations())
  const site = newSite({ domain: 'www.example.com' }, crypto.randomUUID(), NOW)
  site.integrations.searchConsole = { connected: true, siteUrl: 'sc-domain:example.com' }

  // 16 months of rows: a query's page is fixed (50,000 queries over 5,000 pages), position and
  // clicks vary by day
  let started = performance.now()
  await clickhouse.command(
    `INSERT INTO search_console_rows
     SELECT {site:UUID}, toDate('2026-11-21') - intDiv(number, {per:UInt32}) AS date,
       concat('query ', toString(q)) AS query, concat('https://www.example.com/p/', toString(q % 5000)) AS page,
       concat('/p/', toString(q % 5000)) AS path,
       ['usa', 'deu', 'gbr', 'fra', 'ind'][1 + number % 5] AS country, ['Desktop', 'Mobile', 'Tablet'][1 + number % 3] AS device,
       (cityHash64(number, 1) % 20) AS clicks, 20 + (cityHash64(number, 2) % 400) AS impressions,
       1 + (cityHash64(number, 3) % 300) / 10 AS position, 1
     FROM (SELECT number, cityHash64(number) % 50000 AS q FROM numbers({n:UInt64}))`,
    { site: site.id, per: rowsPerDay, n: rowsPerDay * DAYS },
  )
  await clickhouse.command(
    `INSERT INTO search_console_totals
     SELECT site_id, date, country, device, sum(clicks) * 11 / 10, sum(impressions) * 11 / 10, sum(position * impressions) / sum(impressions), 1
     FROM search_console_rows WHERE site_id = {site:UUID} GROUP BY site_id, date, country, device`,
    { site: site.id },
  )
  await clickhouse.command('OPTIMIZE TABLE search_console_rows FINAL')
  log(`generated ${rowsPerDay * DAYS} rows (${DAYS} days) in ${Math.round(performance.now() - started)} ms`)

  const deps = { clickhouse, now: () => NOW }
  const reads: [string, () => Promise<unknown>][] = [
    ['search range=30d', () => searchReport(deps, site, { site_id: site.id, range: '30d' })],
    ['search range=12mo', () => searchReport(deps, site, { site_id: site.id, range: '12mo' })],
    ['search page /p/42 30d', () => searchReport(deps, site, { site_id: site.id, range: '30d', dimension: 'page', value: '/p/42' })],
    ['seo range=30d', () => seoReport(deps, site, { site_id: site.id, range: '30d' })],
    ['seo range=90d', () => seoReport(deps, site, { site_id: site.id, range: '90d' })],
  ]
  for (const [name, read] of reads) {
    const times: number[] = []
    for (let i = 0; i <= runs; i++) {
      started = performance.now()
      await read()
      if (i > 0) times.push(performance.now() - started)
    }
    process.stdout.write(
      `${JSON.stringify({ read: name, runs, medianMs: Math.round(median(times)), maxMs: Math.round(Math.max(...times)) })}\n`,
    )
  }

  // the import from the fake: --import-days days of --import-rows query rows, the other days of 16 months empty
  const importDays = Number(options.importDays)
  const perDay = Number(options.importRows)
  const rows: FixtureRow[] = []
  for (let d = 1; d <= importDays; d++) {
    const date = new Date(NOW.getTime() - d * 86_400_000).toISOString().slice(0, 10)
    for (let i = 0; i < perDay; i++)
      rows.push({
        date,
        query: `query ${i}`,
        page: `https://www.example.com/p/${i % 5000}`,
        country: ['usa', 'deu', 'gbr'][i % 3],
        device: (['DESKTOP', 'MOBILE', 'TABLET'] as const)[i % 3],
        clicks: i % 7,
        impressions: 10 + (i % 50),
        position: 1 + (i % 30),
      })
  }
  const fake = await fakeSearchConsole({
    sites: [{ siteUrl: 'sc-domain:example.com', permissionLevel: 'siteOwner' }],
    rows: { 'sc-domain:example.com': rows },
  })
  try {
    const repositories = openRepositories(new Redis(rawRequester(new EmbeddedRedis())))
    const imported = newSite({ domain: 'www.example.com' }, crypto.randomUUID(), NOW)
    imported.integrations.searchConsole = { connected: true, siteUrl: 'sc-domain:example.com' }
    const connection = {
      baseUrl: fake.url,
      fetch: guardedFetch({ allowPrivate: true, maxBytes: 64 * 1024 * 1024 }),
      accessToken: async () => 'token-1',
    }
    started = performance.now()
    const state = await importSearchConsole({ clickhouse, repositories, limiter: memoryRateLimiter(), connection }, imported, NOW)
    const ms = performance.now() - started
    process.stdout.write(
      `${JSON.stringify({ import: state?.state, days: state?.daysDone, requests: fake.queries.length, rows: state?.rows, seconds: Math.round(ms / 100) / 10, rowsPerSecond: Math.round((state?.rows ?? 0) / (ms / 1000)) })}\n`,
    )
  } finally {
    await fake.close()
  }
  log(
    `load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} (other work on the machine slows these figures)`,
  )
} finally {
  await clickhouse.close()
  rmSync(dir, { recursive: true, force: true })
}
