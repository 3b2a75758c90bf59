import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

/** `npm run import` against a running server on embedded stores: a file imported twice, and --help. */
describe('the import command', () => {
  const env = {
    DATA_DIR: tempDir('import-cli'),
    REDIS_URL: '',
    UPSTASH_REDIS_REST_URL: '',
    CLICKHOUSE_URL: '',
    SKIP_DEMO_TRAFFIC: '1',
    DEMO_LIVE_TRAFFIC: '0',
  }
  let server: RunningServer
  let readKey = ''
  let site = { id: '', snippetId: '', domain: '' }

  const importCli = (args: string[], input?: string) => {
    const { status, stdout, stderr } = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/import.ts', ...args], {
      env: { ...process.env, ...env },
      input,
      encoding: 'utf8',
      timeout: 60_000,
    })
    return { status, stdout, stderr }
  }
  const importRuns = async () => {
    const url = `${server.url}/api/v1/sites/${site.id}/imports`
    const init = { headers: { authorization: `Bearer ${readKey}` } }
    // a kept-alive connection the server closed while a CLI ran is opened again
    const res = await fetch(url, init).catch(() => fetch(url, init))
    return (await res.json()).imports as { rows: number; state: string }[]
  }

  beforeAll(async () => {
    server = await startServer(env)
    ;({ readKey } = demoKeys(server.output()))
    const res = await fetch(`${server.url}/api/v1/sites`, { headers: { authorization: `Bearer ${readKey}` } })
    site = (await res.json()).sites[0]
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('refuses a file imported already, unless --force; the same content on standard input is refused as a file later', async () => {
    const line = (minute: number) =>
      JSON.stringify({
        timestamp: new Date(Date.UTC(2026, 9, 5, 10, minute)).toISOString(),
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/twice`,
        ip: '8.8.8.8',
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      })
    const file = join(env.DATA_DIR, 'twice.ndjson')
    writeFileSync(file, `${[line(1), line(2), line(3)].join('\n')}\n`)
    const before = (await importRuns()).length

    const first = importCli(['--file', file])
    expect(first.status, first.stderr).toBe(0)
    expect(JSON.parse(first.stdout)).toEqual({ imported: 3, rejected: 0 })

    const again = importCli(['--file', file])
    expect(again.status).toBe(1)
    expect(again.stdout).toBe('')
    expect(again.stderr.trim().split('\n')).toHaveLength(1)
    expect(again.stderr).toMatch(/^error: this file was imported already \(3 rows into demo\.example\.com on \d{4}-\d\d-\d\d\).*--force/)
    expect(await importRuns()).toHaveLength(before + 1)

    const forced = importCli(['--file', file, '--force'])
    expect(forced.status, forced.stderr).toBe(0)
    expect(JSON.parse(forced.stdout)).toEqual({ imported: 3, rejected: 0 })
    expect(await importRuns()).toHaveLength(before + 2)

    // content read from standard input is recorded by its hash too
    const other = join(env.DATA_DIR, 'piped.ndjson')
    const piped = `${[line(10), line(11)].join('\n')}\n`
    const viaStdin = importCli([], piped)
    expect(JSON.parse(viaStdin.stdout)).toEqual({ imported: 2, rejected: 0 })
    writeFileSync(other, piped)
    expect(importCli(['--file', other]).stderr).toMatch(/imported already \(2 rows/)
  })

  it('sorts a file out of time order, and standard input, naming rejected lines by their place in the input', async () => {
    const line = (minute: number) =>
      JSON.stringify({
        timestamp: new Date(Date.UTC(2026, 9, 7, 10, minute)).toISOString(),
        site: site.snippetId,
        name: 'pageview',
        url: `https://${site.domain}/sorted-${minute}`,
        ip: '8.8.4.4',
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
      })
    const file = join(env.DATA_DIR, 'unsorted.ndjson')
    writeFileSync(file, `${[line(50), line(20), 'not json', line(5)].join('\n')}\n`)
    const fromFile = importCli(['--file', file])
    expect(fromFile.status, fromFile.stderr).toBe(0)
    expect(JSON.parse(fromFile.stdout)).toEqual({ imported: 3, rejected: 1 })
    expect(fromFile.stderr).toContain('line 3: not valid JSON')
    const fromStdin = importCli([], `${[line(59), 'not json either', line(58)].join('\n')}\n`)
    expect(fromStdin.status, fromStdin.stderr).toBe(0)
    expect(JSON.parse(fromStdin.stdout)).toEqual({ imported: 2, rejected: 1 })
    expect(fromStdin.stderr).toContain('line 2: not valid JSON')
  })

  it('--help points at docs/import.md and names --force', () => {
    const help = importCli(['--help'])
    expect(help.status).toBe(0)
    expect(help.stdout).toContain('docs/import.md')
    expect(help.stdout).toContain('--force')
  })
})
