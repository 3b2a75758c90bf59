import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(__dirname, '../..')

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : /\.tsx?$/.test(entry.name) ? [join(dir, entry.name)] : [],
  )
}

/** A relative module as the repository path it names: `x` is `x.ts`, `x.tsx` or `x/index.ts`. */
function resolveModule(file: string, spec: string): string {
  const base = relative(root, resolve(root, dirname(file), spec))
  return [`${base}.ts`, `${base}.tsx`, `${base}/index.ts`, base].find((path) => existsSync(join(root, path))) ?? `${base}.ts`
}

/** The modules a file imports, type imports and `import()` included: package names as written, relative ones as repository paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  const specs = [
    ...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm),
    ...text.matchAll(/^\s*import\s+'([^']+)'/gm),
    ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
  ].map(([, spec]) => spec)
  return specs.map((spec) => (spec.startsWith('.') ? resolveModule(file, spec) : spec))
}

const files = [...sourceFiles('lib'), ...sourceFiles('functions')]
const graph = new Map(files.map((f) => [f, importsOf(f)]))

/**
 * The floors of the code, from the ground up (docs/architecture.md). A file may import from its own
 * floor and the floors below, never from one above: what a floor is built from can be read off this
 * table, and a helper lands where it belongs, not where it was first needed.
 */
const FLOORS: readonly (readonly [string, readonly string[]])[] = [
  ['core: errors, crypto, the event-loop turn', ['lib/core/']],
  [
    'storage and the wire: ClickHouse, the key/value store, outbound fetch and mail, the tracker',
    ['lib/storage/', 'lib/network/', 'lib/tracker/'],
  ],
  ['the domains: accounts, sites, ingestion', ['lib/accounts/', 'lib/sites/', 'lib/ingest/']],
  ['reports: the query compiler and its reads', ['lib/reports/']],
  ['outside sources: crawl, backlinks, Google, CrUX, Plausible', ['lib/crawl/', 'lib/backlinks/', 'lib/integrations/', 'lib/plausible/']],
  ['verbs that span domains and sources', ['lib/operations/', 'lib/insights/']],
  ['scheduled jobs', ['lib/jobs/']],
  ['runtime: the homes that build the services', ['lib/runtime/']],
  [
    'the transport: declarations and the one caller',
    [
      'functions/endpoint.ts',
      'functions/params.ts',
      'functions/request-log.ts',
      'functions/compression.ts',
      'functions/openapi.ts',
      'functions/tool-schemas.ts',
      'functions/invoke.ts',
      'functions/google-binding.ts',
      'functions/shims/',
    ],
  ],
  [
    'routes: the API, the collector, MCP, the public count',
    [
      'functions/v1/',
      'functions/v2/',
      'functions/collector.ts',
      'functions/public.ts',
      'functions/reference-page.ts',
      'functions/mcp.ts',
      'functions/http.ts',
      'functions/hot-path.ts',
    ],
  ],
  ['the endpoint registry', ['functions/registry.ts']],
  ['the web application', ['functions/web/']],
  ['the apps and their entry points', ['functions/app.ts', 'functions/local-endpoints.ts', 'functions/node.ts', 'functions/worker.ts']],
]

/** The floor of a file: the index of the table's longest prefix that it starts with. */
function floorOf(file: string): number | undefined {
  let found: { floor: number; length: number } | undefined
  FLOORS.forEach(([, prefixes], floor) => {
    for (const prefix of prefixes)
      if ((file === prefix || file.startsWith(prefix)) && prefix.length > (found?.length ?? -1)) found = { floor, length: prefix.length }
  })
  return found?.floor
}

/** Every import from a file to a file on a higher floor, named with both floors. */
function upwardImports(of: Map<string, string[]>): string[] {
  return [...of].flatMap(([file, imports]) =>
    imports
      .filter((m) => of.has(m) && floorOf(m)! > floorOf(file)!)
      .map((m) => `${file} (${FLOORS[floorOf(file)!][0]}) -> ${m} (${FLOORS[floorOf(m)!][0]})`),
  )
}

