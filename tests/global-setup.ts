import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TcpRedis } from '../lib/storage/kv/tcp'

/**
 * One folder and one Redis key prefix per test run, both removed when it ends: the test processes
 * inherit them as TEST_TMP_DIR (see tempDir) and REDIS_PREFIX, so parallel runs never meet.
 */
export function setup() {
  const root = mkdtempSync(join(tmpdir(), 'wa-run-'))
  const prefix = `wa-test:${crypto.randomUUID().slice(0, 8)}:`
  process.env.TEST_TMP_DIR = root
  process.env.REDIS_PREFIX = prefix
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
