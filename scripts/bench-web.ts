import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { Command } from 'commander'
import { benchServices } from './bench-services'
import { createApp } from '../functions/app'
import { createApiKey } from '../lib/accounts/admin'
import { mintSignInLink } from '../lib/accounts/signin'
import { openNodeStores } from '../lib/runtime/node'
import { migrate } from '../lib/storage/clickhouse/migrate'
import { loadMigrations } from '../lib/storage/clickhouse/migrations-node'

/**
 * The dashboard page's latency on the embedded home, for a site of 1M events over 30 days (the
 * data of scripts/bench-reports.ts: it generates them into --data-dir when the folder has none,
 * and its fixed clock is this run's clock too). Medians over N requests of the signed-in page
 * (its reads, the session and the membership), of each panel it loads after, and of the page and
 * all its panels together as a browser asks for them (the panels at once); and the size of the
 * page's script, gzipped; for each range of --range (by default 30d, and today, whose totals are
 * compared with yesterday up to the same time of day, a window the rollups do not hold). The
 * machine is shared: every figure is an upper bound. Each request runs after a write to the
 * engine, as on a site taking hits, so none is answered from a read of an earlier one. With
 * --trace, the statements of one page with its panels are listed with their times, then each
 * read again alone.
 */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

const program = new Command('bench-web')
  .option('--data-dir <dir>', 'the data of scripts/bench-reports.ts (generated there when absent)')
  .option('--main <n>', 'events of the measured site, when generating', '1000000')
  .option('--others <n>', 'events of the nine other sites, when generating', '9000000')
  .option('--runs <n>', 'requests of each', '20')
  .option('--range <names>', 'the ranges the dashboard shows, comma-separated, each measured in turn', '30d,today')
  .option('--trace', 'also list the statements of one page with every panel, each with its time, on standard error')
  .action(async (opts: { dataDir?: string; main: string; others: string; runs: string; range: string; trace?: boolean }) => {
    const dir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'bench-web-'))
    if (!existsSync(join(dir, 'bench-clock.json'))) {
      const generated = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          fileURLToPath(new URL('bench-reports.ts', import.meta.url)),
          '--data-dir',
          dir,
          '--main',
          opts.main,
          '--others',
          opts.others,
          '--runs',
          '1',
          '--only',
          'stats',
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      )
      if (generated.status !== 0) throw new Error('generating the data failed')
    }
    const now = new Date(JSON.parse(readFileSync(join(dir, 'bench-clock.json'), 'utf8')).now)
    const stores = await openNodeStores({ DATA_DIR: dir })
    await migrate(stores.clickhouse, loadMigrations())
    const org = (await stores.repositories.orgs.list()).find((o) => o.name === 'Bench')
    if (!org) throw new Error(`no Bench organization in ${dir}: not the data of scripts/bench-reports.ts`)
    const site = (await stores.repositories.sites.list(org.id)).sort((a, b) => a.domain.localeCompare(b.domain))[0]
    const email = 'owner@bench.test'
    if (!(await stores.repositories.team.membershipsOf([org.id], email)).length)
      await stores.repositories.team.addMember(org.id, { id: crypto.randomUUID(), email, role: 'owner', joinedAt: now.toISOString() })

    // --trace: every statement while `tracing` is set, with when it was asked and how long it took
    let tracing: { at: number; ms: number; sql: string; args: unknown[]; read: boolean }[] | null = null
    const engine = stores.clickhouse
    const traced =
      <A extends unknown[], R>(run: (...args: A) => Promise<R>, read = false) =>
      async (...args: A): Promise<R> => {
        const started = performance.now()
        try {
          return await run(...args)
        } finally {
          const sql = String(args[0]).replace(/\s+/g, ' ').slice(0, 150)
          tracing?.push({ at: started, ms: performance.now() - started, sql, args, read })
        }
      }
    const clickhouse = opts.trace
      ? (Object.assign(Object.create(engine), {
          query: traced(engine.query.bind(engine), true),
          command: traced(engine.command.bind(engine)),
          insert: traced(engine.insert.bind(engine)),
        }) as typeof engine)
      : engine
    const services = benchServices({ ...stores, clickhouse }, () => now)
    const app = createApp(services)
    const origin = 'http://bench.test'
    // sign in as a person does: the link, then its one click
    const token = new URL(await mintSignInLink(stores.repositories, email, origin, now)).searchParams.get('token')!
    const signedIn = await app.request(`${origin}/app/signin/link`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams({ token }).toString(),
    })
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]
    if (signedIn.status !== 303 || !cookie) throw new Error(`signing in failed: ${signedIn.status}`)

    const get = async (path: string) => {
      const answer = await app.request(`${origin}${path}`, { headers: { cookie } })
      const text = await answer.text()
      if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${text.slice(0, 300)}`)
      return text
    }
    // each run after a write, as on a site taking hits: no read answers from one of an earlier run (ReadOptions.reuseMs)
    const written = () => engine.command('SELECT 1')
    const timed = async (run: () => Promise<unknown>) => {
      const times: number[] = []
      await run()
      for (let i = 0; i < Number(opts.runs); i++) {
        await written()
        const started = performance.now()
        await run()
        times.push(performance.now() - started)
      }
      return { medianMs: Math.round(median(times) * 10) / 10, minMs: Math.round(Math.min(...times) * 10) / 10 }
    }
    const key = (await createApiKey(stores.repositories, { orgId: org.id, name: 'bench-web', scope: 'read' }, now)).key

    /** The page, its reads one by one, each panel, and the page with every panel, for one range of the dashboard. */
    const measure = async (rangeName: string) => {
      const page = `/app/sites/${site.id}?range=${rangeName}`
      const html = await get(page)
      const panels = [...html.matchAll(/data-defer="([^"]+\/panels\/[^"]+)"/g)].map((m) =>
        m[1].replace(/&amp;/g, '&').replace(/&quot;/g, '"'),
      )
      const script = [...html.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]).join('\n')
      const results: Record<string, unknown> = { page: await timed(() => get(page)) }
      // the page's reads one by one, as the API answers them (the totals with their previous period, as the page asks)
      const range = `site_id=${site.id}&range=${rangeName}`
      for (const read of [
        `stats?${range}${rangeName === 'all' || rangeName === 'realtime' ? '' : '&compare=previous_period'}`,
        `timeseries?${range}`,
        `stats?site_id=${site.id}&range=realtime`,
        `markers?${range}`,
        `spikes?${range}&interval=day&limit=20`,
        `segments?site_id=${site.id}`,
      ]) {
        results[`read ${read.split('?')[0]}${read.includes('realtime') ? ' (realtime)' : ''}`] = await timed(async () => {
          const answer = await app.request(`${origin}/api/v1/${read}`, { headers: { authorization: `Bearer ${key}` } })
          if (answer.status !== 200) throw new Error(`${read}: ${answer.status} ${await answer.text()}`)
          await answer.arrayBuffer()
        })
      }
      for (const src of panels) results[`panel ${/\/panels\/(\w+)/.exec(src)![1]}`] = await timed(() => get(src))
      const whole = await timed(async () => {
        await get(page)
        await Promise.all(panels.map(get))
      })
      results['page and every panel, the panels at once'] = whole
      if (opts.trace) {
        await written()
        tracing = []
        const started = performance.now()
        await get(page)
        await Promise.all(panels.map(get))
        const total = performance.now() - started
        console.error(`\n${rangeName}: ${tracing.length} statements, ${Math.round(total)} ms in all`)
        for (const t of tracing)
          console.error(`${String(Math.round(t.at - started)).padStart(5)} +${t.ms.toFixed(1).padStart(6)} ms  ${t.sql}`)
        // each read again, alone: what it costs the engine without the others beside it
        const reads = tracing.filter((t) => t.read)
        tracing = null
        const alone: { ms: number; sql: string }[] = []
        for (const t of reads) {
          const times: number[] = []
          for (let i = 0; i < 3; i++) {
            const at = performance.now()
            await engine.query(t.args[0] as string, t.args[1] as Record<string, unknown>)
            times.push(performance.now() - at)
          }
          alone.push({ ms: median(times), sql: t.sql })
        }
        const sum = alone.reduce((n, a) => n + a.ms, 0)
        console.error(`${rangeName}: the same ${alone.length} reads one at a time, medians of 3: ${Math.round(sum)} ms together`)
        for (const a of alone.sort((x, y) => y.ms - x.ms)) console.error(`${a.ms.toFixed(1).padStart(7)} ms  ${a.sql}`)
      }
      return {
        pageBytes: html.length,
        scriptBytes: script.length,
        scriptGzipBytes: gzipSync(script).length,
        pageGzipBytes: gzipSync(html).length,
        pageWithPanelsMedianMs: whole.medianMs,
        results,
      }
    }
    const byRange: Record<string, Awaited<ReturnType<typeof measure>>> = {}
    for (const rangeName of opts.range.split(',')) byRange[rangeName] = await measure(rangeName)
    console.log(
      JSON.stringify(
        {
          clock: now.toISOString(),
          site: site.domain,
          runs: Number(opts.runs),
          loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
          // the budget for the page with its panels
          targetMs: 300,
          ranges: byRange,
        },
        null,
        2,
      ),
    )
    await stores.close?.()
    process.exit(0)
  })

await program.parseAsync()
