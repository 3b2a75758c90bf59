import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { clickGroupsSql, clickRolledDaysSql, clickSummarySql, rolledClickGroupsSql, rolledClickSummarySql } from './compile/clicks'
import {
  ERROR_BREAKDOWNS,
  type ErrorBreakdown,
  errorBreakdownSql,
  errorGroupsSql,
  errorPageCountSql,
  errorRolledDaysSql,
  errorSummarySql,
  recentErrorsSql,
  rolledErrorGroupsSql,
  rolledErrorSummarySql,
} from './compile/errors'
import { COLLECTOR_PREFIX } from './compile/property-keys'
import { propertyKeyCountsSql, propertyValuesSql } from './compile/properties'
import type { Query, RolledDays } from './model'
import { type ParseOptions, type ReportParams, collectorSource } from './parse'
import type { Source } from '../../sites/source'
import { type SignatureRow, rolledDaysOf } from './plan'
import { type ResolvedRange, buckets, previousWindow, rangeView, wholeDays, windowDays } from './range'
import { type ReportDeps, prepare } from './reports'
import { execute } from '../../storage/clickhouse/execute'

/**
 * The behaviour reads: what visitors ran into and did on the page. The collector alone records them,
 * so they read the standalone source, and a site without it answers `available: false`.
 */

type Row = Record<string, unknown>
const numberOf = (v: unknown) => Number(v ?? 0)
const isoOf = (epochMs: unknown) => new Date(numberOf(epochMs)).toISOString()

/** The query over the standalone source, or null where the read's source is not it (collectorSource). */
export async function standaloneQuery(
  deps: ReportDeps,
  site: Site,
  params: ReportParams,
  options: ParseOptions = {},
): Promise<Query | null> {
  if (collectorSource(params, site) !== 'standalone') return null
  return (await prepare(deps, site, { ...params, source: 'standalone' }, options)).query
}

/** A collector-only read's answer with the source it read (collectorSource: a 400 for a source the site does not have). */
export async function collectorRead<T extends object>(
  site: Site,
  params: Pick<ReportParams, 'source'>,
  read: () => Promise<T>,
): Promise<{ source: Source } & T> {
  const source = collectorSource(params, site)
  return { source, ...(await read()) }
}

export interface ErrorParams extends ReportParams {
  fingerprint?: string
  pages?: '0' | '1'
  offset?: number
}

/** The most recent occurrences a group's detail lists. */
const RECENT_ERRORS = 20

const ZERO_ERROR_SUMMARY = { errors: 0, groups: 0, visitors: 0 }
const shapeErrorSummary = (r: Row | undefined) => ({
  errors: numberOf(r?.errors),
  groups: numberOf(r?.groups),
  visitors: numberOf(r?.visitors),
})
const shapeCounts = (rows: Row[]) => rows.map((r) => ({ value: String(r.value), count: numberOf(r.count), visitors: numberOf(r.visitors) }))

/** The rolled days of a window among those of a wider one. */
function rolledWithin(rolled: RolledDays, range: ResolvedRange): RolledDays {
  const days = new Set(windowDays(range))
  const keep = rolled.days.map((d) => days.has(d))
  const kept = <T>(values: T[]) => values.filter((_, i) => keep[i])
  return { days: kept(rolled.days), events: kept(rolled.events), sums: kept(rolled.sums) }
}

/** The window's error summary: from the errors rollup where some of its days are rolled up. */
const errorSummary = (deps: ReportDeps, query: Query, rolled?: RolledDays) =>
  execute<Row>(deps.clickhouse, rolled?.days.length ? rolledErrorSummarySql(query, rolled) : errorSummarySql(query))

/**
 * Error groups with a sparkline each: occurrences per bucket of the window, empty buckets zero.
 * From the errors rollup where some of the window's days are rolled up and its buckets are days,
 * weeks or months (a window of one day has hour buckets, which the rollup does not hold).
 */
