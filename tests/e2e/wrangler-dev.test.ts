import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, startServer } from './server-process'

const OFFLINE = { WRANGLER_SEND_METRICS: 'false', WRANGLER_HIDE_BANNER: 'true', CLOUDFLARE_CF_FETCH_ENABLED: 'false' }

/** Plain `wrangler dev` on the repository's worker, with its config (and so its .dev.vars) in `dir`. */
async function wranglerDev(dir: string) {
  // paths in the config are the repository's: main, and the [alias] modules
  const config = readFileSync('wrangler.toml', 'utf8')
    .replace(/^main = .*$/m, `main = ${JSON.stringify(resolve('functions/worker.ts'))}`)
    .replace(/"\.\/(functions\/[^"]+)"/g, (_, path: string) => JSON.stringify(resolve(path)))
  writeFileSync(join(dir, 'wrangler.toml'), config)
  const child = spawn(
    process.execPath,
    [resolve('node_modules/wrangler/bin/wrangler.js'), 'dev', '--port', '0', '--ip', '127.0.0.1', '--config', join(dir, 'wrangler.toml')],
    {
      cwd: dir,
      env: { ...process.env, ...OFFLINE },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let output = ''
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`wrangler dev did not start:\n${output}`)), 90_000)
    const read = (d: Buffer) => {
      output += d
      const match = /Ready on (http:\/\/\S+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        ok(match[1])
      }
    }
    child.stdout!.on('data', read)
    child.stderr!.on('data', read)
    child.on('exit', (code) => fail(new Error(`wrangler dev exited with ${code}:\n${output}`)))
  })
  return { url, output: () => output, child }
}

const stop = (child: ChildProcess) =>
  new Promise((r) => (child.exitCode !== null ? r(null) : (child.once('exit', r), child.kill('SIGTERM'))))

describe('plain wrangler dev', () => {
  const children: ChildProcess[] = []
  let server: RunningServer | undefined
  afterAll(async () => {
    await Promise.all(children.map(stop))
    await server?.stop()
  })

  it('without .dev.vars answers every route with one sentence saying what to run', async () => {
    const dev = await wranglerDev(tempDir('wrangler-bare'))
    children.push(dev.child)
    for (const path of ['/health', '/api/v1/me']) {
      const res = await fetch(`${dev.url}${path}`)
      expect(res.status).toBe(503)
      const { error } = await res.json()
      expect(error).toMatch(/CLICKHOUSE_URL/)
      expect(error).toMatch(/npm run dev:worker/)
    }
    expect(dev.output()).not.toMatch(/\n\s+at /)
  })

  it('with the .dev.vars of .dev.vars.example pointing at a running npm start, serves the API', async () => {
    const dataDir = tempDir('wrangler-backend')
    server = await startServer({ DATA_DIR: dataDir, REDIS_URL: '', UPSTASH_REDIS_REST_URL: '', CLICKHOUSE_URL: '', SKIP_DEMO_TRAFFIC: '1' })
    const local = JSON.parse(readFileSync(join(dataDir, 'local-endpoints.json'), 'utf8')) as { url: string }
    const token = readFileSync(join(dataDir, 'local-token'), 'utf8').trim()
    const dir = tempDir('wrangler-configured')
    const vars = readFileSync('.dev.vars.example', 'utf8')
      .replaceAll('<contents of .data/local-token>', token)
      .replaceAll('http://127.0.0.1:8788', local.url)
    writeFileSync(join(dir, '.dev.vars'), vars)
    const dev = await wranglerDev(dir)
    children.push(dev.child)
    const res = await fetch(`${dev.url}/health`)
    expect(await res.json()).toEqual({ status: 'ok', clickhouse: 'ok', keyValue: 'ok' })
  })
})
