import { spawnSync } from 'node:child_process'
import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { FileQuarantine } from '../../lib/ingest/quarantine-node'
import { EmbeddedClickHouse } from '../../lib/storage/clickhouse/chdb'
import { tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

/*
 * Every ingest path fed hostile input, on a real server process: our tracker's payload and
 * Plausible's on /api/event, /api/v1/collect, and the raw-hit import. Each hit carries its own
 * path, so what became of it can be told: a hit answered as kept is stored exactly once or is in
 * the quarantine, a refused one is stored nowhere, and a normal hit sent after each hostile one
 * is stored. The server is then killed with hostile lines added to its journal, and restarts
 * ready, storing what the journal holds and setting the lines aside.
 */

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31)
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'
const GPTBOT = 'Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)'

/** Any UTF-16 code units, lone surrogates and control characters included. */
const anyUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 30 })
const nested = (depth: number): unknown => (depth ? { a: nested(depth - 1) } : 'deep')
const hostileText = fc.oneof(
  { weight: 4, arbitrary: anyUnits },
  {
    weight: 3,
    arbitrary: fc.constantFrom('\ud800', 'x\udc00y', '\udbff', '\u0000', 'a\u0007\u001b[31mb', '\u2028\u2029', '\ufeff', '\ud83d\ude00'),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  // past every field's length: refused
  { weight: 1, arbitrary: fc.constant('x'.repeat(5000)) },
)
const hostileValue = fc.oneof(
  { weight: 12, arbitrary: hostileText },
  fc.integer(),
  fc.constant(null),
  fc.constant(nested(60)),
  fc.array(fc.integer(), { maxLength: 3 }),
)

type Path = 'own' | 'plausible' | 'collect'
const hostileHit = fc.record({
  path: fc.constantFrom<Path>('own', 'plausible', 'collect'),
  name: fc.oneof(fc.constant('pageview'), hostileText),
  referrer: fc.option(hostileValue, { nil: undefined }),
  propKey: fc.option(hostileText, { nil: undefined }),
  propValue: hostileValue,
  error: fc.option(hostileValue, { nil: undefined }),
})
type HostileHit = typeof hostileHit extends fc.Arbitrary<infer T> ? T : never

describe('no hostile input stops collection', () => {
  const env = {
    DATA_DIR: tempDir('hostile'),
    REDIS_URL: '',
    UPSTASH_REDIS_REST_URL: '',
    CLICKHOUSE_URL: '',
    SKIP_DEMO_TRAFFIC: '1',
    DEMO_LIVE_TRAFFIC: '0',
  }
  let server: RunningServer | undefined
  afterAll(async () => {
    await server?.stop('SIGKILL')
  })

  it(`every hit answered as kept is stored once or quarantined, every later hit is stored, and a restart is ready (seed ${SEED})`, async () => {
    server = await startServer(env)
    const { readKey, writeKey } = demoKeys(server.output())
    const site = (await (await fetch(`${server.url}/api/v1/sites`, { headers: { authorization: `Bearer ${readKey}` } })).json())
      .sites[0] as {
      id: string
      snippetId: string
      domain: string
    }
    const url = (path: string) => `https://${site.domain}${path}`
    /** path -> whether the answer said it is kept */
    const kept = new Map<string, boolean>()
    const answers: string[] = []

    const post = async (path: string, body: unknown, init: { key?: string } = {}) =>
      fetch(`${server!.url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': init.key ? 'application/json' : 'text/plain',
          'user-agent': FIREFOX,
          ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
        },
        body: JSON.stringify(body),
      })

    const send = async (hit: HostileHit, i: number) => {
      const marker = `/p${hit.path[0]}/${i}`
      let res: Response
      if (hit.path === 'collect') {
        const event: Record<string, unknown> = { path: marker, userAgent: `${GPTBOT} ${typeof hit.name === 'string' ? hit.name : ''}` }
        if (hit.referrer !== undefined) event.referrer = hit.referrer
        res = await post('/api/v1/collect', { site_id: site.snippetId, events: [event] }, { key: writeKey })
        const answer = res.status === 200 ? await res.json() : null
        kept.set(marker, answer?.ingested === 1)
        answers.push(`${marker} ${res.status} ${JSON.stringify(answer)}`)
        expect([200, 400]).toContain(res.status)
        return
      }
      const props = hit.propKey === undefined ? undefined : { [hit.propKey]: hit.propValue }
      const isError = hit.error !== undefined
      const body =
        hit.path === 'own'
          ? {
              site: site.snippetId,
              name: isError ? 'error' : hit.name,
              url: url(marker),
              ...(hit.referrer !== undefined ? { referrer: hit.referrer } : {}),
              ...(props ? { props } : {}),
              ...(isError ? { error: { message: hit.error } } : {}),
            }
          : {
              n: hit.name,
              u: url(marker),
              d: site.domain,
              ...(hit.referrer !== undefined ? { r: hit.referrer } : {}),
              ...(props ? { p: props } : {}),
            }
      res = await post('/api/event', body)
      answers.push(`${marker} ${res.status} ${res.headers.get('x-dropped') ?? ''}`)
      expect([202, 400]).toContain(res.status)
      if (res.status === 400) expect((await res.json()).error).toEqual(expect.any(String))
      kept.set(marker, res.status === 202 && !res.headers.get('x-dropped'))
    }

    const hostile = fc.sample(hostileHit, { numRuns: 150, seed: SEED })
    for (const [i, hit] of hostile.entries()) {
      await send(hit, i)
      // a normal hit after each hostile one, on its own path: always kept
      const normal = await post('/api/event', { site: site.snippetId, name: 'pageview', url: url(`/pn/${i}`) })
      expect(normal.status).toBe(202)
    }

    // the import: hostile lines beside normal ones, in time order
    const at = (i: number) => new Date(Date.now() - 2 * 3600_000 + i * 1000).toISOString()
    const importLines = fc.sample(hostileHit, { numRuns: 60, seed: SEED + 1 }).map((hit, i) => {
      const line: Record<string, unknown> = {
        timestamp: at(i),
        site: site.snippetId,
        name: hit.error !== undefined ? 'error' : hit.name,
        url: url(`/pi/${i}`),
        ip: '203.0.113.9',
        userAgent: FIREFOX,
      }
      if (hit.referrer !== undefined) line.referrer = hit.referrer
      if (hit.propKey !== undefined) line.props = { [hit.propKey]: hit.propValue }
      if (hit.error !== undefined) line.error = { message: hit.error }
      return JSON.stringify(line)
    })
    const file = join(env.DATA_DIR, 'hostile.ndjson')
    writeFileSync(file, `${importLines.join('\n')}\n`)
    const imported = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/import.ts', '--file', file], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
      timeout: 120_000,
    })
    expect(imported.status, imported.stderr).toBe(0)
    const refusedLines = new Set([...imported.stderr.matchAll(/^line (\d+): /gm)].map((m) => Number(m[1])))
    importLines.forEach((_, i) => kept.set(`/pi/${i}`, !refusedLines.has(i + 1)))
    const { imported: importedCount } = JSON.parse(imported.stdout.trim().split('\n').at(-1)!)
    expect(importedCount).toBe(importLines.length - refusedLines.size)

    // healthy while it runs: nothing waits long, nothing is stuck
    // a kept-alive connection the server closed while the CLI ran is opened again
    const healthUrl = `${server.url}/health`
    const health = await (await fetch(healthUrl).catch(() => fetch(healthUrl))).json()
    expect(health.collector).toMatchObject({ status: 'ok' })

    // killed with hits in the journal, and hostile lines added to it
    expect(await server.stop('SIGKILL')).toBeNull()
    const journal = join(env.DATA_DIR, 'journal')
    const segments = readdirSync(journal).filter((n) => /^\d+\.log$/.test(n))
    const next = Math.max(0, ...segments.map((n) => Number.parseInt(n, 10))) + 1
    writeFileSync(join(journal, `${next}.log`), '[1,2,3]\n{"at":"garbage"}\n[[[],[]],[[],[]],[],[["siteId","at"],[["x","garbage"]]]]\n')
    server = await startServer(env)
    let ready = 0
    for (let i = 0; i < 300 && ready !== 200; i++) {
      ready = (await fetch(`${server.url}/ready`)).status
      if (ready !== 200) await new Promise((r) => setTimeout(r, 200))
    }
    expect(ready).toBe(200)
    expect(await server.stop()).toBe(0)
    server = undefined

    // what was stored, read from the engine of the stopped server
    const engine = new EmbeddedClickHouse(join(env.DATA_DIR, 'clickhouse'))
    const counts = new Map<string, number>()
    for (const table of ['events', 'bot_events']) {
      const rows = await engine.query<{ pathname: string; n: string }>(
        `SELECT pathname, count() AS n FROM ${table} WHERE site_id = {s:UUID} AND match(pathname, '^/p[opcni]/') GROUP BY pathname`,
        { s: site.id },
      )
      for (const r of rows) counts.set(r.pathname, (counts.get(r.pathname) ?? 0) + Number(r.n))
    }
    await engine.close()
    const quarantine = new FileQuarantine(join(env.DATA_DIR, 'quarantine'))
    const entries = quarantine.list().map((e) => quarantine.show(e.id)!)
    const quarantinedPaths = new Set(
      entries.flatMap((e) =>
        e.kind === 'rows'
          ? e.rows.map((r) => (r as { pathname: string }).pathname)
          : e.kind === 'hits'
            ? e.hits.map((h) => h.pathname)
            : [],
      ),
    )
    const lines = entries.filter((e) => e.kind === 'line' || e.kind === 'hits')
    // the three hostile journal lines, each set aside with its reason
    expect(lines.length).toBeGreaterThanOrEqual(3)

    const wrong: string[] = []
    for (const [path, isKept] of kept) {
      const n = counts.get(path) ?? 0
      const held = quarantinedPaths.has(path)
      if (isKept ? !(n === 1 || (n === 0 && held)) : n !== 0) wrong.push(`${path}: kept ${isKept}, stored ${n}, quarantined ${held}`)
    }
    for (let i = 0; i < hostile.length; i++) if (counts.get(`/pn/${i}`) !== 1) wrong.push(`/pn/${i}: stored ${counts.get(`/pn/${i}`) ?? 0}`)
    expect(wrong, `seed ${SEED}\n${answers.join('\n')}`).toEqual([])
    const acknowledged = [...kept.values()].filter(Boolean).length
    // some of each kind were kept, so the property was tried on stored hits and not only on refusals
    expect(acknowledged).toBeGreaterThan(20)
    expect(kept.size - acknowledged).toBeGreaterThan(5)
    const byPath = Object.entries({ own: '/po/', plausible: '/pp/', collect: '/pc/', import: '/pi/' }).map(([name, prefix]) => {
      const paths = [...kept].filter(([p]) => p.startsWith(prefix))
      return `${name}: ${paths.length} sent, ${paths.filter(([, k]) => k).length} kept, ${paths.filter(([, k]) => !k).length} refused or dropped`
    })
    console.log(byPath.join('; '))
    console.log(
      `hostile ingest (seed ${SEED}): ${kept.size} hostile hits, ${acknowledged} acknowledged, ${[...kept.keys()].filter((p) => counts.get(p) === 1).length} stored, ${[...quarantinedPaths].filter((p) => kept.has(p)).length} quarantined, ${hostile.length} normal hits stored`,
    )
  }, 600_000)
})
