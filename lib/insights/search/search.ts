import { parseSource } from '../../reports/query/parse'
import type { Source } from '../../sites/source'
import { Temporal } from 'temporal-polyfill'
import { type StoredChange, siteChanges } from '../../crawl/changes'
import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { execute } from '../../storage/clickhouse/execute'
import { checkPatterns, parseFilterJson } from '../../reports/query/parse'
import { type CompareInput, changes, resolveComparison } from '../../reports/query/compare'
import { type ResolvedRange, previousWindow, rangeView } from '../../reports/query/range'
import type { RangeName } from '../../reports/dimensions'
import { round4 } from '../why/robust'
import { candidateOf } from '../why/candidates'
import { updatesWithin } from '../why/markers'
import { type WhyDeps, windowOf } from '../../reports/query/window'
import {
  type DaySpan,
  type SEARCH_FILTER_COLUMNS,
  type SearchFilter,
  type Windows,
  searchPagesSql,
  searchSeriesSql,
  searchTopSql,
  searchTotalsSql,
} from './compile'

/**
 * The Search Console reads (docs/api.md, Search; docs/traffic-changes.md, Search diagnosis):
 * GET /search (totals, series, top queries and pages, or one query's or page's trend) and GET /seo
 * (every landing page against the previous window, diagnosed), and the search evidence the page
 * detail, anomalies and decay take from the same rules. A site without a bound Search Console
 * property answers connected: false.
 */

/** The rules of a page's search diagnosis, over per-day rates so that windows of unequal length compare. */
export const SEARCH_DIAGNOSIS_RULE = {
  /** A page is diagnosed when it had at least this many clicks in one of the two windows; fewer is `stable`. */
  minClicks: 10,
  /** Clicks moved by at least this share to count as lost or gained. */
  minClickChange: 0.2,
  /** rank_drop: the impression-weighted position worsened by at least this many places... */
  positionWorse: 2,
  /** ...while impressions held: at least this share of the previous ones (demand_drop: below it). */
  impressionsHeld: 0.75,
  /** ctr_drop: at the same position, ctr fell by at least this share. */
  ctrFall: 0.25,
  /** lost_queries: queries that brought the page at least this share of its previous clicks have no impression now. */
  lostQueriesShare: 0.5,
}

export const SEARCH_DIAGNOSES = ['rank_drop', 'ctr_drop', 'demand_drop', 'lost_queries', 'gained', 'fell', 'stable'] as const
export type SearchDiagnosis = (typeof SEARCH_DIAGNOSES)[number]

export interface SearchMetrics {
  clicks: number
  impressions: number
  /** clicks / impressions, 0 to 1; null without impressions. */
  ctr: number | null
  /** Impression-weighted mean position; null without impressions. */
  position: number | null
}

export const metricsOf = (clicks: number, impressions: number, weighted: number): SearchMetrics => ({
  clicks,
  impressions,
  ctr: impressions ? round4(clicks / impressions) : null,
  position: impressions ? round4(weighted / impressions) : null,
})

export function changeOf(current: SearchMetrics, previous: SearchMetrics) {
  return {
    clicks: current.clicks - previous.clicks,
    impressions: current.impressions - previous.impressions,
    ctr: current.ctr !== null && previous.ctr !== null ? round4(current.ctr - previous.ctr) : null,
    position: current.position !== null && previous.position !== null ? round4(current.position - previous.position) : null,
  }
}

export interface LostQuery {
  query: string
  previousClicks: number
}

/**
 * The diagnosis of a page's search numbers (SEARCH_DIAGNOSIS_RULE), current against previous, each
 * over its number of days. The first rule that holds names it: gained, lost_queries, rank_drop,
 * ctr_drop, demand_drop; a loss none of them explains is fell; too few clicks, or a move under
 * minClickChange, is stable.
 */
