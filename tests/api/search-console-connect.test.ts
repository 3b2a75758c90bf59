import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { addOwner } from '../../lib/accounts/members'
import { googleConfig } from '../../lib/integrations/google/config'
import {
  SEARCH_CONSOLE_MAX_BYTES,
  SEARCH_CONSOLE_SCOPE,
  googleSearchConsoleConnector,
} from '../../lib/integrations/search-console/connector'
import { runSearchConsoleImports } from '../../lib/integrations/search-console/import'
import { guardedFetch } from '../../lib/network/guarded-fetch'
import { nodeEnvSchema, parseEnv } from '../../lib/runtime/env'
import { type FakeGoogle, startFakeGoogle } from '../fakes/google'
import { type Browser, connectGoogle, signedIn, startConnect } from '../google-connect'
import { type FixtureRow, fakeSearchConsole } from '../fakes/search-console'
import { REDIS_URL, type Harness, UNPACED_IMPORTS, checkAnswer, harness } from '../helpers'

/**
 * Search Console through REST, wired to the site's Google connection: the fake Google grants the
 * tokens (authorization code, refresh) and the fake Search Console accepts only access tokens whose
 * grant holds the webmasters.readonly scope. The owner connects in the browser with both scopes ->
 * consent -> callback -> confirmation -> the readable properties -> PATCH binds and imports ->
 * /search answers from the import -> DELETE.
 * Expected numbers are sums over the fixture rows below.
 */

const SECRET = 'test-server-secret-0123456789abcdef'
const GA4 = 'https://www.googleapis.com/auth/analytics.readonly'
const PROPERTY = 'sc-domain:example.com'
const NOW = new Date('2026-11-22T15:00:00Z')
const DAY = 86_400_000

function fixtureRows(): FixtureRow[] {
  const rows: FixtureRow[] = []
  for (let d = Date.parse('2026-11-01'); d <= Date.parse('2026-11-21'); d += DAY) {
    const date = new Date(d).toISOString().slice(0, 10)
    const base = { date, position: 3 }
    rows.push({ ...base, query: 'widgets', page: 'https://example.com/a', country: 'usa', device: 'DESKTOP', clicks: 10, impressions: 100 })
    rows.push({ ...base, query: 'gadgets', page: 'https://example.com/b', country: 'deu', device: 'MOBILE', clicks: 4, impressions: 80 })
    rows.push({
      ...base,
      query: '(anonymized)',
      page: 'https://example.com/a',
      country: 'gbr',
      device: 'DESKTOP',
      clicks: 2,
      impressions: 20,
      anonymized: true,
    })
  }
  return rows
}

