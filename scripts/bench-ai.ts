import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { createApp } from '../functions/app'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { memoryRateLimiter } from '../lib/accounts/ratelimit'
import { AI_COMPANIES } from '../lib/ingest/ai-assistants'
import { nodeEnvSchema, parseEnv } from '../lib/runtime/env'
import { nodeServices, openNodeStores } from '../lib/runtime/node'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'
import { newSite } from '../lib/sites/sites'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { clickhouseTime } from '../lib/storage/clickhouse/time'

/**
 * Latency of GET /api/v1/ai on the embedded home: one site with 1M events over 30 days (a sixth
 * of its visits sent by AI assistants) and 200k AI crawler hits, generated in the engine (an
 * INSERT ... SELECT standing in for the import and collect paths, which would take minutes), and
 * the finished days rolled up as the server's refresh does at start. Medians over N runs of the API
 * call, after one warm-up call. The machine may be shared: the load
 * average is printed with the figures, which are then an upper bound.
 *
 *   npx tsx scripts/bench-ai.ts [--events 1000000] [--crawls 200000] [--runs 15]
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

const program = new Command('bench-ai')
  .option('--events <n>', 'events of the measured site', '1000000')
  .option('--crawls <n>', 'AI crawler hits of the measured site', '200000')
  .option('--runs <n>', 'runs of each read', '15')
  .action(async (opts: { events: string; crawls: string; runs: string }) => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-ai-'))
    try {
      const env = parseEnv(nodeEnvSchema, { DATA_DIR: dir, PUBLIC_URL: 'https://api.test', CRAWLER: '0' })
      const stores = await openNodeStores(env)
      await migrate(stores.clickhouse, loadMigrations())
      const now = new Date()
      const org = await createOrg(stores.repositories, 'Bench', now)
      const site = newSite({ domain: 'ai.bench.test', timezone: 'Europe/Berlin' }, org.id, now)
      await stores.repositories.sites.create(site)
      const key = (await createApiKey(stores.repositories, { orgId: org.id, name: 'bench', scope: 'read' }, now)).key
      const crawlers = AI_COMPANIES.flatMap((c) => c.crawlers)
      const kindOf = { training: 'ai-training', search: 'ai-search', user: 'ai-assistant' } as const

      const loadStarted = performance.now()
      // five events a visit, 90 seconds apart; a sixth of the visitors come from assistants (by referrer or by utm_source)
      await stores.clickhouse.command(
        `INSERT INTO events (site_id, timestamp, name, kind, visitor_id, session_id, session_start, hostname, pathname, referrer_source, channel, utm_source, country_code)
         SELECT {site:UUID}, session_start + toIntervalSecond(90 * (number % 5)), kind, kind, visitor, cityHash64(visit), session_start, 'ai.bench.test',
                concat('/', ['blog', 'docs', 'pricing', 'about', 'changelog'][1 + (number % 5)], '/', toString(cityHash64(number) % 200)),
                ['', 'Google', 'Hacker News', 'ChatGPT', 'Perplexity', ''][1 + (visitor % 6)],
                ['Direct', 'Organic Search', 'Organic Social', 'AI assistants', 'AI assistants', 'AI assistants'][1 + (visitor % 6)],
                ['', '', '', '', '', 'claude.ai'][1 + (visitor % 6)],
                ['US', 'DE', 'GB', 'FR'][1 + (visitor % 4)]
         FROM (
           SELECT number, intDiv(number, 5) AS visit,
                  toDateTime64({now:DateTime64(3)} - toIntervalSecond(cityHash64(visit, 1) % (30 * 86400)), 3, 'UTC') AS session_start,
                  cityHash64(cityHash64(visit, 2) % 100000, toDate(session_start, 'Europe/Berlin')) AS visitor,
                  if(number % 5 = 0 OR cityHash64(number, 3) % 100 < 45, 'pageview', 'engagement') AS kind
           FROM numbers({count:UInt64})
         )`,
        { site: site.id, count: Number(opts.events), now: clickhouseTime(now) },
      )
      // crawler hits on the same pages (and some only crawlers read), a fifth of them verified
      await stores.clickhouse.command(
        `INSERT INTO bot_events (site_id, timestamp, bot_name, bot_kind, verified, collection_source, hostname, pathname, user_agent)
         SELECT {site:UUID}, toDateTime64({now:DateTime64(3)} - toIntervalSecond(cityHash64(number, 1) % (30 * 86400)), 3, 'UTC'),
                {names:Array(String)}[1 + (number % length({names:Array(String)}))] AS name,
                {kinds:Array(String)}[1 + (number % length({kinds:Array(String)}))],
                cityHash64(number, 2) % 5 = 0, 'server', 'ai.bench.test',
                concat('/', ['blog', 'docs', 'pricing', 'about', 'changelog', 'archive'][1 + (number % 6)], '/', toString(cityHash64(number) % 300)),
                name
         FROM numbers({count:UInt64})`,
        {
          site: site.id,
          count: Number(opts.crawls),
          now: clickhouseTime(now),
          names: crawlers.map((c) => c.name),
          kinds: crawlers.map((c) => kindOf[c.purpose]),
        },
      )
      const loadSeconds = (performance.now() - loadStarted) / 1000
      // what the server's refresh does at start: roll up every finished day (the AI read's days among them)
      const rollupStarted = performance.now()
      await refreshRollups(stores.clickhouse, stores.repositories, now, ROLLUP_ALL_DAYS)
      const rollupSeconds = (performance.now() - rollupStarted) / 1000
      // measure the steady state: background merges of the bulk load done
      for (let quiet = 0; quiet < 5; ) {
        const [merges] = await stores.clickhouse.query<{ n: string }>('SELECT count() AS n FROM system.merges')
        quiet = Number(merges.n) ? 0 : quiet + 1
        await new Promise((r) => setTimeout(r, 1000))
      }

      const services = nodeServices(env, {
        stores: {
          ...stores,
          limiter: memoryRateLimiter(Date.now, {
            default: { max: 1e9, windowMs: 60_000 },
            collect: { max: 1e9, windowMs: 60_000 },
            ping: { max: 1e9, windowMs: 60_000 },
            proxy: { max: 1e9, windowMs: 60_000 },
          }),
        },
        now: () => now,
        log: () => {},
      })
      const app = createApp(services)
      const reads: Record<string, string> = {
        '30d': `range=30d`,
        '7d': `range=7d`,
        'company=openai': `range=30d&company=openai`,
        'crawlers=verified': `range=30d&crawlers=verified`,
        'path filter': `range=30d&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'contains', value: ['blog'] }]))}`,
      }
      const results: Record<string, { medianMs: number; maxMs: number }> = {}
      for (const [name, query] of Object.entries(reads)) {
        const times: number[] = []
        for (let i = 0; i <= Number(opts.runs); i++) {
          const started = performance.now()
          const res = await app.request(`http://api.test/api/v1/ai?site_id=${site.id}&${query}`, {
            headers: { authorization: `Bearer ${key}` },
          })
          const body = await res.text()
          if (res.status !== 200) throw new Error(`${name}: ${res.status} ${body}`)
          if (i > 0) times.push(performance.now() - started)
        }
        results[name] = { medianMs: +median(times).toFixed(1), maxMs: +Math.max(...times).toFixed(1) }
      }
      const [counts] = await stores.clickhouse.query<{ events: string; crawls: string }>(
        'SELECT (SELECT count() FROM events) AS events, (SELECT count() FROM bot_events) AS crawls',
      )
      process.stdout.write(
        `${JSON.stringify(
          {
            loadAverage: loadavg().map((x) => +x.toFixed(2)),
            events: Number(counts.events),
            crawls: Number(counts.crawls),
            loadSeconds: +loadSeconds.toFixed(1),
            rollupSeconds: +rollupSeconds.toFixed(1),
            runs: Number(opts.runs),
            results,
          },
          null,
          2,
        )}\n`,
      )
      await stores.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
    process.exit(0)
  })

await program.parseAsync(process.argv)
