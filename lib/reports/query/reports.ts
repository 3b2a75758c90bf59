import type { DomainRepositories } from '../../sites/domain-services'
import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../../core/errors'
import { PROPERTY_PREFIX, type RangeName, V1_DIMENSIONS } from '../dimensions'
import type { Goal } from '../../sites/goals'
import type { ClickHouse } from '../../storage/clickhouse/types'
import type { Site } from '../../sites/sites'
import type { Source } from '../../sites/source'
import type { BreakdownOptions, Query } from './model'
import { dailyTotalsSql } from './compile/stats'
import {
  type ParseOptions,
  type ParsedReport,
  type ReportParams,
  needsFirstEvent,
  needsGoals,
  needsSegments,
  collectorSource,
  parseFilters,
  parseQuery,
  parseSource,
} from './parse'
import { type ResolvedRange, previousWindow, rangeView, resolveRange, wholeDays } from './range'
import { execute } from '../../storage/clickhouse/execute'
import { runImportedRead, runRead, runSampledRead } from './run'
import { propertyKeysSql } from './compile/property-keys'
import {
  type BreakdownRow,
  type Totals,
  ZERO_TOTALS,
  shapeBreakdown,
  shapeImportedBreakdown,
  shapeImportedTotals,
  shapeSeries,
  shapeTotals,
  shapeBreakdownWithImports,
  shapeSeriesWithImports,
  shapeTotalsWithImports,
} from './shape'
import { eventEdges, firstEventAt, firstImportedAt } from './site-events'
import { installOf } from '../../sites/site-install'
import { type SignatureRow, readsBotHits, rolledDaysOf } from './plan'
import { signaturesAndBuilt } from './compile/day-rollups'
import { type Fragment, bind, join, sql } from '../../storage/clickhouse/sql'
import { type LiveSource, ga4RealtimeBreakdown, ga4RealtimeReads, ga4RealtimeSeries, ga4RealtimeTotals } from './ga4-live'
import { breakdownsAtOnce } from './breakdowns'
import { sampleOf, samplingView } from './sampling'
import { type CompareInput, type CompareMode, TOTALS_FIGURES, alignSeries, changes, compareRows, resolveComparison } from './compare'

/**
 * The report verbs: each reads what one report needs and answers it whole. Handlers resolve the
 * site and pass the validated parameters; the verbs do the rest (parse, read, shape).
 */

/** What the verbs read from: the engine, the goals of a site, and the clock. */
export interface ReportDeps {
  clickhouse: ClickHouse
  repositories: Pick<DomainRepositories, 'goals' | 'segments'>
  now(): Date
  /** The caller is neither a signed-in member nor a key (DomainServices.anonymousReads): its queries are transient. */
  anonymousReads?: true
  /** GA4's Realtime API, for a ga4 read of `range=realtime` (SourceServices.ga4Live). */
  ga4Live?: LiveSource
}

/**
 * The reads of one source: the collector's events (standalone), or the imported GA4 aggregates
 * (ga4, runImportedRead: the planner picks the one dataset a read takes). A site known to have no
 * events (`hasEvents` false) answers its standalone reads with zeros and empty lists, without reading.
 */
export function sourceReader(clickhouse: ClickHouse, source: Source, hasEvents = true) {
  if (source === 'ga4') return withSampledReads(importedReader(clickhouse))
  const answers = hasEvents
  const none = { rows: [], sampled: false }
  // each read with whether it read the query's sample: the totals, series and breakdown answers say so
  const reads = {
    totals: async (query: Query) => {
      const { rows, sampled } = answers ? await runSampledRead(clickhouse, query, { kind: 'stats' }) : none
      return { value: answers ? shapeTotals(rows[0]) : ZERO_TOTALS, sampled }
    },
    series: async (query: Query) => {
      const { rows, sampled } = answers ? await runSampledRead(clickhouse, query, { kind: 'series' }) : none
      return { value: shapeSeries(query.range, rows), sampled }
    },
    breakdown: async (query: Query, property: string, options: BreakdownOptions = {}) => {
      const read = { kind: 'breakdown', property, ...options } as const
      const { rows, sampled } = answers ? await runSampledRead(clickhouse, query, read) : none
      return { value: answers ? shapeBreakdown(property, rows, readsBotHits(query, read) ? false : undefined) : [], sampled }
    },
  }
  return {
    answers,
    sampled: reads,
    totals: async (query: Query): Promise<Totals> => (await reads.totals(query)).value,
    series: async (query: Query) => (await reads.series(query)).value,
    breakdown: async (query: Query, property: string, options: BreakdownOptions = {}) =>
      (await reads.breakdown(query, property, options)).value,
  }
}

