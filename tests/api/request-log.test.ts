import { describe, expect, it, vi } from 'vitest'
import { createApp } from '../../functions/app'
import { LINES_DELAY_MS, LINES_MAX_CHARS, batchedLines, freshRequestId, loggedPath, requestTracer } from '../../functions/request-log'
import { testServices } from '../helpers'

describe('request logs', () => {
  it('an internal error is logged and answered with the id of its request, which X-Request-Id carries', async () => {
    const services = await testServices()
    services.repositories.keys.byHash = async () => {
      throw new Error('the store fell over')
    }
    const lines: string[] = []
    const app = createApp(services, { level: 'info', write: (line) => lines.push(line) })
    const res = await app.request('http://api.test/api/v1/me', { headers: { authorization: 'Bearer wak_whatever' } })
    expect(res.status).toBe(500)
    const id = res.headers.get('x-request-id')!
    expect((await res.json()).error).toBe(`internal error (request ${id})`)
    const [failure, request] = lines.map((l) => JSON.parse(l))
    expect(failure).toMatchObject({
      level: 'error',
      requestId: id,
      method: 'GET',
      path: '/api/v1/me',
      error: expect.stringContaining('the store fell over'),
    })
    expect(request).toMatchObject({ level: 'info', requestId: id, status: 500 })
  })

  it('each level writes what it says', async () => {
    const services = await testServices()
    const count = async (level: 'silent' | 'error' | 'info') => {
      const lines: string[] = []
      const res = await createApp(services, { level, write: (line) => lines.push(line) }).request('http://api.test/health')
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      return lines.length
    }
    expect([await count('silent'), await count('error'), await count('info')]).toEqual([0, 0, 1])
  })

  it('never logs the value of a credential parameter', () => {
    expect(loggedPath('http://x/api/v1/collect?key=wak_secret&site=a', '/api/v1/collect')).toBe('/api/v1/collect?key=redacted&site=a')
    expect(loggedPath('http://x/api/v1/stats?site_id=a&range=7d', '/api/v1/stats')).toBe('/api/v1/stats?site_id=a&range=7d')
    expect(loggedPath('http://x/health', '/health')).toBe('/health')
    // a shared dashboard's secret link
    expect(loggedPath('http://x/share/a?auth=s3cret&range=7d', '/share/a')).toBe('/share/a?auth=redacted&range=7d')
  })

  it('logs a query as the URL parser writes it back, plain or not', () => {
    const logged = (query: string) => loggedPath(`http://x/p?${query}`, '/p')
    expect(logged('site=ab_c-1.2&range=7d')).toBe('/p?site=ab_c-1.2&range=7d')
    expect(logged('Api_Key=s&x=1')).toBe('/p?Api_Key=redacted&x=1')
    expect(logged('x=1&TOKEN=s')).toBe('/p?x=1&TOKEN=redacted')
    // escaped, or written otherwise by the parser: the same as before
    expect(logged('k%65y=s')).toBe('/p?key=redacted')
    expect(logged('a=b%20c&d=e/f')).toBe('/p?a=b+c&d=e%2Ff')
    expect(logged('a&b=')).toBe('/p?a=&b=')
    expect(logged('tokens=1&subkey=2')).toBe('/p?tokens=1&subkey=2')
  })

  it('a line repeated for the same URL names its own method, path and status each time, credentials redacted every time', () => {
    const lines: string[] = []
    const tracer = requestTracer({ level: 'info', write: (line) => lines.push(line) })
    const asked = [
      ['GET', 'http://x/api/public/live?site=ab&range=day', '/api/public/live', 200],
      ['GET', 'http://x/api/public/live?site=ab&range=day', '/api/public/live', 404],
      ['HEAD', 'http://x/api/public/live?site=ab&range=day', '/api/public/live', 200],
      ['GET', 'http://x/api/public/live?site=ab&range=day', '/api/public/live', 200],
      ['GET', 'http://x/api/public/live?site=ab&range=week', '/api/public/live', 200],
      ['POST', 'http://x/api/v1/collect?key=wak_one&site=a', '/api/v1/collect', 202],
      ['POST', 'http://x/api/v1/collect?key=wak_one&site=a', '/api/v1/collect', 202],
      ['POST', 'http://x/api/v1/collect?k%65y=wak_two', '/api/v1/collect', 202],
      ['POST', 'http://x/api/v1/collect?k%65y=wak_two', '/api/v1/collect', 202],
    ] as const
    asked.forEach(([method, url, path, status], i) => tracer.line(method, url, path, status, performance.now(), `id-${i}`))
    const logged = lines.map((l) => JSON.parse(l))
    expect(logged.map((l) => [l.method, l.path, l.status, l.requestId])).toEqual([
      ['GET', '/api/public/live?site=ab&range=day', 200, 'id-0'],
      ['GET', '/api/public/live?site=ab&range=day', 404, 'id-1'],
      ['HEAD', '/api/public/live?site=ab&range=day', 200, 'id-2'],
      ['GET', '/api/public/live?site=ab&range=day', 200, 'id-3'],
      ['GET', '/api/public/live?site=ab&range=week', 200, 'id-4'],
      ['POST', '/api/v1/collect?key=redacted&site=a', 202, 'id-5'],
      ['POST', '/api/v1/collect?key=redacted&site=a', 202, 'id-6'],
      ['POST', '/api/v1/collect?key=redacted', 202, 'id-7'],
      ['POST', '/api/v1/collect?key=redacted', 202, 'id-8'],
    ])
    expect(lines.join('\n')).not.toMatch(/wak_/)
  })

  it('fresh ids are UUID-shaped, never repeat in a process, and differ between processes', async () => {
    const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
    const ids = Array.from({ length: 5000 }, freshRequestId)
    expect(ids.filter((id) => !UUID.test(id))).toEqual([])
    expect(new Set(ids).size).toBe(ids.length)
    // another process loads the module afresh: it draws its own prefix, so its ids are not these
    vi.resetModules()
    const other = (await import('../../functions/request-log')).freshRequestId
    const theirs = Array.from({ length: 5000 }, other)
    expect(theirs.filter((id) => !UUID.test(id))).toEqual([])
    expect(theirs.filter((id) => ids.includes(id))).toEqual([])
    expect(theirs[0].slice(0, 24)).not.toBe(ids[0].slice(0, 24))
  })

  it('lines are written together: after a short delay, at once past the size limit, and on flush', () => {
    vi.useFakeTimers()
    try {
      const writes: string[] = []
      const lines = batchedLines({ write: (chunk) => writes.push(chunk) })
      lines.write('a')
      lines.write('b')
      vi.advanceTimersByTime(LINES_DELAY_MS - 1)
      expect(writes).toEqual([])
      vi.advanceTimersByTime(1)
      expect(writes).toEqual(['a\nb\n'])
      // the delay counts from the first line that waits
      lines.write('c')
      vi.advanceTimersByTime(LINES_DELAY_MS / 2)
      lines.write('d')
      vi.advanceTimersByTime(LINES_DELAY_MS / 2)
      expect(writes).toEqual(['a\nb\n', 'c\nd\n'])
      // a long line goes at once, with what waited before it
      lines.write('e')
      lines.write('x'.repeat(LINES_MAX_CHARS))
      expect(writes).toEqual(['a\nb\n', 'c\nd\n', `e\n${'x'.repeat(LINES_MAX_CHARS)}\n`])
      lines.write('f')
      lines.flush()
      lines.flush()
      vi.advanceTimersByTime(LINES_DELAY_MS)
      expect(writes.slice(3)).toEqual(['f\n'])
    } finally {
      vi.useRealTimers()
    }
  })
})
