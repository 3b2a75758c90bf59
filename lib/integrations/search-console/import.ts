import type { OrgsRepository } from '../../accounts/orgs-repository'
import type { SitesRepository } from '../../sites/sites-repository'
import type { ImportWakeupsRepository } from '../import-wakeups-repository'
import type { SearchConsoleImportsRepository } from './search-console-imports-repository'
import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../../core/errors'
import type { SiteDirectory } from '../../sites/site-directory'
import type { Site } from '../../sites/sites'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { bind, join, raw, sql } from '../../storage/clickhouse/sql'
import type { ClickHouse } from '../../storage/clickhouse/types'
import {
  SEARCH_CONSOLE_ROW_LIMIT,
  type SearchAnalyticsRow,
  type SearchConsoleConnection,
  SearchConsoleError,
  querySearchAnalytics,
} from './client'
import { alpha2OfSearchConsoleCountry } from './countries'
import type { DayCursor, SearchConsoleImportState } from './search-console-imports-repository'
import type { RateLimiter } from '../../accounts/ratelimit'
import { wakeImportAt } from '../import-wakeups-repository'

/**
 * The Search Console import (docs/import.md, Search Console): per day, searchAnalytics/query by
 * date, query, page, country and device, paged by startRow until a page comes back short, then
 * the day's totals by date, country and device (anonymized queries are in the totals only). On
 * bind the 16 months Search Console keeps, newest first; then, once a day, the last three days
 * again. Settled days are asked with dataState final, the last three with all. Several days are
 * asked at once, paced within Search Console's queries a minute per property and per Google
 * account, and a run goes on until every day is in. Each stored page moves the cursor in the
 * key/value store, so a stopped run continues where it was; a quota answer (429) or Google's
 * failure (5xx) ends the run with a wait (Google's Retry-After, or a growing one), and the run is
 * due again then (lib/integrations/due-imports.ts), never holding a request open while waiting.
 */
export const SEARCH_CONSOLE_IMPORT_RULE = {
  /** Search Console keeps 16 months of data. */
  backfillMonths: 16,
  /** The days re-imported every day, with dataState all: Search Console's fresh, still changing data. */
  recentDays: 3,
  /** Waits after quota or server failures in a row: first, doubling up to the last. */
  firstWaitMs: 60_000,
  maxWaitMs: 6 * 3600_000,
  /** After this many of Google's failures in a row the import is failed (the next bind or the next day's queue starts it again); quota answers only wait. */
  maxFailures: 12,
  /** Days asked at once; the pace is the limiter's (LIMITS.searchConsoleSite and searchConsoleUser). */
  concurrency: 8,
}

/** How a home reaches a site's Search Console property: the Google connection plugs in here. */
export interface SearchConsoleConnector {
  /** The connection for the site's Google account, or null when it has none (never connected, or it needs reconnecting). */
  connectionFor(site: Site): Promise<SearchConsoleConnection | null>
}

export interface SearchConsoleImportDeps {
  clickhouse: ClickHouse
  repositories: { searchConsoleImports: SearchConsoleImportsRepository; importWakeups: ImportWakeupsRepository }
  /** Paces the queries within Search Console's quotas (LIMITS.searchConsoleSite and searchConsoleUser). */
  limiter: RateLimiter
  /** Where the site read shows the import (integrations.searchConsole.lastImport); absent, only the cursor records it. */
  sites?: Pick<SiteDirectory, 'update'>
  /** The home's timer for an import due again (Node); absent, the one-minute job finds it. */
  wakeJob?: (job: string, atMs: number) => void
}

const DEVICES: Record<string, string> = { DESKTOP: 'Desktop', MOBILE: 'Mobile', TABLET: 'Tablet' }

/** The path of a Search Console page URL (its key within our pages); a value that is not a URL is kept as it is. */
export function pathOfPage(page: string): string {
  try {
    return new URL(page).pathname || '/'
  } catch {
    return page
  }
}