/** A reader of reads that never sample (the imported aggregates), with the sampled reads of sourceReader's shape. */
function withSampledReads<R extends Pick<ReturnType<typeof importedReader>, 'totals' | 'series' | 'breakdown'>>(reader: R) {
  return {
    ...reader,
    sampled: {
      totals: async (query: Query) => ({ value: await reader.totals(query), sampled: false }),
      series: async (query: Query) => ({ value: await reader.series(query), sampled: false }),
      breakdown: async (query: Query, property: string, _options?: BreakdownOptions) => ({
        value: await reader.breakdown(query, property),
        sampled: false,
      }),
    },
  }
}

/** The reads of the ga4 source, from the imported aggregates (docs/api.md, "Reads of the ga4 source"). */
function importedReader(clickhouse: ClickHouse) {
  return {
    // the listing's one-statement path is the collector's; imported reads take theirs
    answers: false,
    totals: async (query: Query): Promise<Totals> => {
      const { plan, rows } = await runImportedRead(clickhouse, query, { kind: 'stats' })
      return shapeImportedTotals(rows[0], plan.events !== 'none')
    },
    series: async (query: Query) => shapeSeries(query.range, (await runImportedRead(clickhouse, query, { kind: 'series' })).rows),
    breakdown: async (query: Query, property: string) => {
      const { plan, rows } = await runImportedRead(clickhouse, query, { kind: 'breakdown', property })
      return shapeImportedBreakdown(property, rows, plan.events !== 'none')
    },
  }
}

/** Rows each part of a merged breakdown reads before they are matched by value and cut to the query's limit. */
const MERGED_ROWS = 100_000

/**
 * The collector's reads with the site's imported aggregates (GA4's and Plausible's, a day counted
 * once: compile/imported.ts) added, as Plausible's `include.imports` adds them: the imports count only for the site-local days before the first
 * tracked day (`trackedFrom`; every day when nothing is tracked), so a day is never counted twice.
 * Each read runs on both sources over its part of the window and the rows are added up (shape.ts).
 */
export function readerWithImports(clickhouse: ClickHouse, trackedFrom: Temporal.ZonedDateTime | null) {
  const before = (at: Temporal.ZonedDateTime, bound: Temporal.ZonedDateTime) => Temporal.ZonedDateTime.compare(at, bound) < 0
  // the imported part of a query's window: the days before the first tracked day, or none
  const importedPart = (query: Query): Query | null => {
    if (!trackedFrom) return query
    if (!before(query.range.from, trackedFrom)) return null
    return before(query.range.to, trackedFrom) ? query : { ...query, range: { ...query.range, to: trackedFrom } }
  }
  const imported = async (query: Query, read: Parameters<typeof runImportedRead>[2]) => {
    const part = importedPart(query)
    return part ? await runImportedRead(clickhouse, part, read, 'all') : { plan: undefined, rows: [] }
  }
  const withEvents = (plan: { events: string } | undefined) => plan === undefined || plan.events !== 'none'
  return {
    answers: false,
    totals: async (query: Query): Promise<Totals> => {
      const [[tracked], other] = await Promise.all([runRead(clickhouse, query, { kind: 'stats' }), imported(query, { kind: 'stats' })])
      return shapeTotalsWithImports(tracked, other.rows[0], withEvents(other.plan))
    },
    series: async (query: Query) => {
      const [tracked, other] = await Promise.all([runRead(clickhouse, query, { kind: 'series' }), imported(query, { kind: 'series' })])
      return shapeSeriesWithImports(query.range, tracked, other.rows)
    },
    breakdown: async (query: Query, property: string) => {
      const all = { ...query, limit: MERGED_ROWS }
      const read = { kind: 'breakdown', property } as const
      const [tracked, other] = await Promise.all([runRead(clickhouse, all, read), imported(all, read)])
      return shapeBreakdownWithImports(property, tracked, other.rows, withEvents(other.plan), query.limit)
    },
  }
}