describe('the layering of the code', () => {
  it('lib/ never imports the transport: no Hono, nothing from functions/', () => {
    const offending = files
      .filter((f) => f.startsWith('lib/'))
      .flatMap((f) =>
        graph
          .get(f)!
          .filter((m) => m === 'hono' || m.startsWith('hono/') || m.startsWith('@hono/') || m.startsWith('functions/'))
          .map((m) => `${f} -> ${m}`),
      )
    expect(offending).toEqual([])
  })

  it('puts every file of lib/ and functions/ on a floor', () => {
    expect(files.filter((f) => floorOf(f) === undefined)).toEqual([])
    // every floor holds files: the table names no folder that is gone
    for (const [name] of FLOORS)
      expect(
        files.some((f) => FLOORS[floorOf(f)!][0] === name),
        name,
      ).toBe(true)
  })

  it('no import runs up a floor, type imports included', () => {
    expect(upwardImports(graph)).toEqual([])
    // the check itself: one import from the ground floor to the runtime is found and named
    const broken = new Map(graph).set('lib/core/errors.ts', [...graph.get('lib/core/errors.ts')!, 'lib/runtime/services.ts'])
    expect(upwardImports(broken)).toEqual([
      'lib/core/errors.ts (core: errors, crypto, the event-loop turn) -> lib/runtime/services.ts (runtime: the homes that build the services)',
    ])
  })

  it('docs/architecture.md shows the same floors, in the same order', () => {
    const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8')
    const rows = [...doc.matchAll(/^\| (\d+)\. [^|]+\| ([^|]+)\|/gm)].map(([, n, folders]) => ({ n: Number(n), folders }))
    expect(rows.map((r) => r.n)).toEqual(FLOORS.map((_, i) => i + 1))
    FLOORS.forEach(([name, prefixes], i) => {
      // each floor's folders (and its first file) are named in its row
      for (const prefix of prefixes.filter((p, j) => p.endsWith('/') || j === 0)) expect(rows[i].folders, name).toContain(`\`${prefix}\``)
    })
  })

  it('the floor check sees what it must: .tsx files, type imports and import()', () => {
    expect(files.some((f) => f.endsWith('.tsx'))).toBe(true)
    expect(importsOf('lib/runtime/services.ts')).toContain('lib/jobs/job-services.ts')
    expect(graph.get('functions/web/app.tsx')!.some((m) => m.endsWith('.tsx'))).toBe(true)
  })

  it('has no import circles among lib/ and functions/', () => {
    const cycles: string[] = []
    const state = new Map<string, 'open' | 'done'>()
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return
      if (state.get(file) === 'open') return void cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '))
      state.set(file, 'open')
      for (const next of graph.get(file) ?? []) if (graph.has(next)) visit(next, [...path, file])
      state.set(file, 'done')
    }
    for (const file of files) visit(file, [])
    expect(cycles).toEqual([])
  })

  it('repositories are used by verbs in lib/ alone: no handler imports one or calls one', () => {
    const isRepository = (m: string) => m.startsWith('lib/') && m.endsWith('-repository.ts')
    expect(files.filter(isRepository).length).toBeGreaterThan(0)
    const importing = files
      .filter((f) => !f.startsWith('lib/'))
      .flatMap((f) =>
        graph
          .get(f)!
          .filter(isRepository)
          .map((m) => `${f} -> ${m}`),
      )
    expect(importing).toEqual([])
    // the bundle the homes build is passed along, never called into, by the transport
    const calling = files
      .filter((f) => f.startsWith('functions/'))
      .flatMap((f) => [...readFileSync(join(root, f), 'utf8').matchAll(/\brepositories\.\w+\.\w+\(/g)].map(([call]) => `${f}: ${call}`))
    expect(calling).toEqual([])
  })

  it('has no Store god object left', () => {
    expect(existsSync(join(root, 'lib/storage/store.ts'))).toBe(false)
  })
})
