import type { SourceServices } from '../source-services'
import { Temporal } from 'temporal-polyfill'
import type { Site } from '../../sites/sites'
import { sql, bind } from '../../storage/clickhouse/sql'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { GoogleError } from '../google/oauth'
import type { GoogleConfig } from '../google/config'
import { GoogleSession } from '../google/session'
import { type ReportAnswer, runReport } from './client'
import { GA4_DATASETS, GA4_METRICS, type Ga4Dataset, IMPORTED_DIMENSION_COLUMNS, normalizeValue } from '../../reports/query/ga4-datasets'
import type { Ga4ImportRun, Ga4ImportTrigger } from './ga4-imports-repository'
import { wakeImportAt } from '../import-wakeups-repository'

/**
 * The GA4 import: each dataset of GA4_DATASETS over a run's days, asked of the Data API in chunks
 * of days and pages of rows, stored in `imported_aggregates` under the run's version. A page is
 * stored, then the cursor moves past it: a restart fetches the page again and stores the same
 * rows under the same version, which reads (FINAL) fold into one. Once every page of the run is
 * stored, the rows earlier runs stored for its days are deleted: a re-import replaces.
 */

/** The Data API's largest page. */
export const GA4_PAGE_ROWS = 100_000
/** Days asked for in one report: offsets stay small, and a chunk's replacement is one delete. */
export const CHUNK_DAYS = 92
/** GA4 has no data before this day (its launch), so a history never starts earlier. */
const GA4_FIRST_DAY = '2015-08-14'
/**
 * A quota or a failure of Google's: the wait Google asked for (Retry-After), else 30 s doubling up to
 * an hour. A quota answer only ever waits; Google's failures fail the run after this many in a row.
 */
const MAX_ATTEMPTS = 8
export const backoffMs = (attempts: number) => Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 3_600_000)
/** Below these many tokens left, the run waits for the quota to come back rather than be refused. */
const QUOTA_RESERVE = 200
/** Rows fetched before they are stored in one insert. */
const FLUSH_ROWS = 20_000
/** A worker holds a site this long without news; it renews the lease with every page. */
const LEASE_SECONDS = 300
/** Runs kept per site: every unfinished one, and the newest finished ones. */
const KEPT_RUNS = 30

export type Ga4ImportDeps = SourceServices & { google: GoogleConfig }

const DATASETS: readonly Ga4Dataset[] = GA4_DATASETS

/** A day `days` after a YYYY-MM-DD day. */
const addDays = (day: string, days: number) => Temporal.PlainDate.from(day).add({ days }).toString()
/** The site's local day at an instant. */
export const localDay = (site: Pick<Site, 'timezone'>, at: Date) =>
  Temporal.Instant.fromEpochMilliseconds(at.getTime()).toZonedDateTimeISO(site.timezone).toPlainDate().toString()
/** The earlier of two YYYY-MM-DD days. */
const earlierDay = (a: string, b: string) => [a, b].sort()[0]
const daysBetween = (from: string, to: string) => Temporal.PlainDate.from(from).until(Temporal.PlainDate.from(to)).days + 1

/** The run's tasks: for each chunk of days, every dataset. */
export function taskOf(run: Pick<Ga4ImportRun, 'from' | 'to'>, index: number) {
  const chunk = Math.floor(index / DATASETS.length)
  const from = addDays(run.from!, chunk * CHUNK_DAYS)
  const last = addDays(from, CHUNK_DAYS - 1)
  return { dataset: DATASETS[index % DATASETS.length], from, to: earlierDay(last, run.to) }
}
const taskCount = (from: string, to: string) => Math.ceil(daysBetween(from, to) / CHUNK_DAYS) * DATASETS.length

const isoDate = (yyyymmdd: string) => `${yyyymmdd.slice(0, 4)}-${yyyymmdd.slice(4, 6)}-${yyyymmdd.slice(6, 8)}`
const metricNumber = (value: string | undefined) => {
  const n = Number(value ?? 0)
  return Number.isFinite(n) && n > 0 ? n : 0
}

