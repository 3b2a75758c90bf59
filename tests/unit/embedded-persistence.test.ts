import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { EmbeddedRedis } from '../../lib/storage/kv/embedded'
import { tempDir } from '../helpers'

const writer = `
import { EmbeddedRedis } from ${JSON.stringify(join(process.cwd(), 'lib/storage/kv/embedded.ts'))}
const kv = new EmbeddedRedis({ dir: process.env.KV_DIR })
for (let i = 0; ; i++) {
  await kv.exec(['SET', 'k' + i, 'v' + i])
  await kv.exec(['HINCRBY', 'counts', 'n', 1])
  process.stdout.write('ack ' + i + '\\n')
  if (i % 50 === 0) await new Promise((r) => setImmediate(r))
}
`

describe('embedded key/value persistence', () => {
  it('keeps every acknowledged write when the process is killed with SIGKILL', async () => {
    const dir = tempDir('kv-kill')
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', writer], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, KV_DIR: dir },
    })
    let lastAck = -1
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        const acks = chunk.toString().match(/ack (\d+)/g)
        if (acks) lastAck = Number(acks[acks.length - 1].slice(4))
        if (lastAck >= 500 && !child.killed) child.kill('SIGKILL')
      })
      child.on('exit', () => resolve())
    })
    expect(lastAck).toBeGreaterThanOrEqual(500)
    const kv = new EmbeddedRedis({ dir })
    for (let i = 0; i <= lastAck; i++) expect(await kv.exec(['GET', `k${i}`])).toBe(`v${i}`)
    expect(Number(await kv.exec(['HGET', 'counts', 'n']))).toBeGreaterThanOrEqual(lastAck + 1)
    await kv.close()
  })

  it('restores expiry deadlines and drops expired keys on reopen', async () => {
    let now = 1_000_000
    const dir = tempDir('kv-ttl')
    const kv = new EmbeddedRedis({ dir, now: () => now })
    await kv.exec(['SET', 'short', 'x', 'PX', '1000'])
    await kv.exec(['SET', 'long', 'y', 'EX', '100'])
    await kv.exec(['SADD', 'set', 'a', 'b'])
    await kv.exec(['SREM', 'set', 'a'])
    await kv.close()
    now += 5000
    const reopened = new EmbeddedRedis({ dir, now: () => now })
    expect(await reopened.exec(['GET', 'short'])).toBeNull()
    expect(await reopened.exec(['GET', 'long'])).toBe('y')
    expect(await reopened.exec(['PTTL', 'long'])).toBe(95_000)
    expect(await reopened.exec(['SMEMBERS', 'set'])).toEqual(['b'])
    await reopened.close()
  })
})

describe('embedded key/value log compaction', () => {
  it('rewrites the log once it outgrows the live data, keeping every key', async () => {
    const { statSync } = await import('node:fs')
    const dir = tempDir('kv-compact')
    const kv = new EmbeddedRedis({ dir, compactAfterBytes: 10_000 })
    for (let i = 0; i < 5000; i++) await kv.exec(['SET', `hot:${i % 10}`, `value-${i}`, 'PX', '7200000'])
    await kv.exec(['SET', 'cold', 'kept'])
    const size = statSync(join(dir, 'kv.log')).size
    // 5,000 rewrites of ten keys would be over 250 KB appended; compaction keeps it near the threshold
    expect(size).toBeLessThan(20_000)
    await kv.close()
    const reopened = new EmbeddedRedis({ dir })
    expect(await reopened.exec(['GET', 'hot:9'])).toBe('value-4999')
    expect(await reopened.exec(['GET', 'cold'])).toBe('kept')
    await reopened.close()
  })
})

describe('embedded store files', () => {
  it('are the owner’s alone: the log 0600 and its folder 0700, also when they existed with wider modes', async () => {
    const { chmodSync, mkdirSync, statSync, writeFileSync } = await import('node:fs')
    const dir = join(tempDir('kv-modes'), 'kv')
    mkdirSync(dir, { mode: 0o755 })
    writeFileSync(join(dir, 'kv.log'), '', { mode: 0o644 })
    chmodSync(dir, 0o755)
    const kv = new EmbeddedRedis({ dir })
    await kv.exec(['SET', 'salt', 'secret'])
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect(statSync(join(dir, 'kv.log')).mode & 0o777).toBe(0o600)
    await kv.close()
  })

  it('the Node home creates its data folder and everything in it for the owner only', async () => {
    const { readdirSync, statSync } = await import('node:fs')
    const { openNodeStores } = await import('../../lib/runtime/node')
    const dir = join(tempDir('home-modes'), 'data')
    // the embedded engine allows one per process: only the key/value side is opened here, with ClickHouse over HTTP named but unused
    const stores = await openNodeStores({ DATA_DIR: dir, CLICKHOUSE_URL: 'http://127.0.0.1:1' })
    await stores.kv.set('k', 'v')
    const walk = (path: string): string[] => [
      path,
      ...(statSync(path).isDirectory() ? readdirSync(path).flatMap((name) => walk(join(path, name))) : []),
    ]
    for (const path of walk(dir)) expect(statSync(path).mode & 0o077, path).toBe(0)
    await stores.close()
  })
})
