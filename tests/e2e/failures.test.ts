import { execFile, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, startServer } from './server-process'

/** A failure the user can fix ends the process with one sentence on stderr and a non-zero exit. */
function run(file: string, args: string[], env: Record<string, string>) {
  const { status, stderr } = spawnSync(process.execPath, ['--import', 'tsx', file, ...args], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: '',
      UPSTASH_REDIS_REST_URL: '',
      CLICKHOUSE_URL: '',
      SKIP_DEMO_TRAFFIC: '1',
      ...env,
    },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { status, stderr }
}

/** As run, without blocking this process: for a CLI that talks to a stand-in served by this test. */
function runAsync(file: string, args: string[], env: Record<string, string>) {
  return new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', file, ...args],
      { env: { ...process.env, REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', ...env }, encoding: 'utf8', timeout: 60_000 },
      (_err, _stdout, stderr) => resolve({ status: child.exitCode, stderr }),
    )
  })
}

function expectOneSentence({ status, stderr }: { status: number | null; stderr: string }, pattern: RegExp) {
  const lines = stderr
    .trim()
    .split('\n')
    .filter((line) => !/^line \d+: /.test(line))
  expect(lines, stderr).toHaveLength(1)
  expect(lines[0]).toMatch(/^error: /)
  expect(lines[0]).toMatch(pattern)
  expect(stderr).not.toMatch(/\n\s+at /)
  expect(status).toBe(1)
}

describe('failures a user can fix', () => {
  const env = { DATA_DIR: tempDir('failures') }
  let server: RunningServer

  beforeAll(async () => {
    server = await startServer({ ...env, REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', SKIP_DEMO_TRAFFIC: '1' })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('the server: a malformed variable', () => {
    expectOneSentence(run('functions/node.ts', [], { PORT: 'abc', DATA_DIR: tempDir('failures') }), /PORT is "abc"/)
    expectOneSentence(run('functions/node.ts', [], { LOG_LEVEL: 'loud', DATA_DIR: tempDir('failures') }), /LOG_LEVEL/)
  })

  it('the server: Google configured without the server secret', () => {
    const google = { GOOGLE_CLIENT_ID: 'id.apps.googleusercontent.com', GOOGLE_CLIENT_SECRET: 'secret', DATA_DIR: tempDir('failures') }
    expectOneSentence(
      run('functions/node.ts', [], google),
      /^error: GOOGLE_CLIENT_ID is set but SERVER_SECRET is not: set SERVER_SECRET to a random string of at least 32 characters/,
    )
    expectOneSentence(
      run('functions/node.ts', [], { ...google, SERVER_SECRET: 'short' }),
      /SERVER_SECRET is "short": must be at least 32 characters/,
    )
  })

  it('the server: a port in use', async () => {
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    const { port } = busy.address() as { port: number }
    try {
      expectOneSentence(
        run('functions/node.ts', [], { PORT: String(port), DATA_DIR: tempDir('failures') }),
        new RegExp(`port ${port} is already in use`),
      )
    } finally {
      busy.close()
    }
  })

  it('the server: a second server on the same data folder', () => {
    expectOneSentence(run('functions/node.ts', [], env), /already runs on the data folder/)
  })

  it('import: a missing file, and a file whose every line is rejected', () => {
    expectOneSentence(run('scripts/import.ts', ['--file', join(env.DATA_DIR, 'missing.ndjson')], env), /cannot read .*missing\.ndjson/)
    const bad = join(env.DATA_DIR, 'bad.ndjson')
    writeFileSync(bad, 'oops\n{"site": 1}\n')
    const rejected = run('scripts/import.ts', ['--file', bad], env)
    expectOneSentence(rejected, /all 2 lines were rejected/)
    expect(rejected.stderr).toMatch(/^line 1: /m)
  })

  it('demo-traffic: an unknown site', () => {
    expectOneSentence(run('scripts/demo-traffic.ts', ['--site', 'nope'], env), /no site has the snippet id "nope"/)
  })

  it('the server: no engine library for this platform, as after npm ci on macOS or arm64', () => {
    const preload = join(tempDir('failures'), 'other-arch.cjs')
    writeFileSync(preload, "Object.defineProperty(process, 'arch', { value: 'riscv64' })\n")
    const result = run('functions/node.ts', [], { DATA_DIR: tempDir('failures'), NODE_OPTIONS: `--require ${preload}` })
    expectOneSentence(result, /no library for linux-riscv64 .*run `npm install`/)
  })

  it('the server: a data folder that cannot be one', () => {
    expectOneSentence(
      run('functions/node.ts', [], { DATA_DIR: '/etc/passwd/x' }),
      /DATA_DIR \/etc\/passwd\/x cannot be used .*file, not a folder/,
    )
    // Node's recursive mkdir never returns here
    expectOneSentence(run('functions/node.ts', [], { DATA_DIR: '/proc/nope' }), /DATA_DIR \/proc\/nope cannot be used/)
  })

  it('migrate: a malformed CLICKHOUSE_URL, a closed port, a wrong password', async () => {
    const dir = { DATA_DIR: tempDir('failures') }
    for (const url of ['not-a-url', 'clickhouse.internal:8123', 'ftp://clickhouse.internal']) {
      expectOneSentence(
        await runAsync('scripts/migrate.ts', [], { ...dir, CLICKHOUSE_URL: url }),
        /CLICKHOUSE_URL is .*must be an http\(s\) URL/,
      )
    }
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const { port } = closed.address() as { port: number }
    await new Promise((resolve) => closed.close(resolve))
    expectOneSentence(
      await runAsync('scripts/migrate.ts', [], { ...dir, CLICKHOUSE_URL: `http://127.0.0.1:${port}` }),
      new RegExp(`nothing answers at 127.0.0.1:${port}`),
    )
    // a stand-in answering as ClickHouse answers a wrong password
    const clickhouse = createHttpServer((req, res) => {
      req.resume()
      res.writeHead(516, { 'X-ClickHouse-Exception-Code': '516', 'Content-Type': 'text/plain; charset=UTF-8' })
      res.end(
        'Code: 516. DB::Exception: default: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED) (version 24.8.4.13 (official build))\n',
      )
    })
    await new Promise<void>((resolve) => clickhouse.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(clickhouse.address() as { port: number }).port}`
      expectOneSentence(
        await runAsync('scripts/migrate.ts', [], { ...dir, CLICKHOUSE_URL: url, CLICKHOUSE_PASSWORD: 'wrong' }),
        /ClickHouse refused the user and password: check CLICKHOUSE_USER and CLICKHOUSE_PASSWORD/,
      )
    } finally {
      clickhouse.close()
    }
  })

  it('admin: an unknown organization', () => {
    const result = run('scripts/admin.ts', ['key', 'create', '--org', 'nope', '--name', 'x'], env)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
    expect(result.stderr).not.toMatch(/\n\s+at /)
    expect(result.status).not.toBe(0)
  })
})