describe('Search Console wired to the Google connection, through REST', () => {
  let google: FakeGoogle
  let searchConsole: Awaited<ReturnType<typeof fakeSearchConsole>>
  let t: Harness
  const rows = fixtureRows()
  const pending: Promise<unknown>[] = []
  const answers: string[] = []
  let owner: Browser
  let call: (
    method: string,
    path: string,
    options?: { key?: string; body?: unknown },
  ) => Promise<{ status: number; json: any; text: string }>

  beforeAll(async () => {
    google = await startFakeGoogle({ properties: [] })
    searchConsole = await fakeSearchConsole({
      sites: [
        { siteUrl: PROPERTY, permissionLevel: 'siteOwner' },
        { siteUrl: 'https://unverified.example/', permissionLevel: 'siteUnverifiedUser' },
      ],
      rows: { [PROPERTY]: rows },
      tokens: [],
      vouchFor: (token) => google.accessTokenHolds(token, SEARCH_CONSOLE_SCOPE),
    })
    const env = parseEnv(nodeEnvSchema, { ...google.env(), GOOGLE_SEARCH_CONSOLE_URL: searchConsole.url, SERVER_SECRET: SECRET })
    const config = googleConfig(env)!
    t = await harness({ kv: REDIS_URL ? 'redis' : 'embedded', now: () => NOW, limits: UNPACED_IMPORTS, with: { google: config } })
    t.services.searchConsole = googleSearchConsoleConnector({
      ...t.services,
      google: config,
      searchConsoleFetch: guardedFetch({ allowPrivate: true, maxBytes: SEARCH_CONSOLE_MAX_BYTES }),
    })
    const app = createApp(t.services, { level: 'error', write: () => {} })
    const executionCtx = { waitUntil: (task: Promise<unknown>) => void pending.push(task), passThroughOnException() {}, props: {} }
    call = async (method, path, options = {}) => {
      const url = `https://api.test${path}`
      const headers: Record<string, string> = {}
      if (options.key) headers.authorization = `Bearer ${options.key}`
      if (options.body !== undefined) headers['content-type'] = 'application/json'
      const init = { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) }
      const res = await app.request(url, init, {}, executionCtx)
      const text = await res.text()
      answers.push(text)
      if (res.status >= 500) throw new Error(`${method} ${path}: ${res.status} ${text}`)
      const json = res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : null
      checkAnswer(method, url, res.status, json)
      return { status: res.status, json, text }
    }
    await addOwner(t.repositories, t.a.org.id, 'owner@example.com', NOW)
    owner = await signedIn(t.services, 'https://api.test', (url, init) => app.request(url, init, {}, executionCtx), 'owner@example.com')
  })

  afterAll(async () => {
    await searchConsole?.close()
    await google?.stop()
  })

  const path = () => `/api/v1/sites/${t.a.site.id}/search-console`
  const connectPage = () => `https://api.test/app/sites/${t.a.site.id}/settings/google/connect`

  it('a connection made for GA4 only cannot read Search Console: the read says so, and connecting asks for both scopes', async () => {
    const before = await call('GET', path(), { key: t.a.write.key })
    expect(before.json).toMatchObject({ connected: false, siteUrl: null, google: 'not_connected', sites: [], import: null })
    expect(before.json.connectUrl).toBe(connectPage())
    expect(new URL(await startConnect(owner, t.a.site.id)).searchParams.get('scope')).toBe(`openid email ${GA4} ${SEARCH_CONSOLE_SCOPE}`)
    // a connection made while this server did not read Search Console: the analytics scope only
    const connector = t.services.searchConsole
    t.services.searchConsole = undefined
    await connectGoogle(owner, t.a.site.id)
    t.services.searchConsole = connector
    const read = await call('GET', path(), { key: t.a.write.key })
    expect(read.json).toMatchObject({ google: 'needs_reconnect', sites: [], reason: expect.stringContaining('GA4 only') })
    expect(read.json.connectUrl).toBe(connectPage())
    // a read key is told the same, with no page to connect at
    expect((await call('GET', path(), { key: t.a.read.key })).json).toMatchObject({ google: 'needs_reconnect', connectUrl: null })
    const refused = await call('PATCH', path(), { key: t.a.write.key, body: { siteUrl: PROPERTY } })
    expect(refused.status).toBe(409)
    expect(refused.json.error).toMatch(/GA4 only/)
  })

  it('connects with both scopes, lists the properties, refuses an unverified one and binds the verified one', async () => {
    const { page } = await connectGoogle(owner, t.a.site.id)
    expect(page).toContain('which will read its Google Analytics and Search Console data')
    const connected = await call('GET', path(), { key: t.a.read.key })
    expect(connected.json).toMatchObject({ connected: false, google: 'connected', reason: null, connectUrl: null })
    expect(connected.json.sites.map((s: { siteUrl: string; verified: boolean }) => [s.siteUrl, s.verified])).toEqual([
      [PROPERTY, true],
      ['https://unverified.example/', false],
    ])
    const unverified = await call('PATCH', path(), { key: t.a.write.key, body: { siteUrl: 'https://unverified.example/' } })
    expect(unverified.status).toBe(400)
    expect(unverified.json.error).toMatch(/"https:\/\/unverified.example\/" is not verified/)
    expect((await call('PATCH', path(), { key: t.a.read.key, body: { siteUrl: PROPERTY } })).status).toBe(403)

    const bound = await call('PATCH', path(), { key: t.a.write.key, body: { siteUrl: PROPERTY } })
    expect(bound.status).toBe(200)
    expect(bound.json).toMatchObject({ connected: true, siteUrl: PROPERTY, property: { kind: 'domain' }, import: { state: 'queued' } })
    // the first part of the import ran in the background; the job takes the rest
    await Promise.all(pending.splice(0))
    expect(searchConsole.queries.length).toBeGreaterThan(0)
    for (let run = 0; run < 20; run++) {
      const state = await t.repositories.searchConsoleImports.get(t.a.site.id)
      if (state?.state === 'done') break
      await runSearchConsoleImports(t.services, async () => [(await t.repositories.sites.get(t.a.site.id))!], NOW, {
        log: (line) => {
          throw new Error(line)
        },
        shouldStop: () => false,
      })
    }
    const imports = await call('GET', `/api/v1/sites/${t.a.site.id}/imports`, { key: t.a.read.key })
    const imported = imports.json.imports.find((i: { kind: string }) => i.kind === 'search_console')
    expect(imported).toMatchObject({ state: 'done', from: '2025-07-21', to: '2026-11-21', progress: { fraction: 1 } })
    const days = new Set(rows.map((r) => r.date)).size
    // per day: 2 rows by date, query, page, country, device (the anonymized query left out) and 3 totals by date, country, device
    expect(imported.rows).toBe(days * 5)
    // the site read shows the same import: every day of the 16 months asked, the fixture's days stored
    const span = (Date.parse('2026-11-21') - Date.parse('2025-07-21')) / 86_400_000 + 1
    const site = await call('GET', `/api/v1/sites/${t.a.site.id}`, { key: t.a.read.key })
    expect(site.json.integrations.searchConsole).toEqual({
      connected: true,
      siteUrl: PROPERTY,
      lastImport: {
        state: 'done',
        from: '2025-07-21',
        to: '2026-11-21',
        daysDone: span,
        daysTotal: span,
        rows: days * 5,
        retryAt: null,
        error: null,
      },
    })
  }, 300_000)

  it('search answers from the import; a country filter takes alpha-2 codes as every read does', async () => {
    const range = 'range=custom&from=2026-11-08&to=2026-11-21'
    const inWindow = rows.filter((r) => r.date >= '2026-11-08' && r.date <= '2026-11-21')
    const sum = (list: FixtureRow[]) => ({
      clicks: list.reduce((a, r) => a + r.clicks, 0),
      impressions: list.reduce((a, r) => a + r.impressions, 0),
    })
    const json = (await call('GET', `/api/v1/search?site_id=${t.a.site.id}&${range}`, { key: t.a.read.key })).json
    expect(json).toMatchObject({ connected: true, siteUrl: PROPERTY, totals: sum(inWindow) })
    for (const [code, alpha3] of [
      ['US', 'usa'],
      ['de', 'deu'],
      ['GB', 'gbr'],
    ]) {
      const filters = encodeURIComponent(JSON.stringify([{ dimension: 'country', operator: 'is', value: [code] }]))
      const filtered = (await call('GET', `/api/v1/search?site_id=${t.a.site.id}&${range}&filters=${filters}`, { key: t.a.read.key })).json
      expect(filtered.totals, code).toMatchObject(sum(inWindow.filter((r) => r.country === alpha3)))
    }
    const stored = await t.clickhouse.query<{ country: string }>(
      'SELECT DISTINCT country FROM search_console_totals WHERE site_id = {s:UUID} ORDER BY country',
      { s: t.a.site.id },
    )
    expect(stored.map((r) => r.country)).toEqual(['DE', 'GB', 'US'])
  })

  it('DELETE unbinds and keeps the rows and the Google grant; no answer ever carries a token', async () => {
    const deleted = await call('DELETE', path(), { key: t.a.write.key })
    expect(deleted.json).toEqual({ disconnected: true, siteUrl: PROPERTY })
    const read = await call('GET', path(), { key: t.a.read.key })
    expect(read.json).toMatchObject({ connected: false, siteUrl: null, google: 'connected', import: null })
    expect((await call('GET', `/api/v1/search?site_id=${t.a.site.id}`, { key: t.a.read.key })).json).toEqual({
      connected: false,
      siteUrl: null,
    })
    const [kept] = await t.clickhouse.query<{ n: string }>('SELECT count() AS n FROM search_console_rows WHERE site_id = {s:UUID}', {
      s: t.a.site.id,
    })
    expect(Number(kept.n)).toBeGreaterThan(0)
    for (const token of google.issuedTokens()) expect(answers.join('\n')).not.toContain(token)
  })
})