/**
 * A ga4 read of `range=realtime` (spec 4.1 rule 2): answered from GA4's Realtime API, which keeps
 * no earlier window to compare with. Other ga4 reads are of the imported days.
 */
function liveGa4(source: Source, query: Query, params: CompareInput): boolean {
  if (source !== 'ga4' || query.range.name !== 'realtime') return false
  if (params.compare)
    throw new ApiError(
      400,
      "compare: GA4's Realtime API keeps only the last 30 minutes; a ga4 read of range=realtime compares with nothing",
    )
  return true
}

/** GA4's Realtime API as the deps carry it: the app's services do; a bare reader (a benchmark) does not. */
function liveDeps(deps: ReportDeps): LiveSource {
  if (!deps.ga4Live) throw new ApiError(409, "GA4's Realtime API is not reachable from this reader")
  return deps.ga4Live
}

/** A query over a window with no filters, read at `now`: site listings and the public count. */
const windowQuery = (siteId: string, range: ResolvedRange, now: Date): Query => ({ siteId, range, filters: [], goals: [], limit: 100, now })

/**
 * The query with its sample where the site samples (sampling.ts): the reads of the totals, series
 * and breakdown verbs, of the collector's events. A comparison window reads the same fraction.
 */
async function sampled(deps: ReportDeps, site: Site, source: Source, query: Query): Promise<Query> {
  if (source !== 'standalone') return query
  const sample = await sampleOf(deps.clickhouse, site, query)
  return sample ? { ...query, sample } : query
}

/**
 * Parses the source and the filters once, reads what the rest of parsing needs (the goals, the
 * segments, the first event) only when it needs it, then parses.
 */
export async function prepare(
  deps: ReportDeps,
  site: Site,
  params: ReportParams,
  options: ParseOptions & { withGoals?: boolean; now?: Date } = {},
): Promise<ParsedReport> {
  const source = parseSource(params, site)
  const filters = parseFilters(params.filters, source)
  const [goals, segments, first] = await Promise.all([
    options.withGoals || needsGoals(filters, options) ? deps.repositories.goals.list(site.id) : Promise.resolve([] as Goal[]),
    needsSegments(filters) ? deps.repositories.segments.list(site.id) : Promise.resolve([]),
    needsFirstEvent(params, options)
      ? source === 'ga4'
        ? firstImportedAt(deps.clickhouse, site)
        : firstEventAt(deps.clickhouse, site.id)
      : Promise.resolve(null),
  ])
  const parsed = parseQuery(
    { params, site, source, filters, goals, segments, firstEventAt: first, now: options.now ?? deps.now() },
    options,
  )
  return deps.anonymousReads ? { ...parsed, query: { ...parsed.query, transient: true } } : parsed
}

/** The comparison window of a read asked to compare (compare.ts), as the answer names it. */
const comparisonView = (compare: { mode: CompareMode; window: ResolvedRange }) => ({ mode: compare.mode, range: rangeView(compare.window) })

/** The rows a compared breakdown reads on each side, to tell rows that appeared or vanished (docs/api.md, Comparisons). */
export const COMPARED_ROWS = 1000