async function errorGroups(deps: ReportDeps, query: Query, fingerprint?: string, rolled?: RolledDays) {
  const fromRollup = fingerprint === undefined && rolled?.days.length && query.range.interval !== 'hour'
  const rows = await execute<Row>(deps.clickhouse, fromRollup ? rolledErrorGroupsSql(query, rolled) : errorGroupsSql(query, fingerprint))
  const windowBuckets = buckets(query.range)
  return rows.map((r) => ({
    fingerprint: String(r.fingerprint),
    kind: String(r.group_kind),
    errorName: String(r.group_name),
    message: String(r.message),
    count: numberOf(r.count),
    visitors: numberOf(r.visitors),
    paths: numberOf(r.paths),
    topPath: String(r.top_path),
    topBrowser: String(r.top_browser),
    firstSeen: isoOf(r.first_seen),
    lastSeen: isoOf(r.last_seen),
    sparkline: windowBuckets.map((b) => numberOf((r.per_bucket as Record<string, unknown>)[b.epoch])),
  }))
}

/** The pages one group fired on, most occurrences first, from `offset`. */
async function errorPages(deps: ReportDeps, query: Query, fingerprint: string, offset: number) {
  const [total, rows] = await Promise.all([
    execute<Row>(deps.clickhouse, errorPageCountSql(query, fingerprint)),
    execute<Row>(deps.clickhouse, errorBreakdownSql(query, fingerprint, 'pages', offset)),
  ])
  return { total: numberOf(total[0]?.total), pages: shapeCounts(rows) }
}

const BREAKDOWNS = Object.keys(ERROR_BREAKDOWNS) as ErrorBreakdown[]

/** One group: its row, its occurrences by page, browser, OS, device and country, and the latest ones. */
async function errorDetail(deps: ReportDeps, query: Query, fingerprint: string) {
  const [groups, recent, ...lists] = await Promise.all([
    errorGroups(deps, query, fingerprint),
    execute<Row>(deps.clickhouse, recentErrorsSql(query, fingerprint, RECENT_ERRORS)),
    ...BREAKDOWNS.map((by) => execute<Row>(deps.clickhouse, errorBreakdownSql(query, fingerprint, by))),
  ])
  return {
    group: groups[0] ?? null,
    breakdowns: Object.fromEntries(BREAKDOWNS.map((by, i) => [by, shapeCounts(lists[i])])) as Record<
      ErrorBreakdown,
      ReturnType<typeof shapeCounts>
    >,
    recent: recent.map((r) => ({
      timestamp: isoOf(r.at),
      path: String(r.pathname),
      message: String(r.error_message),
      browser: String(r.browser),
      os: String(r.os),
      device: String(r.device),
      country: String(r.country_code),
    })),
  }
}

/**
 * GET /errors: the window's error groups with totals against the previous window; with a
 * fingerprint, that group's detail; with a fingerprint and pages=1, the pages it fired on.
 */
async function errorsRead(deps: ReportDeps, site: Site, params: ErrorParams) {
  const { fingerprint } = params
  const pages = params.pages === '1'
  if (pages && fingerprint === undefined) throw new ApiError(400, 'pages: needs fingerprint, the group whose pages to list')
  const query = await standaloneQuery(deps, site, params)
  if (fingerprint !== undefined && pages) {
    const offset = params.offset ?? 0
    if (!query) return { available: false, fingerprint, offset, total: 0, pages: [] }
    return { available: true, range: rangeView(query.range), fingerprint, offset, ...(await errorPages(deps, query, fingerprint, offset)) }
  }
  if (fingerprint !== undefined) {
    if (!query)
      return { available: false, group: null, breakdowns: { pages: [], browsers: [], os: [], devices: [], countries: [] }, recent: [] }
    return { available: true, range: rangeView(query.range), ...(await errorDetail(deps, query, fingerprint)) }
  }
  if (!query) return { available: false, summary: ZERO_ERROR_SUMMARY, previous: ZERO_ERROR_SUMMARY, groups: [] }
  const previous = { ...query, range: previousWindow(query.range) }
  // an unfiltered read over whole days takes the days of both windows whose errors rollup is current from it
  const rolled =
    query.filters.length || !wholeDays(query.range)
      ? undefined
      : rolledDaysOf(
          query,
          await execute<SignatureRow>(deps.clickhouse, errorRolledDaysSql(query.siteId, { ...query.range, from: previous.range.from })),
        )
  const rolledNow = rolled && rolledWithin(rolled, query.range)
  const [current, before, groups] = await Promise.all([
    errorSummary(deps, query, rolledNow),
    errorSummary(deps, previous, rolled && rolledWithin(rolled, previous.range)),
    errorGroups(deps, query, undefined, rolledNow),
  ])
  return {
    available: true,
    range: rangeView(query.range),
    summary: shapeErrorSummary(current[0]),
    previous: shapeErrorSummary(before[0]),
    groups,
  }
}

