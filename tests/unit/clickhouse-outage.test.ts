import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ClickHouseLogLevel, createClient } from '@clickhouse/client'
import { describe, expect, it } from 'vitest'
import { type ClickHouseClientLike, clickhouseOverClient } from '../../lib/storage/clickhouse/client'
import { StoreUnavailableError } from '../../lib/storage/errors'
import { harness } from '../helpers'

/** A port nothing listens on: taken, then released. */
async function closedPort() {
  const probe = createServer().listen(0, '127.0.0.1')
  await new Promise((r) => probe.once('listening', r))
  const { port } = probe.address() as AddressInfo
  await new Promise((r) => probe.close(r))
  return port
}

const overHttp = (url: string) =>
  clickhouseOverClient(
    createClient({
      url,
      request_timeout: 2000,
      max_open_connections: 1,
      log: { level: ClickHouseLogLevel.OFF },
    }) as unknown as ClickHouseClientLike,
  )

describe('ClickHouse over HTTP that does not answer', () => {
  it('is an outage (StoreUnavailableError) when nothing listens, and a ClickHouse error stays one', async () => {
    const down = overHttp(`http://127.0.0.1:${await closedPort()}`)
    await expect(down.query('SELECT 1')).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(down.command('SELECT 1')).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(down.insert('events', [{ a: 1 }])).rejects.toBeInstanceOf(StoreUnavailableError)
    // a server that answers with ClickHouse's own error is no outage
    const server = createServer((_req, res) => {
      res
        .writeHead(400, { 'x-clickhouse-exception-code': '62' })
        .end('Code: 62. DB::Exception: Syntax error: failed at position 1. (SYNTAX_ERROR)')
    }).listen(0, '127.0.0.1')
    await new Promise((r) => server.once('listening', r))
    try {
      const answering = overHttp(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
      const refused = await answering.query('SELEC 1').catch((err: unknown) => err)
      expect(refused).not.toBeInstanceOf(StoreUnavailableError)
      expect(String((refused as Error).message)).toMatch(/Syntax error/)
    } finally {
      server.close()
    }
  })

  it('is an outage when the server has no disk space left (NOT_ENOUGH_SPACE)', async () => {
    const server = createServer((req, res) => {
      req.resume()
      res
        .writeHead(500, { 'x-clickhouse-exception-code': '243' })
        .end(
          'Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space: while pushing to view default.events_input_mv. (NOT_ENOUGH_SPACE)',
        )
    }).listen(0, '127.0.0.1')
    await new Promise((r) => server.once('listening', r))
    try {
      const full = overHttp(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
      await expect(full.insert('events_input', [{ a: 1 }])).rejects.toBeInstanceOf(StoreUnavailableError)
      await expect(full.query('SELECT 1')).rejects.toBeInstanceOf(StoreUnavailableError)
    } finally {
      server.close()
    }
  })

  it('makes a read answer 503 with Retry-After, not 500', async () => {
    const t = await harness({ with: { clickhouse: overHttp(`http://127.0.0.1:${await closedPort()}`) } })
    // through the app itself: the test client treats any 5xx as a failure of the test
    const res = await t.app.request(`http://api.test/api/v1/stats?site_id=${t.a.site.id}&range=7d`, {
      headers: { authorization: `Bearer ${t.a.read.key}` },
    })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('5')
    expect(await res.json()).toEqual({ error: 'ClickHouse is unavailable; retry in 5 s' })
  })
})
