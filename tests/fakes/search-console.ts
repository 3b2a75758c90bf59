import { type IncomingMessage, type Server, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A fake of the Search Console API on a free local port, speaking its documented REST protocol:
 * `GET /webmasters/v3/sites` (siteEntry with permissionLevel; an unverified property is listed as
 * siteUnverifiedUser) and `POST /webmasters/v3/sites/{siteUrl}/searchAnalytics/query`, which
 * groups fixture rows by the asked dimensions (clicks and impressions summed, ctr their ratio,
 * position the impression-weighted mean), keeps startDate to endDate, sorts by clicks, and pages
 * by rowLimit and startRow. Rows of anonymized queries count in every grouping without `query`
 * only, as Search Console hides them from query rows. A fresh day's rows answer only with
 * dataState all. Requests need `Authorization: Bearer` with a token the fake accepts; `failNext`
 * plants a 429 (quota) or 500 on a later query. With `quota`, it enforces Search Console's queries
 * a minute per property and per user (the bearer token) over a rolling window: a query beyond
 * either answers 429 RESOURCE_EXHAUSTED with Retry-After, as Google does on a bad day.
 */

export interface FixtureRow {
  date: string
  query: string
  /** The full URL Search Console reports. */
  page: string
  /** ISO 3166-1 alpha-3, lowercase, as Search Console reports it. */
  country: string
  device: 'DESKTOP' | 'MOBILE' | 'TABLET'
  clicks: number
  impressions: number
  position: number
  /** An anonymized query: in the totals, never in a row grouped by query. */
  anonymized?: boolean
}

export interface FakeSearchConsoleOptions {
  sites: { siteUrl: string; permissionLevel: string }[]
  /** Rows per property siteUrl. */
  rows: Record<string, FixtureRow[]>
  /** Days whose data is fresh: answered only with dataState all. */
  freshDays?: string[]
  tokens?: string[]
  /** Who else may vouch for a token (the fake Google's token endpoint issued it with the Search Console scope). */
  vouchFor?: (token: string) => boolean
  /** Queries admitted per window, per property and per user; the window is a minute unless a test shrinks it. */
  quota?: { perMinute: number; windowMs?: number }
  /** How long a query takes to answer (Search Console computes each; a test wants them to overlap), 0 unless set. */
  latencyMs?: number
  /** A property's rows of one day, made when asked (a large history without holding it in memory); instead of `rows`. */
  rowsOf?: (siteUrl: string, day: string) => FixtureRow[]
}

export interface LoggedQuery {
  siteUrl: string
  body: {
    startDate: string
    endDate: string
    dimensions?: string[]
    dataState?: string
    rowLimit?: number
    startRow?: number
    type?: string
  }
  status: number
}

const DIMENSIONS = ['date', 'query', 'page', 'country', 'device'] as const

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** The answer rows of a query over fixture rows: what Search Console's aggregation does. */
export function aggregate(rows: FixtureRow[], dimensions: string[]) {
  const groups = new Map<string, { keys: string[]; clicks: number; impressions: number; weighted: number }>()
  for (const r of rows) {
    if (r.anonymized && dimensions.includes('query')) continue
    const keys = dimensions.map((d) => String(r[d as (typeof DIMENSIONS)[number]]))
    const id = JSON.stringify(keys)
    const g = groups.get(id) ?? { keys, clicks: 0, impressions: 0, weighted: 0 }
    g.clicks += r.clicks
    g.impressions += r.impressions
    g.weighted += r.position * r.impressions
    groups.set(id, g)
  }
  return [...groups.values()]
    .map((g) => ({
      keys: g.keys,
      clicks: g.clicks,
      impressions: g.impressions,
      ctr: g.impressions ? g.clicks / g.impressions : 0,
      position: g.impressions ? g.weighted / g.impressions : 0,
    }))
    .sort((a, b) => b.clicks - a.clicks || b.impressions - a.impressions || (a.keys.join('\u0000') < b.keys.join('\u0000') ? -1 : 1))
}

export async function fakeSearchConsole(options: FakeSearchConsoleOptions) {
  const tokens = new Set(options.tokens ?? ['token-1'])
  const fresh = new Set(options.freshDays ?? [])
  const queries: LoggedQuery[] = []
  const planted: { status: number; afterQueries: number }[] = []
  let queryCount = 0
  let sitesRequests = 0
  let inFlight = 0
  let maxInFlight = 0
  let refused = 0
  const admitted = new Map<string, number[]>()
  /** Milliseconds until `keys` all have room in the quota's window, 0 when they have: then the query is counted. */
  const quotaWait = (keys: string[]) => {
    if (!options.quota) return 0
    const { perMinute, windowMs = 60_000 } = options.quota
    const now = Date.now()
    const lists = keys.map((key) => {
      const list = (admitted.get(key) ?? []).filter((at) => at > now - windowMs)
      admitted.set(key, list)
      return list
    })
    const full = lists.filter((list) => list.length >= perMinute)
    if (full.length) return Math.max(...full.map((list) => list[list.length - perMinute] + windowMs - now))
    for (const list of lists) list.push(now)
    return 0
  }
  const daysFrom = (from: string, to: string) => {
    const days: string[] = []
    for (let d = Date.parse(from); d <= Date.parse(to) && days.length < 600; d += 86_400_000)
      days.push(new Date(d).toISOString().slice(0, 10))
    return days
  }

  const json = (res: import('node:http').ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    void res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body))
  const error = (code: number, status: string, message: string) => ({ error: { code, message, status } })

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake')
    const auth = req.headers.authorization ?? ''
    if (!auth.startsWith('Bearer ') || !(tokens.has(auth.slice(7)) || options.vouchFor?.(auth.slice(7))))
      return json(res, 401, error(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'))
    if (req.method === 'GET' && url.pathname === '/webmasters/v3/sites') {
      sitesRequests++
      return json(res, 200, { siteEntry: options.sites })
    }
    const match = /^\/webmasters\/v3\/sites\/([^/]+)\/searchAnalytics\/query$/.exec(url.pathname)
    if (req.method === 'POST' && match) {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      res.on('close', () => inFlight--)
      const siteUrl = decodeURIComponent(match[1])
      const body = JSON.parse((await readBody(req)) || '{}') as LoggedQuery['body']
      if (options.latencyMs) await new Promise((resolve) => setTimeout(resolve, options.latencyMs))
      queryCount++
      const wait = quotaWait([`site:${siteUrl}`, `user:${auth.slice(7)}`])
      if (wait > 0) {
        refused++
        queries.push({ siteUrl, body, status: 429 })
        return json(res, 429, error(429, 'RESOURCE_EXHAUSTED', 'Search Analytics QPM quota exceeded.'), {
          'retry-after': String(Math.ceil(wait / 1000)),
        })
      }
      const failure = planted.findIndex((p) => p.afterQueries < queryCount)
      if (failure >= 0) {
        const [{ status }] = planted.splice(failure, 1)
        queries.push({ siteUrl, body, status })
        return status === 429
          ? json(res, 429, error(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for quota metric.'), { 'retry-after': '30' })
          : json(res, status, error(status, 'INTERNAL', 'Internal error encountered.'))
      }
      const site = options.sites.find((s) => s.siteUrl === siteUrl)
      if (!site || site.permissionLevel === 'siteUnverifiedUser') {
        queries.push({ siteUrl, body, status: 403 })
        return json(res, 403, error(403, 'PERMISSION_DENIED', `User does not have sufficient permission for site '${siteUrl}'.`))
      }
      const dimensions = body.dimensions ?? []
      if (!/^\d{4}-\d{2}-\d{2}$/.test(body.startDate ?? '') || !/^\d{4}-\d{2}-\d{2}$/.test(body.endDate ?? '')) {
        queries.push({ siteUrl, body, status: 400 })
        return json(res, 400, error(400, 'INVALID_ARGUMENT', 'startDate and endDate are required.'))
      }
      if (dimensions.some((d) => !DIMENSIONS.includes(d as (typeof DIMENSIONS)[number])) || (body.rowLimit ?? 1000) > 25_000) {
        queries.push({ siteUrl, body, status: 400 })
        return json(res, 400, error(400, 'INVALID_ARGUMENT', 'Invalid dimension or rowLimit.'))
      }
      const rowsOf = options.rowsOf
      const within = (
        rowsOf ? daysFrom(body.startDate, body.endDate).flatMap((day) => rowsOf(siteUrl, day)) : (options.rows[siteUrl] ?? [])
      ).filter((r) => r.date >= body.startDate && r.date <= body.endDate && (body.dataState === 'all' || !fresh.has(r.date)))
      const all = aggregate(within, dimensions)
      const start = body.startRow ?? 0
      const rows = all.slice(start, start + (body.rowLimit ?? 1000))
      queries.push({ siteUrl, body, status: 200 })
      return json(res, 200, rows.length ? { rows, responseAggregationType: 'byPage' } : { responseAggregationType: 'byPage' })
    }
    json(res, 404, error(404, 'NOT_FOUND', 'Not found.'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    queries,
    get sitesRequests() {
      return sitesRequests
    },
    /** The most queries it was answering at once. */
    get maxInFlight() {
      return maxInFlight
    },
    /** Queries answered 429 for the quota (`quota`). */
    get refused() {
      return refused
    },
    /** The next query after `afterQueries` more answers `status` (429 with Retry-After: 30, or a 5xx), once. */
    failNext(status: 429 | 500 | 503, afterQueries = 0) {
      planted.push({ status, afterQueries: queryCount + afterQueries })
    },
    acceptToken(token: string) {
      tokens.add(token)
    },
    revokeToken(token: string) {
      tokens.delete(token)
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
