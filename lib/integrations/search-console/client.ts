import { z } from 'zod'
import { retryAfterMs } from '../../network/retry-after'

/**
 * The Search Console API, as the import and the connection's verbs call it: the sites list
 * (`GET /webmasters/v3/sites`) and search analytics (`POST /webmasters/v3/sites/{siteUrl}/searchAnalytics/query`),
 * through the guarded outbound fetch, with an access token from the Google connection. A 401 asks
 * the connection to refresh its token once and retries; messages never carry a token.
 */

export const DEFAULT_SEARCH_CONSOLE_URL = 'https://searchconsole.googleapis.com'
/** Search Console's largest page of rows. */
export const SEARCH_CONSOLE_ROW_LIMIT = 25_000

/** What a call needs from the Google connection: where the API is, the guarded fetch and a token. */
export interface SearchConsoleConnection {
  /** Without a trailing slash: GOOGLE_SEARCH_CONSOLE_URL, by default DEFAULT_SEARCH_CONSOLE_URL. */
  baseUrl: string
  fetch: typeof fetch
  /** The Google account it acts for, whose queries a minute Search Console counts together; absent, the site's own. */
  account?: string
  /** A current access token with the webmasters.readonly scope. */
  accessToken: () => Promise<string>
  /** Called once when Google answers 401 (the token expired or was revoked): refresh it, or throw to give up. */
  onUnauthorized?: () => Promise<void>
  timeoutMs?: number
}

/**
 * Search Console did not answer as asked. `retryable`: quota (429) or Google's own failure (5xx),
 * worth asking again later, no sooner than `retryAfterMs` when Google said so.
 */
export class SearchConsoleError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly retryable: boolean,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message)
    this.name = 'SearchConsoleError'
  }
}

export type SearchConsoleDimension = 'date' | 'query' | 'page' | 'country' | 'device'

export interface SearchAnalyticsRequest {
  startDate: string
  endDate: string
  dimensions: SearchConsoleDimension[]
  /** final: settled days only; all: with the fresh, still changing ones. */
  dataState: 'final' | 'all'
  rowLimit: number
  startRow: number
  type?: 'web'
}

export interface SearchAnalyticsRow {
  keys: string[]
  clicks: number
  impressions: number
  ctr: number
  position: number
}

const rowsAnswer = z.object({
  rows: z
    .array(
      z.object({
        keys: z.array(z.string()).default([]),
        clicks: z.number().nonnegative(),
        impressions: z.number().nonnegative(),
        ctr: z.number().default(0),
        position: z.number().default(0),
      }),
    )
    .default([]),
})
const sitesAnswer = z.object({
  siteEntry: z.array(z.object({ siteUrl: z.string(), permissionLevel: z.string() })).default([]),
})
const errorAnswer = z.object({
  error: z.object({ code: z.number().optional(), message: z.string().optional(), status: z.string().optional() }),
})

/** One property the connection can see, as the sites list names it. */
export interface SearchConsoleProperty {
  siteUrl: string
  permissionLevel: string
}

async function call(connection: SearchConsoleConnection, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const send = async () => {
    const token = await connection.accessToken()
    const hide = (text: string) => (token ? text.split(token).join('[token]') : text).slice(0, 300)
    let res: Response
    try {
      res = await connection.fetch(`${connection.baseUrl}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(connection.timeoutMs ?? 30_000),
      })
    } catch (err) {
      const error = err as Error
      const reason = error.name === 'TimeoutError' ? 'did not answer in time' : `could not be reached (${hide(error.message)})`
      throw new SearchConsoleError(`the Search Console API ${reason}`, 0, true)
    }
    return { res, hide }
  }
  let { res, hide } = await send()
  if (res.status === 401 && connection.onUnauthorized) {
    await res.body?.cancel()
    await connection.onUnauthorized()
    ;({ res, hide } = await send())
  }
  const json = await res.json().catch(() => undefined)
  if (res.ok) return json
  const error = errorAnswer.safeParse(json)
  const detail = error.success
    ? `${res.status}${error.data.error.status ? ` ${error.data.error.status}` : ''}${error.data.error.message ? `: ${hide(error.data.error.message)}` : ''}`
    : `HTTP ${res.status}`
  const retryable = res.status === 429 || res.status >= 500
  const what =
    res.status === 401
      ? 'refused the connection’s token'
      : res.status === 403
        ? 'refused access (the Google account cannot read this property)'
        : res.status === 429
          ? 'quota is used up for now'
          : 'answered an error'
  throw new SearchConsoleError(
    `the Search Console API ${what} (${detail})`,
    res.status,
    retryable,
    retryAfterMs(res.headers.get('retry-after'), Date.now()),
  )
}

/** The properties the connection's Google account can see, verified or not. */
export async function listSearchConsoleSites(connection: SearchConsoleConnection): Promise<SearchConsoleProperty[]> {
  const parsed = sitesAnswer.safeParse(await call(connection, 'GET', '/webmasters/v3/sites'))
  if (!parsed.success) throw new SearchConsoleError('the Search Console API answered a sites list it does not document', 502, true)
  return parsed.data.siteEntry
}

/** One page of searchAnalytics/query rows. */
export async function querySearchAnalytics(
  connection: SearchConsoleConnection,
  siteUrl: string,
  request: SearchAnalyticsRequest,
): Promise<SearchAnalyticsRow[]> {
  const json = await call(connection, 'POST', `/webmasters/v3/sites/${encodeURIComponent(siteUrl)}/searchAnalytics/query`, {
    type: 'web',
    ...request,
  })
  const parsed = rowsAnswer.safeParse(json ?? {})
  if (!parsed.success) throw new SearchConsoleError('the Search Console API answered rows it does not document', 502, true)
  return parsed.data.rows
}
