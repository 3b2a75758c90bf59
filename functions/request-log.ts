import type { MiddlewareHandler } from 'hono'
import type { LogLevel } from '../lib/runtime/env'

/**
 * Request logs: one JSON line per request (`info`), and the line of every unknown failure
 * (`error`), both carrying the request's id, which every answer returns as `X-Request-Id`.
 */

export interface LogOptions {
  level: LogLevel
  /** Where a finished JSON line goes (default: standard error or the console). */
  write?: (line: string) => void
}

export const REQUEST_ID_HEADER = 'X-Request-Id'
/** A caller's own id is kept when it is short and plain, so it cannot forge log fields. */
const SANE_ID = /^[\w\-.:=]{1,128}$/
/** Query parameters whose values are never logged: credentials. */
// code and state: the OAuth callback's authorization code and signed state
const SECRET_PARAMS = new Set(['key', 'api_key', 'apikey', 'token', 'access_token', 'secret', 'code', 'state', 'auth'])

interface Trace {
  id: string
  logError: (fields: Record<string, unknown>) => void
  /** A line only at LOG_LEVEL=debug: why a hit was dropped. */
  debug: (fields: Record<string, unknown>) => void
}

/**
 * A fresh request id, shaped as a random UUID: its first 24 characters are a random UUID's, drawn
 * once per process (74 random bits: two processes practically never draw the same), the last 12 a
 * counter in hex. A random UUID per request is a measurable share of a hot path's CPU; the counter
 * stays a small integer, whose hex digits are cheap to write, and a new prefix is drawn when it
 * runs out. The first is drawn on first use: a Worker may not draw random values in its global scope.
 */
let idPrefix = ''
let idCounter = 2 ** 30
export function freshRequestId(): string {
  if (++idCounter >= 2 ** 30) {
    idPrefix = crypto.randomUUID().slice(0, 24)
    idCounter = 1
  }
  return idPrefix + idCounter.toString(16).padStart(12, '0')
}

/** Per request: its id and where its failures are logged (read by `asApiError`, which has the request alone). */
const traces = new WeakMap<Request, Trace>()

/** The request's id, or a fresh one for a request that did not come through the app. */
export function traceOf(request: Request): Trace {
  return (
    traces.get(request) ?? {
      id: freshRequestId(),
      logError: (fields) => writeDefault(JSON.stringify({ level: 'error', ...fields })),
      debug: () => {},
    }
  )
}

/** The body cap (hono/body-limit) swaps the request for one reading a counted stream: it keeps the trace of the one it replaces. */
export function keepTrace(replaced: Request, by: Request) {
  const trace = traces.get(replaced)
  if (trace && replaced !== by) traces.set(by, trace)
}

function writeDefault(line: string) {
  const stderr = (globalThis as { process?: { stderr?: { write(s: string): unknown } } }).process?.stderr
  if (stderr) stderr.write(`${line}\n`)
  else console.log(line)
}

/** A query of plain name=value pairs (no escapes, no empty parts): URLSearchParams writes it back as it is. */
const PLAIN_QUERY = /^[\w.*-]+=[\w.*-]*(?:&[\w.*-]+=[\w.*-]*)*$/
const SECRET_NAME = new RegExp(`(?:^|&)(?:${[...SECRET_PARAMS].join('|')})=`, 'i')

/** The path as logged: the values of credential parameters replaced, so a URL-borne key never reaches a log. */
export function loggedPath(url: string, pathname: string): string {
  const q = url.indexOf('?')
  if (q < 0) return pathname
  const query = url.slice(q + 1)
  // most queries (the public count's) have nothing to redact and nothing to re-encode: not parsed
  if (PLAIN_QUERY.test(query) && !SECRET_NAME.test(query)) return `${pathname}?${query}`
  const params = new URLSearchParams(query)
  for (const name of params.keys()) if (SECRET_PARAMS.has(name.toLowerCase())) params.set(name, 'redacted')
  const written = params.toString()
  return written ? `${pathname}?${written}` : pathname
}

/**
 * A line's method and path as JSON, for the URLs logged last: the hot paths' requests repeat a few
 * URLs, and redacting and quoting each again was a share of their CPU. Only a URL with nothing to
 * redact is kept, so that no credential stays in memory past its request.
 */
const linePaths = new Map<string, { method: string; path: string; json: string }>()
const LINE_PATHS_MAX = 1000
const LINE_URL_MAX = 512

function methodAndPath(method: string, url: string, path: string): string {
  const cached = linePaths.get(url)
  if (cached !== undefined && cached.method === method && cached.path === path) return cached.json
  const json = `"method":${JSON.stringify(method)},"path":${JSON.stringify(loggedPath(url, path))}`
  const q = url.indexOf('?')
  const query = q < 0 ? '' : url.slice(q + 1)
  if (url.length <= LINE_URL_MAX && (query === '' || (PLAIN_QUERY.test(query) && !SECRET_NAME.test(query)))) {
    if (linePaths.size >= LINE_PATHS_MAX) linePaths.clear()
    linePaths.set(url, { method, path, json })
  }
  return json
}

