import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Command } from 'commander'
import { benchServices } from './bench-services'
import { Temporal } from 'temporal-polyfill'
import { createApp } from '../functions/app'
import { endpoints } from '../functions/registry'
import type { ClickHouse, QueryParams } from '../lib/storage/clickhouse/types'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { openNodeStores } from '../lib/runtime/node'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { clickhouseTime } from '../lib/storage/clickhouse/time'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'
import { rollupBuildsSettled } from '../lib/reports/query/run'
import { newSite } from '../lib/sites/sites'
import { createFunnel } from '../lib/sites/funnels'
import { createGoal } from '../lib/sites/goals'

/**
 * Report latency on the embedded home: one site with 1M events over 30 days and nine more with
 * 9M between them, generated in the engine (an INSERT ... SELECT standing in for the import path,
 * which would take minutes, and keeping the collector's rules: visitor ids rotate and visits end at
 * the site-local midnight). The page rollup is refreshed once after loading, as the server does at
 * start. Every read of the registry is measured (reports, behaviour, pages and why-traffic-changed;
 * the ones with parameters that matter are named below): medians over N runs of the API call, and
 * of the same SQL run directly on the engine (the statements the call ran, recorded and run again
 * with the concurrency the read gave them). `--main 1000000,10000000,30000000` measures each size
 * and prints each read's growth.
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

/** A read: a GET path, or a POST with its JSON body. */
type Report = string | { path: string; body: unknown }

interface BenchOptions {
  main: string
  others: string
  runs: string
  vitals: string
  dataDir?: string
  only?: string
  at?: string
  compare?: boolean
  firstRead?: boolean
  sqlDir?: string
}