/** GET /clicks: clicks grouped by element and link, with dead clicks counted. */
async function clicksRead(deps: ReportDeps, site: Site, params: ReportParams) {
  const query = await standaloneQuery(deps, site, params)
  if (!query) return { available: false, summary: { clicks: 0, visitors: 0, deadClicks: 0 }, clicks: [] }
  // an unfiltered read over whole days takes the days whose clicks rollup is current from it
  const rolled =
    query.filters.length || !wholeDays(query.range)
      ? undefined
      : rolledDaysOf(query, await execute<SignatureRow>(deps.clickhouse, clickRolledDaysSql(query.siteId, query.range)))
  const [summary, rows] = await Promise.all(
    rolled?.days.length
      ? [
          execute<Row>(deps.clickhouse, rolledClickSummarySql(query, rolled)),
          execute<Row>(deps.clickhouse, rolledClickGroupsSql(query, rolled)),
        ]
      : [execute<Row>(deps.clickhouse, clickSummarySql(query)), execute<Row>(deps.clickhouse, clickGroupsSql(query))],
  )
  return {
    available: true,
    range: rangeView(query.range),
    summary: {
      clicks: numberOf(summary[0]?.clicks),
      visitors: numberOf(summary[0]?.visitors),
      deadClicks: numberOf(summary[0]?.dead_clicks),
    },
    clicks: rows.map((r) => ({
      selector: String(r.selector),
      text: String(r.text),
      tag: String(r.tag),
      url: String(r.url),
      interactive: numberOf(r.any_interactive) === 1,
      count: numberOf(r.count),
      visitors: numberOf(r.visitors),
      deadClicks: numberOf(r.dead_clicks),
      topPath: String(r.top_path),
      paths: numberOf(r.paths),
    })),
  }
}

/** GET /properties: the custom property keys of the window; with `property`, that key's values. */
async function propertiesRead(deps: ReportDeps, site: Site, params: ReportParams & { property?: string }) {
  const { property } = params
  if (property?.startsWith(COLLECTOR_PREFIX))
    throw new ApiError(400, `property: ${COLLECTOR_PREFIX}* keys are the collector's own, not custom properties`)
  const query = await standaloneQuery(deps, site, params)
  if (property !== undefined) {
    if (!query) return { available: false, property, values: [] }
    const rows = await execute<Row>(deps.clickhouse, propertyValuesSql(query, property))
    return {
      available: true,
      range: rangeView(query.range),
      property,
      values: rows.map((r) => ({ value: String(r.value), events: numberOf(r.events), visitors: numberOf(r.visitors) })),
    }
  }
  if (!query) return { available: false, keys: [] }
  const rows = await execute<Row>(deps.clickhouse, propertyKeyCountsSql(query))
  return {
    available: true,
    range: rangeView(query.range),
    keys: rows.map((r) => ({ key: String(r.key), events: numberOf(r.events), visitors: numberOf(r.visitors) })),
  }
}

export const errors = (deps: ReportDeps, site: Site, params: ErrorParams) =>
  collectorRead(site, params, () => errorsRead(deps, site, params))

export const clicks = (deps: ReportDeps, site: Site, params: ReportParams) =>
  collectorRead(site, params, () => clicksRead(deps, site, params))

export const properties = (deps: ReportDeps, site: Site, params: ReportParams & { property?: string }) =>
  collectorRead(site, params, () => propertiesRead(deps, site, params))
