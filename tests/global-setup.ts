import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TcpRedis } from '../lib/storage/kv/tcp'

/**
 * One folder and one Redis key prefix per test run, both removed when it ends: the test processes
 * inherit them as TEST_TMP_DIR (see tempDir) and REDIS_PREFIX, so parallel runs never meet. The
 * engine's migrations are applied once, to a folder each test file copies (TEST_ENGINE_TEMPLATE).
 * Each tier (vitest.config.ts) calls this; the first call of a run makes them, and its teardown,
 * which runs when every tier is done, removes them.
 */
export function setup() {
  if (process.env.TEST_ENGINE_TEMPLATE) return
  const root = mkdtempSync(join(tmpdir(), 'wa-run-'))
  const prefix = `wa-test:${crypto.randomUUID().slice(0, 8)}:`
  process.env.TEST_TMP_DIR = root
  process.env.REDIS_PREFIX = prefix
  const template = join(root, 'engine-template')
  execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./engine-template.ts', import.meta.url)), template], {
    stdio: 'inherit',
  })
  process.env.TEST_ENGINE_TEMPLATE = template
  return async () => {
    rmSync(root, { recursive: true, force: true })
    if (process.env.REDIS_URL) await deleteKeys(process.env.REDIS_URL, prefix)
  }
}

async function deleteKeys(url: string, prefix: string) {
  const redis = new TcpRedis(url)
  try {
    let cursor = '0'
    do {
      const [next, keys] = (await redis.exec(['SCAN', cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000])) as [string, string[]]
      if (keys.length) await redis.exec(['UNLINK', ...keys])
      cursor = next
    } while (cursor !== '0')
  } finally {
    await redis.close()
  }
}