export function diagnoseSearch(
  current: SearchMetrics,
  previous: SearchMetrics,
  days: { current: number; previous: number },
  lost: { clicks: number; queries: LostQuery[] } = { clicks: 0, queries: [] },
): SearchDiagnosis {
  const rule = SEARCH_DIAGNOSIS_RULE
  if (Math.max(current.clicks, previous.clicks) < rule.minClicks) return 'stable'
  const clicksNow = current.clicks / days.current
  const clicksBefore = previous.clicks / days.previous
  if (clicksNow >= clicksBefore * (1 + rule.minClickChange) && clicksNow > clicksBefore) return 'gained'
  if (clicksNow > clicksBefore * (1 - rule.minClickChange)) return 'stable'
  if (previous.clicks && lost.clicks >= rule.lostQueriesShare * previous.clicks && lost.queries.length) return 'lost_queries'
  const impressionsRatio = previous.impressions ? current.impressions / days.current / (previous.impressions / days.previous) : 1
  const positionChange = current.position !== null && previous.position !== null ? current.position - previous.position : 0
  const held = impressionsRatio >= rule.impressionsHeld
  if (positionChange >= rule.positionWorse && held) return 'rank_drop'
  const samePosition = Math.abs(positionChange) < rule.positionWorse
  if (samePosition && current.ctr !== null && previous.ctr !== null && current.ctr <= previous.ctr * (1 - rule.ctrFall)) return 'ctr_drop'
  if (samePosition && !held) return 'demand_drop'
  return 'fell'
}

/** Whether the site has a bound Search Console property, and which. */
export const searchConnection = (site: Site) => {
  const bound = site.integrations.searchConsole
  return bound.connected && bound.siteUrl ? { connected: true as const, siteUrl: bound.siteUrl } : null
}

const DAY_MS = 86_400_000
const plain = (z: Temporal.ZonedDateTime) => z.toPlainDate()

/** The Search Console days of a window: its site-local days, a partly covered last day included. */
export function daySpanOf(range: Pick<ResolvedRange, 'from' | 'to'>): DaySpan {
  const to = range.to.equals(range.to.startOfDay()) ? plain(range.to) : plain(range.to).add({ days: 1 })
  return { from: plain(range.from).toString(), to: to.toString() }
}
export const spanDays = (span: DaySpan) =>
  Temporal.PlainDate.from(span.from).until(Temporal.PlainDate.from(span.to), { largestUnit: 'day' }).days

export const windowsOf = (range: ResolvedRange): Windows => ({ current: daySpanOf(range), previous: daySpanOf(previousWindow(range)) })

type Both = {
  c_clicks: number | string
  c_impressions: number | string
  c_weighted: number | string
  p_clicks: number | string
  p_impressions: number | string
  p_weighted: number | string
}
const current = (r: Both | undefined) => metricsOf(Number(r?.c_clicks ?? 0), Number(r?.c_impressions ?? 0), Number(r?.c_weighted ?? 0))
const previous = (r: Both | undefined) => metricsOf(Number(r?.p_clicks ?? 0), Number(r?.p_impressions ?? 0), Number(r?.p_weighted ?? 0))

/** A page's search numbers in two windows, their change, the queries it lost, and its diagnosis. */
export interface PageSearchEvidence {
  path: string
  current: SearchMetrics
  previous: SearchMetrics
  change: ReturnType<typeof changeOf>
  lostClicks: number
  lostQueries: LostQuery[]
  diagnosis: SearchDiagnosis
}

