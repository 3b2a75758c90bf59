import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import type { Services } from '../../lib/runtime/services'
import { type Site, newSite } from '../../lib/sites/sites'
import { REDIS_URL, client, testServices } from '../helpers'
import { NOW, UAS } from './report-reference'

/**
 * `crux=1` on GET /vitals against a stand-in for the Chrome UX Report API on 127.0.0.1 that speaks
 * its protocol: POST /v1/records:queryRecord with the key in the X-Goog-Api-Key header, a JSON body naming the origin, an optional
 * form factor and the metrics, answered with a record (three-bin histograms, p75 percentiles,
 * cumulative_layout_shift's as strings, the collection period as year/month/day), or a Google API
 * error ({error: {code, message, status}}). The expected numbers below are the stand-in's own.
 */

const KEY = 'crux-test-key-0123456789'
const METRIC_NAMES = [
  'largest_contentful_paint',
  'interaction_to_next_paint',
  'cumulative_layout_shift',
  'first_contentful_paint',
  'experimental_time_to_first_byte',
]

type Bin = { start: number | string; end?: number | string; density?: number }
type CruxMetric = { histogram: Bin[]; percentiles: { p75: number | string } }
type FormFactor = 'ALL' | 'PHONE' | 'DESKTOP'
type AskedFormFactor = FormFactor | 'TABLET'

/** A record's metrics, per form factor. TTFB is left out of every form factor, as CrUX does for a metric without enough data. */
const RECORDS: Record<FormFactor, Record<string, CruxMetric>> = {
  ALL: {
    largest_contentful_paint: {
      histogram: [
        { start: 0, end: 2500, density: 0.8123 },
        { start: 2500, end: 4000, density: 0.1234 },
        { start: 4000, density: 0.0643 },
      ],
      percentiles: { p75: 2210 },
    },
    interaction_to_next_paint: {
      histogram: [
        { start: 0, end: 200, density: 0.7012 },
        { start: 200, end: 500, density: 0.2101 },
        { start: 500, density: 0.0887 },
      ],
      percentiles: { p75: 183 },
    },
    // CLS: bins and p75 are strings; a density of 0 is left out (proto3 JSON)
    cumulative_layout_shift: {
      histogram: [{ start: '0.00', end: '0.10', density: 0.9321 }, { start: '0.10', end: '0.25', density: 0.0679 }, { start: '0.25' }],
      percentiles: { p75: '0.04' },
    },
    first_contentful_paint: {
      histogram: [
        { start: 0, end: 1800, density: 0.6544 },
        { start: 1800, end: 3000, density: 0.2403 },
        { start: 3000, density: 0.1053 },
      ],
      percentiles: { p75: 1912 },
    },
  },
  PHONE: {
    largest_contentful_paint: {
      histogram: [
        { start: 0, end: 2500, density: 0.6021 },
        { start: 2500, end: 4000, density: 0.2417 },
        { start: 4000, density: 0.1562 },
      ],
      percentiles: { p75: 3480 },
    },
    interaction_to_next_paint: {
      histogram: [
        { start: 0, end: 200, density: 0.5533 },
        { start: 200, end: 500, density: 0.3125 },
        { start: 500, density: 0.1342 },
      ],
      percentiles: { p75: 312 },
    },
    cumulative_layout_shift: {
      histogram: [
        { start: '0.00', end: '0.10', density: 0.7714 },
        { start: '0.10', end: '0.25', density: 0.1413 },
        { start: '0.25', density: 0.0873 },
      ],
      percentiles: { p75: '0.12' },
    },
    first_contentful_paint: {
      histogram: [
        { start: 0, end: 1800, density: 0.4402 },
        { start: 1800, end: 3000, density: 0.3351 },
        { start: 3000, density: 0.2247 },
      ],
      percentiles: { p75: 2790 },
    },
  },
  DESKTOP: {
    largest_contentful_paint: {
      histogram: [
        { start: 0, end: 2500, density: 0.9012 },
        { start: 2500, end: 4000, density: 0.0701 },
        { start: 4000, density: 0.0287 },
      ],
      percentiles: { p75: 1650 },
    },
    interaction_to_next_paint: {
      histogram: [
        { start: 0, end: 200, density: 0.8911 },
        { start: 200, end: 500, density: 0.0902 },
        { start: 500, density: 0.0187 },
      ],
      percentiles: { p75: 96 },
    },
    cumulative_layout_shift: {
      histogram: [{ start: '0.00', end: '0.10', density: 0.9655 }, { start: '0.10', end: '0.25', density: 0.0345 }, { start: '0.25' }],
      percentiles: { p75: '0.01' },
    },
    first_contentful_paint: {
      histogram: [
        { start: 0, end: 1800, density: 0.8104 },
        { start: 1800, end: 3000, density: 0.1322 },
        { start: 3000, density: 0.0574 },
      ],
      percentiles: { p75: 1102 },
    },
  },
}
const PERIOD = { firstDate: { year: 2026, month: 10, day: 13 }, lastDate: { year: 2026, month: 11, day: 9 } }