/** GET /stats: the window's totals, and with compare those of the comparison window and the change. */
export async function totals(deps: ReportDeps, site: Site, params: ReportParams & CompareInput) {
  const prepared = await prepare(deps, site, params, { bots: true })
  const { source } = prepared
  if (liveGa4(source, prepared.query, params))
    return { source, range: rangeView(prepared.query.range), totals: await ga4RealtimeTotals(liveDeps(deps), site, prepared.query) }
  const query = await sampled(deps, site, source, prepared.query)
  const compare = resolveComparison(query.range, params, query.now)
  const window = compare?.window
  const read = sourceReader(deps.clickhouse, source)
  const [{ value: current, sampled: fromSample }, other] = await Promise.all([
    read.sampled.totals(query),
    window ? read.sampled.totals({ ...query, range: window }) : null,
  ])
  const compared = other?.value
  // either window read from the sample: the answer says so
  const sampling = samplingView(query.sample, fromSample || !!other?.sampled, current.visitors)
  return {
    source,
    range: rangeView(query.range),
    ...(sampling ? { sampling } : {}),
    totals: current,
    ...(compare && compared
      ? { comparison: { ...comparisonView(compare), totals: compared, change: changes(current, compared, TOTALS_FIGURES) } }
      : {}),
  }
}

/** GET /timeseries: every bucket of the window; with compare, each paired with the comparison window's bucket of its position. */
export async function series(deps: ReportDeps, site: Site, params: ReportParams & CompareInput) {
  const prepared = await prepare(deps, site, params, { series: true, bots: true })
  const { source } = prepared
  if (liveGa4(source, prepared.query, params)) {
    const { query } = prepared
    return { source, range: rangeView(query.range), series: await ga4RealtimeSeries(liveDeps(deps), site, query, query.now) }
  }
  const query = await sampled(deps, site, source, prepared.query)
  const compare = resolveComparison(query.range, params, query.now)
  const window = compare?.window
  const read = sourceReader(deps.clickhouse, source)
  const [{ value: current, sampled: fromSample }, other] = await Promise.all([
    read.sampled.series(query),
    window ? read.sampled.series({ ...query, range: window }) : null,
  ])
  const compared = other?.value
  const sampling = samplingView(query.sample, fromSample || !!other?.sampled, Math.max(0, ...current.map((b) => b.visitors)))
  const answer = { source, range: rangeView(query.range), ...(sampling ? { sampling } : {}) }
  if (!compare || !compared) return { ...answer, series: current }
  const aligned = alignSeries(current, compared)
  return {
    ...answer,
    comparison: { ...comparisonView(compare), unpaired: aligned.unpaired },
    series: aligned.series,
  }
}

/** GET /breakdown: the top values of one property; with compare, each against the comparison window, and the rows that vanished. */
export async function breakdown(deps: ReportDeps, site: Site, params: ReportParams & CompareInput & { property: string }) {
  const prepared = await prepare(deps, site, params, { property: params.property, bots: true })
  const { source } = prepared
  if (liveGa4(source, prepared.query, params)) {
    const { query } = prepared
    const results = await ga4RealtimeBreakdown(liveDeps(deps), site, query, params.property)
    return { source, range: rangeView(query.range), property: params.property, results }
  }
  const query = await sampled(deps, site, source, prepared.query)
  const compare = resolveComparison(query.range, params, query.now)
  const window = compare?.window
  const read = sourceReader(deps.clickhouse, source)
  const answer = { source, range: rangeView(query.range), property: params.property }
  // rows come most visitors first: the margin is the top row's
  const withSampling = (rows: readonly { visitors: number }[], fromSample: boolean) => {
    const sampling = samplingView(query.sample, fromSample, rows[0]?.visitors ?? 0)
    return sampling ? { ...answer, sampling } : answer
  }
  if (!window || !compare) {
    const { value: results, sampled: fromSample } = await read.sampled.breakdown(query, params.property)
    return { ...withSampling(results, fromSample), results }
  }
  const wide = { ...query, limit: COMPARED_ROWS }
  const [{ value: current, sampled: fromSample }, { value: compared, sampled: comparedFromSample }] = await Promise.all([
    read.sampled.breakdown(wide, params.property),
    read.sampled.breakdown({ ...wide, range: window }, params.property),
  ])
  return {
    ...withSampling(current, fromSample || comparedFromSample),
    comparison: comparisonView(compare),
    results: compareRows(current, compared, query.limit),
  }
}