/** Every landing page's search evidence (or only `paths`'s), by path. */
export async function pagesSearchEvidence(
  deps: Pick<WhyDeps, 'clickhouse'>,
  siteId: string,
  windows: Windows,
  options: { paths?: readonly string[]; filters?: readonly SearchFilter[] } = {},
): Promise<Map<string, PageSearchEvidence>> {
  if (options.paths && !options.paths.length) return new Map()
  const rows = await execute<Both & { path: string; lost_clicks: number | string; lost: [string, number | string][] }>(
    deps.clickhouse,
    searchPagesSql(siteId, windows, options.filters ?? [], options.paths),
  )
  const days = { current: spanDays(windows.current), previous: spanDays(windows.previous) }
  const found = new Map<string, PageSearchEvidence>()
  for (const r of rows) {
    const c = current(r)
    const p = previous(r)
    const lostQueries = r.lost.map(([query, clicks]) => ({ query, previousClicks: Number(clicks) }))
    const lostClicks = Number(r.lost_clicks)
    found.set(r.path, {
      path: r.path,
      current: c,
      previous: p,
      change: changeOf(c, p),
      lostClicks,
      lostQueries,
      diagnosis: diagnoseSearch(c, p, days, { clicks: lostClicks, queries: lostQueries }),
    })
  }
  return found
}

/** The evidence as answers show it beside anomalies and decay. */
export const evidenceView = (e: PageSearchEvidence | undefined) =>
  e
    ? {
        diagnosis: e.diagnosis,
        current: e.current,
        previous: e.previous,
        change: e.change,
        lostQueries: e.lostQueries,
      }
    : null

export interface SearchParams extends CompareInput {
  site_id: string
  range: RangeName
  from?: string
  to?: string
  filters?: string
  limit?: number
  dimension?: 'query' | 'page'
  value?: string
}

/** The filters of a search read: a landing page (path or entry_page), country or device; any other dimension is a 400 naming it. */
export function parseSearchFilters(raw: string | undefined): SearchFilter[] {
  return parseFilterJson(raw).map((f) => {
    if (!['path', 'entry_page', 'country', 'device'].includes(f.dimension))
      throw new ApiError(
        400,
        `filters: "${f.dimension}" is not a Search Console dimension; search reads filter by path (or entry_page), country and device`,
      )
    checkPatterns(f)
    // countries are stored as ISO 3166-1 alpha-2 (US), as every other read names them; devices as Desktop, Mobile, Tablet
    const value =
      f.dimension === 'country' && f.operator !== 'matches'
        ? f.value.map((v) => v.toUpperCase())
        : f.dimension === 'device' && f.operator === 'is'
          ? f.value.map((v) => v.charAt(0).toUpperCase() + v.slice(1).toLowerCase())
          : f.value
    return { dimension: f.dimension as keyof typeof SEARCH_FILTER_COLUMNS, operator: f.operator, value }
  })
}

const clampLimit = (limit: number | undefined, fallback: number) => Math.min(1000, Math.max(1, limit ?? fallback))

const notConnected = { connected: false as const, siteUrl: null }