/** What the answer's crux.metrics must be for a form factor, written out from the records above by hand. */
const EXPECTED: Record<FormFactor, Record<string, { p75: number; good: number; needsImprovement: number; poor: number } | null>> = {
  ALL: {
    LCP: { p75: 2210, good: 0.8123, needsImprovement: 0.1234, poor: 0.0643 },
    INP: { p75: 183, good: 0.7012, needsImprovement: 0.2101, poor: 0.0887 },
    CLS: { p75: 0.04, good: 0.9321, needsImprovement: 0.0679, poor: 0 },
    FCP: { p75: 1912, good: 0.6544, needsImprovement: 0.2403, poor: 0.1053 },
    TTFB: null,
  },
  PHONE: {
    LCP: { p75: 3480, good: 0.6021, needsImprovement: 0.2417, poor: 0.1562 },
    INP: { p75: 312, good: 0.5533, needsImprovement: 0.3125, poor: 0.1342 },
    CLS: { p75: 0.12, good: 0.7714, needsImprovement: 0.1413, poor: 0.0873 },
    FCP: { p75: 2790, good: 0.4402, needsImprovement: 0.3351, poor: 0.2247 },
    TTFB: null,
  },
  DESKTOP: {
    LCP: { p75: 1650, good: 0.9012, needsImprovement: 0.0701, poor: 0.0287 },
    INP: { p75: 96, good: 0.8911, needsImprovement: 0.0902, poor: 0.0187 },
    CLS: { p75: 0.01, good: 0.9655, needsImprovement: 0.0345, poor: 0 },
    FCP: { p75: 1102, good: 0.8104, needsImprovement: 0.1322, poor: 0.0574 },
    TTFB: null,
  },
}

interface Asked {
  path: string
  key: string | null
  query: string
  contentType: string | undefined
  body: Record<string, unknown>
}