/** A page of a report as rows of imported_aggregates; rows whose values normalize alike are summed. */
export function importedRows(siteId: string, dataset: Ga4Dataset, answer: ReportAnswer, version: number) {
  const byKey = new Map<string, Record<string, string | number>>()
  for (const row of answer.rows ?? []) {
    const dims = row.dimensionValues?.map((d) => d.value ?? '') ?? []
    const metrics = row.metricValues?.map((m) => m.value) ?? []
    const stamp = dims[0] ?? ''
    const record: Record<string, string | number> = {
      site_id: siteId,
      source: 'ga4',
      dataset: dataset.name,
      date: isoDate(stamp),
      hour: dataset.hourly ? Number(stamp.slice(8, 10)) : 0,
    }
    for (const column of IMPORTED_DIMENSION_COLUMNS) record[column] = ''
    dataset.dimensions.forEach((d, i) => {
      record[d.column] = normalizeValue(d.column, dims[i + 1] ?? '')
    })
    const key = JSON.stringify([record.date, record.hour, ...dataset.dimensions.map((d) => record[d.column])])
    const seen = byKey.get(key)
    GA4_METRICS.forEach((m, i) => {
      const value = metricNumber(metrics[i])
      record[m.column] = m.column === 'engagement_seconds' ? value : Math.round(value)
      if (seen) (seen[m.column] as number) += record[m.column] as number
    })
    record.version = version
    if (!seen) byKey.set(key, record)
  }
  return [...byKey.values()]
}

/** The runReport request of a task's page. */
export function reportRequest(dataset: Ga4Dataset, from: string, to: string, offset: number, limit: number) {
  return {
    dateRanges: [{ startDate: from, endDate: to }],
    dimensions: [{ name: dataset.hourly ? 'dateHour' : 'date' }, ...dataset.dimensions.map((d) => ({ name: d.ga4 }))],
    metrics: GA4_METRICS.map((m) => ({ name: m.ga4 })),
    limit,
    offset,
    returnPropertyQuota: true,
  }
}

/** A new run of a site's bound property over `days` (a history: from its first day with data). */
export async function queueGa4Import(
  deps: Pick<SourceServices, 'repositories' | 'now'>,
  site: Site,
  propertyId: string,
  trigger: Ga4ImportTrigger,
  days: { from: string | null; to: string },
): Promise<Ga4ImportRun> {
  const now = deps.now()
  const previous = await deps.repositories.ga4Imports.list(site.id)
  const run: Ga4ImportRun = {
    id: crypto.randomUUID(),
    siteId: site.id,
    propertyId,
    trigger,
    state: 'queued',
    reason: null,
    from: days.from,
    to: days.to,
    // newer than every earlier run's, even one queued in the same millisecond
    version: Math.max(now.getTime(), ...previous.map((r) => r.version + 1)),
    createdAt: now.toISOString(),
    startedAt: null,
    finishedAt: null,
    retryAt: null,
    attempts: 0,
    rows: 0,
    cursor: { task: 0, offset: 0 },
    tasks: days.from ? taskCount(days.from, days.to) : null,
  }
  await deps.repositories.ga4Imports.save(run)
  // the newest finished runs are kept, with every unfinished one
  const finished = previous.filter((r) => r.state === 'done' || r.state === 'failed')
  await deps.repositories.ga4Imports.remove(
    site.id,
    finished.slice(0, Math.max(0, finished.length - KEPT_RUNS)).map((r) => r.id),
  )
  return run
}

/** The history of a property, from its first day with data to the site's today. */
export const historyDays = (site: Site, now: Date) => ({ from: null, to: localDay(site, now) })
/** The hourly re-import: today and yesterday. */
export const hourlyDays = (site: Site, now: Date) => ({ from: addDays(localDay(site, now), -1), to: localDay(site, now) })
/** The daily re-import: the three days before today, which GA4 may still have been settling. */
export const dailyDays = (site: Site, now: Date) => ({ from: addDays(localDay(site, now), -3), to: addDays(localDay(site, now), -1) })

/** Where a run stands, for the answers: tasks done of all, and the page of the current one. */
export const runProgress = (run: Ga4ImportRun) => ({
  tasksDone: run.state === 'done' ? (run.tasks ?? 0) : run.cursor.task,
  tasksTotal: run.tasks,
  fraction: run.state === 'done' ? 1 : run.tasks ? Math.min(1, run.cursor.task / run.tasks) : 0,
})

/** Why a run stops working for now: finished, waiting (retryAt set), or told to stop. */
type Outcome = 'finished' | 'waiting' | 'stopped'

/**
 * Works on one run until it is done, must wait (a 429, a 5xx, a quota running low: it records when
 * to try again and returns), fails, or `shouldStop` says so. Never waits itself.
 */