/** GET /search. */
export async function searchReport(deps: WhyDeps, site: Site, params: SearchParams) {
  const filters = parseSearchFilters(params.filters)
  if ((params.dimension === undefined) !== (params.value === undefined))
    throw new ApiError(
      400,
      params.dimension === undefined ? 'dimension: required with value (query or page)' : 'value: required with dimension',
    )
  if (params.dimension === 'page' && !params.value!.startsWith('/'))
    throw new ApiError(400, 'value: a landing page is a path starting with /')
  const range = await windowOf(deps, site, params)
  const compare = resolveComparison(range, params)
  const bound = searchConnection(site)
  if (!bound) return notConnected
  const windows = windowsOf(range)
  const all: SearchFilter[] = [...filters]
  if (params.dimension === 'page') all.push({ dimension: 'path', operator: 'is', value: [params.value!] })
  if (params.dimension === 'query') all.push({ dimension: 'query', operator: 'is', value: [params.value!] })
  const limit = clampLimit(params.limit, 10)
  const [totals, series, queries, pages, compared] = await Promise.all([
    execute<Both>(deps.clickhouse, searchTotalsSql(site.id, windows, all)),
    execute<{ day: string; day_clicks: number | string; day_impressions: number | string; day_weighted: number | string }>(
      deps.clickhouse,
      searchSeriesSql(site.id, windows.current, all),
    ),
    execute<Both & { value: string }>(deps.clickhouse, searchTopSql(site.id, windows, all, 'query', limit)),
    execute<Both & { value: string }>(deps.clickhouse, searchTopSql(site.id, windows, all, 'path', limit)),
    // the comparison window's totals read as the second window of the same statement
    compare ? execute<Both>(deps.clickhouse, searchTotalsSql(site.id, { ...windows, previous: daySpanOf(compare.window) }, all)) : null,
  ])
  const byDay = new Map(series.map((s) => [s.day, s]))
  const days: string[] = []
  for (let d = Temporal.PlainDate.from(windows.current.from); d.toString() < windows.current.to; d = d.add({ days: 1 }))
    days.push(d.toString())
  const withChange = (r: Both) => {
    const c = current(r)
    return { ...c, change: changeOf(c, previous(r)) }
  }
  return {
    ...bound,
    range: rangeView(range),
    totals: current(totals[0]),
    previous: previous(totals[0]),
    change: changeOf(current(totals[0]), previous(totals[0])),
    ...(compare && compared
      ? {
          comparison: {
            mode: compare.mode,
            range: rangeView(compare.window),
            totals: previous(compared[0]),
            change: changes(current(totals[0]), previous(compared[0]), ['clicks', 'impressions', 'ctr', 'position']),
          },
        }
      : {}),
    series: days.map((date) => {
      const s = byDay.get(date)
      return { date, ...metricsOf(Number(s?.day_clicks ?? 0), Number(s?.day_impressions ?? 0), Number(s?.day_weighted ?? 0)) }
    }),
    queries: queries.map((r) => ({ query: r.value, ...withChange(r) })),
    pages: pages.map((r) => ({ path: r.value, ...withChange(r) })),
  }
}

/** The crawler changes that can move a page's ranking: SEO fields, h1 and the page's status. */
export const SEO_CHANGE_TYPES = new Set(['title', 'meta_description', 'h1', 'canonical', 'noindex', 'status', 'redirect', 'removed'])
/** Crawler changes detected up to this many days before the window are candidates too. */
export const SEO_CANDIDATE_LEAD_DAYS = 7

/** GET /seo. */
export async function seoReport(
  deps: WhyDeps,
  site: Site,
  params: Omit<SearchParams, 'dimension' | 'value' | 'filters'> & { source?: Source },
) {
  // Search Console is read whichever traffic source is named; the source is still one the site must have
  const source = parseSource(params, site)
  const range = await windowOf(deps, site, params)
  const bound = searchConnection(site)
  if (!bound) return { source, ...notConnected }
  const windows = windowsOf(range)
  const from = range.from.epochMilliseconds
  const to = range.to.epochMilliseconds
  const [evidence, changes] = await Promise.all([
    pagesSearchEvidence(deps, site.id, windows),
    siteChanges(deps.clickhouse, site.id, new Date(from - SEO_CANDIDATE_LEAD_DAYS * DAY_MS), new Date(to)),
  ])
  const byPath = new Map<string, StoredChange[]>()
  for (const c of changes) if (c.scope === 'page' && SEO_CHANGE_TYPES.has(c.type)) byPath.set(c.path, [...(byPath.get(c.path) ?? []), c])
  const pages = [...evidence.values()]
    .map((e) => ({
      path: e.path,
      ...e.current,
      previous: e.previous,
      change: e.change,
      lostClicks: Math.max(0, e.previous.clicks - e.current.clicks),
      diagnosis: e.diagnosis,
      lostQueries: e.lostQueries,
      candidates: (byPath.get(e.path) ?? []).map(candidateOf),
    }))
    .sort((a, b) => a.change.clicks - b.change.clicks || b.previous.clicks - a.previous.clicks || (a.path < b.path ? -1 : 1))
    .slice(0, clampLimit(params.limit, 100))
  return {
    source,
    ...bound,
    range: rangeView(range),
    rule: SEARCH_DIAGNOSIS_RULE,
    searchEngineUpdates: updatesWithin(from, to, deps.now().getTime()),
    pages,
  }
}