const utcDay = (now: Date) => Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO('UTC').toPlainDate()

/** The days of a fresh import, newest first: yesterday back to the first day of the 16 months before it. */
export function backfillDays(now: Date): string[] {
  const yesterday = utcDay(now).subtract({ days: 1 })
  const first = yesterday.subtract({ months: SEARCH_CONSOLE_IMPORT_RULE.backfillMonths })
  const days: string[] = []
  for (let d = yesterday; Temporal.PlainDate.compare(d, first) >= 0; d = d.subtract({ days: 1 })) days.push(d.toString())
  return days
}

/** The last three days, newest first: what is imported again every day. */
export function recentDays(now: Date): string[] {
  const today = utcDay(now)
  return Array.from({ length: SEARCH_CONSOLE_IMPORT_RULE.recentDays }, (_, i) => today.subtract({ days: i + 1 }).toString())
}

/** A day among the last three is asked with dataState all (fresh data), an older one with final. */
export const dataStateOf = (day: string, now: Date): 'final' | 'all' => (recentDays(now).includes(day) ? 'all' : 'final')

/** A new import of a property: the 16 months, queued. */
export function newImport(siteUrl: string, now: Date): SearchConsoleImportState {
  const days = backfillDays(now)
  const at = now.toISOString()
  return {
    siteUrl,
    state: 'queued',
    days,
    underway: [],
    unreplaced: [],
    from: days[days.length - 1],
    to: days[0],
    daysTotal: days.length,
    daysDone: 0,
    rows: 0,
    failures: 0,
    retryAt: null,
    error: null,
    recentQueuedOn: utcDay(now).toString(),
    startedAt: at,
    updatedAt: at,
  }
}

/** Starts (or starts again) the import of a site's bound property: what binding it calls. */
export async function startSearchConsoleImport(deps: SearchConsoleImportDeps, site: Site, siteUrl: string, now: Date) {
  const state = newImport(siteUrl, now)
  await deps.repositories.searchConsoleImports.save(site.id, state)
  return state
}

/** Once a UTC day, the last three days go to the front of the queue again. */
function queueRecentDays(state: SearchConsoleImportState, now: Date): SearchConsoleImportState {
  const today = utcDay(now).toString()
  if (state.recentQueuedOn === today) return state
  const recent = recentDays(now)
  // a day under way goes on where it is; the others of the three go to the front
  const queued = recent.filter((d) => !state.underway.some((c) => c.day === d))
  const days = [...queued, ...state.days.filter((d) => !queued.includes(d))]
  return {
    ...state,
    days,
    state: state.state === 'failed' ? 'queued' : state.state,
    failures: state.state === 'failed' ? 0 : state.failures,
    daysTotal: state.daysDone + days.length,
    to: [state.to, recent[0]].sort()[1],
    recentQueuedOn: today,
  }
}

function storedRows(siteId: string, day: string, rows: SearchAnalyticsRow[], version: number) {
  return rows.map((r) => {
    const [date, query, page, country, device] = r.keys
    return {
      site_id: siteId,
      date: date ?? day,
      query: query ?? '',
      page: page ?? '',
      path: pathOfPage(page ?? ''),
      country: alpha2OfSearchConsoleCountry(country ?? ''),
      device: DEVICES[device ?? ''] ?? device ?? '',
      clicks: Math.round(r.clicks),
      impressions: Math.round(r.impressions),
      position: r.position,
      version,
    }
  })
}

function storedTotals(siteId: string, day: string, rows: SearchAnalyticsRow[], version: number) {
  return rows.map((r) => {
    const [date, country, device] = r.keys
    return {
      site_id: siteId,
      date: date ?? day,
      country: alpha2OfSearchConsoleCountry(country ?? ''),
      device: DEVICES[device ?? ''] ?? device ?? '',
      clicks: Math.round(r.clicks),
      impressions: Math.round(r.impressions),
      position: r.position,
      version,
    }
  })
}