/** GET /export: totals, series and every breakdown the source has. */
/** Custom property keys an export breaks down by, most used first. */
const EXPORT_PROPERTY_KEYS = 100

export async function exportAll(deps: ReportDeps, site: Site, params: ReportParams) {
  const { source, query } = await prepare(deps, site, params, { withGoals: true })
  const read = sourceReader(deps.clickhouse, source)
  const rows = { ...query, limit: Math.min(Math.max(1, params.limit ?? 10_000), 10_000) }
  const dimensions = V1_DIMENSIONS.filter((d) => d.name !== 'bot_kind' && d.sources.includes(source)).map((d) => d.name)
  // and prop:<key> for every custom property key seen in the window (the collector's source only)
  const keys = source === 'standalone' ? await execute<{ key: string }>(deps.clickhouse, propertyKeysSql(query, EXPORT_PROPERTY_KEYS)) : []
  const properties = [...dimensions, ...keys.map((k) => `${PROPERTY_PREFIX}${k.key}`)]
  // the collector's events: properties that share a plan are read in one statement each
  // (with the totals, when they share the visit attributes' statement)
  const atOnce = source === 'standalone'
  const together = atOnce ? await breakdownsAtOnce(deps.clickhouse, rows, properties, { totals: true }) : null
  const breakdowns: Record<string, BreakdownRow[]> = together?.breakdowns ?? {}
  if (!atOnce) for (const property of properties) breakdowns[property] = await read.breakdown(rows, property)
  return {
    site: { id: site.id, domain: site.domain, timezone: site.timezone },
    source,
    range: rangeView(query.range),
    totals: together?.totals ?? (await read.totals(query)),
    series: await read.series(query),
    breakdowns,
  }
}

/** GET /realtime: the last 5 and 30 minutes, a minute series, active pages and sources. */
export async function realtime(deps: ReportDeps, site: Site, params: Omit<ReportParams, 'range' | 'from' | 'to'>) {
  const now = deps.now()
  // one parse; the three windows derive from the same instant
  const { source, query } = await prepare(deps, site, { ...params, range: 'realtime' }, { now })
  const minutes = { ...query, range: resolveRange({ range: 'realtime' }, site.timezone, now, { series: true }) }
  const halfHour = { ...query, range: resolveRange({ range: '30m' }, site.timezone, now) }
  const limited = { ...query, limit: Math.min(query.limit, 10) }
  const read = sourceReader(deps.clickhouse, source)
  // five small reads of the last half hour, at once; a ga4 site's come from GA4's Realtime API
  const [now5, now30, series, pages, sources] =
    source === 'ga4'
      ? await ga4RealtimeReads(liveDeps(deps), site, query, minutes.range, now)
      : await Promise.all([
          read.totals(query),
          read.totals(halfHour),
          read.series(minutes),
          read.breakdown(limited, 'path'),
          read.breakdown(limited, 'source'),
        ])
  // the answer holds two windows: say both, not only the series' half hour
  const window = (r: ResolvedRange) => ({ from: rangeView(r).from, to: rangeView(r).to })
  const range = { ...rangeView(minutes.range), windows: { now: window(query.range), halfHour: window(halfHour.range) } }
  return { source, range, now: now5.visitors, halfHour: now30.visitors, series, pages, sources }
}

/**
 * GET /goals: each goal with its conversions in the window. Conversions are first-party: a read of
 * another source (collectorSource) answers `available: false` with the goal definitions alone.
 */
