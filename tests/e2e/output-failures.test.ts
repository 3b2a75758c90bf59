import { closeSync, existsSync, openSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, startServer } from './server-process'

const TOKEN = 'output-failures-metrics-token'

/**
 * The server's own output failing under it: `npm start > server.log` on a full disk (/dev/full
 * refuses every write with ENOSPC, as a full disk does) or piped to a reader that went away
 * (EPIPE). The first start writes its banner to standard output, so the failure comes at once.
 */
describe('a server whose standard output fails', () => {
  let server: RunningServer | undefined
  afterEach(async () => {
    await server?.stop()
    server = undefined
  })

  const start = (stdout: number | 'closed') =>
    startServer(
      {
        DATA_DIR: tempDir('output'),
        REDIS_URL: '',
        UPSTASH_REDIS_REST_URL: '',
        CLICKHOUSE_URL: '',
        DEMO: '1',
        SKIP_DEMO_TRAFFIC: '1',
        METRICS_TOKEN: TOKEN,
      },
      { stdout },
    )

  /** Several health checks after the failed writes, and the count of dropped writes /metrics reports. */
  async function keepsServing(running: RunningServer) {
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${running.url}/health`)).status)
    expect(statuses).toEqual([200, 200, 200])
    expect(running.process.exitCode).toBeNull()
    const metrics = await (await fetch(`${running.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
    const dropped = /^log_writes_dropped_total (\d+)$/m.exec(metrics)
    expect(dropped).not.toBeNull()
    expect(Number(dropped![1])).toBeGreaterThan(0)
  }

  it('keeps serving when the reader of its output is gone (EPIPE), and counts the dropped writes', async () => {
    server = await start('closed')
    await keepsServing(server)
  })

  it.skipIf(!existsSync('/dev/full'))(
    'keeps serving when its output is on a full disk (ENOSPC), and counts the dropped writes',
    async () => {
      const full = openSync('/dev/full', 'w')
      try {
        server = await start(full)
      } finally {
        // the server holds its own copy
        closeSync(full)
      }
      await keepsServing(server)
    },
  )
})