/**
 * Once days are stored whole, their rows of earlier imports go: the newest import of a day is what
 * reads see. Once a run, for all its days in one statement a table (a delete is a mutation of every
 * part it touches and takes seconds whatever its size), and only where such rows exist (never on a
 * first import). Until then a read (FINAL) already sees the newest import of each row it kept.
 */
async function dropOlderVersions(clickhouse: ClickHouse, siteId: string, stored: SearchConsoleImportState['unreplaced']) {
  if (!stored.length) return
  const byVersion = new Map<number, string[]>()
  for (const { day, version } of stored) byVersion.set(version, [...(byVersion.get(version) ?? []), day])
  const older = join(
    [...byVersion].map(([version, days]) => sql`(date IN ${bind('Array(Date)', days)} AND version < ${bind('UInt64', version)})`),
    ' OR ',
  )
  for (const table of ['search_console_rows', 'search_console_totals'] as const) {
    const where = sql`site_id = ${bind('UUID', siteId)} AND (${older})`
    const [found] = await execute<{ found: number }>(clickhouse, sql`SELECT 1 AS found FROM ${raw(table)} WHERE ${where} LIMIT 1`)
    if (found) await executeCommand(clickhouse, sql`DELETE FROM ${raw(table)} WHERE ${where}`)
  }
}

export interface SearchConsoleImportOptions {
  log?: (line: string) => void
  shouldStop?: () => boolean
  /** Rows asked per page (Search Console's largest, 25,000, unless a test asks for less). */
  rowLimit?: number
}

/**
 * Imports what is due of one site's Search Console property: resumes the cursor, queues the last
 * three days once a day, and takes days until none is left, the run is asked to stop, its request
 * budget is spent, or Google asks it to wait. Does nothing for a site without a bound property.
 */
export async function importSearchConsole(
  deps: SearchConsoleImportDeps & { connection: SearchConsoleConnection },
  site: Site,
  now: Date,
  options: SearchConsoleImportOptions = {},
): Promise<SearchConsoleImportState | null> {
  const bound = site.integrations.searchConsole
  if (!bound.connected || !bound.siteUrl) return null
  // one import of a site at a time (the bind's and the job's): the other leaves it to the holder
  const repository = deps.repositories.searchConsoleImports
  const holder = crypto.randomUUID()
  const renew = () => repository.lease(site.id, holder, IMPORT_LEASE_SECONDS)
  if (!(await renew())) return repository.get(site.id)
  try {
    const state = await importUnderLease(deps, site, bound.siteUrl, now, options, renew)
    // a wait Google asked for, or a run cut short: due again then, not at the job's next run
    const left = state.state === 'running' || state.state === 'waiting' || state.state === 'queued'
    if (left) await wakeImportAt(deps, 'search_console', site.id, state.retryAt ? Date.parse(state.retryAt) : now.getTime())
    return state
  } finally {
    await repository.release(site.id, holder)
  }
}

/** The site read's integrations.searchConsole.lastImport, written when the import's state changes (a site gone meanwhile is left alone). */
async function showOnSite(deps: SearchConsoleImportDeps, siteId: string, state: SearchConsoleImportState) {
  const { state: at, from, to, daysDone, daysTotal, rows, retryAt, error } = state
  await deps.sites
    ?.update(siteId, (site) =>
      site.integrations.searchConsole.siteUrl === state.siteUrl
        ? {
            ...site,
            integrations: {
              ...site.integrations,
              searchConsole: {
                ...site.integrations.searchConsole,
                lastImport: { state: at, from, to, daysDone, daysTotal, rows, retryAt, error },
              },
            },
          }
        : site,
    )
    .catch((err) => {
      if (!(err instanceof ApiError && err.status === 404)) throw err
    })
}

/** How long an import holds its site's lease without renewing it: past it, a crashed import's site is free again. */
const IMPORT_LEASE_SECONDS = 180