/** Set by the transport once a key is admitted, so the line names the key by its prefix. */
export const KEY_PREFIX_VAR = 'keyPrefix'

const noDebug = () => {}

let isoMs = 0
let iso = ''
/** The time as toISOString writes it, formatted once per millisecond: many requests' lines share one. */
function isoNow(): string {
  const now = Date.now()
  if (now !== isoMs) {
    isoMs = now
    iso = new Date(now).toISOString()
  }
  return iso
}

/** What every request's answer goes through: its id and trace first, its line once answered. */
export interface RequestTracer {
  /** Whether a line is written per request (`info` and `debug`). */
  readonly logRequests: boolean
  /** Registers the request's trace; returns its id: the caller's own when given and plain, else a fresh one. */
  begin(request: Request, given: string | null | undefined): string
  /**
   * The request's id as `begin` gives it, its trace registered only where a handler may write to
   * it without failing (debug lines, at `debug`). A transport that registers it with `keep` before
   * answering a failure gives the same lines as `begin`, without a registration per request.
   */
  idOf(request: Request, given: string | null | undefined): string
  /** Registers the trace of a request whose id `idOf` gave. */
  keep(request: Request, id: string): void
  /** The request's line: `path` is its URL's path, `started` is `performance.now()` when it came in. */
  line(method: string, url: string, path: string, status: number, started: number, id: string, keyPrefix?: string): void
}

export function requestTracer({ level, write = writeDefault }: LogOptions): RequestTracer {
  const logError =
    level === 'silent'
      ? () => {}
      : (fields: Record<string, unknown>) => write(JSON.stringify({ time: new Date().toISOString(), level: 'error', ...fields }))
  // a WeakMap entry per request is a measurable share of a hot path's CPU (the collector's, the public count's)
  const keep = (request: Request, id: string) => {
    const debug =
      level === 'debug'
        ? (fields: Record<string, unknown>) =>
            write(JSON.stringify({ time: new Date().toISOString(), level: 'debug', ...fields, requestId: id }))
        : noDebug
    traces.set(request, { id, logError, debug })
  }
  return {
    logRequests: level === 'info' || level === 'debug',
    begin(request, given) {
      const id = given && SANE_ID.test(given) ? given : freshRequestId()
      keep(request, id)
      return id
    },
    idOf(request, given) {
      const id = given && SANE_ID.test(given) ? given : freshRequestId()
      if (level === 'debug') keep(request, id)
      return id
    },
    keep,
    line(method, url, path, status, started, id, keyPrefix) {
      // built by hand: JSON.stringify of an object is a measurable share of a collector request
      const ms = Math.round((performance.now() - started) * 10) / 10
      write(
        `{"time":"${isoNow()}","level":"info",${methodAndPath(method, url, path)},"status":${status},"ms":${ms},"requestId":"${id}"${keyPrefix ? `,"keyPrefix":${JSON.stringify(keyPrefix)}` : ''}}`,
      )
    },
  }
}

/** The middleware: an id for every request, its header on every answer, and the request's line. */
export function requestLog(tracer: RequestTracer): MiddlewareHandler {
  return async (c, next) => {
    const id = tracer.begin(c.req.raw, c.req.header(REQUEST_ID_HEADER))
    // set before the handler runs, like the CORS headers (see app.ts)
    c.header(REQUEST_ID_HEADER, id)
    if (!tracer.logRequests) return next()
    const started = performance.now()
    await next()
    tracer.line(c.req.method, c.req.url, c.req.path, c.res.status, started, id, c.get(KEY_PREFIX_VAR as never) as string | undefined)
  }
}

/** How long a line may wait for others to share its write, and how much may wait. */
export const LINES_DELAY_MS = 10
export const LINES_MAX_CHARS = 64 * 1024

/**
 * Lines for a stream, written together at most LINES_DELAY_MS after the first of them (or at once
 * past LINES_MAX_CHARS): a write per request, or per turn of the event loop, is a system call for
 * every request or two on the hot paths. What waits is written by `flush` (the Node server calls it
 * on exit); a process killed outright loses at most those few milliseconds of lines.
 */
export function batchedLines(stream: { write(chunk: string): unknown }) {
  let pending = ''
  let timer: ReturnType<typeof setTimeout> | undefined
  const flush = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    if (pending === '') return
    const lines = pending
    pending = ''
    stream.write(lines)
  }
  const write = (line: string) => {
    pending += `${line}\n`
    if (pending.length >= LINES_MAX_CHARS) flush()
    else if (timer === undefined) timer = setTimeout(flush, LINES_DELAY_MS)
  }
  return { write, flush }
}
