import { spawnSync } from 'node:child_process'
import { closeSync, mkdirSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, demoKeys, startServer } from './server-process'

/**
 * The data folder on a small file system of its own (a 64 MB tmpfs) that fills up while hits
 * arrive. Mounting needs root: where the mount is refused the test is skipped, saying why.
 */
const mountPoint = tempDir('full-disk')
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mountPoint]).status === 0
if (!mounted) console.warn(`full-disk tests skipped: cannot mount a tmpfs on ${mountPoint} (needs root)`)

/** Fills the file system up to `leaveBytes` free with one file; returns its path. */
function fill(name: string, leaveBytes = 0) {
  const file = join(mountPoint, name)
  const fd = openSync(file, 'w')
  const chunk = Buffer.alloc(64 * 1024)
  try {
    for (;;) {
      const { bavail, bsize } = statfsSync(mountPoint)
      const room = bavail * bsize - leaveBytes
      if (room <= 0) break
      writeSync(fd, chunk, 0, Math.min(chunk.length, room))
    }
  } catch {
    // ENOSPC: full
  } finally {
    closeSync(fd)
  }
  return file
}

describe.skipIf(!mounted)('a full disk (DATA_DIR on a 64 MB tmpfs filled during load)', () => {
  const env = {
    DATA_DIR: join(mountPoint, 'data'),
    REDIS_URL: '',
    UPSTASH_REDIS_REST_URL: '',
    CLICKHOUSE_URL: '',
    DEMO: '1',
    SKIP_DEMO_TRAFFIC: '1',
    LOG_LEVEL: 'error',
  }
  let server: RunningServer
  let keys: ReturnType<typeof demoKeys>
  let snippet = ''

  beforeAll(async () => {
    mkdirSync(env.DATA_DIR, { recursive: true })
    server = await startServer(env)
    keys = demoKeys(server.stdout())
    snippet = /snippet (\w+)/.exec(server.stdout())![1]
  })
  afterAll(async () => {
    await server?.stop()
    if (mounted) spawnSync('umount', ['-l', mountPoint])
    rmSync(mountPoint, { recursive: true, force: true })
  })

  const send = (path: string) =>
    fetch(`${server.url}/api/event`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0' },
      body: JSON.stringify({ site: snippet, name: 'pageview', url: `https://demo.example.com${path}` }),
    }).then(
      async (res) => ({ path, status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.text() }),
      (err) => ({ path, status: 0, retryAfter: null, body: String(err) }),
    )
  /** Sends `n` hits, ten at a time, calling `at[k]` once k + 1 quarters are answered. */
  async function load(round: string, n: number, at: (() => void)[] = []) {
    const answers: Awaited<ReturnType<typeof send>>[] = []
    for (let i = 0; i < n; i += 10) {
      for (let k = 0; k < at.length; k++) if (i === Math.floor(((k + 1) * n) / 40) * 10) at[k]()
      answers.push(...(await Promise.all(Array.from({ length: 10 }, (_, j) => send(`/${round}/${i + j}`)))))
    }
    return answers
  }
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${keys.writeKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, retryAfter: res.headers.get('retry-after'), json: await res.json() }
  }
  /** Pageviews stored per path of a round. */
  const storedPaths = async (round: string) => {
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'contains', value: [`/${round}/`] }]))
    const res = await api('GET', `/api/v1/breakdown?site_id=${keys.site}&range=today&property=path&limit=1000&filters=${filters}`)
    if (res.status !== 200) return null
    return new Map<string, number>((res.json.results as { value: string; pageviews: number }[]).map((r) => [r.value, r.pageviews]))
  }
  /** Waits until the stored paths of a round are `expected` (each once); returns what was stored last. */
  async function settle(round: string, expected: string[]) {
    let last: Map<string, number> | null = null
    for (let i = 0; i < 150; i++) {
      last = await storedPaths(round)
      if (last && last.size === expected.length && [...last.values()].every((n) => n === 1)) break
      await new Promise((r) => setTimeout(r, 200))
    }
    return last
  }

  it('never stores an acknowledged hit twice, answers 503 with Retry-After where it cannot make data durable, changes nothing on a refused write, and heals', async () => {
    // first no room for the engine's parts (the journal and the key/value log still write), then none at all
    const fillers: string[] = []
    const answers = await load('a', 800, [() => fillers.push(fill('filler', 400 * 1024)), () => fillers.push(fill('rest')), () => {}])
    const acknowledged = answers.filter((a) => a.status === 202).map((a) => a.path)
    const refused = answers.filter((a) => a.status !== 202)
    // the disk filled: some hits were refused, each with 503, Retry-After and the store that failed
    expect(refused.length).toBeGreaterThan(0)
    for (const r of refused) {
      expect(r.status).toBe(503)
      expect(r.retryAfter).toMatch(/^\d+$/)
      expect(JSON.parse(r.body).error).toMatch(/^(key\/value store|event journal|ClickHouse) is unavailable; retry in \d+ s$/)
    }
    // a write while the disk is full: refused with 503 and kept nowhere. The key/value log's last
    // page may still have room for a few small lines (the hits no longer write to that log): the
    // writes go on until one is refused
    let goal = { status: 0, retryAfter: null as string | null }
    let refusedGoal = ''
    for (let i = 0; i < 100 && goal.status !== 503; i++) {
      refusedGoal = `full-disk-${i}`
      goal = await api('POST', '/api/v1/goals', { site_id: keys.site, name: `Full disk ${i}`, type: 'event', matchValue: refusedGoal })
      if (goal.status !== 503) expect(goal.status).toBe(201)
    }
    expect(goal.status).toBe(503)
    expect(goal.retryAfter).toMatch(/^\d+$/)
    // the server is still up
    expect(server.process.exitCode).toBeNull()
    expect((await fetch(`${server.url}/ready`)).status).toBe(200)

    for (const file of fillers) rmSync(file)
    const stored = await settle('a', acknowledged)
    expect(stored && [...stored.entries()].filter(([, n]) => n !== 1)).toEqual([])
    expect(stored && [...stored.keys()].sort()).toEqual([...acknowledged].sort())
    // the refused goal is not there, and it can be made now
    const goals = await api('GET', `/api/v1/goals?site_id=${keys.site}`)
    expect(JSON.stringify(goals.json)).not.toContain(`"${refusedGoal}"`)
    expect(
      (await api('POST', '/api/v1/goals', { site_id: keys.site, name: 'Full disk again', type: 'event', matchValue: refusedGoal })).status,
    ).toBe(201)
  }, 120_000)

  it('stays up when it starts on a full disk with hits journaled and not stored: not ready until space returns, then stores them once', async () => {
    // room for the journal's small writes, none for the engine's parts: hits are acknowledged and wait in the journal
    const filler = fill('filler', 400 * 1024)
    const answers = await load('b', 60)
    const acknowledged = answers.filter((a) => a.status === 202).map((a) => a.path)
    expect(acknowledged.length).toBeGreaterThan(0)
    // stopped with them in the journal, and started again on a disk with no room at all
    expect(await server.stop()).toBe(0)
    const rest = fill('rest')
    server = await startServer(env)
    const ready = await fetch(`${server.url}/ready`)
    expect(ready.status).toBe(503)
    expect(await ready.json()).toMatchObject({ ready: false, phase: 'replaying' })
    expect(server.process.exitCode).toBeNull()

    rmSync(rest)
    rmSync(filler)
    let status = 0
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await fetch(`${server.url}/ready`)).status
      if (status !== 200) await new Promise((r) => setTimeout(r, 200))
    }
    expect(status).toBe(200)
    const stored = await settle('b', acknowledged)
    expect(stored && [...stored.entries()].filter(([, n]) => n !== 1)).toEqual([])
    expect(stored && [...stored.keys()].sort()).toEqual([...acknowledged].sort())
  }, 120_000)
})