async function importUnderLease(
  deps: SearchConsoleImportDeps & { connection: SearchConsoleConnection },
  site: Site,
  siteUrl: string,
  now: Date,
  options: SearchConsoleImportOptions,
  renew: () => Promise<boolean>,
): Promise<SearchConsoleImportState> {
  const repository = deps.repositories.searchConsoleImports
  const log = options.log ?? (() => {})
  const rowLimit = Math.min(SEARCH_CONSOLE_ROW_LIMIT, Math.max(1, options.rowLimit ?? SEARCH_CONSOLE_ROW_LIMIT))
  const stored = await repository.get(site.id)
  let state = stored && stored.siteUrl === siteUrl ? stored : newImport(siteUrl, now)
  state = queueRecentDays(state, now)
  if (state.retryAt && Date.parse(state.retryAt) > now.getTime()) return state
  if (state.state === 'failed' || !state.days.length) {
    await repository.save(site.id, state)
    return state
  }
  // `now` is when the run began: what it records later is that much later
  const began = performance.now()
  const clock = () => now.getTime() + Math.round(performance.now() - began)
  // the workers change `state` in turn; each change is saved after the one before
  let saved = Promise.resolve()
  const save = (change: Partial<SearchConsoleImportState>) => {
    state = { ...state, ...change, updatedAt: new Date(clock()).toISOString() }
    const snapshot = state
    saved = saved.then(async () => {
      await repository.save(site.id, snapshot)
      if (change.state) await showOnSite(deps, site.id, snapshot)
    })
    return saved
  }
  await save({ state: 'running', retryAt: null })
  let halt: { error: unknown; failures: number } | 'stopped' | null = null
  // failures in a row: a page stored by this run before the one that failed ends the row
  let progressed = false
  const halted = () => halt !== null || !!options.shouldStop?.()
  const taken = new Set<string>()
  // the days this run starts share a version: their earlier imports' rows go with one condition
  const version = Date.now()
  const nextDay = (): DayCursor | null => {
    const resumed = state.underway.find((c) => !taken.has(c.day))
    if (resumed) return resumed
    const day = state.days.find((d) => !taken.has(d) && !state.underway.some((c) => c.day === d))
    return day ? { day, part: 'rows', startRow: 0, version } : null
  }

  const withCursor = (cursor: DayCursor) => [...state.underway.filter((c) => c.day !== cursor.day), cursor]

  /** One day, page by page: its rows, then its totals; once both are stored, its older import goes. */
  const importDay = async (first: DayCursor) => {
    let cursor = first
    while (!halted()) {
      if (!(await withinQuota(deps.limiter, siteUrl, deps.connection.account ?? site.id, halted))) return
      const page = await querySearchAnalytics(deps.connection, siteUrl, {
        startDate: cursor.day,
        endDate: cursor.day,
        dimensions: cursor.part === 'rows' ? ['date', 'query', 'page', 'country', 'device'] : ['date', 'country', 'device'],
        dataState: dataStateOf(cursor.day, now),
        rowLimit,
        startRow: cursor.startRow,
      })
      if (!(await renew())) {
        halt = 'stopped'
        return
      }
      if (page.length)
        await deps.clickhouse.insert(
          cursor.part === 'rows' ? 'search_console_rows' : 'search_console_totals',
          (cursor.part === 'rows' ? storedRows : storedTotals)(site.id, cursor.day, page, cursor.version),
        )
      if (!halt) progressed = true
      const rows = state.rows + page.length
      if (page.length === rowLimit) cursor = { ...cursor, startRow: cursor.startRow + rowLimit }
      else if (cursor.part === 'rows') cursor = { ...cursor, part: 'totals', startRow: 0 }
      else {
        const { day } = cursor
        await save({
          underway: state.underway.filter((c) => c.day !== day),
          days: state.days.filter((d) => d !== day),
          unreplaced: [...state.unreplaced, { day, version: cursor.version }],
          daysDone: state.daysDone + 1,
          rows: state.rows + page.length,
        })
        return
      }
      await save({ underway: withCursor(cursor), rows })
    }
  }
  const worker = async () => {
    for (let cursor = nextDay(); cursor && !halted(); cursor = nextDay()) {
      taken.add(cursor.day)
      try {
        await importDay(cursor)
      } catch (error) {
        // the first answer that stops the run is the one told; the other workers end after their page
        halt ??= { error, failures: (progressed ? 0 : state.failures) + 1 }
      }
    }
  }
  await Promise.all(Array.from({ length: SEARCH_CONSOLE_IMPORT_RULE.concurrency }, worker))
  await saved
  // the lease went to another import of the site, which goes on from what was saved
  if (halt === 'stopped') return state
  if (state.unreplaced.length) {
    await dropOlderVersions(deps.clickhouse, site.id, state.unreplaced)
    await save({ unreplaced: [] })
  }
  const stop = halt as { error: unknown; failures: number } | null
  if (stop === null) {
    await save({ state: state.days.length ? 'running' : 'done', error: null, failures: 0 })
    await saved
    return state
  }
  const { error: err, failures } = stop
  if (!(err instanceof SearchConsoleError)) throw err
  // a quota answer only ever waits; Google's own failures fail the import after maxFailures in a row
  if (err.retryable && (err.status === 429 || failures < SEARCH_CONSOLE_IMPORT_RULE.maxFailures)) {
    const rule = SEARCH_CONSOLE_IMPORT_RULE
    const wait = Math.max(1000, err.retryAfterMs ?? Math.min(rule.maxWaitMs, rule.firstWaitMs * 2 ** (failures - 1)))
    log(`search console import of ${site.id}: ${err.message}; next try in ${Math.round(wait / 1000)} s`)
    await save({ state: 'waiting', failures, retryAt: new Date(clock() + wait).toISOString(), error: err.message })
  } else {
    log(`search console import of ${site.id} failed: ${err.message}`)
    await save({ state: 'failed', failures, retryAt: null, error: err.message })
  }
  await saved
  return state
}

