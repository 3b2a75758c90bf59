import { type IncomingMessage, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ClickHouseLogLevel, createClient } from '@clickhouse/client'
import { afterEach, describe, expect, it } from 'vitest'
import { type ClickHouseClientLike, asyncInsertsDeduplicate, clickhouseOverClient } from '../../lib/storage/clickhouse/client'
import { StoreUnavailableError } from '../../lib/storage/errors'

/**
 * What an insert over HTTP asks of the server, read off the wire by a server that answers as
 * ClickHouse does (`SELECT version()` in JSONEachRow, an insert with an empty 200), through the
 * real `@clickhouse/client`.
 */
const servers: ReturnType<typeof createServer>[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

async function fakeServer(version: () => string | null) {
  const requests: { settings: URLSearchParams; body: string }[] = []
  const server = createServer(async (req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    let body = ''
    for await (const chunk of req) body += chunk
    const query = url.searchParams.get('query') ?? body
    requests.push({ settings: url.searchParams, body })
    if (/SELECT version\(\)/.test(query)) {
      const v = version()
      if (v === null) {
        res.writeHead(500, { 'x-clickhouse-exception-code': '241' }).end('Code: 241. DB::Exception: Memory limit exceeded')
        return
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(`${JSON.stringify({ v })}\n`)
      return
    }
    res.writeHead(200).end('')
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const clickhouse = clickhouseOverClient(
    createClient({
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      log: { level: ClickHouseLogLevel.OFF },
    }) as unknown as ClickHouseClientLike,
  )
  const inserts = () => requests.filter((r) => /^INSERT INTO/.test(r.settings.get('query') ?? ''))
  const versionQueries = () => requests.filter((r) => /version\(\)/.test(r.settings.get('query') ?? r.body)).length
  return { clickhouse, inserts, versionQueries }
}

describe('inserts over HTTP', () => {
  it('reads which servers deduplicate async inserts from their version', () => {
    expect(asyncInsertsDeduplicate('26.2.1.1')).toBe(true)
    expect(asyncInsertsDeduplicate('26.10.3.7')).toBe(true)
    expect(asyncInsertsDeduplicate('27.1.1.1')).toBe(true)
    expect(asyncInsertsDeduplicate('26.1.4.2')).toBe(false)
    expect(asyncInsertsDeduplicate('25.12.1.1')).toBe(false)
    expect(asyncInsertsDeduplicate('24.8.14.39-lts')).toBe(false)
    expect(asyncInsertsDeduplicate('')).toBe(false)
    expect(asyncInsertsDeduplicate('unknown')).toBe(false)
  })

  it('on a server before 26.2, sends an insert under a caller token synchronously, and one without asynchronously', async () => {
    const { clickhouse, inserts, versionQueries } = await fakeServer(() => '25.8.3.66')
    await clickhouse.insert('events_input', [{ a: 1 }], { token: 'flush-1:events' })
    await clickhouse.insert('events_input', [{ a: 2 }], { token: 'flush-2:events' })
    await clickhouse.insert('events_input', [{ a: 3 }])
    const [first, second, untokened] = inserts().map((r) => r.settings)
    expect(first.get('async_insert')).toBeNull()
    expect(first.get('deduplicate_insert')).toBeNull()
    expect(first.get('insert_deduplication_token')).toBe('flush-1:events')
    expect(second.get('insert_deduplication_token')).toBe('flush-2:events')
    expect(untokened.get('async_insert')).toBe('1')
    expect(untokened.get('wait_for_async_insert')).toBe('1')
    expect(untokened.get('insert_deduplication_token')).toMatch(/^[0-9a-f-]{36}$/)
    // the version is asked once
    expect(versionQueries()).toBe(1)
  })

  it('on 26.2 or later, sends every insert asynchronously, those under a caller token with deduplication on', async () => {
    const { clickhouse, inserts } = await fakeServer(() => '26.3.1.5')
    await clickhouse.insert('events_input', [{ a: 1 }], { token: 'flush-1:events' })
    await clickhouse.insert('events_input', [{ a: 3 }])
    const [tokened, untokened] = inserts().map((r) => r.settings)
    expect(tokened.get('async_insert')).toBe('1')
    expect(tokened.get('wait_for_async_insert')).toBe('1')
    expect(tokened.get('deduplicate_insert')).toBe('enable')
    expect(tokened.get('insert_deduplication_token')).toBe('flush-1:events')
    expect(untokened.get('async_insert')).toBe('1')
    expect(untokened.get('deduplicate_insert')).toBeNull()
  })

  it('an insert whose version question fails is not sent, and the next insert asks again', async () => {
    let answer: string | null = null
    const { clickhouse, inserts, versionQueries } = await fakeServer(() => answer)
    await expect(clickhouse.insert('events_input', [{ a: 1 }], { token: 't1' })).rejects.toThrow(/Memory limit/)
    expect(inserts()).toHaveLength(0)
    answer = '24.3.1.1'
    await clickhouse.insert('events_input', [{ a: 1 }], { token: 't1' })
    expect(versionQueries()).toBe(2)
    expect(inserts()[0].settings.get('async_insert')).toBeNull()
    // an unreachable server is an outage, as any other request to it
    const gone = await fakeServer(() => '26.2.1.1')
    servers[servers.length - 1].closeAllConnections()
    await new Promise((r) => servers.pop()!.close(r))
    await expect(gone.clickhouse.insert('events_input', [{ a: 1 }], { token: 't2' })).rejects.toBeInstanceOf(StoreUnavailableError)
  })
})