export async function goalConversions(deps: ReportDeps, site: Site, params: ReportParams & CompareInput) {
  const source = collectorSource(params, site)
  if (source !== 'standalone') return { source, available: false, goals: await deps.repositories.goals.list(site.id) }
  const { query } = await prepare(deps, site, { ...params, source: 'standalone' }, { withGoals: true })
  const compare = resolveComparison(query.range, params, query.now)
  const window = compare?.window
  const conversions = async (range: ResolvedRange) => {
    const rows = query.goals.length
      ? await sourceReader(deps.clickhouse, 'standalone').breakdown({ ...query, range, limit: 1000 }, 'goal')
      : []
    const byName = new Map(rows.map((r) => [r.value, r]))
    return query.goals.map((g) => {
      const r = byName.get(g.name)
      return {
        visitors: Number(r?.visitors ?? 0),
        conversions: Number(r?.conversions ?? 0),
        conversionRate: Number(r?.conversionRate ?? 0),
        ...(g.currency ? { revenue: r?.revenue ?? { amount: 0, currency: g.currency } } : {}),
      }
    })
  }
  const [current, compared] = await Promise.all([conversions(query.range), window ? conversions(window) : null])
  return {
    source,
    available: true,
    range: rangeView(query.range),
    ...(compare ? { comparison: comparisonView(compare) } : {}),
    goals: query.goals.map((g, i) => ({
      ...g,
      ...current[i],
      ...(compared
        ? {
            comparison: compared[i],
            change: changes(
              { ...current[i], revenue: current[i].revenue?.amount },
              { ...compared[i], revenue: compared[i].revenue?.amount },
              ['visitors', 'conversions', 'conversionRate', 'revenue'],
            ),
          }
        : {}),
    })),
  }
}

/**
 * GET /sites rows: per site, totals of the window and of the previous window of equal length, a
 * visitors sparkline, and the install state with the last event seen.
 */
export async function siteStats(deps: ReportDeps, sites: Site[], rangeName: Exclude<RangeName, 'custom'>, asked?: Source) {
  // each site's numbers from the source asked for, which every listed site must have, else its primary source
  const sourceOf = (site: Site) => (asked ? parseSource({ source: asked }, site) : site.primarySource)
  for (const site of sites) sourceOf(site)
  const edges = await eventEdges(
    deps.clickhouse,
    sites.map((s) => s.id),
  )
  const now = deps.now()
  const listed = sites.map((site) => {
    const range = resolveRange({ range: rangeName }, site.timezone, now, { firstEventAt: null })
    // a site that never had an event lists zeros without reading them
    const source = sourceOf(site)
    const read = sourceReader(deps.clickhouse, source, edges.has(site.id))
    return { site, range, previous: previousWindow(range), source, read, daily: read.answers && dailySparkline(range) }
  })
  // the sites whose windows are whole days: all of them from two statements
  const byDays = await fromDays(
    deps.clickhouse,
    listed.filter((l) => l.daily).map((l) => ({ siteId: l.site.id, range: l.range, previous: l.previous })),
  )
  return Promise.all(
    listed.map(async ({ site, range, previous, source, read, daily }) => {
      const [current, before, spark] = daily
        ? byDays.get(site.id)!
        : await Promise.all([
            read.totals(windowQuery(site.id, range, now)),
            read.totals(windowQuery(site.id, previous, now)),
            read.series(windowQuery(site.id, range, now)),
          ])
      return {
        site: { ...site, install: installOf(site, edges.get(site.id), now) },
        stats: {
          source,
          range: rangeView(range),
          ...current,
          previous: { range: rangeView(previous), ...before },
          sparkline: spark.map((b) => b.visitors),
        },
      }
    }),
  )
}

/** Whether a window's totals and sparkline are sums of its site-local days: whole days, in day or month buckets. */
const dailySparkline = (range: ResolvedRange) => wholeDays(range) && (range.interval === 'day' || range.interval === 'month')