async function workOnRun(
  deps: Ga4ImportDeps,
  session: GoogleSession,
  site: Site,
  initial: Ga4ImportRun,
  renew: () => Promise<boolean>,
  shouldStop: () => boolean,
  pageRows: number,
): Promise<Outcome> {
  const { repositories, google } = deps
  let run: Ga4ImportRun = {
    ...initial,
    state: 'running',
    startedAt: initial.startedAt ?? deps.now().toISOString(),
    retryAt: null,
  }
  await repositories.ga4Imports.save(run)
  await reflectOnSite(deps, site.id, run)
  // pages are stored a batch at a time (an insert is a part of the table): the cursor saved moves past
  // a page only once its rows are stored, so a restart fetches again what was fetched and not stored
  let pending: Record<string, string | number>[] = []
  let saved = run
  const flush = async () => {
    if (pending.length) await deps.clickhouse.insert('imported_aggregates', pending)
    pending = []
    await repositories.ga4Imports.save(run)
    saved = run
  }
  try {
    if (!run.from) {
      // the property's first day with data: one row, the earliest date
      const first = await runReport(session, google.dataUrl, run.propertyId, {
        dateRanges: [{ startDate: GA4_FIRST_DAY, endDate: run.to }],
        dimensions: [{ name: 'date' }],
        metrics: [{ name: 'sessions' }],
        orderBys: [{ dimension: { dimensionName: 'date' } }],
        limit: 1,
        returnPropertyQuota: true,
      })
      const day = first.rows?.[0]?.dimensionValues?.[0]?.value
      if (!day) {
        run = { ...run, from: run.to, tasks: 0, state: 'done', finishedAt: deps.now().toISOString(), reason: null }
        await finish(deps, site.id, run)
        return 'finished'
      }
      const from = earlierDay(isoDate(day), run.to)
      run = { ...run, from, tasks: taskCount(from, run.to) }
      await flush()
    }
    while (run.cursor.task < run.tasks!) {
      if (shouldStop() || !(await renew())) {
        await flush()
        return 'stopped'
      }
      const task = taskOf(run, run.cursor.task)
      const answer = await runReport(
        session,
        google.dataUrl,
        run.propertyId,
        reportRequest(task.dataset, task.from, task.to, run.cursor.offset, pageRows),
      )
      const rows = importedRows(site.id, task.dataset, answer, run.version)
      pending.push(...rows)
      const fetched = answer.rows?.length ?? 0
      const offset = run.cursor.offset + fetched
      const complete = fetched === 0 || offset >= (answer.rowCount ?? 0)
      run = {
        ...run,
        rows: run.rows + rows.length,
        attempts: 0,
        reason: null,
        cursor: complete ? { task: run.cursor.task + 1, offset: 0 } : { task: run.cursor.task, offset },
      }
      // a quota running low: wait for it rather than be refused
      const quota = answer.propertyQuota
      const hourLeft = quota?.tokensPerHour?.remaining
      const dayLeft = quota?.tokensPerDay?.remaining
      if ((hourLeft !== undefined && hourLeft < QUOTA_RESERVE) || (dayLeft !== undefined && dayLeft < QUOTA_RESERVE)) {
        const waitMs = dayLeft !== undefined && dayLeft < QUOTA_RESERVE ? 6 * 3_600_000 : 3_600_000
        run = {
          ...run,
          retryAt: new Date(deps.now().getTime() + waitMs).toISOString(),
          reason: `waiting for the property's Data API quota (tokens left: ${hourLeft ?? '?'} this hour, ${dayLeft ?? '?'} today)`,
        }
        await flush()
        return 'waiting'
      }
      if (pending.length >= FLUSH_ROWS) await flush()
    }
    await flush()
    // every page of every day is stored: what earlier imports stored for these days goes
    if (run.tasks) await replaceOlderVersions(deps, site.id, run.from!, run.to, run.version)
    run = { ...run, state: 'done', finishedAt: deps.now().toISOString(), reason: null }
    await finish(deps, site.id, run)
    return 'finished'
  } catch (err) {
    // the pages fetched before the failure are kept; if they cannot be, the run goes on from the last stored page
    await flush().catch(() => {
      run = saved
    })
    const quota = err instanceof GoogleError && err.status === 429
    if (err instanceof GoogleError && err.transient && !err.grantRevoked && (quota || run.attempts + 1 < MAX_ATTEMPTS)) {
      const attempts = run.attempts + 1
      run = {
        ...run,
        attempts,
        retryAt: new Date(deps.now().getTime() + Math.max(1000, err.retryAfterMs ?? backoffMs(attempts))).toISOString(),
        reason: `waiting after ${err.message}${quota ? '' : ` (attempt ${attempts} of ${MAX_ATTEMPTS})`}`,
      }
      await repositories.ga4Imports.save(run)
      return 'waiting'
    }
    const reason = err instanceof GoogleError ? err.message : `the import failed: ${(err as Error).message}`
    run = { ...run, state: 'failed', reason, finishedAt: deps.now().toISOString() }
    await finish(deps, site.id, run)
    return 'finished'
  }
}