/** A landing page's queries in the current window, with their change against the previous one; most clicks first. */
export async function pageQueries(deps: Pick<WhyDeps, 'clickhouse'>, siteId: string, path: string, windows: Windows, limit = 20) {
  const rows = await execute<Both & { value: string }>(
    deps.clickhouse,
    searchTopSql(siteId, windows, [{ dimension: 'path', operator: 'is', value: [path] }], 'query', limit),
  )
  return rows.map((r) => {
    const c = current(r)
    return { query: r.value, ...c, change: changeOf(c, previous(r)) }
  })
}

/** How confident a search cause of a page's shift is (page detail): below a crawler change detected at the shift, which it is likely the effect of. */
export const SEARCH_CAUSE_RULE = { rankDrop: 0.7, demandDrop: 0.6 }

/**
 * The search cause of a downward shift of a page's visits, if Search Console shows one across it:
 * search_rank_drop (rank_drop or lost_queries) or search_demand_drop, with the page's queries
 * that lost most clicks as evidence.
 */
export async function searchCauseOf(deps: Pick<WhyDeps, 'clickhouse'>, site: Site, path: string, windows: Windows) {
  if (!searchConnection(site)) return null
  const evidence = (await pagesSearchEvidence(deps, site.id, windows, { paths: [path] })).get(path)
  if (!evidence) return null
  const kind =
    evidence.diagnosis === 'rank_drop' || evidence.diagnosis === 'lost_queries'
      ? ('search_rank_drop' as const)
      : evidence.diagnosis === 'demand_drop'
        ? ('search_demand_drop' as const)
        : null
  if (!kind) return null
  const queries = (await pageQueries(deps, site.id, path, windows, 100))
    .filter((q) => q.change.clicks < 0)
    .sort((a, b) => a.change.clicks - b.change.clicks || (a.query < b.query ? -1 : 1))
    .slice(0, 5)
  const days = { before: spanDays(windows.previous), after: spanDays(windows.current) }
  const p = evidence.previous
  const c = evidence.current
  const summary =
    kind === 'search_rank_drop'
      ? evidence.diagnosis === 'lost_queries'
        ? `Google stopped showing the page for ${evidence.lostQueries.map((q) => `"${q.query}"`).join(', ')}`
        : `Google position went from ${p.position} to ${c.position} at ${Math.round(p.impressions / days.before)} → ${Math.round(c.impressions / days.after)} impressions a day`
      : `Google impressions went from ${Math.round(p.impressions / days.before)} to ${Math.round(c.impressions / days.after)} a day at position ${p.position} → ${c.position}`
  return {
    kind,
    confidence: kind === 'search_rank_drop' ? SEARCH_CAUSE_RULE.rankDrop : SEARCH_CAUSE_RULE.demandDrop,
    summary,
    evidence: {
      diagnosis: evidence.diagnosis,
      days,
      before: p,
      after: c,
      change: evidence.change,
      lostQueries: evidence.lostQueries,
      queries,
    },
  }
}

/** The page detail's `search`: the page's ranking queries in the window against the previous one. */
export async function pageSearch(deps: Pick<WhyDeps, 'clickhouse'>, site: Site, path: string, range: ResolvedRange) {
  const bound = searchConnection(site)
  if (!bound) return { connected: false as const }
  const windows = windowsOf(range)
  const [evidence, queries] = await Promise.all([
    pagesSearchEvidence(deps, site.id, windows, { paths: [path] }),
    pageQueries(deps, site.id, path, windows, 50),
  ])
  const e = evidence.get(path)
  const none = metricsOf(0, 0, 0)
  return {
    ...bound,
    totals: e?.current ?? none,
    previous: e?.previous ?? none,
    change: e?.change ?? changeOf(none, none),
    diagnosis: e?.diagnosis ?? ('stable' as const),
    lostQueries: e?.lostQueries ?? [],
    queries,
  }
}
