import { mkdtempSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { createOrg } from '../lib/accounts/admin'
import { openNodeStores } from '../lib/runtime/node'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'
import { clickhouseTime } from '../lib/storage/clickhouse/time'
import { type ReportDeps, breakdown, series, totals } from '../lib/reports/query/reports'
import type { ReportParams } from '../lib/reports/query/parse'
import { type Site, newSite } from '../lib/sites/sites'
import type { ClickHouse, QueryParams } from '../lib/storage/clickhouse/types'

/**
 * Exact against sampled reads on the embedded engine: one site with N events over 30 days
 * (generated in the engine, an INSERT ... SELECT standing in for the import path; visitor ids are
 * hashes, as the collector's are), no day rolled up, so the reads below take raw events, the reads
 * sampling serves. Each read runs exact and sampled in turn (the site's samplingThreshold unset,
 * then set), `--runs` times; the medians of both, the rows the engine selects to read for each (EXPLAIN ESTIMATE of the statements the read ran,
 * which the load does not change), the answer's stated margin of error and the error
 * observed against the exact answer (of the figure the margin is stated for: the totals, the
 * exact answer's busiest bucket, its top row), with the load average.
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

interface Options {
  events: string
  threshold: string
  runs: string
  dataDir?: string
}

type Answer = Record<string, any>
interface Read {
  name: string
  /** Days of the window: the sampled runs' threshold is the option's over 30 days, times these, so each read samples alike. */
  days: number
  run: (site: Site) => Promise<Answer>
  /** The figure the answer's margin is stated for, found in the sampled answer by the exact answer's key. */
  figure: (exact: Answer, sampled: Answer) => [number, number]
}