/**
 * Deletes the rows earlier imports stored for these days, once the newer version's are all stored.
 * A lightweight delete is a mutation of every part it touches: it is asked only when such rows exist
 * (never on a first import), and once a run.
 */
async function replaceOlderVersions(deps: Ga4ImportDeps, siteId: string, from: string, to: string, version: number) {
  const older = sql`site_id = ${bind('UUID', siteId)} AND source = 'ga4' AND date BETWEEN ${bind('Date', from)} AND ${bind('Date', to)}
    AND version < ${bind('UInt64', version)}`
  const [any] = await execute<{ found: number }>(deps.clickhouse, sql`SELECT 1 AS found FROM imported_aggregates WHERE ${older} LIMIT 1`)
  if (any) await executeCommand(deps.clickhouse, sql`DELETE FROM imported_aggregates WHERE ${older}`)
}

async function finish(deps: Ga4ImportDeps, siteId: string, run: Ga4ImportRun) {
  await deps.repositories.ga4Imports.save(run)
  await reflectOnSite(deps, siteId, run)
}

/** The site record shows the import: its GA4 state, and the days imported (the imported periods of the site read). */
async function reflectOnSite(deps: Pick<SourceServices, 'sites' | 'now'>, siteId: string, run: Ga4ImportRun) {
  await deps.sites
    .update(siteId, (site) => {
      const ga4 = site.integrations.ga4
      const last = { state: run.state, trigger: run.trigger, from: run.from, to: run.to, rows: run.rows, reason: run.reason }
      let imports = site.imports
      if (run.state === 'done' && run.from && run.tasks) {
        const earlier = site.imports.find((p) => p.source === 'ga4')
        const period = {
          source: 'ga4' as const,
          from: earlier && earlier.from < run.from ? earlier.from : run.from,
          to: earlier && earlier.to > run.to ? earlier.to : run.to,
          importedAt: run.finishedAt ?? deps.now().toISOString(),
        }
        imports = [...site.imports.filter((p) => p.source !== 'ga4'), period]
      }
      return { ...site, imports, integrations: { ...site.integrations, ga4: { ...ga4, lastImport: last } } }
    })
    .catch(() => {})
}

/**
 * Works on a site's due runs, oldest first, while it holds the site's lease: one worker per site,
 * whichever home and process. A site without a working binding is left alone.
 */
export async function importSite(
  deps: Ga4ImportDeps,
  siteId: string,
  options: { shouldStop?: () => boolean; pageRows?: number } = {},
): Promise<Outcome | 'idle'> {
  const { repositories } = deps
  const shouldStop = options.shouldStop ?? (() => false)
  const holder = crypto.randomUUID()
  if (!(await repositories.ga4Imports.lease(siteId, holder, LEASE_SECONDS))) return 'stopped'
  try {
    const [site, connection] = await Promise.all([repositories.sites.get(siteId), repositories.google.get(siteId)])
    if (!site || !connection?.ga4 || connection.status !== 'connected' || !site.sources.includes('ga4')) return 'idle'
    const session = new GoogleSession(deps, connection)
    const renew = () => repositories.ga4Imports.lease(siteId, holder, LEASE_SECONDS)
    const outcome = await workOnDueRuns(deps, session, site, connection.ga4.propertyId, renew, shouldStop, options.pageRows)
    // a run that waits, or was cut short, is due again at its own time, not at the job's next run
    if (outcome !== 'idle') await wakeAtNextRun(deps, siteId)
    return outcome
  } finally {
    await repositories.ga4Imports.release(siteId, holder)
  }
}