const program = new Command('bench-reports')
  .option(
    '--main <n>',
    'events of the measured site; a comma list (1000000,10000000,30000000) measures each size in a process of its own and prints the growth of every read',
    '1000000',
  )
  .option('--others <n>', 'events of the nine other sites', '9000000')
  .option('--runs <n>', 'runs of each report', '20')
  .option('--vitals <n>', 'vital samples of the measured site, beside its events', '50000')
  .option(
    '--data-dir <dir>',
    'keep the generated data in this folder; a later run with the same folder measures it again (new migrations applied) instead of generating',
  )
  .option('--only <names>', 'measure only the reports whose names start with one of these (comma-separated, e.g. "flow")')
  .option(
    '--at <HH:MM>',
    "the measured site's local time of day the data ends at and the reads run at (a fixed clock); by default the real clock",
  )
  .option('--compare', 'measure the reads that take compare, over the last 14 days, without and with compare=previous_period')
  .option(
    '--first-read',
    "measure first reads: every filter's rolled days are deleted before each call, and before its statements (the builds included) run again on the engine",
  )
  .option(
    '--sql-dir <dir>',
    'write the statements each read ran (its last run, parameters as a comment) to DIR/<read>.sql, to profile them',
  )
  .action(async (opts: BenchOptions) => {
    if (opts.main.includes(',')) return growth(opts.main.split(',').map((n) => n.trim()))
    const dir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'bench-reports-'))
    // a read slowed past the server's time limit by a loaded machine is measured, not refused
    const stores = await openNodeStores({ DATA_DIR: dir, QUERY_TIME_LIMIT_MS: 600_000 })
    await migrate(stores.clickhouse, loadMigrations())
    // today's events are read from events, the finished days from the rollup: how much of today has
    // passed decides the cost of a read, so the clock is fixed (--at) and kept with kept data
    const clockFile = join(dir, 'bench-clock.json')
    const now = existsSync(clockFile) ? new Date(JSON.parse(readFileSync(clockFile, 'utf8')).now) : clockAt(opts.at)
    writeFileSync(clockFile, JSON.stringify({ now: now.toISOString() }))
    const kept = (await stores.repositories.orgs.list()).find((o) => o.name === 'Bench')
    const org = kept ?? (await createOrg(stores.repositories, 'Bench', now))
    const sites = kept ? (await stores.repositories.sites.list(org.id)).sort((a, b) => a.domain.localeCompare(b.domain)) : []
    for (let i = sites.length; i < 10; i++) {
      const site = newSite({ domain: `site${i}.bench.test`, timezone: i === 0 ? 'Europe/Berlin' : 'UTC' }, org.id, now)
      await stores.repositories.sites.create(site)
      sites.push(site)
    }
    const key = (await createApiKey(stores.repositories, { orgId: org.id, name: 'bench', scope: 'read' }, now)).key
    const generate = async (count: number, siteIds: string[], visitors: number, tz: string) => {
      const started = performance.now()
      await stores.clickhouse.command(
        // five events a visit, 90 seconds apart: about 200k visits per million events. The tracker's mix:
        // a visit opens with a pageview; its other events are pageviews (45%), engagement reports (30%),
        // autocaptured clicks (15%, a fifth of them dead), custom events (7%) and captured errors (3%)
        `INSERT INTO events (site_id, timestamp, name, kind, visitor_id, session_id, session_start, hostname, pathname, referrer_source, channel, country_code, region, city, latitude, longitude,
                             device, browser, os, props, engaged_ms, scroll_depth, selector, element_text, element_tag, interactive, dead_click, error_fingerprint, error_name, error_message)
         SELECT site_id, session_start + toIntervalSecond(90 * (number % 5)) AS ts, name, kind, visitor, cityHash64(visit) AS session, session_start, 'bench.test',
                concat('/', ['blog', 'docs', 'pricing', 'about', 'changelog'][1 + (number % 5)], '/', toString(cityHash64(number) % 200)),
                ['', 'Google', 'Bing', 'Hacker News', 'Twitter', 'ChatGPT'][1 + (visitor % 6)],
                ['Direct', 'Organic Search', 'Organic Search', 'Organic Social', 'Organic Social', 'AI assistants'][1 + (visitor % 6)],
                ['US', 'DE', 'GB', 'FR', 'IN', 'BR', 'JP'][1 + (visitor % 7)],
                ['US-NY', 'DE-BE', 'GB-ENG', 'FR-IDF', 'IN-MH', 'BR-SP', 'JP-13'][1 + (visitor % 7)],
                ['New York', 'Berlin', 'London', 'Paris', 'Mumbai', 'São Paulo', 'Tokyo'][1 + (visitor % 7)],
                [40.71, 52.52, 51.51, 48.86, 19.08, -23.55, 35.68][1 + (visitor % 7)], [-74.01, 13.4, -0.13, 2.35, 72.88, -46.63, 139.69][1 + (visitor % 7)],
                ['Desktop', 'Mobile', 'Tablet'][1 + (visitor % 3)], ['Chrome', 'Safari', 'Firefox', 'Edge'][1 + (visitor % 4)], ['Windows', 'iOS', 'macOS', 'Android'][1 + (visitor % 4)],
                if(kind = 'custom', map('plan', ['free', 'pro'][1 + (number % 2)]), map()),
                if(kind = 'engagement', 1000 + cityHash64(number, 8) % 120000, 0), if(kind = 'engagement', cityHash64(number, 9) % 101, 0),
                if(kind = 'click', ['button.cta', 'a.nav', 'div.card', 'img.hero', 'a.external'][1 + element], ''),
                if(kind = 'click', ['Start free trial', 'Docs', 'Pricing plan', '', 'GitHub'][1 + element], ''),
                if(kind = 'click', ['button', 'a', 'div', 'img', 'a'][1 + element], ''),
                kind = 'click' AND element IN (0, 1, 4), kind = 'click' AND element IN (2, 3) AND cityHash64(number, 7) % 2 = 0,
                if(kind = 'error', cityHash64('bench-error', error_group), 0), if(kind = 'error', ['TypeError', 'ReferenceError', 'SyntaxError'][1 + (error_group % 3)], ''),
                if(kind = 'error', concat('Cannot read properties of undefined (reading ''', toString(error_group), ''')'), '')
         FROM (
           SELECT number, intDiv(number, 5) AS visit,
                  toUUID({sites:Array(String)}[1 + (visit % length({sites:Array(String)}))]) AS site_id,
                  toDateTime64({now:DateTime64(3)} - toIntervalSecond(cityHash64(visit, 1) % (30 * 86400)), 3, 'UTC') AS start0,
                  -- as the collector does: a visit ends at the site-local midnight, where the visitor id rotates
                  if(toDate(start0, {tz:String}) != toDate(start0 + toIntervalSecond(360), {tz:String}), start0 - toIntervalSecond(360), start0) AS session_start,
                  cityHash64(cityHash64(visit, 2) % {visitors:UInt64}, toDate(session_start, {tz:String})) AS visitor,
                  cityHash64(number, 3) % 100 AS roll,
                  multiIf(number % 5 = 0 OR roll < 45, 'pageview', roll < 75, 'engagement', roll < 90, 'click', roll < 97, 'Signup', 'error') AS name,
                  if(name = 'Signup', 'custom', name) AS kind,
                  cityHash64(number, 4) % 5 AS element,
                  cityHash64(number, 5) % 30 AS error_group
         FROM numbers({count:UInt64})
         )`,
        { sites: siteIds, visitors, count, tz, now: clickhouseTime(now) },
      )
      return (performance.now() - started) / 1000
    }
    const loadOthers = kept
      ? 0
      : await generate(
          Number(opts.others),
          sites.slice(1).map((s) => s.id),
          900_000,
          'UTC',
        )
    const loadMain = kept ? 0 : await generate(Number(opts.main), [sites[0].id], 100_000, sites[0].timezone)
    // vital samples of the measured site (five metrics a page load, each load a visit of its own), a tenth with attribution as the tracker samples it
    if (!kept)
      await stores.clickhouse.command(
        `INSERT INTO events (site_id, timestamp, name, kind, visitor_id, session_id, session_start, hostname, pathname, country_code, device, browser, os, vital_name, vital_value, props)
       SELECT toUUID({site:String}), ts, 'vital', 'vital', cityHash64(load % 20000, 'vital'), cityHash64(load, 'vital'), ts, 'bench.test',
              concat('/', ['blog', 'docs', 'pricing', 'about', 'changelog'][1 + (load % 5)], '/', toString(cityHash64(load) % 200)),
              ['US', 'DE', 'GB', 'FR', 'IN', 'BR', 'JP'][1 + (load % 7)], ['Desktop', 'Mobile', 'Tablet'][1 + (load % 3)], ['Chrome', 'Safari', 'Firefox', 'Edge'][1 + (load % 4)],
              ['Windows', 'iOS', 'macOS', 'Android'][1 + (load % 4)], metric,
              if(metric = 'CLS', (cityHash64(number) % 400) / 1000, (cityHash64(number) % 6000) * (metric = 'INP' ? 0.1 : 1.0)),
              if(cityHash64(load, 3) % 10 = 0,
                 multiIf(metric = 'LCP', map('attribution.target', ['img.hero', 'h1', 'div.banner>img'][1 + (load % 3)]),
                         metric = 'CLS', map('attribution.largestShiftTarget', ['div.ad', 'img.logo'][1 + (load % 2)]),
                         metric = 'INP', map('attribution.interactionTarget', ['button#buy', 'a.menu'][1 + (load % 2)], 'attribution.scriptUrl', ['https://cdn.bench.test/app.js', 'https://ads.bench.test/tag.js'][1 + (load % 2)]),
                         map()),
                 map())
       FROM (SELECT number, intDiv(number, 5) AS load, ['LCP', 'INP', 'CLS', 'FCP', 'TTFB'][1 + (number % 5)] AS metric,
                    toDateTime64({now:DateTime64(3)} - toIntervalSecond(cityHash64(load, 1) % (30 * 86400)), 3, 'UTC') AS ts
             FROM numbers({count:UInt64}))`,
        { site: sites[0].id, count: Number(opts.vitals), now: clickhouseTime(now) },
      )
    // what the server's refresh does at start: roll up every finished day (lib/reports/rollup/refresh.ts)
    const started = performance.now()
    const rolledUpDays = await refreshRollups(stores.clickhouse, stores.repositories, now, ROLLUP_ALL_DAYS)
    const rollupSeconds = (performance.now() - started) / 1000
    // measure the steady state: background merges of the bulk load done, as they are minutes after any insert
    const settleStarted = performance.now()
    for (let quiet = 0; quiet < 10; ) {
      // a migration's mutation (on kept data) rewrites parts in the background too
      const [merges] = await stores.clickhouse.query<{ n: string }>(
        'SELECT (SELECT count() FROM system.merges) + (SELECT count() FROM system.mutations WHERE NOT is_done) AS n',
      )
      quiet = Number(merges.n) ? 0 : quiet + 1
      await new Promise((r) => setTimeout(r, 1000))
    }
    const settleSeconds = (performance.now() - settleStarted) / 1000
    const parts = Object.fromEntries(
      (
        await stores.clickhouse.query<{ table: string; n: string }>(
          'SELECT table, count() AS n FROM system.parts WHERE active AND database = currentDatabase() GROUP BY table',
        )
      ).map((r) => [r.table, Number(r.n)]),
    )

    const recorder = statementRecorder(stores.clickhouse, !!opts.firstRead)
    // a filtered read rolls up its finished days on its first call (plan.ts): with --first-read every call is a first
    const forgetFilters = async () => {
      if (!opts.firstRead) return
      await stores.clickhouse.command("DELETE FROM day_rollups WHERE startsWith(property, 'filters:')")
      await stores.clickhouse.command("DELETE FROM flow_rollups WHERE startsWith(anchor, 'filters:')")
    }
    const services = benchServices({ ...stores, clickhouse: recorder.clickhouse }, () => now)
    const app = createApp(services)
    const site = sites[0]
    const filters = JSON.stringify([
      { dimension: 'country', operator: 'is', value: ['US', 'DE'] },
      { dimension: 'path', operator: 'contains', value: ['blog'] },
    ])
    // the funnels read's funnel (kept data keeps it)
    if (!(await stores.repositories.funnels.list(site.id)).some((f) => f.name === 'Docs to signup'))
      await createFunnel(
        stores.repositories,
        site.id,
        {
          site_id: site.id,
          name: 'Docs to signup',
          steps: [
            { type: 'page', value: '/docs/*' },
            { type: 'page', value: '/pricing/*' },
            { type: 'event', value: 'Signup' },
          ],
        },
        now,
      )
    // the goals read's goal (kept data keeps it)
    if (!(await stores.repositories.goals.list(site.id)).some((g) => g.name === 'Signup'))
      await createGoal(stores.repositories, site.id, { site_id: site.id, name: 'Signup', type: 'event', matchValue: 'Signup' }, now)
    const filtersParam = encodeURIComponent(filters)
    const detailPath = encodeURIComponent('/docs/7')
    // the reads with the parameters that make them interesting; every other read of the registry is
    // measured too, over the same 30 days (readsOfRegistry below)
    const named: Record<string, string> = {
      stats: `/api/v1/stats?site_id=${site.id}&range=30d`,
      timeseries: `/api/v1/timeseries?site_id=${site.id}&range=30d`,
      'breakdown path': `/api/v1/breakdown?site_id=${site.id}&range=30d&property=path`,
      'breakdown source': `/api/v1/breakdown?site_id=${site.id}&range=30d&property=source`,
      'filtered stats': `/api/v1/stats?site_id=${site.id}&range=30d&filters=${filtersParam}`,
      'filtered timeseries': `/api/v1/timeseries?site_id=${site.id}&range=30d&filters=${filtersParam}`,
      'filtered breakdown path': `/api/v1/breakdown?site_id=${site.id}&range=30d&property=path&filters=${filtersParam}`,
      'filtered breakdown source': `/api/v1/breakdown?site_id=${site.id}&range=30d&property=source&filters=${filtersParam}`,
      vitals: `/api/v1/vitals?site_id=${site.id}&range=30d`,
      'vitals attribution': `/api/v1/vitals?site_id=${site.id}&range=30d&attribution=1`,
      funnels: `/api/v1/funnels?site_id=${site.id}&range=30d`,
      flow: `/api/v1/flow?site_id=${site.id}&range=30d`,
      'flow start_path': `/api/v1/flow?site_id=${site.id}&range=30d&start_path=${encodeURIComponent('/pricing/7')}`,
      'flow focus_path': `/api/v1/flow?site_id=${site.id}&range=30d&focus_path=${encodeURIComponent('/pricing/7')}`,
      'flow filtered': `/api/v1/flow?site_id=${site.id}&range=30d&filters=${filtersParam}`,
      'geo city': `/api/v1/geo?site_id=${site.id}&range=30d&granularity=city`,
      activity: `/api/v1/activity?site_id=${site.id}`,
      sites: '/api/v1/sites',
      realtime: `/api/v1/realtime?site_id=${site.id}`,
      anomalies: `/api/v1/anomalies?site_id=${site.id}`,
      'anomalies vitals': `/api/v1/anomalies?site_id=${site.id}&vitals=1`,
      decay: `/api/v1/decay?site_id=${site.id}`,
      launches: `/api/v1/pages/launches?site_id=${site.id}&range=30d`,
      'page detail': `/api/v1/pages/detail?site_id=${site.id}&path=${detailPath}&range=30d`,
      heatmap: `/api/v1/heatmap?site_id=${site.id}&path=${detailPath}&range=30d`,
    }
    // Plausible's Stats API v2: the same questions as stats, timeseries and the breakdowns above
    const v2 = (query: object) => ({ path: '/api/v2/query', body: { site_id: site.domain, date_range: '30d', ...query } })
    const posted: Record<string, Report> = {
      'v2 query aggregate': v2({ metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'] }),
      'v2 query time:day': v2({ metrics: ['visitors', 'visits', 'pageviews'], dimensions: ['time:day'] }),
      'v2 query source': v2({
        metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'],
        dimensions: ['visit:source'],
        pagination: { limit: 100 },
      }),
      'v2 query path': v2({ metrics: ['visitors', 'visits', 'pageviews'], dimensions: ['event:page'], pagination: { limit: 100 } }),
      'v2 query filtered path': v2({
        metrics: ['visitors', 'visits', 'pageviews'],
        dimensions: ['event:page'],
        filters: [
          ['is', 'visit:country', ['US', 'DE']],
          ['contains', 'event:page', ['blog'], { case_sensitive: false }],
        ],
        pagination: { limit: 100 },
      }),
      'v2 query source x path': v2({
        metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'],
        dimensions: ['visit:source', 'event:page'],
        pagination: { limit: 100 },
      }),
      'v2 query country x device': v2({ metrics: ['visitors', 'visits'], dimensions: ['visit:country', 'visit:device'] }),
      'v2 query time:day bounce': v2({
        metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration', 'events'],
        dimensions: ['time:day'],
      }),
      'v2 query time:day x source': v2({
        metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'],
        dimensions: ['time:day', 'visit:source'],
      }),
      'v2 query time:day x source x path': v2({
        metrics: ['visitors', 'visits', 'pageviews'],
        dimensions: ['time:day', 'visit:source', 'event:page'],
        pagination: { limit: 1000 },
      }),
      'v2 query time:week x country filtered': v2({
        metrics: ['visitors', 'visits', 'bounce_rate', 'percentage'],
        dimensions: ['time:week', 'visit:country'],
        filters: [['contains', 'event:page', ['blog']]],
      }),
      'v2 query time:hour x device': v2({ metrics: ['visitors', 'pageviews'], dimensions: ['time:hour', 'visit:device'] }),
      'v2 query or across dimensions': v2({
        metrics: ['visitors', 'visits', 'pageviews'],
        filters: [
          [
            'or',
            [
              ['contains', 'event:page', ['blog']],
              ['is', 'visit:country', ['US']],
            ],
          ],
        ],
      }),
      'v2 query entry hostname': v2({ metrics: ['visitors', 'visits'], dimensions: ['visit:entry_page_hostname'] }),
      'v2 query goal x source': v2({
        metrics: ['visitors', 'events', 'conversion_rate', 'group_conversion_rate'],
        dimensions: ['event:goal', 'visit:source'],
      }),
      'v2 query goal x path': v2({
        metrics: ['visitors', 'events', 'group_conversion_rate'],
        dimensions: ['event:page', 'event:goal'],
        pagination: { limit: 100 },
      }),
      'v2 query goal or page': v2({
        metrics: ['visitors', 'visits', 'pageviews'],
        filters: [
          [
            'or',
            [
              ['is', 'event:goal', ['Signup']],
              ['contains', 'event:page', ['blog']],
            ],
          ],
        ],
      }),
      ...plausibleShapes(v2),
    }
    const reports: Record<string, Report> = { ...named, ...readsOfRegistry(site.id, Object.values(named)), ...posted }
    if (opts.compare) {
      // the reads that take compare, each without and with it, over 14 days whose previous 14 hold events too
      for (const name of Object.keys(reports)) delete reports[name]
      const today = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).toPlainDate()
      const window = `range=custom&from=${today.subtract({ days: 13 })}&to=${today}`
      const compared: Record<string, string> = {
        stats: '/api/v1/stats?',
        timeseries: '/api/v1/timeseries?',
        'breakdown path': '/api/v1/breakdown?property=path&',
        'breakdown source': '/api/v1/breakdown?property=source&',
        goals: '/api/v1/goals?',
        pages: '/api/v1/pages?',
        vitals: '/api/v1/vitals?',
      }
      for (const [name, path] of Object.entries(compared)) {
        reports[name] = `${path}site_id=${site.id}&${window}`
        reports[`${name} +compare`] = `${path}site_id=${site.id}&${window}&compare=previous_period`
      }
    }
    const only = opts.only?.split(',').map((name) => name.trim())
    if (only) for (const name of Object.keys(reports)) if (!only.some((prefix) => name.startsWith(prefix))) delete reports[name]
    // the first read of each report on its own: a filtered read rolls its finished days up then
    const firstApiMs: Record<string, number> = {}
    const skipped: Record<string, string> = {}
    // the answer, its time and the process's CPU time meanwhile (the engine runs in the process); a
    // filter's first read rolls its days up after its answer, which the call then waits for, so that
    // the next measured read does not overlap that work
    const call = async (report: Report, answered?: () => void) => {
      const { path, body } = typeof report === 'string' ? { path: report, body: undefined } : report
      const t = performance.now()
      const cpu = process.cpuUsage()
      const res = await app.request(`http://bench${path}`, {
        method: body ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      })
      const text = await res.text()
      const used = process.cpuUsage(cpu)
      const answer = { status: res.status, body: text, ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000 }
      answered?.()
      await rollupBuildsSettled()
      return answer
    }
    for (const [name, report] of Object.entries(reports)) {
      await forgetFilters()
      const res = await call(report)
      firstApiMs[name] = +res.ms.toFixed(1)
      // a read this data cannot answer (a source the site lacks, a provider not configured) is listed, not measured
      if (res.status !== 200) {
        skipped[name] = `${res.status} ${res.body.slice(0, 160)}`
        delete reports[name]
      }
    }
    // round robin over the reports, so a slow spell of the machine falls on all of them alike. Each API
    // call records the statements it ran (recorder); the engine time is those statements run again
    // directly, with the concurrency the read gave them.
    const samples = Object.fromEntries(
      Object.keys(reports).map((name) => [
        name,
        { api: [] as number[], cpu: [] as number[], engine: [] as number[], statements: 0, engineCpu: 0 },
      ]),
    )
    for (let i = 0; i < Number(opts.runs) + 2; i++) {
      for (const [name, report] of Object.entries(reports)) {
        await forgetFilters()
        recorder.start()
        let ran: Ran[] = []
        const res = await call(report, () => {
          ran = recorder.stop()
        })
        const apiMs = res.ms
        if (res.status !== 200) throw new Error(`${name}: ${res.status} ${res.body}`)
        await forgetFilters()
        const cpu = processCpuMs()
        const t = performance.now()
        await recorder.replay(ran)
        const engineMs = performance.now() - t
        const engineCpu = processCpuMs() - cpu
        if (opts.sqlDir && i === Number(opts.runs) + 1) writeStatements(opts.sqlDir, name, ran)
        if (i >= 2) {
          samples[name].api.push(apiMs)
          samples[name].cpu.push(res.cpuMs)
          samples[name].engine.push(engineMs)
          samples[name].statements = ran.length
          samples[name].engineCpu += engineCpu
        }
      }
    }
    const quartiles = (xs: number[]) =>
      [...xs]
        .sort((a, b) => a - b)
        .filter((_, i, all) => i === all.length >> 2 || i === (3 * all.length) >> 2)
        .map((x) => +x.toFixed(1))
    const results = Object.fromEntries(
      Object.entries(samples).map(([name, { api, cpu, engine, statements, engineCpu }]) => [
        name,
        {
          firstApiMs: firstApiMs[name],
          apiMedianMs: +median(api).toFixed(1),
          apiQuartilesMs: quartiles(api),
          cpuMedianMs: +median(cpu).toFixed(1),
          engineMedianMs: +median(engine).toFixed(1),
          ratio: +(median(api) / median(engine)).toFixed(2),
          // the process's CPU a call, on average, the engine's threads included: the API's own work
          // is the difference, far less at the mercy of other load than the times
          cpuMs: { api: +(cpu.reduce((a, b) => a + b, 0) / cpu.length).toFixed(2), engine: +(engineCpu / engine.length).toFixed(2) },
          statements,
        },
      ]),
    )
    const [counts] = await stores.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events')
    // the machine is shared: its load (1, 5 and 15 minutes) when the runs ended says how noisy they were
    process.stdout.write(
      `${JSON.stringify({ clock: Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).toString(), loadAverage: loadavg().map((x) => +x.toFixed(2)), events: Number(counts.n), loadSeconds: { others: +loadOthers.toFixed(1), main: +loadMain.toFixed(1) }, rollup: { days: rolledUpDays, seconds: +rollupSeconds.toFixed(1) }, mergesSettledSeconds: +settleSeconds.toFixed(1), parts, runs: Number(opts.runs), firstRead: !!opts.firstRead, results, skipped }, null, 2)}\n`,
    )
    await stores.close()
    if (!opts.dataDir) rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
/** CPU time of this process so far (every thread, user and system), in ms. */
function processCpuMs(): number {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** The instant of today's HH:MM in Europe/Berlin, the measured site's timezone; the real clock without one. */
function clockAt(at: string | undefined): Date {
  if (!at) return new Date()
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(at)
  if (!match) throw new Error(`--at: expected HH:MM, got ${at}`)
  const today = Temporal.Now.zonedDateTimeISO('Europe/Berlin').startOfDay()
  return new Date(today.with({ hour: Number(match[1]), minute: Number(match[2]) }).epochMilliseconds)
}

/**
 * The shapes of Plausible's Stats API v2 documentation beyond those above: the timeseries by hour,
 * week and month, the documented aggregate with every metric and its comparison, a breakdown by
 * each visit and event dimension, a custom property, goals with conversion rates, two dimensions
 * (the documented country and city, UTM medium and source), a time dimension beside an event
 * dimension, and the filters (matches, has_done, a property). Each is named `v2 shape ...`.
 */
function plausibleShapes(v2: (query: object) => Report): Record<string, Report> {
  const visitors = ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration']
  const shapes: Record<string, Report> = {
    'v2 shape aggregate all metrics': v2({
      metrics: ['visitors', 'visits', 'pageviews', 'views_per_visit', 'bounce_rate', 'visit_duration', 'events'],
    }),
    'v2 shape aggregate compared': v2({
      metrics: ['visitors', 'pageviews', 'bounce_rate'],
      include: { comparisons: { mode: 'previous_period' } },
    }),
    'v2 shape time:hour day': v2({ metrics: ['visitors', 'pageviews'], dimensions: ['time:hour'], date_range: 'day' }),
    'v2 shape time:week': v2({ metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'], dimensions: ['time:week'] }),
    'v2 shape time:month': v2({ metrics: ['visitors', 'pageviews'], dimensions: ['time:month'], include: { time_labels: true } }),
    'v2 shape time': v2({ metrics: ['visitors', 'events'], dimensions: ['time'] }),
    'v2 shape goal': v2({ metrics: ['visitors', 'events', 'conversion_rate'], dimensions: ['event:goal'] }),
    'v2 shape goal filtered': v2({ metrics: ['visitors', 'conversion_rate'], filters: [['is', 'event:goal', ['Signup']]] }),
    'v2 shape prop': v2({ metrics: ['visitors', 'events', 'percentage'], dimensions: ['event:props:plan'] }),
    'v2 shape prop filtered': v2({ metrics: ['visitors', 'pageviews'], filters: [['is', 'event:props:plan', ['pro']]] }),
    'v2 shape country_name x city_name': v2({ metrics: ['visitors'], dimensions: ['visit:country_name', 'visit:city_name'] }),
    'v2 shape utm_medium x utm_source': v2({ metrics: ['visitors', 'bounce_rate'], dimensions: ['visit:utm_medium', 'visit:utm_source'] }),
    'v2 shape time:day x path': v2({
      metrics: ['visitors', 'pageviews'],
      dimensions: ['time:day', 'event:page'],
      pagination: { limit: 1000 },
    }),
    'v2 shape hostname x path': v2({
      metrics: ['visitors', 'pageviews'],
      dimensions: ['event:hostname', 'event:page'],
      pagination: { limit: 100 },
    }),
    'v2 shape matches filter': v2({ metrics: visitors, dimensions: ['visit:source'], filters: [['matches', 'event:page', ['^/blog/1']]] }),
    'v2 shape has_done': v2({
      metrics: ['visitors', 'visits'],
      dimensions: ['visit:device'],
      filters: [['has_done', ['is', 'event:name', ['Signup']]]],
    }),
    'v2 shape total_rows': v2({
      metrics: ['visitors'],
      dimensions: ['event:page'],
      include: { total_rows: true },
      pagination: { limit: 10, offset: 10 },
    }),
  }
  const dimensions = [
    'event:hostname',
    'event:name',
    'visit:entry_page',
    'visit:exit_page',
    'visit:exit_page_hostname',
    'visit:referrer',
    'visit:channel',
    'visit:utm_source',
    'visit:utm_medium',
    'visit:utm_campaign',
    'visit:utm_term',
    'visit:utm_content',
    'visit:device',
    'visit:browser',
    'visit:browser_version',
    'visit:os',
    'visit:os_version',
    'visit:country_name',
    'visit:region_name',
    'visit:city_name',
  ]
  for (const dimension of dimensions) {
    const engagement = dimension.startsWith('visit:')
    shapes[`v2 shape ${dimension.replace(/^(visit|event):/, '')}`] = v2({
      metrics: engagement ? visitors : ['visitors', 'visits', 'pageviews'],
      dimensions: [dimension],
      pagination: { limit: 100 },
    })
  }
  return shapes
}

/** The GET reads of the registry (reports, behaviour, pages, why) not in `measured`, each over 30 days. */
function readsOfRegistry(siteId: string, measured: string[]): Record<string, string> {
  const covered = new Set(measured.map((path) => path.split('?')[0]))
  const reads: Record<string, string> = {}
  for (const endpoint of endpoints) {
    if (endpoint.method !== 'GET' || endpoint.scope !== 'read' || endpoint.path.includes('{')) continue
    if (!['reports', 'behaviour', 'pages', 'why'].includes(endpoint.group ?? '') || covered.has(endpoint.path)) continue
    const shape = endpoint.params?.shape ?? {}
    if (!('site_id' in shape)) continue
    const query = new URLSearchParams({ site_id: siteId })
    if ('range' in shape) query.set('range', '30d')
    reads[endpoint.path.replace('/api/v1/', '')] = `${endpoint.path}?${query}`
  }
  return reads
}

/** The statements of one read as a file of their own: each with its parameters in a comment before it. */
function writeStatements(dir: string, name: string, ran: Ran[]) {
  mkdirSync(dir, { recursive: true })
  const text = ran.map((s) => `-- params: ${JSON.stringify(s.params ?? {})}\n${s.sql};\n`).join('\n')
  writeFileSync(join(dir, `${name.replace(/[^\w.-]+/g, '_')}.sql`), text)
}

interface Ran {
  sql: string
  params?: QueryParams
  start: number
  end: number
  command?: boolean
}

/**
 * A ClickHouse that records the SELECTs it runs between start() and stop() (with `commands`, its
 * commands too: a first read's rollup builds), with when each began and ended; replay() runs them
 * again directly on the engine, those that overlapped at once.
 */
function statementRecorder(inner: ClickHouse, commands: boolean) {
  let ran: Ran[] | null = null
  const clickhouse: ClickHouse = {
    ...inner,
    query: async <Row>(sql: string, params?: QueryParams) => {
      const start = performance.now()
      const rows = await inner.query<Row>(sql, params)
      ran?.push({ sql, params, start, end: performance.now() })
      return rows
    },
    command: async (sql, params) => {
      const start = performance.now()
      await inner.command(sql, params)
      if (commands) ran?.push({ sql, params, start, end: performance.now(), command: true })
    },
    insert: (table, rows, options) => inner.insert(table, rows, options),
    close: () => inner.close(),
  }
  return {
    clickhouse,
    start: () => {
      ran = []
    },
    stop: () => {
      const out = ran ?? []
      ran = null
      return out
    },
    async replay(statements: Ran[]) {
      // waves: a statement that began before every statement of the current wave had ended ran beside them
      const waves: Ran[][] = []
      for (const s of [...statements].sort((a, b) => a.start - b.start)) {
        const wave = waves.at(-1)
        if (wave && s.start < Math.min(...wave.map((w) => w.end))) wave.push(s)
        else waves.push([s])
      }
      for (const wave of waves)
        await Promise.all(wave.map((s) => (s.command ? inner.command(s.sql, s.params) : inner.query(s.sql, s.params))))
    },
  }
}

/** Measures each size in a process of its own (one embedded engine each), then prints every read's growth. */
async function growth(sizes: string[]) {
  const args = process.argv.slice(2)
  const at = args.indexOf('--main')
  const runs: { main: string; results: Record<string, { apiMedianMs: number; engineMedianMs: number; ratio: number }> }[] = []
  for (const size of sizes) {
    const child = [...args]
    child[at + 1] = size
    // each size keeps its own data
    const dataDir = child.indexOf('--data-dir')
    if (dataDir >= 0) child[dataDir + 1] = `${child[dataDir + 1]}-${size}`
    process.stderr.write(`measuring ${size} events...\n`)
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), ...child], {
      maxBuffer: 64 * 1024 * 1024,
    })
    process.stdout.write(stdout)
    runs.push({ main: size, results: JSON.parse(stdout).results })
  }
  const names = Object.keys(runs[0].results)
  const rows = names.map((name) => {
    const cells = runs.map((r) => r.results[name])
    const first = cells[0]?.apiMedianMs
    const last = cells.at(-1)?.apiMedianMs
    return {
      read: name,
      ...Object.fromEntries(
        runs.flatMap((r, i) => [
          [`api ${r.main}`, cells[i]?.apiMedianMs ?? null],
          [`engine ${r.main}`, cells[i]?.engineMedianMs ?? null],
          [`ratio ${r.main}`, cells[i]?.ratio ?? null],
        ]),
      ),
      growth: first && last ? +(last / first).toFixed(1) : null,
    }
  })
  process.stdout.write(`${JSON.stringify({ growth: rows }, null, 2)}\n`)
  console.table(rows)
}

await program.parseAsync(process.argv)
