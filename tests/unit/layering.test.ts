import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(__dirname, '../..')

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  )
}

/** The modules a file imports: package names as written, relative ones as repository paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8')
  return [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map(([, spec]) =>
    spec.startsWith('.') ? `${relative(root, resolve(root, dirname(file), spec))}.ts` : spec,
  )
}

const files = [...sourceFiles('lib'), ...sourceFiles('functions')]
const graph = new Map(files.map((f) => [f, importsOf(f)]))

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
