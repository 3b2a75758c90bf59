import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { isJsonAnswer } from '../../functions/endpoint'
import { endpoints } from '../../functions/registry'
import { importHits } from '../../lib/ingest/import'
import { memoryRateLimiter } from '../../lib/accounts/ratelimit'
import { harness, type Harness } from '../helpers'

/**
 * Generated from the registry, so every endpoint (and every later one) is fuzzed: random, huge,
 * unicode, negative, repeated and malformed values in every declared parameter and body field.
 * No answer may be a 5xx, and every error must be exactly {"error": string}.
 */

const RUNS_PER_ENDPOINT = 150
const unlimited = {
  default: { max: 1e9, windowMs: 60_000 },
  collect: { max: 1e9, windowMs: 60_000 },
  ping: { max: 1e9, windowMs: 60_000 },
  proxy: { max: 1e9, windowMs: 60_000 },
}

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1',
    '1000000000000000000000',
    '1e309',
    'NaN',
    'null',
    'true',
    '[]',
    '{}',
    '%',
    '%ff',
    '%00',
    '\u0000',
    '../..',
    '*',
    'custom',
    'all',
    'realtime',
    '9999-12-31',
    '0001-01-01',
    '2026-02-30',
    '[{"dimension":"path","operator":"is","value":["/"]}]',
    '[{"dimension":"goal","operator":"matches","value":["("]}]',
    '[{"dimension":"path","operator":"matches","value":["("]}]',
    'SystemV/EST5',
  ),
  fc.integer().map(String),
  fc.double().map(String),
  fc.string({ minLength: 3000, maxLength: 5000 }),
)
const jsonValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  nasty,
  fc.array(nasty, { maxLength: 3 }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
)

describe('fuzzing every registered endpoint', () => {
  let t: Harness
  let siteIds: string[]

  beforeAll(async () => {
    t = await harness({ limiter: memoryRateLimiter(Date.now, unlimited) })
    const day = new Date(Date.now() - 3600_000).toISOString()
    await importHits(
      [
        JSON.stringify({
          timestamp: day,
          site: t.a.site.snippetId,
          name: 'pageview',
          url: `https://${t.a.site.domain}/`,
          ip: '203.0.113.9',
          userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
        }),
      ],
      t.services.ingestor,
    )
    siteIds = [t.a.site.id, t.a.site.snippetId, t.b.site.id, t.b.site.snippetId, '00000000-0000-4000-8000-000000000000']
  })

  let total = 0
  afterAllReport()

  for (const endpoint of endpoints) {
    it(`${endpoint.method} ${endpoint.path}`, { timeout: 300_000 }, async () => {
      const paramNames = Object.keys(endpoint.params?.shape ?? {})
      const bodyNames = Object.keys((endpoint.body as unknown as { shape?: Record<string, unknown> })?.shape ?? {})
      const value = (name: string) => (name.includes('site') ? fc.oneof(fc.constantFrom(...siteIds), nasty) : nasty)
      const request = fc.record({
        params: fc
          .dictionary(fc.constantFrom(...paramNames, 'junk'), fc.array(fc.constant(null), { minLength: 1, maxLength: 2 }), {
            maxKeys: paramNames.length + 1,
          })
          .chain((picked) =>
            fc.tuple(
              ...Object.keys(picked).map((name) =>
                fc.tuple(fc.constant(name), fc.array(value(name), { minLength: 1, maxLength: picked[name].length })),
              ),
            ),
          ),
        body: fc.oneof(
          fc.dictionary(fc.constantFrom(...bodyNames, 'site_id', 'junk'), jsonValue).map((o) => JSON.stringify(o)),
          fc.constantFrom('', '{', '[]', 'null', '"x"', `{"events":[${'{}'.repeat(3)}]}`, '\uffff\ud800'),
          jsonValue.map((v) => JSON.stringify(v) ?? ''),
        ),
        key: fc.constantFrom(t.a.write.key, t.a.read.key, t.ingest.key, 'wak_nope', ''),
      })
      await fc.assert(
        fc.asyncProperty(request, async ({ params, body, key }) => {
          let path = endpoint.path
          const query = new URLSearchParams()
          for (const [name, values] of params) {
            if (path.includes(`{${name}}`)) path = path.replace(`{${name}}`, encodeURIComponent(values[0]))
            else for (const v of values) query.append(name, v)
          }
          path = path.replace(/\{\w+\}/g, () => encodeURIComponent(siteIds[0]))
          const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
          if (key) headers.authorization = `Bearer ${key}`
          const res = await t.app.request(`http://api.test${path}${query.size ? `?${query}` : ''}`, {
            method: endpoint.method,
            headers,
            body: endpoint.method === 'GET' ? undefined : body,
          })
          total++
          const text = await res.text()
          expect(res.status, `${endpoint.method} ${path}?${query} ${body.slice(0, 200)}: ${text.slice(0, 300)}`).toBeLessThan(500)
          if (res.status >= 400 && endpoint.path !== '/api/mcp') {
            const json = JSON.parse(text)
            expect(Object.keys(json), text).toEqual(['error'])
            expect(typeof json.error).toBe('string')
          }
          if (res.status < 300 && isJsonAnswer(endpoint.response)) expect(() => JSON.parse(text)).not.toThrow()
        }),
        { numRuns: RUNS_PER_ENDPOINT },
      )
    })
  }

  function afterAllReport() {
    // the count goes into the note of whoever changes this: how many requests a run sends
    process.on('beforeExit', () => total && console.log(`fuzzed requests: ${total}`))
  }
})
