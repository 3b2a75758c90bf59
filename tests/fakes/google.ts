import { randomUUID } from 'node:crypto'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A stand-in for Google on 127.0.0.1 that speaks the documented REST protocols the service uses:
 *
 * - OAuth 2.0 for web server applications: the authorization page (it consents at once and sends
 *   the browser back to redirect_uri with a code and the state), the token endpoint (form-encoded
 *   `authorization_code` and `refresh_token` grants, `invalid_grant` for a code used twice or a
 *   revoked grant, `invalid_client` for a wrong client; an ID token naming `account` where the
 *   scope asks for `openid`), and revocation (`token=`).
 * - The Analytics Admin API's `GET /v1beta/accountSummaries`, paged by `pageToken`.
 * - The Analytics Data API's `:runReport`, `:batchRunReports` and `:runRealtimeReport`, computed
 *   from fixture sessions and events (a user counts once per group however many events it has),
 *   with `limit`/`offset` paging, `rowCount`, `orderBys` on a dimension, and `propertyQuota`.
 *
 * Faults are asked for by the test: the next Data API calls answer 429 RESOURCE_EXHAUSTED (with
 * `Retry-After`, as Google's quota answers may carry it) or 503, or every access token issued so
 * far expires (the next call answers 401).
 */

export interface FakeEvent {
  name: string
  host: string
  path: string
  /** Engagement time the event reported, in seconds. */
  seconds: number
}

export interface FakeSession {
  id: string
  user: string
  /** The property's day, YYYY-MM-DD, and hour 0-23 (its time zone). */
  date: string
  hour: number
  source: string
  manualSource: string
  medium: string
  campaign: string
  adContent: string
  term: string
  channel: string
  referrer: string
  landingPage: string
  countryId: string
  region: string
  city: string
  device: string
  browser: string
  os: string
  engaged: boolean
  events: FakeEvent[]
}

export interface FakeProperty {
  propertyId: string
  displayName: string
  accountId: string
  accountName: string
  sessions: FakeSession[]
  /** Users active now: their minutes ago (0-29) and page views. */
  /** Realtime activity: per user and minute, with the Realtime API dimensions a read may break it down by. */
  realtime?: {
    user: string
    minutesAgo: number
    views: number
    countryId?: string
    city?: string
    deviceCategory?: string
    eventName?: string
  }[]
}

export interface FakeGoogleOptions {
  clientId?: string
  clientSecret?: string
  properties: FakeProperty[]
  /** Accounts per accountSummaries page (paging), default 1. */
  accountsPerPage?: number
  /** The most rows a report page holds whatever `limit` asks (the API may return fewer), default 100000. */
  maxPageRows?: number
  /** Access tokens live this long, default 3600. */
  accessTokenSeconds?: number
  /** The quota tokens left that answers report. */
  quota?: { perHour: number; perDay: number }
}

type Pair = { s: FakeSession; e: FakeEvent }
const compact = (day: string) => day.replaceAll('-', '')

/** Each GA4 dimension the fake knows, read from a session and one of its events. */
const DIMENSIONS: Record<string, (p: Pair) => string> = {
  date: ({ s }) => compact(s.date),
  dateHour: ({ s }) => `${compact(s.date)}${String(s.hour).padStart(2, '0')}`,
  sessionSource: ({ s }) => s.source,
  sessionManualSource: ({ s }) => s.manualSource,
  sessionMedium: ({ s }) => s.medium,
  sessionCampaignName: ({ s }) => s.campaign,
  sessionManualAdContent: ({ s }) => s.adContent,
  sessionManualTerm: ({ s }) => s.term,
  sessionDefaultChannelGroup: ({ s }) => s.channel,
  pageReferrer: ({ s }) => s.referrer,
  hostName: ({ e }) => e.host,
  pagePath: ({ e }) => e.path,
  landingPage: ({ s }) => s.landingPage,
  countryId: ({ s }) => s.countryId,
  region: ({ s }) => s.region,
  city: ({ s }) => s.city,
  deviceCategory: ({ s }) => s.device,
  browser: ({ s }) => s.browser,
  operatingSystem: ({ s }) => s.os,
  eventName: ({ e }) => e.name,
}

const METRICS: Record<string, (pairs: Pair[]) => number> = {
  totalUsers: (pairs) => new Set(pairs.map((p) => p.s.user)).size,
  activeUsers: (pairs) => new Set(pairs.map((p) => p.s.user)).size,
  sessions: (pairs) => new Set(pairs.map((p) => p.s.id)).size,
  engagedSessions: (pairs) => new Set(pairs.filter((p) => p.s.engaged).map((p) => p.s.id)).size,
  screenPageViews: (pairs) => pairs.filter((p) => p.e.name === 'page_view').length,
  userEngagementDuration: (pairs) => pairs.reduce((sum, p) => sum + p.e.seconds, 0),
  eventCount: (pairs) => pairs.length,
}

interface ReportBody {
  dateRanges?: { startDate: string; endDate: string }[]
  minuteRanges?: { startMinutesAgo?: number; endMinutesAgo?: number }[]
  dimensions?: { name: string }[]
  metrics?: { name: string }[]
  limit?: number | string
  offset?: number | string
  orderBys?: { dimension?: { dimensionName: string }; desc?: boolean }[]
  returnPropertyQuota?: boolean
}

class ApiFailure extends Error {
  constructor(
    readonly code: number,
    readonly status: string,
    message: string,
  ) {
    super(message)
  }
}

export class FakeGoogle {
  readonly clientId: string
  readonly clientSecret: string
  url = ''
  private server: Server | null = null
  /** The Google account signed in where the consent page is opened: whose grant a code stands for (its ID token names it). */
  account = 'analyst@example.com'
  private codes = new Map<string, { redirectUri: string; scope: string; used: boolean; account: string }>()
  /** refresh token -> whether it was revoked */
  private grants = new Map<string, { revoked: boolean; scope: string }>()
  private accessTokens = new Map<string, { grant: string; expiresAt: number }>()
  private faults: ('429' | '503')[] = []
  /** The seconds a 429 asks to wait in its Retry-After header; null, none is sent. */
  retryAfterSeconds: number | null = 30
  /** Every request, for the tests' assertions: method, path, and the body as sent (tokens included: the fake is the only place they may be). */
  readonly requests: { method: string; path: string; body: string; authorization: string | null }[] = []
  /** Reports answered (runReport, each of a batch), with their request bodies. */
  readonly reports: ReportBody[] = []

  constructor(readonly options: FakeGoogleOptions) {
    this.clientId = options.clientId ?? 'fake-client-id.apps.googleusercontent.com'
    this.clientSecret = options.clientSecret ?? 'fake-client-secret-0123456789'
  }

  /** The environment that points a home at this fake. */
  env(): Record<string, string> {
    return {
      GOOGLE_CLIENT_ID: this.clientId,
      GOOGLE_CLIENT_SECRET: this.clientSecret,
      GOOGLE_AUTH_URL: `${this.url}/o/oauth2/v2/auth`,
      GOOGLE_TOKEN_URL: `${this.url}/token`,
      GOOGLE_REVOKE_URL: `${this.url}/revoke`,
      GOOGLE_ANALYTICS_ADMIN_URL: this.url,
      GOOGLE_ANALYTICS_DATA_URL: this.url,
      GOOGLE_SEARCH_CONSOLE_URL: this.url,
    }
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err) => this.json(res, 500, { error: { code: 500, status: 'INTERNAL', message: String(err) } }))
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  async stop() {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }

  /** The next Data API calls fail with these statuses, one each. */
  fail(...statuses: ('429' | '503')[]) {
    this.faults.push(...statuses)
  }

  /** Every access token issued so far expires now: the next API call answers 401. */
  expireAccessTokens() {
    for (const token of this.accessTokens.values()) token.expiresAt = 0
  }

  /** Revokes every grant, as a user removing the application's access in their Google account. */
  revokeAllGrants() {
    for (const grant of this.grants.values()) grant.revoked = true
  }

  /** Whether a refresh token is known and not revoked. */
  grantActive(refreshToken: string) {
    return this.grants.get(refreshToken)?.revoked === false
  }

  /** Whether an access token is live and its grant holds `scope`: how another fake API (Search Console's) checks a bearer token. */
  accessTokenHolds(token: string, scope: string) {
    const access = this.accessTokens.get(token)
    const grant = access && this.grants.get(access.grant)
    return !!grant && !grant.revoked && access.expiresAt > Date.now() && grant.scope.split(' ').includes(scope)
  }

  /** Every token the fake issued: none of them may appear in an answer or a log line of the service. */
  issuedTokens(): string[] {
    return [...this.grants.keys(), ...this.accessTokens.keys()]
  }

  /** Every authorization code the consent page gave out. */
  issuedCodes(): string[] {
    return [...this.codes.keys()]
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers })
    res.end(JSON.stringify(body))
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', this.url)
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    this.requests.push({ method: req.method ?? '', path: url.pathname, body, authorization: req.headers.authorization ?? null })

    if (req.method === 'GET' && url.pathname === '/o/oauth2/v2/auth') return this.authorize(url, res)
    if (req.method === 'POST' && url.pathname === '/token') return this.token(req, body, res)
    if (req.method === 'POST' && url.pathname === '/revoke') return this.revoke(req, body, res)

    try {
      this.authenticate(req)
      if (req.method === 'GET' && url.pathname === '/v1beta/accountSummaries') return this.json(res, 200, this.accountSummaries(url))
      const data = url.pathname.match(/^\/v1beta\/properties\/(\d+):(runReport|batchRunReports|runRealtimeReport)$/)
      if (req.method === 'POST' && data) {
        const property = this.options.properties.find((p) => p.propertyId === data[1])
        if (!property) throw new ApiFailure(403, 'PERMISSION_DENIED', `User does not have sufficient permissions for this property.`)
        const fault = this.faults.shift()
        if (fault === '429') throw new ApiFailure(429, 'RESOURCE_EXHAUSTED', 'Exhausted property tokens per hour for this project.')
        if (fault === '503') throw new ApiFailure(503, 'UNAVAILABLE', 'The service is currently unavailable.')
        const request = JSON.parse(body || '{}')
        if (data[2] === 'runReport') return this.json(res, 200, this.report(property, request))
        if (data[2] === 'runRealtimeReport') return this.json(res, 200, this.realtime(property, request))
        return this.json(res, 200, {
          kind: 'analyticsData#batchRunReports',
          reports: (request.requests ?? []).map((r: ReportBody) => this.report(property, r)),
        })
      }
      throw new ApiFailure(404, 'NOT_FOUND', `no such method: ${req.method} ${url.pathname}`)
    } catch (err) {
      if (!(err instanceof ApiFailure)) throw err
      const wait: Record<string, string> =
        err.code === 429 && this.retryAfterSeconds !== null ? { 'retry-after': String(this.retryAfterSeconds) } : {}
      return this.json(res, err.code, { error: { code: err.code, message: err.message, status: err.status } }, wait)
    }
  }

  private authorize(url: URL, res: ServerResponse) {
    const q = url.searchParams
    const redirectUri = q.get('redirect_uri')
    if (q.get('client_id') !== this.clientId || !redirectUri || q.get('response_type') !== 'code')
      return this.json(res, 400, {
        error: 'invalid_request',
        error_description: 'client_id, redirect_uri and response_type=code are required',
      })
    if (q.get('access_type') !== 'offline' || q.get('prompt') !== 'consent' || !q.get('scope') || !q.get('state'))
      return this.json(res, 400, {
        error: 'invalid_request',
        error_description: 'expected access_type=offline, prompt=consent, a scope and a state',
      })
    const code = `4/fake-code-${randomUUID()}`
    this.codes.set(code, { redirectUri, scope: q.get('scope')!, used: false, account: this.account })
    const back = new URL(redirectUri)
    back.searchParams.set('code', code)
    back.searchParams.set('state', q.get('state')!)
    back.searchParams.set('scope', q.get('scope')!)
    res.writeHead(302, { location: back.href })
    res.end()
  }

  private issueAccessToken(grant: string) {
    const token = `ya29.fake-access-${randomUUID()}`
    const seconds = this.options.accessTokenSeconds ?? 3600
    this.accessTokens.set(token, { grant, expiresAt: Date.now() + seconds * 1000 })
    return { token, seconds }
  }

  private token(req: IncomingMessage, body: string, res: ServerResponse) {
    if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded'))
      return this.json(res, 400, { error: 'invalid_request', error_description: 'the body must be form-encoded' })
    const form = new URLSearchParams(body)
    if (form.get('client_id') !== this.clientId || form.get('client_secret') !== this.clientSecret)
      return this.json(res, 401, { error: 'invalid_client', error_description: 'The OAuth client was not found.' })
    const invalidGrant = (description: string) => this.json(res, 400, { error: 'invalid_grant', error_description: description })
    if (form.get('grant_type') === 'authorization_code') {
      const code = this.codes.get(form.get('code') ?? '')
      if (!code || code.used) return invalidGrant('Malformed auth code.')
      if (code.redirectUri !== form.get('redirect_uri'))
        return this.json(res, 400, { error: 'redirect_uri_mismatch', error_description: 'Bad Request' })
      code.used = true
      const refresh = `1//fake-refresh-${randomUUID()}`
      this.grants.set(refresh, { revoked: false, scope: code.scope })
      const access = this.issueAccessToken(refresh)
      return this.json(res, 200, {
        access_token: access.token,
        expires_in: access.seconds,
        refresh_token: refresh,
        scope: code.scope,
        token_type: 'Bearer',
        ...(code.scope.split(' ').includes('openid') ? { id_token: this.idToken(code.account) } : {}),
      })
    }
    if (form.get('grant_type') === 'refresh_token') {
      const refresh = form.get('refresh_token') ?? ''
      const grant = this.grants.get(refresh)
      if (!grant || grant.revoked) return invalidGrant('Token has been expired or revoked.')
      const access = this.issueAccessToken(refresh)
      return this.json(res, 200, { access_token: access.token, expires_in: access.seconds, scope: grant.scope, token_type: 'Bearer' })
    }
    return this.json(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type' })
  }

  /** An ID token naming the account (unsigned: the service reads it from the token endpoint's answer, over TLS at Google). */
  private idToken(email: string) {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const now = Math.floor(Date.now() / 1000)
    return `${part({ alg: 'none', typ: 'JWT' })}.${part({ iss: 'https://accounts.google.com', aud: this.clientId, sub: email, email, email_verified: true, iat: now, exp: now + 3600 })}.`
  }

  private revoke(req: IncomingMessage, body: string, res: ServerResponse) {
    if (!String(req.headers['content-type']).startsWith('application/x-www-form-urlencoded'))
      return this.json(res, 400, { error: 'invalid_request', error_description: 'the body must be form-encoded' })
    const token = new URLSearchParams(body).get('token') ?? ''
    const grant = this.grants.get(token) ?? this.grants.get(this.accessTokens.get(token)?.grant ?? '')
    if (!grant || grant.revoked) return this.json(res, 400, { error: 'invalid_token', error_description: 'Token expired or revoked' })
    grant.revoked = true
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{}')
  }

  private authenticate(req: IncomingMessage) {
    const token = req.headers.authorization?.match(/^Bearer (.+)$/)?.[1]
    const access = token ? this.accessTokens.get(token) : undefined
    if (!access || access.expiresAt <= Date.now() || this.grants.get(access.grant)?.revoked !== false)
      throw new ApiFailure(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token.')
  }

  private accountSummaries(url: URL) {
    const accounts = new Map<string, FakeProperty[]>()
    for (const p of this.options.properties) accounts.set(p.accountId, [...(accounts.get(p.accountId) ?? []), p])
    const all = [...accounts.entries()]
    const size = Math.min(Number(url.searchParams.get('pageSize') ?? 50), this.options.accountsPerPage ?? 1)
    const start = Number(url.searchParams.get('pageToken') ?? 0)
    const page = all.slice(start, start + size)
    return {
      accountSummaries: page.map(([accountId, properties]) => ({
        name: `accountSummaries/${accountId}`,
        account: `accounts/${accountId}`,
        displayName: properties[0].accountName,
        propertySummaries: properties.map((p) => ({
          property: `properties/${p.propertyId}`,
          displayName: p.displayName,
          propertyType: 'PROPERTY_TYPE_ORDINARY',
          parent: `accounts/${accountId}`,
        })),
      })),
      ...(start + size < all.length ? { nextPageToken: String(start + size) } : {}),
    }
  }

  private quota() {
    const quota = this.options.quota ?? { perHour: 39_000, perDay: 199_000 }
    return {
      tokensPerDay: { consumed: 10, remaining: quota.perDay },
      tokensPerHour: { consumed: 10, remaining: quota.perHour },
      concurrentRequests: { consumed: 0, remaining: 10 },
      serverErrorsPerProjectPerHour: { consumed: 0, remaining: 10 },
      potentiallyThresholdedRequestsPerHour: { consumed: 0, remaining: 120 },
      tokensPerProjectPerHour: { consumed: 3, remaining: 13_997 },
    }
  }

  /** A report over the property's sessions: one row per combination of dimension values. */
  report(property: FakeProperty, request: ReportBody) {
    this.reports.push(request)
    const dimensions = (request.dimensions ?? []).map((d) => d.name)
    const metrics = (request.metrics ?? []).map((m) => m.name)
    for (const d of dimensions) if (!DIMENSIONS[d]) throw new ApiFailure(400, 'INVALID_ARGUMENT', `Field ${d} is not a valid dimension.`)
    for (const m of metrics) if (!METRICS[m]) throw new ApiFailure(400, 'INVALID_ARGUMENT', `Field ${m} is not a valid metric.`)
    if (!request.dateRanges?.length) throw new ApiFailure(400, 'INVALID_ARGUMENT', 'dateRanges is required')
    const { startDate, endDate } = request.dateRanges[0]
    const pairs = property.sessions.filter((s) => s.date >= startDate && s.date <= endDate).flatMap((s) => s.events.map((e) => ({ s, e })))
    const groups = new Map<string, { values: string[]; pairs: Pair[] }>()
    for (const pair of pairs) {
      const values = dimensions.map((d) => DIMENSIONS[d](pair))
      const key = JSON.stringify(values)
      const group = groups.get(key) ?? { values, pairs: [] }
      group.pairs.push(pair)
      groups.set(key, group)
    }
    let rows = [...groups.values()]
    const order = request.orderBys?.[0]?.dimension?.dimensionName
    const at = order ? dimensions.indexOf(order) : -1
    rows.sort(
      (a, b) => (at >= 0 ? a.values[at].localeCompare(b.values[at]) : 0) || a.values.join('\u0000').localeCompare(b.values.join('\u0000')),
    )
    if (at >= 0 && request.orderBys?.[0]?.desc) rows = rows.reverse()
    const offset = Number(request.offset ?? 0)
    const limit = Math.min(Number(request.limit ?? 10_000), this.options.maxPageRows ?? 100_000)
    const page = rows.slice(offset, offset + limit)
    return {
      dimensionHeaders: dimensions.map((name) => ({ name })),
      metricHeaders: metrics.map((name) => ({ name, type: name === 'userEngagementDuration' ? 'TYPE_SECONDS' : 'TYPE_INTEGER' })),
      // proto3 JSON leaves out empty lists and zero counts
      ...(page.length ? { rows: page.map((g) => this.row(g.values, metrics, g.pairs)) } : {}),
      ...(rows.length ? { rowCount: rows.length } : {}),
      metadata: { currencyCode: 'USD', timeZone: 'UTC' },
      ...(request.returnPropertyQuota ? { propertyQuota: this.quota() } : {}),
      kind: 'analyticsData#runReport',
    }
  }

  private row(values: string[], metrics: string[], pairs: Pair[]) {
    return {
      dimensionValues: values.map((value) => ({ value })),
      metricValues: metrics.map((m) => ({ value: String(METRICS[m](pairs)) })),
    }
  }

  /** A realtime report: active users (distinct over the minute range) and views, optionally per minutesAgo. */
  realtime(property: FakeProperty, request: ReportBody) {
    const range = request.minuteRanges?.[0] ?? { startMinutesAgo: 29, endMinutesAgo: 0 }
    const start = range.startMinutesAgo ?? 29
    const end = range.endMinutesAgo ?? 0
    const active = (property.realtime ?? []).filter((r) => r.minutesAgo <= start && r.minutesAgo >= end)
    const metrics = (request.metrics ?? []).map((m) => m.name)
    const value = (list: typeof active, m: string) =>
      String(
        m === 'activeUsers'
          ? new Set(list.map((r) => r.user)).size
          : m === 'screenPageViews'
            ? list.reduce((s, r) => s + r.views, 0)
            : // each activity row is one event of its eventName
              m === 'eventCount'
              ? list.length
              : 0,
      )
    // rows grouped by the asked dimensions (minutesAgo as two digits, as GA4 writes it), most active users first
    const dimensions = (request.dimensions ?? []).map((d) => d.name)
    const known = new Set(['minutesAgo', 'countryId', 'city', 'deviceCategory', 'eventName'])
    const unknown = dimensions.find((d) => !known.has(d))
    if (unknown) throw new ApiFailure(400, 'INVALID_ARGUMENT', `Field ${unknown} is not a valid dimension.`)
    const keyOf = (r: (typeof active)[number]) =>
      dimensions.map((d) =>
        d === 'minutesAgo'
          ? String(r.minutesAgo).padStart(2, '0')
          : (r[d as 'countryId' | 'city' | 'deviceCategory' | 'eventName'] ?? '(not set)'),
      )
    const grouped = new Map<string, { key: string[]; list: typeof active }>()
    for (const r of active) {
      const key = keyOf(r)
      const group = grouped.get(JSON.stringify(key)) ?? { key, list: [] }
      group.list.push(r)
      grouped.set(JSON.stringify(key), group)
    }
    const groups = dimensions.length
      ? [...grouped.values()].sort((a, b) =>
          dimensions[0] === 'minutesAgo'
            ? a.key[0].localeCompare(b.key[0])
            : new Set(b.list.map((r) => r.user)).size - new Set(a.list.map((r) => r.user)).size,
        )
      : active.length
        ? [{ key: [] as string[], list: active }]
        : []
    return {
      dimensionHeaders: dimensions.map((name) => ({ name })),
      metricHeaders: metrics.map((name) => ({ name, type: 'TYPE_INTEGER' })),
      ...(groups.length
        ? {
            rows: groups.map((g) => ({
              dimensionValues: g.key.map((v) => ({ value: v })),
              metricValues: metrics.map((m) => ({ value: value(g.list, m) })),
            })),
          }
        : {}),
      ...(groups.length ? { rowCount: groups.length } : {}),
      ...(request.returnPropertyQuota ? { propertyQuota: this.quota() } : {}),
      kind: 'analyticsData#runRealtimeReport',
    }
  }
}

/** Starts a fake Google with these properties. */
export const startFakeGoogle = (options: FakeGoogleOptions) => new FakeGoogle(options).start()