/** The stand-in: origins it has records for, one it rate-limits, one it never answers. */
function fakeCrux() {
  const known = new Set<string>()
  const rateLimited = new Set<string>()
  const silent = new Set<string>()
  const asked: Asked[] = []
  const googleError = (res: ServerResponse, code: number, status: string, message: string) => {
    res.writeHead(code, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify({ error: { code, message, status } }))
  }
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.setEncoding('utf8').on('data', (chunk) => (text += chunk))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake')
      let body: Record<string, unknown> = {}
      try {
        body = JSON.parse(text)
      } catch {
        return googleError(res, 400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.')
      }
      asked.push({
        path: url.pathname,
        key: (req.headers['x-goog-api-key'] as string | undefined) ?? null,
        query: url.search,
        contentType: req.headers['content-type'],
        body,
      })
      if (req.method !== 'POST' || url.pathname !== '/v1/records:queryRecord')
        return googleError(res, 404, 'NOT_FOUND', `no method ${req.method} ${url.pathname}`)
      if (req.headers['x-goog-api-key'] !== KEY)
        return googleError(res, 400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.')
      const unknownField = Object.keys(body).find((k) => !['origin', 'url', 'formFactor', 'metrics', 'effectiveConnectionType'].includes(k))
      if (unknownField)
        return googleError(
          res,
          400,
          'INVALID_ARGUMENT',
          `Invalid JSON payload received. Unknown name "${unknownField}": Cannot find field.`,
        )
      const formFactor = (body.formFactor ?? 'ALL') as AskedFormFactor
      if (!['ALL', 'PHONE', 'DESKTOP', 'TABLET'].includes(formFactor))
        return googleError(res, 400, 'INVALID_ARGUMENT', `Invalid value at 'form_factor'`)
      const origin = String(body.origin)
      if (silent.has(origin)) return // holds the request open until the client gives up
      if (rateLimited.has(origin))
        return googleError(res, 429, 'RESOURCE_EXHAUSTED', "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute'")
      if (!known.has(origin) || formFactor === 'TABLET') return googleError(res, 404, 'NOT_FOUND', 'chrome ux report data not found')
      const wanted = Array.isArray(body.metrics) ? (body.metrics as string[]) : METRIC_NAMES
      const metrics = Object.fromEntries(Object.entries(RECORDS[formFactor as FormFactor]).filter(([name]) => wanted.includes(name)))
      res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' })
      res.end(
        JSON.stringify({ record: { key: { origin, ...(body.formFactor ? { formFactor } : {}) }, metrics, collectionPeriod: PERIOD } }),
      )
    })
  })
  return {
    known,
    rateLimited,
    silent,
    asked,
    /** The requests made for an origin. */
    of: (origin: string) => asked.filter((a) => a.body.origin === origin),
    server: server as Server,
    url: '',
  }
}

