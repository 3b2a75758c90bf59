import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../functions/app'
import { createApiKey } from '../../lib/accounts/admin'
import { addOwner } from '../../lib/accounts/members'
import { GOOGLE_NOT_CONFIGURED, googleConfig } from '../../lib/integrations/google/config'
import { importSite, runGa4Imports } from '../../lib/integrations/ga4/import'
import { runDueImports } from '../../lib/integrations/due-imports'
import { nodeEnvSchema, parseEnv } from '../../lib/runtime/env'
import { type Site, newSite } from '../../lib/sites/sites'
import { COLUMNS, expectedRows, ga4Sessions } from '../fakes/ga4-fixture'
import { type FakeGoogle, startFakeGoogle } from '../fakes/google'
import { type Browser, connectGoogle, consent, signedIn, startConnect } from '../google-connect'
import { REDIS_URL, type Harness, checkAnswer, harness } from '../helpers'

/**
 * The Google connection and the GA4 import, through REST against a stand-in for Google
 * (tests/fakes/google.ts) that computes its reports from fixture sessions. The rows expected in
 * imported_aggregates are computed here from the same sessions, by a reference written in the
 * table's own terms.
 */

const SECRET = 'test-server-secret-0123456789abcdef'
const PROPERTY = '314159'
const OTHER_PROPERTY = '271828'

async function storedRows(t: Harness, siteId: string) {
  const rows = await t.clickhouse.query<Record<string, unknown>>(
    `SELECT dataset, toString(date) AS date, hour, ${COLUMNS.join(', ')}, visitors, visits, engaged_visits, pageviews, engagement_seconds, events
     FROM imported_aggregates FINAL WHERE site_id = {site:UUID} AND source = 'ga4'`,
    { site: siteId },
  )
  return rows
    .map((r) =>
      JSON.stringify([
        r.dataset,
        r.date,
        Number(r.hour),
        ...COLUMNS.map((c) => r[c]),
        Number(r.visitors),
        Number(r.visits),
        Number(r.engaged_visits),
        Number(r.pageviews),
        Number(r.engagement_seconds),
        Number(r.events),
      ]),
    )
    .sort()
}

