import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { Temporal } from 'temporal-polyfill'
import { createApp } from '../functions/app'
import { createApiKey, createOrg } from '../lib/accounts/admin'
import { openNodeStores } from '../lib/runtime/node'
import { Ingestor } from '../lib/ingest/pipeline'
import { SiteDirectory } from '../lib/sites/site-directory'
import { directSink } from '../lib/ingest/sink'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { clickhouseTime } from '../lib/storage/clickhouse/time'
import type { Query, Read } from '../lib/reports/query/model'
import { parseFilters, reportParams } from '../lib/reports/query/parse'
import { previousWindow, rawDaySpans, resolveRange } from '../lib/reports/query/range'
import { clickGroupsSql, clickSummarySql } from '../lib/reports/query/compile/clicks'
import { errorGroupsSql, errorSummarySql } from '../lib/reports/query/compile/errors'
import { geoPlacesSql } from '../lib/reports/query/compile/geo'
import { propertyKeyCountsSql } from '../lib/reports/query/compile/properties'
import { realtime, siteStats } from '../lib/reports/query/reports'
import { rolledDays, runRead } from '../lib/reports/query/run'
import { type Fragment, render } from '../lib/storage/clickhouse/sql'
import { flowSql } from '../lib/reports/query/compile/flow'
import { journeysSql } from '../lib/reports/query/compile/journeys'
import { activitySql } from '../lib/reports/query/compile/activity'
import { FLOW_DEFAULT_DEPTH, FLOW_DEFAULT_LIMIT } from '../lib/reports/query/journeys'
import { ROLLUP_ALL_DAYS, refreshRollups } from '../lib/reports/rollup/refresh'
import { memoryRateLimiter } from '../lib/accounts/ratelimit'
import { memoryLiveCache } from '../lib/sites/public-live'
import { newSite } from '../lib/sites/sites'
import { createFunnel } from '../lib/sites/funnels'
import { funnelLevelsSql } from '../lib/reports/query/compile/funnels'
import { contributorsSql, vitalsSql } from '../lib/reports/query/compile/vitals'
import { anomalies } from '../lib/reports/why/anomalies'
import { decay } from '../lib/reports/why/decay'
import { launches } from '../lib/reports/why/launches'
import { markers } from '../lib/reports/why/markers'
import { pageDetail } from '../lib/reports/why/page-detail'
import { spikes } from '../lib/reports/why/spikes'