describe('vitals with crux=1', () => {
  const fake = fakeCrux()
  let services: Services
  let key = ''
  let orgId = ''
  const sites: Record<'tracked' | 'plain' | 'unknown' | 'limited' | 'slow' | 'refused' | 'wwwOnly' | 'ga4', Site> = {} as never
  const withCrux = (apiKey = KEY) => ({ apiKey, baseUrl: fake.url, timeoutMs: 1500 })

  beforeAll(async () => {
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve))
    fake.url = `http://127.0.0.1:${(fake.server.address() as { port: number }).port}`
    services = { ...(await testServices({ now: () => NOW })), crux: withCrux() }
    const org = await createOrg(services.repositories, 'CrUX', NOW)
    orgId = org.id
    key = (await createApiKey(services.repositories, { orgId, name: 'r', scope: 'read' }, NOW)).key
    for (const name of Object.keys({
      tracked: 0,
      plain: 0,
      unknown: 0,
      limited: 0,
      slow: 0,
      refused: 0,
      wwwOnly: 0,
    }) as (keyof typeof sites)[]) {
      sites[name] = newSite({ domain: `${name}-${crypto.randomUUID().slice(0, 8)}.crux.test`, timezone: 'UTC' }, orgId, NOW)
    }
    sites.ga4 = {
      ...newSite({ domain: `ga4-${crypto.randomUUID().slice(0, 8)}.crux.test`, timezone: 'UTC' }, orgId, NOW),
      sources: ['ga4'],
      primarySource: 'ga4',
    }
    for (const site of Object.values(sites)) await services.repositories.sites.create(site)
    for (const name of ['tracked', 'plain', 'refused', 'ga4'] as const) fake.known.add(`https://${sites[name].domain}`)
    // served at its www host only: CrUX knows that origin, not the bare domain
    fake.known.add(`https://www.${sites.wwwOnly.domain}`)
    fake.rateLimited.add(`https://${sites.limited.domain}`)
    fake.silent.add(`https://${sites.slow.domain}`)
    // some vital samples of the tracked site, on a desktop and a phone
    const lines: string[] = []
    for (let i = 0; i < 60; i++) {
      const name = ['LCP', 'INP', 'CLS', 'FCP', 'TTFB'][i % 5]
      const value = name === 'CLS' ? (i % 7) * 0.05 : 100 + i * 83
      lines.push(
        JSON.stringify({
          timestamp: new Date(NOW.getTime() - (i + 2) * 3_600_000).toISOString(),
          site: sites.tracked.snippetId,
          name: 'vital',
          url: `https://${sites.tracked.domain}/p${i % 3}`,
          ip: '8.8.8.8',
          userAgent: UAS[i % 2 ? 2 : 0],
          vital: { name, value },
        }),
      )
    }
    const result = await importHits(lines, services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
  })

  afterAll(async () => {
    fake.server.closeAllConnections()
    await new Promise((resolve) => fake.server.close(resolve))
  })

  const read = async (site: Site, query: string, on: Services = services) => {
    const res = await client(on)('GET', `/api/v1/vitals?site_id=${site.id}${query}`, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    // the key never comes back, whatever happened
    expect(JSON.stringify(res.json)).not.toContain(KEY)
    return res.json
  }

  it('maps the record: p75 and the three bins of each metric, the collection period, and a metric CrUX lacks as null', async () => {
    const origin = `https://${sites.tracked.domain}`
    const json = await read(sites.tracked, '&range=7d&crux=1')
    expect(json.crux).toEqual({
      available: true,
      origin,
      formFactor: null,
      collectionPeriod: { firstDate: '2026-10-13', lastDate: '2026-11-09' },
      metrics: EXPECTED.ALL,
    })
    // one request, of the protocol's shape: the path, the key in its header and no query string, a JSON body without a form factor
    expect(fake.of(origin)).toEqual([
      { path: '/v1/records:queryRecord', key: KEY, query: '', contentType: 'application/json', body: { origin, metrics: METRIC_NAMES } },
    ])
  })

  it('sends PHONE or DESKTOP for form_factor and answers that form factor, each cached on its own', async () => {
    const origin = `https://${sites.plain.domain}`
    const phone = await read(sites.plain, '&crux=1&form_factor=phone')
    expect(phone.formFactor).toBe('phone')
    expect(phone.crux).toMatchObject({ available: true, origin, formFactor: 'phone', metrics: EXPECTED.PHONE })
    const desktop = await read(sites.plain, '&crux=1&form_factor=desktop')
    expect(desktop.crux).toMatchObject({ available: true, formFactor: 'desktop', metrics: EXPECTED.DESKTOP })
    const all = await read(sites.plain, '&crux=1')
    expect(all.crux).toMatchObject({ available: true, formFactor: null, metrics: EXPECTED.ALL })
    expect(fake.of(origin).map((a) => a.body.formFactor ?? 'none')).toEqual(['PHONE', 'DESKTOP', 'none'])
    // asked again: from the cache, no further request
    expect((await read(sites.plain, '&crux=1&form_factor=phone')).crux).toEqual(phone.crux)
    expect((await read(sites.plain, '&crux=1')).crux).toEqual(all.crux)
    expect(fake.of(origin)).toHaveLength(3)
  })

  it('the second read is served from the cache, kept for 12 hours', async () => {
    const origin = `https://${sites.ga4.domain}`
    const first = await read(sites.ga4, '&crux=1&range=30d')
    const second = await read(sites.ga4, '&crux=1&range=7d&percentile=90')
    expect(second.crux).toEqual(first.crux)
    expect(first.crux.available).toBe(true)
    expect(fake.of(origin)).toHaveLength(1)
    const ttl = await services.kv.ttl(`crux:all:${origin}`)
    expect(ttl).toBeGreaterThan(12 * 3600 - 60)
    expect(ttl).toBeLessThanOrEqual(12 * 3600)
  })

  it('a site that reads only ga4 still gets field data beside its available: false', async () => {
    const json = await read(sites.ga4, '&crux=1')
    expect(json.available).toBe(false)
    expect(json.crux.available).toBe(true)
    expect(json.crux.metrics.LCP).toEqual(EXPECTED.ALL.LCP)
  })

  it('leaves the vitals numbers as they are, and without crux=1 answers no crux at all', async () => {
    for (const query of ['&range=7d', '&range=7d&form_factor=phone&attribution=1', '&range=30d&percentile=90']) {
      const without = await read(sites.tracked, query)
      expect(without.crux).toBeUndefined()
      expect(without.summary.samples).toBeGreaterThan(0)
      const { crux, ...rest } = await read(sites.tracked, `${query}&crux=1`)
      expect(crux.available).toBe(true)
      expect(rest).toEqual(without)
    }
    // 60 samples, one in two on a phone
    expect((await read(sites.tracked, '&range=7d')).summary.samples).toBe(60)
    expect((await read(sites.tracked, '&range=7d&form_factor=phone')).summary.samples).toBe(30)
  })

  it('an origin without field data (404) answers available: false with the reason, and that is cached too', async () => {
    const origin = `https://${sites.unknown.domain}`
    const json = await read(sites.unknown, '&crux=1')
    expect(json.crux).toEqual({
      available: false,
      origin,
      formFactor: null,
      reason: expect.stringMatching(/^the Chrome UX Report has no field data for https:\/\/unknown-\S+ or https:\/\/www\.unknown-/),
    })
    expect(json.summary).toBeDefined()
    await read(sites.unknown, '&crux=1')
    // the domain's origin, then its www origin, each asked once
    expect(fake.of(origin)).toHaveLength(1)
    expect(fake.of(`https://www.${sites.unknown.domain}`)).toHaveLength(1)
    expect(await services.kv.ttl(`crux:all:${origin}`)).toBeGreaterThan(12 * 3600 - 60)
  })

  it('a domain CrUX has no data for is asked again at its www host, and the answer names that origin', async () => {
    const www = `https://www.${sites.wwwOnly.domain}`
    const json = await read(sites.wwwOnly, '&crux=1')
    expect(json.crux).toEqual({
      available: true,
      origin: www,
      formFactor: null,
      collectionPeriod: { firstDate: '2026-10-13', lastDate: '2026-11-09' },
      metrics: EXPECTED.ALL,
    })
    expect(fake.of(`https://${sites.wwwOnly.domain}`)).toHaveLength(1)
    expect(fake.of(www)).toHaveLength(1)
    // cached under the site's own origin: no further request either way
    expect((await read(sites.wwwOnly, '&crux=1')).crux).toEqual(json.crux)
    expect(fake.asked.filter((a) => String(a.body.origin).endsWith(sites.wwwOnly.domain))).toHaveLength(2)
  })

  it('a refused key answers available: false, is not cached, and the right key then gets the data', async () => {
    const origin = `https://${sites.refused.domain}`
    const badKey = { ...services, crux: withCrux('not-the-key') }
    for (let i = 0; i < 2; i++) {
      const json = await read(sites.refused, '&crux=1', badKey)
      expect(json.crux).toEqual({
        available: false,
        origin,
        formFactor: null,
        reason: expect.stringContaining("the CrUX API refused this server's API key (400 INVALID_ARGUMENT: API key not valid"),
      })
      expect(JSON.stringify(json)).not.toContain('not-the-key')
    }
    expect(fake.of(origin).map((a) => a.key)).toEqual(['not-the-key', 'not-the-key'])
    expect((await read(sites.refused, '&crux=1')).crux.available).toBe(true)
    expect(fake.of(origin)).toHaveLength(3)
  })

  it('a rate limit (429) and a service that does not answer are told apart, and neither is cached', async () => {
    const limited = `https://${sites.limited.domain}`
    for (let i = 0; i < 2; i++) {
      const json = await read(sites.limited, '&crux=1')
      expect(json.crux).toEqual({
        available: false,
        origin: limited,
        formFactor: null,
        reason: expect.stringMatching(/^the CrUX API's rate limit for this server's key is used up \(429 RESOURCE_EXHAUSTED/),
      })
    }
    expect(fake.of(limited)).toHaveLength(2)
    const slow = await read(sites.slow, '&crux=1')
    expect(slow.crux).toEqual({
      available: false,
      origin: `https://${sites.slow.domain}`,
      formFactor: null,
      reason: 'the CrUX API did not answer within 1.5 s',
    })
    expect(slow.available).toBe(true)
    expect(await services.kv.exists(`crux:all:${limited}`, `crux:all:https://${sites.slow.domain}`)).toBe(0)
  })

  it('a server without an API key says so and asks nothing', async () => {
    const before = fake.asked.length
    const json = await read(sites.plain, '&crux=1&form_factor=desktop', { ...services, crux: undefined })
    expect(json.crux).toEqual({
      available: false,
      origin: `https://${sites.plain.domain}`,
      formFactor: 'desktop',
      reason: 'no CrUX API key is configured on this server (CRUX_API_KEY)',
    })
    expect(fake.asked.length).toBe(before)
  })

  it('refuses crux other than 0 or 1, naming it', async () => {
    for (const bad of ['crux=2', 'crux=yes', 'crux=']) {
      const res = await client(services)('GET', `/api/v1/vitals?site_id=${sites.plain.id}&${bad}`, { key })
      expect(res.status, bad).toBe(400)
      expect(res.json.error, bad).toMatch(/^crux/)
    }
  })

  it('the get_vitals tool takes crux and answers the field data', async () => {
    const app = createApp(services)
    const rpc = async (body: unknown) => {
      const res = await app.request('http://api.test/api/mcp', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(200)
      return (await res.json()) as { result: any }
    }
    const { result } = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
    const tool = result.tools.find((t: { name: string }) => t.name === 'get_vitals')
    expect(tool.inputSchema.properties.crux).toMatchObject({ type: 'string', enum: ['0', '1'] })
    // the compact output schema names the answer's fields; crux's own are in the REST reference
    expect(tool.outputSchema.properties.crux).toMatchObject({ type: 'object' })
    const call = await rpc({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'get_vitals', arguments: { site_id: sites.tracked.id, crux: '1', form_factor: 'desktop' } },
    })
    expect(call.result.isError).toBeFalsy()
    expect(call.result.structuredContent.crux).toMatchObject({ available: true, formFactor: 'desktop', metrics: EXPECTED.DESKTOP })
  })

  it.skipIf(!REDIS_URL)('caches in Redis as well', async () => {
    const onRedis = { ...(await testServices({ kv: 'redis', now: () => NOW })), crux: withCrux() }
    await onRedis.repositories.orgs.create({ id: orgId, name: 'CrUX', plan: 'free', createdAt: NOW.toISOString() })
    const redisKey = (await createApiKey(onRedis.repositories, { orgId, name: 'r', scope: 'read' }, NOW)).key
    const site = newSite({ domain: `redis-${crypto.randomUUID().slice(0, 8)}.crux.test`, timezone: 'UTC' }, orgId, NOW)
    await onRedis.repositories.sites.create(site)
    const origin = `https://${site.domain}`
    fake.known.add(origin)
    const ask = () => client(onRedis)('GET', `/api/v1/vitals?site_id=${site.id}&crux=1&form_factor=phone`, { key: redisKey })
    const [first, second] = [await ask(), await ask()]
    expect(first.json.crux).toMatchObject({ available: true, metrics: EXPECTED.PHONE })
    expect(second.json.crux).toEqual(first.json.crux)
    expect(fake.of(origin)).toHaveLength(1)
    expect(await onRedis.kv.ttl(`crux:phone:${origin}`)).toBeGreaterThan(12 * 3600 - 60)
  })
})