describe('the GA4 connection and import', () => {
  let fake: FakeGoogle
  let t: Harness
  let site: Site
  let at = new Date('2026-11-20T11:00:00Z')
  const lines: string[] = []
  const answers: string[] = []
  let call: (
    method: string,
    path: string,
    options?: { key?: string; body?: unknown },
  ) => Promise<{ status: number; json: any; text: string; headers: Headers }>
  const history = ga4Sessions({ from: '2026-11-14', days: 7, perDay: 12, users: 30 })
  const property = {
    propertyId: PROPERTY,
    displayName: 'Example web',
    accountId: '1001',
    accountName: 'Example account',
    sessions: history,
    realtime: [
      { user: 'r1', minutesAgo: 0, views: 2, countryId: 'DE', deviceCategory: 'desktop', eventName: 'page_view' },
      { user: 'r2', minutesAgo: 3, views: 1, countryId: 'FR', deviceCategory: 'mobile', eventName: 'sign_up' },
      { user: 'r1', minutesAgo: 4, views: 1, countryId: 'DE', deviceCategory: 'desktop', eventName: 'sign_up' },
      { user: 'r3', minutesAgo: 12, views: 5 },
      { user: 'r4', minutesAgo: 29, views: 1 },
      { user: 'r5', minutesAgo: 31, views: 1 },
    ],
  }
  const job = (trigger?: 'hourly' | 'daily') =>
    runGa4Imports(t.services, at, { log: (line) => lines.push(line), shouldStop: () => false }, trigger)
  /** The job of imports due at a time of their own, which the Node home's timer runs when `wakeJob` asks it to. */
  const dueJob = () => runDueImports(t.services, { log: (line) => lines.push(line), shouldStop: () => false })
  const wakes: { job: string; atMs: number }[] = []
  const imports = async (siteId = site.id) => (await call('GET', `/api/v1/sites/${siteId}/imports`, { key: t.a.read.key })).json.imports
  /** Waits for the background work a request started (Node runs it on its own) to settle: the site's lease is free again. */
  async function settled(siteId = site.id) {
    for (let i = 0; i < 400; i++) {
      const lease = await t.kv.get(`ga4:site:${siteId}:lease`)
      const runs = await t.repositories.ga4Imports.list(siteId)
      if (!lease && runs.every((r) => r.state !== 'queued' || r.retryAt)) return
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    throw new Error('the background import did not settle')
  }
  /** The organization's owner, signed in: Google is connected in their browser. */
  let owner: Browser

  beforeAll(async () => {
    fake = await startFakeGoogle({
      properties: [
        property,
        { propertyId: OTHER_PROPERTY, displayName: 'Other app', accountId: '1002', accountName: 'Second account', sessions: [] },
      ],
      accountsPerPage: 1,
      maxPageRows: 9,
    })
    const env = parseEnv(nodeEnvSchema, { ...fake.env(), SERVER_SECRET: SECRET })
    t = await harness({
      kv: REDIS_URL ? 'redis' : 'embedded',
      now: () => at,
      with: { google: googleConfig(env), wakeJob: (job, atMs) => void wakes.push({ job, atMs }) },
    })
    site = t.a.site
    const app = createApp(t.services, { level: 'debug', write: (line) => lines.push(line) })
    await addOwner(t.repositories, t.a.org.id, 'owner@example.com', at)
    owner = await signedIn(t.services, 'https://api.test', (url, init) => app.request(url, init), 'owner@example.com')
    call = async (method, path, options = {}) => {
      const url = `https://api.test${path}`
      const headers: Record<string, string> = {}
      if (options.key) headers.authorization = `Bearer ${options.key}`
      if (options.body !== undefined) headers['content-type'] = 'application/json'
      const res = await app.request(url, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) })
      const text = await res.text()
      answers.push(text)
      if (res.status >= 500) throw new Error(`${method} ${path}: ${res.status} ${text}`)
      const json = res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : null
      checkAnswer(method, url, res.status, json)
      return { status: res.status, json, text, headers: res.headers }
    }
    vi.spyOn(console, 'error').mockImplementation((...args) => void lines.push(args.map(String).join(' ')))
  })

  afterAll(async () => {
    vi.restoreAllMocks()
    await fake?.stop()
  })

  it('offers the page to connect at; the browser goes on to Google: offline access, consent, the read-only Analytics scope and a signed state', async () => {
    const { json } = await call('GET', `/api/v1/sites/${site.id}/ga4`, { key: t.a.write.key })
    expect(json).toMatchObject({ connected: false, status: 'not_connected', reason: null, properties: [], propertyId: null, import: null })
    expect(json.connectUrl).toBe(`https://api.test/app/sites/${site.id}/settings/google/connect`)
    const url = new URL(await startConnect(owner, site.id))
    expect(`${url.origin}${url.pathname}`).toBe(`${fake.url}/o/oauth2/v2/auth`)
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: fake.clientId,
      redirect_uri: 'https://api.test/oauth/google/callback',
      scope: 'openid email https://www.googleapis.com/auth/analytics.readonly',
      access_type: 'offline',
      prompt: 'consent',
    })
    expect(url.searchParams.get('state')).toMatch(/^[\w-]+\.[\w-]+$/)
  })

  it('refuses a bad or tampered state with a 400, sends an expired or reused one back to the site page, and stores nothing', async () => {
    const other = newSite({ domain: 'other-ga4.example.com' }, t.a.org.id, at)
    await t.repositories.sites.create(other)
    const back = new URL(await consent(await startConnect(owner, other.id)))
    const state = back.searchParams.get('state')!
    const code = back.searchParams.get('code')!
    const tampered = `${state.split('.')[0].slice(0, -2)}AA.${state.split('.')[1]}`
    for (const bad of ['', 'nonsense', tampered, `${state}x`]) {
      const res = await call('GET', `/oauth/google/callback?code=${encodeURIComponent(code)}&state=${encodeURIComponent(bad)}`)
      expect(res.status, bad).toBe(400)
      expect(res.json.error).toMatch(/^state: /)
    }
    // 15 minutes later the state is expired: back to the site's page, which says so
    const later = at
    at = new Date(at.getTime() + 15 * 60_000 + 1000)
    const expired = await owner.open(`${back.pathname}${back.search}`)
    at = later
    expect(expired.headers.get('location')).toBe(`https://api.test/app/sites/${other.id}/settings/integrations?google=expired#google`)
    expect(await t.repositories.google.get(other.id)).toBeNull()
    // a fresh state works once; the same callback again changes nothing
    const { back: used } = await connectGoogle(owner, other.id)
    const stored = await t.repositories.google.get(other.id)
    expect(stored).toMatchObject({ status: 'connected' })
    const again = await owner.open(used)
    expect(again.headers.get('location')).toMatch(/google=expired/)
    expect(await t.repositories.google.get(other.id)).toEqual(stored)
    await t.repositories.google.delete(other.id)
  })

  it('connects through the callback once confirmed, keeps the refresh token sealed, and lists the readable properties across pages', async () => {
    const { page, back } = await connectGoogle(owner, site.id)
    expect(page).toContain(site.domain)
    expect(page).toContain(fake.account)
    expect(new URL(back).origin).toBe('https://api.test')
    const stored = await t.repositories.google.get(site.id)
    expect(stored).toMatchObject({ status: 'connected', orgId: t.a.org.id, ga4: null })
    const raw = JSON.stringify(await t.kv.get(`google:site:${site.id}`))
    for (const token of fake.issuedTokens()) expect(raw).not.toContain(token)
    expect(stored!.refreshToken).toMatch(/^v1\./)

    const { json } = await call('GET', `/api/v1/sites/${site.id}/ga4`, { key: t.a.read.key })
    expect(json).toMatchObject({ connected: true, status: 'connected', connectUrl: null, propertyId: null })
    expect(json.properties).toEqual([
      { propertyId: PROPERTY, displayName: 'Example web', accountId: '1001', accountName: 'Example account' },
      { propertyId: OTHER_PROPERTY, displayName: 'Other app', accountId: '1002', accountName: 'Second account' },
    ])
    // two accounts, one a page: the second page was asked by its token
    expect(fake.requests.some((r) => r.path === '/v1beta/accountSummaries' && r.authorization)).toBe(true)
    const site2 = await call('GET', `/api/v1/sites/${site.id}`, { key: t.a.read.key })
    expect(site2.json.integrations.ga4).toMatchObject({ connected: true, status: 'connected', propertyId: null })
  })

  it('binds only a property the connection can read, with a write key', async () => {
    const unknown = await call('PATCH', `/api/v1/sites/${site.id}/ga4`, { key: t.a.write.key, body: { propertyId: '999' } })
    expect(unknown.status).toBe(400)
    expect(unknown.json.error).toBe(
      `propertyId: "999" is not a GA4 property this connection can read (it reads ${PROPERTY}, ${OTHER_PROPERTY})`,
    )
    expect((await call('PATCH', `/api/v1/sites/${site.id}/ga4`, { key: t.a.read.key, body: { propertyId: PROPERTY } })).status).toBe(403)
    expect((await call('PATCH', `/api/v1/sites/${t.b.site.id}/ga4`, { key: t.a.write.key, body: { propertyId: PROPERTY } })).status).toBe(
      404,
    )
    expect(await t.repositories.ga4Imports.list(site.id)).toEqual([])
  })

  it('imports the history on bind: a 429 waits without holding the request, an expired token is refreshed, and the table holds exactly the fixture aggregates', async () => {
    fake.fail('429')
    const bound = await call('PATCH', `/api/v1/sites/${site.id}/ga4`, {
      key: t.a.write.key,
      body: { propertyId: `properties/${PROPERTY}` },
    })
    expect(bound.status).toBe(200)
    expect(bound.json).toMatchObject({
      propertyId: PROPERTY,
      propertyName: 'Example web',
      account: { id: '1001', name: 'Example account' },
    })
    await settled()
    // the first report answered 429 with Retry-After: 30: the run records when to go on, and the
    // job of due imports is woken then (on Node its timer; on Workers its one-minute cron finds it)
    const [waiting] = await imports()
    expect(waiting).toMatchObject({ kind: 'ga4', state: 'running', trigger: 'bind', to: '2026-11-20', rows: 0 })
    expect(waiting.error).toMatch(/429 RESOURCE_EXHAUSTED/)
    expect(waiting.error).not.toMatch(/attempt/)
    expect(Date.parse(waiting.retryAt)).toBe(at.getTime() + 30_000)
    expect(wakes).toContainEqual({ job: 'imports due', atMs: at.getTime() + 30_000 })
    expect(await t.repositories.importWakeups.list()).toEqual([{ kind: 'ga4', siteId: site.id, atMs: at.getTime() + 30_000 }])
    // too early: the due job asks Google nothing and leaves it waiting
    const reportsBefore = fake.reports.length
    await dueJob()
    expect(fake.reports.length).toBe(reportsBefore)
    expect((await imports())[0].rows).toBe(0)
    at = new Date(at.getTime() + 30_000)
    fake.expireAccessTokens()
    const refreshes = fake.requests.filter((r) => r.path === '/token').length
    await dueJob()
    expect(fake.requests.filter((r) => r.path === '/token').length).toBe(refreshes + 1)
    const [done] = await imports()
    const expected = expectedRows(history)
    expect(done).toMatchObject({ state: 'done', error: null, from: '2026-11-14', to: '2026-11-20', rows: expected.length, retryAt: null })
    expect(done.progress).toEqual({ tasksDone: 11, tasksTotal: 11, fraction: 1 })
    expect(await storedRows(t, site.id)).toEqual(expected)
    // nothing is due any more: the next minute's run is one read
    expect(await t.repositories.importWakeups.list()).toEqual([])
    // pages of at most 9 rows: paging by offset went on until rowCount
    expect(fake.reports.some((r) => Number(r.offset) > 0)).toBe(true)
    expect(fake.reports.every((r) => r.returnPropertyQuota)).toBe(true)

    const read = await call('GET', `/api/v1/sites/${site.id}`, { key: t.a.read.key })
    expect(read.json.sources).toContain('ga4')
    expect(read.json.integrations.ga4).toMatchObject({
      connected: true,
      propertyId: PROPERTY,
      status: 'connected',
      lastImport: { state: 'done', trigger: 'bind', from: '2026-11-14', to: '2026-11-20', rows: expected.length, reason: null },
    })
    expect(read.json.imports).toEqual([expect.objectContaining({ source: 'ga4', from: '2026-11-14', to: '2026-11-20' })])
    const ga4 = await call('GET', `/api/v1/sites/${site.id}/ga4`, { key: t.a.read.key })
    expect(ga4.json.import).toMatchObject({ state: 'done', rows: expected.length })
  })

  it('re-imports today and yesterday every hour, replacing rather than adding', async () => {
    // GA4 saw more of today since, and a session of yesterday was reattributed
    const today = ga4Sessions({ from: '2026-11-20', days: 1, perDay: 5, users: 30, seed: 7, idPrefix: 'late' })
    property.sessions = [...history.filter((s) => s.id !== history.find((h) => h.date === '2026-11-19')!.id), ...today]
    at = new Date(at.getTime() + 3_600_000)
    await job('hourly')
    const [latest] = await imports()
    expect(latest).toMatchObject({ kind: 'ga4', trigger: 'hourly', state: 'done', from: '2026-11-19', to: '2026-11-20' })
    expect(await storedRows(t, site.id)).toEqual(expectedRows(property.sessions))
    // a second hourly run of unchanged data changes nothing
    await job('hourly')
    expect(await storedRows(t, site.id)).toEqual(expectedRows(property.sessions))
    // the daily run asks the three days before today
    at = new Date(at.getTime() + 60_000)
    await job('daily')
    expect((await imports())[0]).toMatchObject({ trigger: 'daily', state: 'done', from: '2026-11-17', to: '2026-11-19' })
    expect(await storedRows(t, site.id)).toEqual(expectedRows(property.sessions))
  })

  it('backs off on 5xx with increasing waits, and waits for the quota when it runs low', async () => {
    fake.fail('503', '503')
    at = new Date(at.getTime() + 3_600_000)
    await job('hourly')
    const first = (await imports())[0]
    expect(first).toMatchObject({ trigger: 'hourly', state: 'running', retryAt: new Date(at.getTime() + 30_000).toISOString() })
    expect(first.error).toMatch(/503 UNAVAILABLE.*attempt 1 of 8/)
    at = new Date(at.getTime() + 31_000)
    await job()
    const second = (await imports())[0]
    expect(second).toMatchObject({ state: 'running', retryAt: new Date(at.getTime() + 60_000).toISOString() })
    expect(second.error).toMatch(/attempt 2 of 8/)
    // the property's hourly tokens run low: the run stops after the page and waits an hour
    fake.options.quota = { perHour: 150, perDay: 150_000 }
    at = new Date(at.getTime() + 61_000)
    await job()
    const low = (await imports())[0]
    expect(low).toMatchObject({ state: 'running', retryAt: new Date(at.getTime() + 3_600_000).toISOString() })
    expect(low.error).toBe("waiting for the property's Data API quota (tokens left: 150 this hour, 150000 today)")
    expect(low.progress.tasksDone).toBe(1)
    fake.options.quota = undefined
    at = new Date(at.getTime() + 3_600_000)
    await job()
    expect((await imports())[0]).toMatchObject({ state: 'done', error: null, retryAt: null })
    expect(await storedRows(t, site.id)).toEqual(expectedRows(property.sessions))
  })

  it('a quota answer only ever waits: more 429s in a row than 5xx failures may have, each wait the one Google asked for', async () => {
    fake.fail(...Array.from({ length: 9 }, () => '429' as const))
    fake.retryAfterSeconds = 45
    at = new Date(at.getTime() + 3_600_000)
    await job('hourly')
    for (let attempt = 1; attempt <= 9; attempt++) {
      const [run] = await imports()
      expect(run, `attempt ${attempt}`).toMatchObject({ trigger: 'hourly', state: 'running' })
      expect(Date.parse(run.retryAt)).toBe(at.getTime() + 45_000)
      at = new Date(at.getTime() + 45_000)
      await dueJob()
    }
    fake.retryAfterSeconds = 30
    expect((await imports())[0]).toMatchObject({ trigger: 'hourly', state: 'done', error: null, retryAt: null })
    expect(await storedRows(t, site.id)).toEqual(expectedRows(property.sessions))
  })

  it('resumes an interrupted import from the last stored page without counting a page twice', async () => {
    const { queueGa4Import, historyDays } = await import('../../lib/integrations/ga4/import')
    const fresh = await t.repositories.sites.get(site.id)
    const run = await queueGa4Import(t.services, fresh!, PROPERTY, 'bind', historyDays(fresh!, at))
    let pages = 0
    const deps = { ...t.services, google: t.services.google! }
    expect(await importSite(deps, site.id, { shouldStop: () => ++pages > 6 })).toBe('stopped')
    const stopped = (await t.repositories.ga4Imports.list(site.id)).find((r) => r.id === run.id)!
    expect(stopped.state).toBe('running')
    expect(stopped.cursor.task + stopped.cursor.offset).toBeGreaterThan(0)
    // as if the process died after storing a page and before moving the cursor past it
    const rewound = stopped.cursor.offset >= 9 ? { ...stopped.cursor, offset: stopped.cursor.offset - 9 } : stopped.cursor
    await t.repositories.ga4Imports.save({ ...stopped, cursor: rewound })
    expect(await importSite(deps, site.id)).toBe('idle')
    const finished = (await t.repositories.ga4Imports.list(site.id)).find((r) => r.id === run.id)!
    expect(finished.state).toBe('done')
    expect(await storedRows(t, site.id)).toEqual(expectedRows(property.sessions))
  })

  it('imports hostnames with their own users: no hostname row exceeds the total, each is its distinct users per day', async () => {
    // the property's sessions as the hourly re-import left them
    const sessions = property.sessions
    const window = 'range=custom&from=2026-11-14&to=2026-11-20&source=ga4'
    const { json: stats } = await call('GET', `/api/v1/stats?site_id=${site.id}&${window}`, { key: t.a.read.key })
    const { json } = await call('GET', `/api/v1/breakdown?site_id=${site.id}&${window}&property=hostname`, { key: t.a.read.key })
    const days = [...new Set(sessions.map((s) => s.date))]
    const hosts = [...new Set(sessions.flatMap((s) => s.events.map((e) => e.host)))]
    const usersOn = (host: string, date: string) =>
      new Set(sessions.filter((s) => s.date === date && s.events.some((e) => e.host === host)).map((s) => s.user)).size
    const expected = hosts
      .map((host) => ({ value: host, visitors: days.reduce((n, d) => n + usersOn(host, d), 0) }))
      .sort((a, b) => b.visitors - a.visitors || a.value.localeCompare(b.value))
    expect(json.results.map((r: { value: string; visitors: number }) => ({ value: r.value, visitors: r.visitors }))).toEqual(expected)
    for (const row of json.results) expect(row.visitors).toBeLessThanOrEqual(stats.totals.visitors)
    // the pages dataset summed over paths counts a user of two pages of a host twice: what the read no longer does
    const overPages = days.reduce(
      (n, d) =>
        n +
        [...new Set(sessions.flatMap((s) => s.events.filter((e) => e.host === 'example.com').map((e) => e.path)))].reduce(
          (m, path) =>
            m +
            new Set(
              sessions.filter((s) => s.date === d && s.events.some((e) => e.host === 'example.com' && e.path === path)).map((s) => s.user),
            ).size,
          0,
        ),
      0,
    )
    expect(overPages).toBeGreaterThan(expected.find((r) => r.value === 'example.com')!.visitors)
    // a hostname filter beside a path breakdown still reads the pages, which hold both
    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'hostname', operator: 'is', value: ['www.example.com'] }]))
    const paths = await call('GET', `/api/v1/breakdown?site_id=${site.id}&${window}&property=path&filters=${filters}`, {
      key: t.a.read.key,
    })
    expect(paths.status).toBe(200)
    expect(paths.json.results.length).toBeGreaterThan(0)
  })

  it('answers realtime and the public live count of a ga4-primary site from the Realtime API', async () => {
    await t.services.sites.update(site.id, (s) => ({ ...s, primarySource: 'ga4', sharing: { ...s.sharing, publicCounts: true } }))
    const { json } = await call('GET', `/api/v1/realtime?site_id=${site.id}`, { key: t.a.read.key })
    // distinct users of the last 5 minutes (r1 twice), of the last 30
    expect(json).toMatchObject({ source: 'ga4', now: 2, halfHour: 4, pages: [], sources: [] })
    expect(json.series).toHaveLength(30)
    expect(json.series.at(-1)).toMatchObject({ visitors: 1, pageviews: 2 })
    expect(json.series.at(-13)).toMatchObject({ visitors: 1, pageviews: 5 })
    expect(json.series.reduce((sum: number, m: { pageviews: number }) => sum + m.pageviews, 0)).toBe(10)
    const live = await call('GET', `/api/public/live?site=${site.snippetId}`)
    expect(live.json).toMatchObject({ site: site.snippetId, range: '5m', visitors: 2, pageviews: 4, halfHour: 4 })
    const calls = fake.requests.filter((r) => r.path.endsWith(':runRealtimeReport')).length
    // cached for the live count's 10 seconds
    await call('GET', `/api/public/live?site=${site.snippetId}&range=30m`)
    expect(fake.requests.filter((r) => r.path.endsWith(':runRealtimeReport')).length).toBe(calls)
    await t.services.sites.update(site.id, (s) => ({ ...s, primarySource: 'standalone' }))
  })

  it('answers range=realtime of stats, timeseries and breakdown on ga4 from the Realtime API, and the dashboard of a ga4-primary site', async () => {
    await t.services.sites.update(site.id, (s) => ({ ...s, primarySource: 'ga4' }))
    // the reference: the fixture's activity of the last 5 minutes, grouped by hand
    const five = property.realtime.filter((r) => r.minutesAgo <= 4)
    const users = (rows: typeof five) => new Set(rows.map((r) => r.user)).size
    const views = (rows: typeof five) => rows.reduce((n, r) => n + r.views, 0)
    const byField = (field: 'countryId' | 'deviceCategory' | 'eventName', name: (v: string) => string) => {
      const values = [...new Set(five.map((r) => r[field]).filter((v): v is string => v !== undefined))]
      return values
        .map((v) => ({ value: name(v), rows: five.filter((r) => r[field] === v) }))
        .map(({ value, rows }) => ({ value, visitors: users(rows), visits: users(rows), pageviews: views(rows) }))
        .sort((a, b) => b.visitors - a.visitors || a.value.localeCompare(b.value))
    }
    const stats = await call('GET', `/api/v1/stats?site_id=${site.id}&range=realtime`, { key: t.a.read.key })
    expect(stats.status).toBe(200)
    expect(stats.json.source).toBe('ga4')
    expect(stats.json.range).toMatchObject({ name: 'realtime', interval: 'minute' })
    expect(stats.json.totals).toEqual({
      visitors: users(five),
      visits: users(five),
      pageviews: views(five),
      bounceRate: null,
      avgDuration: null,
      viewsPerVisit: Math.round((views(five) / users(five)) * 100) / 100,
      events: null,
    })
    const series = await call('GET', `/api/v1/timeseries?site_id=${site.id}&range=realtime`, { key: t.a.read.key })
    expect(series.status).toBe(200)
    expect(series.json.series).toHaveLength(30)
    expect(series.json.series.reduce((n: number, b: { pageviews: number }) => n + b.pageviews, 0)).toBe(
      views(property.realtime.filter((r) => r.minutesAgo <= 29)),
    )
    const breakdown = async (prop: string) =>
      call('GET', `/api/v1/breakdown?site_id=${site.id}&range=realtime&property=${prop}`, { key: t.a.read.key })
    const countries = await breakdown('country')
    expect(countries.status).toBe(200)
    expect(countries.json.results).toEqual(byField('countryId', (v) => v).map((r) => ({ ...r, events: null })))
    expect((await breakdown('device')).json.results).toEqual(
      byField('deviceCategory', (v) => ({ desktop: 'Desktop', mobile: 'Mobile', tablet: 'Tablet' })[v]!).map((r) => ({
        ...r,
        events: null,
      })),
    )
    // events count only the custom ones: page_view is automatic
    const events = (await breakdown('event')).json.results
    expect(events).toEqual(
      byField('eventName', (v) => v).map((r) => ({
        ...r,
        events: r.value === 'page_view' ? 0 : five.filter((e) => e.eventName === r.value).length,
      })),
    )
    // what the Realtime API does not report is refused by name, as is a comparison
    const path = await breakdown('path')
    expect(path.status).toBe(400)
    expect(path.json.error).toMatch(/property: GA4's Realtime API reports no path/)
    const compared = await call('GET', `/api/v1/stats?site_id=${site.id}&range=realtime&compare=previous_period`, { key: t.a.read.key })
    expect(compared.status).toBe(400)
    expect(compared.json.error).toMatch(/^compare: /)
    const filtered = await call(
      'GET',
      `/api/v1/stats?site_id=${site.id}&range=realtime&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'country', operator: 'is', value: ['DE'] }]))}`,
      { key: t.a.read.key },
    )
    expect(filtered.status).toBe(400)
    expect(filtered.json.error).toMatch(/^filters: /)

    // the dashboard of a ga4-primary site: the page, its live figure and the realtime view
    const metricOf = (html: string, key: string) =>
      new RegExp(`data-metric="${key}"><dt>[^<]*</dt><dd><span class="value">([^<]+)</span>`).exec(html)?.[1]
    const page = await owner.open(`/app/sites/${site.id}`)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toMatch(new RegExp(`<span id="live"[^>]*>${users(five)}</span> visitors now`))
    const live = await owner.open(`/app/sites/${site.id}?range=realtime`)
    expect(live.status).toBe(200)
    const liveHtml = await live.text()
    expect(metricOf(liveHtml, 'visitors')).toBe(String(users(five)))
    expect(metricOf(liveHtml, 'pageviews')).toBe(String(views(five)))
    expect(metricOf(liveHtml, 'bounceRate')).toBe('–')
    // the source switch: a site whose primary source is the collector, viewed as ga4
    await t.services.sites.update(site.id, (s) => ({ ...s, primarySource: 'standalone' }))
    const switched = await owner.open(`/app/sites/${site.id}?range=realtime&source=ga4`)
    expect(switched.status).toBe(200)
    expect(metricOf(await switched.text(), 'visitors')).toBe(String(users(five)))
  })

  it('marks the connection needs_reconnect when Google says the grant is gone, and stops importing', async () => {
    fake.revokeAllGrants()
    at = new Date(at.getTime() + 3_600_000)
    await job('hourly')
    const [failed] = await imports()
    expect(failed).toMatchObject({ kind: 'ga4', trigger: 'hourly', state: 'failed' })
    expect(failed.error).toMatch(/Google refused the stored authorization \(invalid_grant\)/)
    const { json } = await call('GET', `/api/v1/sites/${site.id}/ga4`, { key: t.a.write.key })
    expect(json).toMatchObject({ connected: false, status: 'needs_reconnect', propertyId: PROPERTY })
    expect(json.reason).toMatch(/connect the site to Google again/)
    expect(json.connectUrl).toBe(`https://api.test/app/sites/${site.id}/settings/google/connect`)
    const read = await call('GET', `/api/v1/sites/${site.id}`, { key: t.a.read.key })
    expect(read.json.integrations.ga4).toMatchObject({ connected: false, status: 'needs_reconnect' })
    // connecting again keeps the property bound
    await connectGoogle(owner, site.id)
    expect((await call('GET', `/api/v1/sites/${site.id}/ga4`, { key: t.a.read.key })).json).toMatchObject({
      connected: true,
      propertyId: PROPERTY,
    })
  })

  it('disconnects: revokes at Google, forgets the tokens, keeps the imported rows until ga4 leaves the sources', async () => {
    const sealed = (await t.repositories.google.get(site.id))!
    const refresh = fake.issuedTokens().filter((token) => fake.grantActive(token))
    expect(refresh).toHaveLength(1)
    const res = await call('DELETE', `/api/v1/sites/${site.id}/ga4`, { key: t.a.write.key })
    expect(res.json).toEqual({ disconnected: true, revoked: true, reason: null })
    expect(fake.grantActive(refresh[0])).toBe(false)
    expect(await t.repositories.google.get(site.id)).toBeNull()
    expect(sealed.refreshToken).not.toContain(refresh[0])
    expect(await t.repositories.google.boundSites()).not.toContain(site.id)
    const { json } = await call('GET', `/api/v1/sites/${site.id}/ga4`, { key: t.a.read.key })
    expect(json).toMatchObject({ connected: false, status: 'not_connected', propertyId: null })
    expect(await storedRows(t, site.id)).toEqual(expectedRows(property.sessions))
    // the job leaves a disconnected site alone
    const reports = fake.reports.length
    await job('hourly')
    expect(fake.reports.length).toBe(reports)
    // dropping ga4 from the sources deletes the imported rows
    const patched = await call('PATCH', `/api/v1/sites/${site.id}`, { key: t.a.write.key, body: { sources: ['standalone'] } })
    expect(patched.status).toBe(200)
    for (let i = 0; i < 200 && (await storedRows(t, site.id)).length; i++) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(await storedRows(t, site.id)).toEqual([])
  })

  it('never puts a token in an answer, a log line or the key store in the clear', () => {
    // the request log redacts the callback's code
    expect(lines.some((line) => line.includes('/oauth/google/callback?code=redacted'))).toBe(true)
    for (const code of fake.issuedCodes()) expect(lines.join('\n')).not.toContain(code)
    const tokens = fake.issuedTokens()
    expect(tokens.length).toBeGreaterThan(3)
    for (const token of tokens) {
      for (const text of answers) expect(text).not.toContain(token)
      for (const line of lines) expect(line).not.toContain(token)
      expect(lines.join('\n')).not.toContain(fake.clientSecret)
    }
  })

  it('without a Google client the read says what to configure, and the callback is a 404', async () => {
    const bare = await harness({ kv: 'embedded' })
    const key = await createApiKey(bare.repositories, { orgId: bare.a.org.id, name: 'r', scope: 'read' }, new Date())
    const { json } = await bare.call('GET', `/api/v1/sites/${bare.a.site.id}/ga4`, { key: key.key })
    expect(json).toMatchObject({ connected: false, status: 'not_configured', connectUrl: null, reason: GOOGLE_NOT_CONFIGURED })
    expect((await bare.call('GET', '/oauth/google/callback?state=x&code=y')).status).toBe(404)
  })
})
