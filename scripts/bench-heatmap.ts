import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { createApp } from '../functions/app'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { memoryRateLimiter } from '../lib/accounts/ratelimit'
import { Ingestor } from '../lib/ingest/pipeline'
import { directSink } from '../lib/ingest/sink'
import { openNodeStores } from '../lib/runtime/node'
import { memoryLiveCache } from '../lib/operations/public-live'
import { SiteDirectory } from '../lib/sites/site-directory'
import { newSite } from '../lib/sites/sites'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { clickhouseTime } from '../lib/storage/clickhouse/time'

/**
 * Latency of GET /api/v1/heatmap on the embedded home: one site with --main events over 30 days
 * (a tenth of them on /pricing) and another with --others, generated in the engine (an INSERT ...
 * SELECT standing in for the import path, which would take minutes). The mix: pageviews (40%),
 * engagement reports with a scroll depth (25%) and clicks with a position (35%, some dead, a few
 * rage clicks) from desktop (60% of visitors), phone (30%) and tablet viewports. Medians over
 * --runs calls through the app, after the engine's background merges settle.
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

const program = new Command('bench-heatmap')
  .description('Measure the heatmap read at 1M events (medians of repeated runs through the app).')
  .option('--main <n>', 'events of the measured site', '1000000')
  .option('--others <n>', 'events of a second site in the same tables', '1000000')
  .option('--runs <n>', 'runs of each read', '20')
  .action(async (opts: { main: string; others: string; runs: string }) => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-heatmap-'))
    const stores = await openNodeStores({ DATA_DIR: dir })
    await migrate(stores.clickhouse, loadMigrations())
    const now = new Date()
    const org = await createOrg(stores.repositories, 'Bench', now)
    const sites = [0, 1].map((i) => newSite({ domain: `site${i}.heatmap.bench`, timezone: 'UTC' }, org.id, now))
    for (const site of sites) await stores.repositories.sites.create(site)
    const key = (await createApiKey(stores.repositories, { orgId: org.id, name: 'bench', scope: 'read' }, now)).key

    const generate = async (count: number, siteId: string) => {
      const started = performance.now()
      await stores.clickhouse.command(
        `INSERT INTO events (site_id, timestamp, name, kind, visitor_id, session_id, session_start, hostname, pathname, country_code, device, browser, os,
                             selector, element_text, element_tag, interactive, dead_click, engaged_ms, scroll_depth,
                             click_x, click_y, doc_width, doc_height, rage_click, viewport_class)
         SELECT toUUID({site:String}), session_start + toIntervalSecond(60 * (number % 5)), kind, kind, visitor, cityHash64(visit), session_start, 'heatmap.bench',
                if(cityHash64(visit, 6) % 10 = 0, '/pricing', concat('/docs/', toString(cityHash64(visit, 7) % 50))),
                ['US', 'DE', 'GB', 'FR'][1 + (visitor % 4)], ['Desktop', 'Mobile', 'Tablet'][1 + (visitor % 3)], 'Chrome', 'Windows',
                if(kind = 'click', ['button#buy', 'a.nav', 'div.card', 'img.hero', 'span.price'][1 + element], ''),
                if(kind = 'click', ['Buy', 'Docs', '', '', ''][1 + element], ''),
                if(kind = 'click', ['button', 'a', 'div', 'img', 'span'][1 + element], ''),
                kind = 'click' AND element < 2, kind = 'click' AND element >= 2 AND cityHash64(number, 8) % 3 = 0,
                if(kind = 'engagement', 5000, 0), if(kind = 'engagement', cityHash64(number, 9) % 101, 0),
                if(kind = 'click', cityHash64(number, 10) % 10001, 0), if(kind = 'click', cityHash64(number, 11) % 10001, 0),
                if(kind = 'click', [1440, 390, 820][1 + class_index], 0), if(kind = 'click', [4200, 9800, 6100][1 + class_index], 0),
                kind = 'click' AND cityHash64(number, 12) % 50 = 0,
                ['desktop', 'phone', 'tablet'][1 + class_index]
         FROM (
           SELECT number, intDiv(number, 5) AS visit,
                  toDateTime64({now:DateTime64(3)} - toIntervalSecond(cityHash64(visit, 1) % (30 * 86400)), 3, 'UTC') AS session_start,
                  cityHash64(cityHash64(visit, 2) % 100000, toDate(session_start)) AS visitor,
                  cityHash64(number, 3) % 100 AS roll,
                  multiIf(number % 5 = 0 OR roll < 40, 'pageview', roll < 65, 'engagement', 'click') AS kind,
                  cityHash64(number, 4) % 5 AS element,
                  multiIf(visitor % 10 < 6, 0, visitor % 10 < 9, 1, 2) AS class_index
           FROM numbers({count:UInt64})
         )`,
        { site: siteId, count, now: clickhouseTime(now) },
      )
      return (performance.now() - started) / 1000
    }
    const loadSeconds = { others: await generate(Number(opts.others), sites[1].id), main: await generate(Number(opts.main), sites[0].id) }
    // the steady state: background merges of the bulk load done
    for (let quiet = 0; quiet < 5; ) {
      const [merges] = await stores.clickhouse.query<{ n: string }>('SELECT count() AS n FROM system.merges')
      quiet = Number(merges.n) ? 0 : quiet + 1
      await new Promise((r) => setTimeout(r, 1000))
    }

    const siteDirectory = new SiteDirectory(stores.repositories.sites)
    const unlimited = { max: 1e9, windowMs: 60_000 }
    const app = createApp({
      clickhouse: stores.clickhouse,
      kv: stores.kv,
      repositories: stores.repositories,
      sites: siteDirectory,
      limiter: memoryRateLimiter(Date.now, { default: unlimited, collect: unlimited, ping: unlimited, proxy: unlimited }),
      now: () => now,
      fetch,
      ingestor: new Ingestor({
        sites: siteDirectory,
        repositories: stores.repositories,
        sink: directSink(stores.clickhouse, stores.repositories),
        now: () => now,
      }),
      clientAddress: () => '127.0.0.1',
      liveCache: memoryLiveCache(),
    })
    const site = sites[0].id
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'country', operator: 'is', value: ['US', 'DE'] }]))
    const reads: Record<string, string> = {
      'pricing desktop 30d': `/api/v1/heatmap?site_id=${site}&range=30d&path=/pricing&device=desktop`,
      'pricing phone 30d, country filter': `/api/v1/heatmap?site_id=${site}&range=30d&path=/pricing&device=phone&filters=${filters}`,
      'docs page desktop 7d': `/api/v1/heatmap?site_id=${site}&range=7d&path=/docs/7&device=desktop`,
    }
    const results: Record<string, { clicks: number; medianMs: number; minMs: number; maxMs: number }> = {}
    for (const [name, path] of Object.entries(reads)) {
      const samples: number[] = []
      let clicks = 0
      for (let i = 0; i < Number(opts.runs) + 1; i++) {
        const started = performance.now()
        const res = await app.request(`http://bench.test${path}`, { headers: { authorization: `Bearer ${key}` } })
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`)
        clicks = ((await res.json()) as { summary: { clicks: number } }).summary.clicks
        // the first call warms the caches: not counted
        if (i) samples.push(performance.now() - started)
      }
      results[name] = {
        clicks,
        medianMs: +median(samples).toFixed(1),
        minMs: +Math.min(...samples).toFixed(1),
        maxMs: +Math.max(...samples).toFixed(1),
      }
    }
    const [counts] = await stores.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events WHERE site_id = {site:UUID}', { site })
    // the machine may be shared: its load (1, 5 and 15 minutes) says how noisy the runs were
    process.stdout.write(
      `${JSON.stringify({ loadAverage: loadavg().map((x) => +x.toFixed(2)), events: Number(counts.n), loadSeconds: { others: +loadSeconds.others.toFixed(1), main: +loadSeconds.main.toFixed(1) }, runs: Number(opts.runs), results }, null, 2)}\n`,
    )
    await stores.close()
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })

program.parseAsync()