/**
 * Waits until both quotas a query counts against have room: the property's and the Google
 * account's queries a minute. False when the run is told to stop meanwhile.
 */
async function withinQuota(limiter: RateLimiter, siteUrl: string, account: string, halted: () => boolean) {
  for (const [limitClass, id] of [
    ['searchConsoleSite', siteUrl],
    ['searchConsoleUser', account],
  ] as const) {
    for (;;) {
      if (halted()) return false
      const { success, retryAfterMs } = await limiter.limit(limitClass, id)
      if (success) break
      await new Promise((resolve) => setTimeout(resolve, Math.min(retryAfterMs ?? 1000, 5000)))
    }
  }
  return true
}

/**
 * The job (lib/jobs/schedule.ts): every site with a bound property and a working connection, one
 * after the other; a site that fails is logged and tried again on the next run.
 */
export async function runSearchConsoleImports(
  deps: SearchConsoleImportDeps & {
    repositories: { orgs: OrgsRepository; sites: SitesRepository }
    searchConsole?: SearchConsoleConnector
  },
  sites: () => Promise<Site[]>,
  now: Date,
  context: { log: (line: string) => void; shouldStop: () => boolean },
) {
  if (!deps.searchConsole) return
  for (const site of await sites()) {
    if (context.shouldStop()) return
    if (!site.integrations.searchConsole.connected || !site.integrations.searchConsole.siteUrl) continue
    try {
      const connection = await deps.searchConsole.connectionFor(site)
      if (!connection) continue
      await importSearchConsole({ ...deps, connection }, site, now, { log: context.log, shouldStop: context.shouldStop })
    } catch (err) {
      context.log(`search console import of ${site.id} failed: ${(err as Error).message}`)
    }
  }
}