/** The site's due runs, oldest first, until none is due. */
async function workOnDueRuns(
  deps: Ga4ImportDeps,
  session: GoogleSession,
  site: Site,
  propertyId: string,
  renew: () => Promise<boolean>,
  shouldStop: () => boolean,
  pageRows = GA4_PAGE_ROWS,
): Promise<Outcome | 'idle'> {
  const siteId = site.id
  for (;;) {
    const now = deps.now().getTime()
    const due = (await deps.repositories.ga4Imports.list(siteId)).filter(
      (r) => (r.state === 'queued' || r.state === 'running') && (!r.retryAt || Date.parse(r.retryAt) <= now),
    )
    const run = due[0]
    if (!run) return 'idle'
    if (run.propertyId !== propertyId) {
      await finish(deps, siteId, {
        ...run,
        state: 'failed',
        reason: 'the site was bound to another property',
        finishedAt: deps.now().toISOString(),
      })
      continue
    }
    const outcome = await workOnRun(deps, session, site, run, renew, shouldStop, pageRows)
    if (outcome !== 'finished') return outcome
    if (session.current.status !== 'connected') return 'finished'
  }
}

/** Records when the site's earliest unfinished run is due: its retryAt, or now for one that can go on at once. */
async function wakeAtNextRun(deps: Ga4ImportDeps, siteId: string) {
  const now = deps.now().getTime()
  const times = (await deps.repositories.ga4Imports.list(siteId))
    .filter((r) => r.state === 'queued' || r.state === 'running')
    .map((r) => (r.retryAt ? Math.max(now, Date.parse(r.retryAt)) : now))
  if (times.length) await wakeImportAt(deps, 'ga4', siteId, Math.min(...times))
}

/** Marks every unfinished run of a site failed with the reason (a disconnect, a new binding). */
export async function stopImports(deps: Pick<SourceServices, 'repositories' | 'now'>, siteId: string, reason: string) {
  for (const run of await deps.repositories.ga4Imports.list(siteId)) {
    if (run.state === 'queued' || run.state === 'running')
      await deps.repositories.ga4Imports.save({ ...run, state: 'failed', reason, finishedAt: deps.now().toISOString(), retryAt: null })
  }
}

/** What a job run needs: the home's services with a Google client. */
const importDeps = (services: SourceServices): Ga4ImportDeps | null => (services.google ? { ...services, google: services.google } : null)

/**
 * The job: for every site bound to a GA4 property, queues the re-import `trigger` asks for (none:
 * only continue what is under way), then works on its due runs. One site's failure is logged and
 * never stops the others.
 */
export async function runGa4Imports(
  services: SourceServices,
  now: Date,
  context: { log: (line: string) => void; shouldStop: () => boolean },
  trigger?: Exclude<Ga4ImportTrigger, 'bind'>,
) {
  const deps = importDeps(services)
  if (!deps) return
  for (const siteId of await services.repositories.google.boundSites()) {
    if (context.shouldStop()) return
    try {
      if (trigger) await queueReimport(deps, siteId, trigger, now)
      await importSite(deps, siteId, { shouldStop: context.shouldStop })
    } catch (err) {
      context.log(`ga4 import of site ${siteId} failed: ${(err as Error).message}`)
    }
  }
}

async function queueReimport(deps: Ga4ImportDeps, siteId: string, trigger: 'hourly' | 'daily', now: Date) {
  const [site, connection] = await Promise.all([deps.repositories.sites.get(siteId), deps.repositories.google.get(siteId)])
  if (!site || !connection?.ga4 || connection.status !== 'connected' || !site.sources.includes('ga4')) return
  const runs = await deps.repositories.ga4Imports.list(siteId)
  // one waiting run of a kind is enough: it will import the newest data when it runs
  if (runs.some((r) => r.trigger === trigger && (r.state === 'queued' || r.state === 'running'))) return
  await queueGa4Import(deps, site, connection.ga4.propertyId, trigger, (trigger === 'hourly' ? hourlyDays : dailyDays)(site, now))
}

/** Deletes a site's imported GA4 rows: the site dropped ga4 from its sources. */
export async function forgetImportedGa4(deps: Pick<SourceServices, 'clickhouse'>, siteId: string) {
  await executeCommand(
    deps.clickhouse,
    sql`ALTER TABLE imported_aggregates DELETE WHERE site_id = ${bind('UUID', siteId)} AND source = 'ga4' SETTINGS mutations_sync = 2`,
  )
}