const program = new Command('bench-sampling')
  .option('--events <n>', 'events of the measured site, over 30 days', '10000000')
  .option('--threshold <n>', "the site's samplingThreshold for the sampled runs", '1000000')
  .option('--runs <n>', 'runs of each read, exact and sampled in turn', '7')
  .option('--data-dir <dir>', 'keep the generated data in this folder; a later run with the same folder measures it again')
  .action(async (opts: Options) => {
    const dir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'bench-sampling-'))
    const stores = await openNodeStores({ DATA_DIR: dir })
    await migrate(stores.clickhouse, loadMigrations())
    const now = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 + 12 * 3_600_000)
    const kept = (await stores.repositories.orgs.list()).find((o) => o.name === 'Sampling bench')
    const org = kept ?? (await createOrg(stores.repositories, 'Sampling bench', now))
    let [site] = kept ? await stores.repositories.sites.list(org.id) : []
    let loadSeconds = 0
    if (!site) {
      site = newSite({ domain: 'sampled.bench.test', timezone: 'UTC' }, org.id, now)
      await stores.repositories.sites.create(site)
      const started = performance.now()
      // four events a visit, a minute apart, a visitor a day with one to three visits
      await stores.clickhouse.command(
        `INSERT INTO events (site_id, timestamp, name, kind, visitor_id, session_id, session_start, hostname, pathname, referrer_source, channel, country_code, device, browser, os, props)
         SELECT toUUID({site:String}), session_start + toIntervalSecond(60 * (number % 4)), name, name, visitor, cityHash64(visit, 'visit'), session_start, 'bench.test',
                concat('/', ['blog', 'docs', 'pricing', 'about', 'changelog'][1 + (number % 5)], '/', toString(cityHash64(number) % 50)),
                ['', 'Google', 'Bing', 'Hacker News', 'Twitter', 'ChatGPT'][1 + (visitor % 6)],
                ['Direct', 'Organic Search', 'Organic Search', 'Organic Social', 'Organic Social', 'AI assistants'][1 + (visitor % 6)],
                ['US', 'DE', 'GB', 'FR', 'IN', 'BR', 'JP'][1 + (visitor % 7)],
                ['Desktop', 'Mobile', 'Tablet'][1 + (visitor % 3)], ['Chrome', 'Safari', 'Firefox', 'Edge'][1 + (visitor % 4)], ['Windows', 'iOS', 'macOS', 'Android'][1 + (visitor % 4)],
                if(name = 'custom', map('plan', ['free', 'pro', 'team'][1 + (number % 3)]), map())
         FROM (
           SELECT number, intDiv(number, 4) AS visit,
                  toDateTime64({now:DateTime64(3)} - toIntervalSecond(600 + cityHash64(visit, 1) % (30 * 86400 - 1200)), 3, 'UTC') AS start0,
                  if(toDate(start0) != toDate(start0 + toIntervalSecond(240)), start0 - toIntervalSecond(240), start0) AS session_start,
                  cityHash64(intDiv(visit, 1 + visit % 3), toDate(session_start)) AS visitor,
                  if(number % 4 = 3 AND cityHash64(number, 2) % 5 = 0, 'custom', 'pageview') AS name
           FROM numbers({count:UInt64})
         )`,
        { site: site.id, count: Number(opts.events), now: clickhouseTime(now) },
      )
      loadSeconds = (performance.now() - started) / 1000
    }
    const params = (p: Partial<ReportParams> & { property?: string }) =>
      ({ site_id: site.id, range: '30d', limit: 100, ...p }) as ReportParams & { property: string }
    const rowOf = (answer: Answer, value: string) => answer.results.find((r: Answer) => r.value === value)?.visitors ?? 0
    const bucketOf = (answer: Answer, t: string) => answer.series.find((b: Answer) => b.timestamp === t)?.visitors ?? 0
    const busiest = (answer: Answer) => answer.series.reduce((a: Answer, b: Answer) => (b.visitors > a.visitors ? b : a))
    const breakdownRead = (property: string): Read => ({
      name: `breakdown 30d ${property}`,
      days: 30,
      run: (s) => breakdown(deps, s, params({ property, limit: 1000 })),
      figure: (exact, sampled) => [rowOf(exact, exact.results[0].value), rowOf(sampled, exact.results[0].value)],
    })
    const reads: Read[] = [
      {
        // a filtered read of whole finished days takes their filtered rollup: today's is read from events
        name: 'stats today, filter path contains /docs/1',
        days: 1,
        run: (s) =>
          totals(
            deps,
            s,
            params({ range: 'today', filters: JSON.stringify([{ dimension: 'path', operator: 'contains', value: ['/docs/1'] }]) }),
          ),
        figure: (exact, sampled) => [exact.totals.visitors, sampled.totals.visitors],
      },
      {
        name: 'timeseries 30d (day buckets)',
        days: 30,
        run: (s) => series(deps, s, params({})),
        figure: (exact, sampled) => [busiest(exact).visitors, bucketOf(sampled, busiest(exact).timestamp)],
      },
      breakdownRead('path'),
      breakdownRead('entry_page'),
      breakdownRead('prop:plan'),
    ]
    // the rows the engine selects to read for each statement, from its primary index (EXPLAIN
    // ESTIMATE, granules of 8192 rows: what a read costs, whatever the load)
    let statements: { text: string; bound: QueryParams }[] = []
    const counting: ClickHouse = Object.assign(Object.create(stores.clickhouse), {
      query<Row>(text: string, bound: QueryParams = {}): Promise<Row[]> {
        statements.push({ text, bound })
        return stores.clickhouse.query<Row>(text, bound)
      },
    })
    const rowsToRead = async () => {
      let rows = 0
      for (const { text, bound } of statements) {
        const estimate = await stores.clickhouse.query<{ rows: string }>(`EXPLAIN ESTIMATE ${text}`, bound)
        rows += estimate.reduce((n, r) => n + Number(r.rows), 0)
      }
      return rows
    }
    const deps: ReportDeps = { clickhouse: counting, repositories: stores.repositories, now: () => now }
    const sampledSite = (days: number) => ({
      ...site,
      tracking: { ...site.tracking, samplingThreshold: Math.max(1000, Math.round((Number(opts.threshold) * days) / 30)) },
    })
    const exactSite = { ...site, tracking: { ...site.tracking, samplingThreshold: null } }
    const results = []
    for (const read of reads) {
      const times = { exact: [] as number[], sampled: [] as number[] }
      const rows = { exact: 0, sampled: 0 }
      let answers: { exact?: Answer; sampled?: Answer } = {}
      for (let i = 0; i < Number(opts.runs); i++) {
        for (const kind of ['exact', 'sampled'] as const) {
          statements = []
          const started = performance.now()
          const answer = await read.run(kind === 'exact' ? exactSite : sampledSite(read.days))
          times[kind].push(performance.now() - started)
          answers = { ...answers, [kind]: answer }
          if (i === 0) rows[kind] = await rowsToRead()
        }
      }
      const [truth, estimate] = read.figure(answers.exact!, answers.sampled!)
      const n = answers.sampled!.sampling ? Math.round(1 / answers.sampled!.sampling.fraction) : 0
      results.push({
        read: read.name,
        exactMs: Math.round(median(times.exact)),
        sampledMs: Math.round(median(times.sampled)),
        exactRowsToRead: rows.exact,
        sampledRowsToRead: rows.sampled,
        sampling: answers.sampled!.sampling ?? null,
        figure: {
          exact: truth,
          sampled: estimate,
          observedRelativeError: truth ? Math.round((Math.abs(estimate - truth) / truth) * 1e4) / 1e4 : null,
          // the margin the answer states for a figure of this size (the answer's own is its largest figure's)
          statedRelativeError: n && estimate ? Math.round(1.96 * Math.sqrt((n - 1) / estimate) * 1e4) / 1e4 : null,
        },
        loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
      })
      console.error(JSON.stringify(results[results.length - 1]))
    }
    console.log(
      JSON.stringify(
        {
          events: Number(opts.events),
          threshold: Number(opts.threshold),
          runs: Number(opts.runs),
          loadSeconds: Math.round(loadSeconds),
          dataDir: dir,
          results,
        },
        null,
        2,
      ),
    )
    await stores.close?.()
  })

await program.parseAsync(process.argv)
