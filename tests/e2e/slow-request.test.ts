import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tempDir } from '../helpers'
import { type RunningServer, startServer } from './server-process'

describe('a request that trickles in', () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer({
      DATA_DIR: tempDir('slow-request'),
      SKIP_DEMO_TRAFFIC: '1',
      REQUEST_TIMEOUT_MS: '2000',
      LOG_LEVEL: 'error',
    })
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('is answered 408 and disconnected once REQUEST_TIMEOUT_MS has passed, not held for minutes', async () => {
    const { port } = new URL(server.url)
    const socket = connect(Number(port), '127.0.0.1')
    let answer = ''
    socket.on('data', (d) => (answer += d))
    const started = Date.now()
    const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)))
    socket.write('POST /api/event HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n{"site":')
    // a byte now and then, as a slow client sends it: never the whole body
    const drip = setInterval(() => socket.writable && socket.write(' '), 300)
    const after = await closed
    clearInterval(drip)
    expect(answer).toMatch(/^HTTP\/1\.1 408/)
    // closed by the 2-second limit (checked every second): Node's default of 300 s would outlast the test
    expect(after).toBeGreaterThanOrEqual(1900)
  })
})