/**
 * Report latency on the embedded home: one site with 1M events over 30 days and nine more with
 * 9M between them, generated in the engine (an INSERT ... SELECT standing in for the import path,
 * which would take minutes, and keeping the collector's rules: visitor ids rotate and visits end at
 * the site-local midnight). The page rollup is refreshed once after loading, as the server does at
 * start. Medians over N runs of the API call, and of the same compiled SQL run directly on the
 * engine (with the rolled-days lookup, where the read uses the rollup: two statements).
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

const program = new Command('bench-reports')
  .option('--main <n>', 'events of the measured site', '1000000')
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
  .action(async (opts: { main: string; others: string; runs: string; vitals: string; dataDir?: string; only?: string; at?: string }) => {
    const dir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'bench-reports-'))
    const stores = await openNodeStores({ DATA_DIR: dir })
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
                ['Direct', 'Organic Search', 'Organic Search', 'Organic Social', 'Organic Social', 'AI'][1 + (visitor % 6)],
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
                if(kind = 'error', concat('Cannot read properties of undefined (reading '', toString(error_group), '')'), '')
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

    const siteDirectory = new SiteDirectory(stores.repositories.sites)
    const services = {
      clickhouse: stores.clickhouse,
      kv: stores.kv,
      repositories: stores.repositories,
      sites: siteDirectory,
      limiter: memoryRateLimiter(Date.now, {
        default: { max: 1e9, windowMs: 60_000 },
        collect: { max: 1e9, windowMs: 60_000 },
        ping: { max: 1e9, windowMs: 60_000 },
        proxy: { max: 1e9, windowMs: 60_000 },
      }),
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
    }
    const app = createApp(services)
    const site = sites[0]
    const filters = JSON.stringify([
      { dimension: 'country', operator: 'is', value: ['US', 'DE'] },
      { dimension: 'path', operator: 'contains', value: ['blog'] },
    ])
    const range = resolveRange({ range: '30d' }, site.timezone, now)
    const base: Query = { siteId: site.id, range, filters: [], goals: [], limit: 100, now }
    // what the API runs: the read's plan (the rolled-days lookup where it may use the rollup), then its statement
    // (a copy of the range per run: the API resolves its range per request, so it looks the rolled days up every time)
    const run = (query: Query, read: Read) => async () => runRead(stores.clickhouse, { ...query, range: { ...query.range } }, read)
    const filtered = { ...base, filters: parseFilters(filters, 'standalone') }
    // kept data keeps its funnel
    const funnel =
      (await stores.repositories.funnels.list(site.id)).find((f) => f.name === 'Docs to signup') ??
      (await createFunnel(
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
      ))
    // what the vitals and funnels reads run: their statements at once, as the verbs do
    const statements = (fragments: ReturnType<typeof render>[]) => async () =>
      Promise.all(fragments.map((c) => stores.clickhouse.query(c.sql, c.params)))
    const vitalsOptions = { percentile: '75' as const }
    const vitalsStatements = [render(vitalsSql(base, vitalsOptions))]
    const contributorStatements = [render(contributorsSql(base, vitalsOptions))]
    // the behaviour reads compile one statement each
    const direct = (statement: () => Fragment) => async () => {
      const compiled = render(statement())
      return stores.clickhouse.query(compiled.sql, compiled.params)
    }
    const lastHalfHour = () => ({ ...base, range: resolveRange({ range: '30m' }, site.timezone, now) })
    const reports: Record<string, { path: string; body?: unknown; direct: () => Promise<unknown> }> = {
      stats: { path: `/api/v1/stats?site_id=${site.id}&range=30d`, direct: run(base, { kind: 'stats' }) },
      timeseries: { path: `/api/v1/timeseries?site_id=${site.id}&range=30d`, direct: run(base, { kind: 'series' }) },
      'breakdown path': {
        path: `/api/v1/breakdown?site_id=${site.id}&range=30d&property=path`,
        direct: run(base, { kind: 'breakdown', property: 'path' }),
      },
      'breakdown source': {
        path: `/api/v1/breakdown?site_id=${site.id}&range=30d&property=source`,
        direct: run(base, { kind: 'breakdown', property: 'source' }),
      },
      'filtered stats': {
        path: `/api/v1/stats?site_id=${site.id}&range=30d&filters=${encodeURIComponent(filters)}`,
        direct: run(filtered, { kind: 'stats' }),
      },
      'filtered timeseries': {
        path: `/api/v1/timeseries?site_id=${site.id}&range=30d&filters=${encodeURIComponent(filters)}`,
        direct: run(filtered, { kind: 'series' }),
      },
      'filtered breakdown path': {
        path: `/api/v1/breakdown?site_id=${site.id}&range=30d&property=path&filters=${encodeURIComponent(filters)}`,
        direct: run(filtered, { kind: 'breakdown', property: 'path' }),
      },
      'filtered breakdown source': {
        path: `/api/v1/breakdown?site_id=${site.id}&range=30d&property=source&filters=${encodeURIComponent(filters)}`,
        direct: run(filtered, { kind: 'breakdown', property: 'source' }),
      },
      vitals: { path: `/api/v1/vitals?site_id=${site.id}&range=30d`, direct: statements(vitalsStatements) },
      'vitals attribution': {
        path: `/api/v1/vitals?site_id=${site.id}&range=30d&attribution=1`,
        direct: statements([...vitalsStatements, ...contributorStatements]),
      },
      funnels: { path: `/api/v1/funnels?site_id=${site.id}&range=30d`, direct: statements([render(funnelLevelsSql(base, funnel.steps))]) },
      flow: {
        path: `/api/v1/flow?site_id=${site.id}&range=30d`,
        direct: direct(() => flowSql({ ...base, limit: FLOW_DEFAULT_LIMIT }, { kind: 'entry' }, 0, FLOW_DEFAULT_DEPTH)),
      },
      'flow start_path': {
        path: `/api/v1/flow?site_id=${site.id}&range=30d&start_path=${encodeURIComponent('/pricing/7')}`,
        direct: direct(() => flowSql({ ...base, limit: FLOW_DEFAULT_LIMIT }, { kind: 'start', path: '/pricing/7' }, 0, FLOW_DEFAULT_DEPTH)),
      },
      'flow focus_path': {
        path: `/api/v1/flow?site_id=${site.id}&range=30d&focus_path=${encodeURIComponent('/pricing/7')}`,
        direct: direct(() =>
          flowSql({ ...base, limit: FLOW_DEFAULT_LIMIT }, { kind: 'focus', path: '/pricing/7' }, FLOW_DEFAULT_DEPTH, FLOW_DEFAULT_DEPTH),
        ),
      },
      'flow filtered': {
        path: `/api/v1/flow?site_id=${site.id}&range=30d&filters=${encodeURIComponent(filters)}`,
        direct: direct(() => flowSql({ ...filtered, limit: FLOW_DEFAULT_LIMIT }, { kind: 'entry' }, 0, FLOW_DEFAULT_DEPTH)),
      },
      errors: {
        path: `/api/v1/errors?site_id=${site.id}&range=30d`,
        direct: statements([
          render(errorSummarySql(base)),
          render(errorSummarySql({ ...base, range: previousWindow(base.range) })),
          render(errorGroupsSql(base)),
        ]),
      },
      clicks: {
        path: `/api/v1/clicks?site_id=${site.id}&range=30d`,
        direct: statements([render(clickSummarySql(base)), render(clickGroupsSql(base))]),
      },
      properties: { path: `/api/v1/properties?site_id=${site.id}&range=30d`, direct: statements([render(propertyKeyCountsSql(base))]) },
      'geo city': {
        path: `/api/v1/geo?site_id=${site.id}&range=30d&granularity=city`,
        // as the read does: the rolled days, then the places of the others from events
        direct: async () => {
          const days = await rolledDays(stores.clickhouse, base, false)
          const compiled = render(
            geoPlacesSql(base, 'city', days.days.length ? { days, spans: rawDaySpans(base.range, days.days) } : undefined),
          )
          return stores.clickhouse.query(compiled.sql, compiled.params)
        },
      },
      journeys: { path: `/api/v1/journeys?site_id=${site.id}&range=30d`, direct: direct(() => journeysSql(base, { offset: 0 })) },
      activity: { path: `/api/v1/activity?site_id=${site.id}`, direct: direct(() => activitySql(lastHalfHour())) },
      // the site listing: each site's totals, the previous window's and a sparkline, and when each last had an event
      sites: { path: '/api/v1/sites', direct: async () => siteStats(services, await stores.repositories.sites.list(org.id), '7d') },
      // the realtime view runs its five reads: direct is its verb, without HTTP
      realtime: {
        path: `/api/v1/realtime?site_id=${site.id}`,
        direct: () => realtime(services, site, reportParams.parse({ site_id: site.id })),
      },
      // the why-traffic-changed reads run several statements and shape in between: direct is their verb, without HTTP
      markers: { path: `/api/v1/markers?site_id=${site.id}&range=30d`, direct: () => markers(services, site, { range: '30d' }) },
      anomalies: {
        path: `/api/v1/anomalies?site_id=${site.id}`,
        direct: () => anomalies(services, site, reportParams.parse({ site_id: site.id, range: '7d' })),
      },
      spikes: { path: `/api/v1/spikes?site_id=${site.id}&range=30d`, direct: () => spikes(services, site, { range: '30d' }) },
      decay: { path: `/api/v1/decay?site_id=${site.id}`, direct: () => decay(services, site, {}) },
      launches: { path: `/api/v1/pages/launches?site_id=${site.id}&range=30d`, direct: () => launches(services, site, { range: '30d' }) },
      'anomalies vitals': {
        path: `/api/v1/anomalies?site_id=${site.id}&vitals=1`,
        direct: () => anomalies(services, site, { ...reportParams.parse({ site_id: site.id, range: '7d' }), vitals: '1' }),
      },
      'page detail': {
        path: `/api/v1/pages/detail?site_id=${site.id}&path=/docs/7&range=30d`,
        direct: () => pageDetail(services, site, { range: '30d', path: '/docs/7' }),
      },
      // Plausible's Stats API v2: the same questions as stats, timeseries and the breakdowns above
      'v2 query aggregate': {
        path: '/api/v2/query',
        body: { site_id: site.domain, metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'], date_range: '30d' },
        direct: run(base, { kind: 'stats' }),
      },
      'v2 query time:day': {
        path: '/api/v2/query',
        body: { site_id: site.domain, metrics: ['visitors', 'visits', 'pageviews'], date_range: '30d', dimensions: ['time:day'] },
        direct: run(base, { kind: 'series' }),
      },
      'v2 query source': {
        path: '/api/v2/query',
        body: {
          site_id: site.domain,
          metrics: ['visitors', 'visits', 'pageviews', 'bounce_rate', 'visit_duration'],
          date_range: '30d',
          dimensions: ['visit:source'],
          pagination: { limit: 100 },
        },
        direct: run(base, { kind: 'breakdown', property: 'source' }),
      },
      'v2 query path': {
        path: '/api/v2/query',
        body: {
          site_id: site.domain,
          metrics: ['visitors', 'visits', 'pageviews'],
          date_range: '30d',
          dimensions: ['event:page'],
          pagination: { limit: 100 },
        },
        direct: run(base, { kind: 'breakdown', property: 'path' }),
      },
      'v2 query filtered path': {
        path: '/api/v2/query',
        body: {
          site_id: site.domain,
          metrics: ['visitors', 'visits', 'pageviews'],
          date_range: '30d',
          dimensions: ['event:page'],
          filters: [
            ['is', 'visit:country', ['US', 'DE']],
            ['contains', 'event:page', ['blog'], { case_sensitive: false }],
          ],
          pagination: { limit: 100 },
        },
        direct: run(filtered, { kind: 'breakdown', property: 'path' }),
      },
    }
    const call = (report: { path: string; body?: unknown }) =>
      app.request(`http://bench${report.path}`, {
        method: report.body ? 'POST' : 'GET',
        headers: { authorization: `Bearer ${key}`, ...(report.body ? { 'content-type': 'application/json' } : {}) },
        body: report.body ? JSON.stringify(report.body) : undefined,
      })
    const only = opts.only?.split(',').map((name) => name.trim())
    if (only) for (const name of Object.keys(reports)) if (!only.some((prefix) => name.startsWith(prefix))) delete reports[name]
    // the first read of each report on its own: a filtered read rolls its finished days up then
    const firstApiMs: Record<string, number> = {}
    for (const [name, report] of Object.entries(reports)) {
      const t = performance.now()
      const res = await call(report)
      await res.arrayBuffer()
      firstApiMs[name] = +(performance.now() - t).toFixed(1)
    }
    // round robin over the reports, so a slow spell of the machine falls on all of them alike
    const samples = Object.fromEntries(Object.keys(reports).map((name) => [name, { api: [] as number[], engine: [] as number[] }]))
    for (let i = 0; i < Number(opts.runs) + 2; i++) {
      for (const [name, report] of Object.entries(reports)) {
        let t = performance.now()
        const res = await call(report)
        if (res.status !== 200) throw new Error(`${name}: ${res.status} ${await res.text()}`)
        await res.arrayBuffer()
        const apiMs = performance.now() - t
        t = performance.now()
        await report.direct()
        const engineMs = performance.now() - t
        if (i >= 2) {
          samples[name].api.push(apiMs)
          samples[name].engine.push(engineMs)
        }
      }
    }
    const quartiles = (xs: number[]) =>
      [...xs]
        .sort((a, b) => a - b)
        .filter((_, i, all) => i === all.length >> 2 || i === (3 * all.length) >> 2)
        .map((x) => +x.toFixed(1))
    const results = Object.fromEntries(
      Object.entries(samples).map(([name, { api, engine }]) => [
        name,
        {
          firstApiMs: firstApiMs[name],
          apiMedianMs: +median(api).toFixed(1),
          apiQuartilesMs: quartiles(api),
          engineMedianMs: +median(engine).toFixed(1),
          ratio: +(median(api) / median(engine)).toFixed(2),
        },
      ]),
    )
    const [counts] = await stores.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events')
    // the machine is shared: its load (1, 5 and 15 minutes) when the runs ended says how noisy they were
    process.stdout.write(
      `${JSON.stringify({ clock: Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).toString(), loadAverage: loadavg().map((x) => +x.toFixed(2)), events: Number(counts.n), loadSeconds: { others: +loadOthers.toFixed(1), main: +loadMain.toFixed(1) }, rollup: { days: rolledUpDays, seconds: +rollupSeconds.toFixed(1) }, mergesSettledSeconds: +settleSeconds.toFixed(1), parts, runs: Number(opts.runs), results }, null, 2)}\n`,
    )
    await stores.close()
    if (!opts.dataDir) rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
/** The instant of today's HH:MM in Europe/Berlin, the measured site's timezone; the real clock without one. */
function clockAt(at: string | undefined): Date {
  if (!at) return new Date()
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(at)
  if (!match) throw new Error(`--at: expected HH:MM, got ${at}`)
  const today = Temporal.Now.zonedDateTimeISO('Europe/Berlin').startOfDay()
  return new Date(today.with({ hour: Number(match[1]), minute: Number(match[2]) }).epochMilliseconds)
}

await program.parseAsync(process.argv)