/** The most sites whose days one statement reads: each adds its own part to the statement. */
const SITES_A_STATEMENT = 25

type WindowsFromDays = [Totals, Totals, ReturnType<typeof shapeSeries>]

/**
 * A listing's two windows of whole days, for many sites from two statements a few dozen sites:
 * one looks up the rolled days of each site's windows (the lookup of rolledDays, a part per site),
 * the other reads each site's totals per day over both windows (dailyTotalsSql, a part per site);
 * each site's days are summed into its windows' totals and into its window's day or month buckets.
 */
async function fromDays(
  clickhouse: ClickHouse,
  listed: { siteId: string; range: ResolvedRange; previous: ResolvedRange }[],
): Promise<Map<string, WindowsFromDays>> {
  const answers = new Map<string, WindowsFromDays>()
  for (let start = 0; start < listed.length; start += SITES_A_STATEMENT) {
    const chunk = listed.slice(start, start + SITES_A_STATEMENT).map((l) => ({ ...l, both: { ...l.range, from: l.previous.from } }))
    const tagged = (k: number, part: Fragment) => sql`SELECT ${bind('UInt32', k)} AS k, * FROM (${part})`
    const lookups = await execute<SignatureRow & { k: number }>(
      clickhouse,
      join(
        chunk.map((l, k) => tagged(k, signaturesAndBuilt(l.siteId, l.both))),
        ' UNION ALL ',
      ),
    )
    const days = await execute<Record<string, string>>(
      clickhouse,
      join(
        chunk.map((l, k) =>
          tagged(
            k,
            dailyTotalsSql(
              l.siteId,
              l.both,
              rolledDaysOf(
                { range: l.both },
                lookups.filter((r) => Number(r.k) === k),
              ),
            ),
          ),
        ),
        ' UNION ALL ',
      ),
    )
    chunk.forEach((l, k) =>
      answers.set(
        l.siteId,
        windowsFromDays(
          days.filter((d) => Number(d.k) === k),
          l.range,
          l.previous,
        ),
      ),
    )
  }
  return answers
}

/** A site's two windows from its totals per day over both. */
function windowsFromDays(days: Record<string, string>[], range: ResolvedRange, previous: ResolvedRange): WindowsFromDays {
  const total = (window: ResolvedRange) => {
    const [from, to] = [window.from.toPlainDate().toString(), window.to.toPlainDate().toString()]
    const sum = (column: string) => days.filter((d) => d.day >= from && d.day < to).reduce((n, d) => n + Number(d[column]), 0)
    const visits = sum('visits')
    return shapeTotals({
      visitors: sum('visitors'),
      visits,
      pageviews: sum('pageviews'),
      events: sum('events'),
      facts_visits: visits,
      bounces: sum('bounces'),
      duration: visits ? sum('duration_ms') / 1000 / visits : 0,
    })
  }
  // each day's visitors into the bucket that holds its start (a month's first day for month buckets)
  const bucketOf = (day: string) => {
    const date = Temporal.PlainDate.from(day)
    return (range.interval === 'month' ? date.with({ day: 1 }) : date).toZonedDateTime(range.timezone).epochMilliseconds / 1000
  }
  const buckets = new Map<number, { bucket: number; visitors: number; visits: number; pageviews: number }>()
  for (const d of days) {
    const bucket = bucketOf(d.day)
    const b = buckets.get(bucket) ?? { bucket, visitors: 0, visits: 0, pageviews: 0 }
    b.visitors += Number(d.visitors)
    b.visits += Number(d.visits)
    b.pageviews += Number(d.pageviews)
    buckets.set(bucket, b)
  }
  return [total(range), total(previous), shapeSeries(range, [...buckets.values()])]
}

/** The public live count: the window's totals from the site's primary source, read at `now`. */
export const windowTotals = (clickhouse: ClickHouse, site: Site, range: ResolvedRange, now: Date) =>
  sourceReader(clickhouse, site.primarySource).totals(windowQuery(site.id, range, now))
