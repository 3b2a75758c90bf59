import { Temporal } from 'temporal-polyfill'
import { type StoredChange, pageSnapshots, siteChanges } from '../../crawl/changes'
import { ApiError } from '../../core/errors'
import { errors } from '../../reports/query/behaviour'
import type { ReportDeps } from '../../reports/query/reports'
import { previousWindow, rangeView } from '../../reports/query/range'
import { execute } from '../../storage/clickhouse/execute'
import { vitals } from '../../reports/query/vitals'
import type { Site } from '../../sites/sites'
import { candidateOf } from './candidates'
import { pageDaysSql, pageEngagementSql, pageFirstSeenSql } from './compile'
import { round4 } from './robust'
import { sum } from './shifts'
import { vitalsRegressions } from './vitals-regressions'
import { backlinkCauses } from './backlink-causes'
import { pageSearch, searchCauseOf } from '../search/search'
import { type WindowParams, isoLocal, windowOf, zoned } from '../../reports/query/window'
import { importedPageDaysSql, importedPageFirstViewSql } from './imported-days'
import { parseSource } from '../../reports/query/parse'
import { filteredQuery } from '../../reports/query/filtered'
import type { Source } from '../../sites/source'

/**
 * GET /pages/detail: everything about one page, and why its traffic last moved
 * (docs/traffic-changes.md, Page detail). Its rules are PAGE_SHIFT_RULE and CAUSE_RULE.
 */

/**
 * A page's id: its path, base64url-encoded (no padding). The crawler and the reports key a page
 * by its path within the site; the id carries it in one opaque, URL-safe token.
 */
export const pageIdOf = (path: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(path)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')

export function pathOfPageId(id: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,2800}$/.test(id)) return null
  try {
    const bytes = Uint8Array.from(atob(id.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))
    const path = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
    return path.startsWith('/') && pageIdOf(path) === id ? path : null
  } catch {
    return null
  }
}

/**
 * The last significant shift of a page's daily visits: on each day d of the window, the mean of
 * the `beforeDays` days before it against the mean of up to `afterDays` days from it (at least
 * `minAfterDays`, complete days only). A day is significant when the means differ by at least
 * `minRelative` of the before mean and by at least `minVisits` visits over the after days; the
 * shift is the day of the largest difference in the last run of consecutive significant days.
 */
export const PAGE_SHIFT_RULE = { beforeDays: 7, afterDays: 7, minAfterDays: 3, minRelative: 0.3, minVisits: 10 }

/**
 * How confident each kind of cause is, 0 to 1 (docs/traffic-changes.md). A crawler change counts
 * when detected from `leadDays` before the shift to `lagDays` after it (a crawl sees a change up
 * to a day late), full weight within a day before to `lagDays` after, less by `decayPerDay` for
 * each day earlier (not under `floor`); a site change weighs `siteFactor` of a page change.
 */
export const CAUSE_RULE = {
  leadDays: 7,
  lagDays: 2,
  decayPerDay: 0.1,
  floor: 0.3,
  siteFactor: 0.6,
  changeWeights: {
    removed: 0.95,
    noindex: 0.9,
    status: 0.9,
    redirect: 0.9,
    canonical: 0.85,
    title: 0.8,
    text: 0.8,
    h1: 0.7,
    robots_txt: 0.7,
    sitemap: 0.4,
    meta_description: 0.5,
    new_page: 0.3,
  } as Record<string, number>,
  /** A source explains a shift as far as its share of the change exceeds its share of the traffic before; below this it is not listed. */
  minSourceConfidence: 0.2,
  vitalsRegression: { poor: 0.5, needs_improvement: 0.35 },
  /** Errors per day after the shift at least this many times before, and at least minErrors after. */
  errorSpike: { ratio: 2, minErrors: 5, confidence: 0.4 },
}

export interface PageDetailParams extends WindowParams {
  source?: Source
  filters?: string
  path?: string
  page_id?: string
}

const DAY_MS = 86_400_000
type DayRow = {
  day: string
  dimension: string
  value: string
  visits: number | string
  visitors: number | string
  pageviews: number | string
  errors: number | string
  reports: number | string
  scroll_sum: number | string
  engaged_sum: number | string
}

/** The engagement reports of the given days (pageDaysSql's day rows): their count and mean scroll depth and engaged time. */
function engagementOfDays(days: DayRow[]) {
  const reports = sum(days.map((r) => Number(r.reports)))
  const mean = (column: 'scroll_sum' | 'engaged_sum') => (reports ? sum(days.map((r) => Number(r[column]))) / reports : 0)
  return { reports, scroll: mean('scroll_sum'), engaged: mean('engaged_sum') }
}

function pathOf(params: PageDetailParams): string {
  if (params.path !== undefined && params.page_id !== undefined) throw new ApiError(400, 'path: give path or page_id, not both')
  if (params.page_id !== undefined) {
    const path = pathOfPageId(params.page_id)
    if (path === null) throw new ApiError(400, 'page_id: not a page id (the base64url of a path)')
    return path
  }
  if (params.path === undefined) throw new ApiError(400, 'path: required (or page_id)')
  if (!params.path.startsWith('/')) throw new ApiError(400, 'path: must start with /')
  return params.path
}

const days = (from: Temporal.PlainDate, to: Temporal.PlainDate) => {
  const list: string[] = []
  for (let d = from; Temporal.PlainDate.compare(d, to) < 0; d = d.add({ days: 1 })) list.push(d.toString())
  return list
}
const mean = (xs: number[]) => (xs.length ? sum(xs) / xs.length : 0)

/** The last significant shift of daily visits (PAGE_SHIFT_RULE), judged on the days `judged` of `all`. */
export function lastShift(all: string[], visitsOn: (day: string) => number, judged: Set<string>) {
  const rule = PAGE_SHIFT_RULE
  const found: { index: number; day: string; before: number; after: number; afterDays: number; diff: number }[] = []
  for (let i = rule.beforeDays; i < all.length; i++) {
    if (!judged.has(all[i])) continue
    const n = Math.min(rule.afterDays, all.length - i)
    if (n < rule.minAfterDays) continue
    const before = mean(all.slice(i - rule.beforeDays, i).map(visitsOn))
    const after = mean(all.slice(i, i + n).map(visitsOn))
    const diff = after - before
    if (Math.abs(diff) >= rule.minRelative * before && Math.abs(diff) * n >= rule.minVisits && diff !== 0)
      found.push({ index: i, day: all[i], before, after, afterDays: n, diff })
  }
  if (!found.length) return null
  // the last run of consecutive significant days, moving one way
  let start = found.length - 1
  while (
    start > 0 &&
    found[start - 1].index === found[start].index - 1 &&
    Math.sign(found[start - 1].diff) === Math.sign(found[start].diff)
  )
    start--
  const run = found.slice(start)
  return run.reduce((best, f) => (Math.abs(f.diff) > Math.abs(best.diff) ? f : best))
}

/** What a ga4 read of a page cannot give: GA4's pages carry no traffic source. */
const GA4_PAGE_PARTS = [
  {
    part: 'drivers, causes (source_shift)',
    reason: "GA4's imported pages carry no source or channel, so the page's drivers and a source's shift cannot be told",
  },
]

export async function pageDetail(deps: ReportDeps, site: Site, params: PageDetailParams) {
  const path = pathOf(params)
  const source = parseSource(params, site)
  const now = deps.now()
  const range = await windowOf(deps, site, params, now, source)
  const tz = site.timezone
  const today = zoned(now.getTime(), tz).toPlainDate()
  const windowFrom = range.from.toPlainDate()
  const windowEndDay = range.to.subtract({ nanoseconds: 1 }).toPlainDate()
  const seriesFrom = windowFrom.subtract({ days: PAGE_SHIFT_RULE.beforeDays })
  const startOf = (d: Temporal.PlainDate) => d.toZonedDateTime({ timeZone: tz })
  // errors, engagement reports and vitals are the collector's whichever source counts the traffic
  const collector = site.sources.includes('standalone')
  const seriesTo = windowEndDay.add({ days: 1 })
  // under the common filters (a goal: the visits that converted) the page's days count what they keep; its errors and vitals too
  const filtered = await filteredQuery(deps, site, params, source, { ...range, from: startOf(seriesFrom), to: startOf(seriesTo) })
  const over = (from: Temporal.PlainDate, to: Temporal.PlainDate) =>
    filtered ? { ...filtered, range: { ...filtered.range, from: startOf(from), to: startOf(to) } } : undefined
  const written = filtered && params.filters ? (JSON.parse(params.filters) as unknown[]) : []
  const filters = JSON.stringify([{ dimension: 'path', operator: 'is', value: [path] }, ...written])
  const reportParams = { site_id: site.id, range: params.range, from: params.from, to: params.to, filters, limit: 20 }
  /** The page's day rows of [from, to) from the source read: the collector's events, or GA4's imported pages. */
  const pageDays = (from: Temporal.PlainDate, to: Temporal.PlainDate) =>
    execute<DayRow>(
      deps.clickhouse,
      source === 'ga4'
        ? importedPageDaysSql(site.id, path, from, to)
        : pageDaysSql(site.id, tz, path, startOf(from), startOf(to), over(from, to)),
    )

  const wholeDays = range.from.equals(range.from.startOfDay()) && range.to.equals(range.to.startOfDay())
  const [seen, importedFirst, dayRows, collectorDays, engagementRead, history, snapshots, errorRead, vitalsRead, regressions, search] =
    await Promise.all([
      execute<{ first_view: number | string | null; first_crawl: number | string | null }>(
        deps.clickhouse,
        pageFirstSeenSql(site.id, path),
      ),
      source === 'ga4'
        ? execute<{ first_view: number | string }>(deps.clickhouse, importedPageFirstViewSql(site.id, tz, path))
        : Promise.resolve([]),
      source === 'ga4' || collector ? pageDays(seriesFrom, seriesTo) : Promise.resolve([] as DayRow[]),
      // the collector's own rows beside GA4's, for errors and engagement
      source === 'ga4' && collector
        ? execute<DayRow>(
            deps.clickhouse,
            pageDaysSql(site.id, tz, path, startOf(seriesFrom), startOf(seriesTo), over(seriesFrom, seriesTo)),
          )
        : Promise.resolve(null),
      // a window of whole days takes its engagement from the daily series' rows
      collector && !wholeDays
        ? execute<{ reports: number | string; scroll: number | string; engaged: number | string }>(
            deps.clickhouse,
            pageEngagementSql(site.id, path, range.from, range.to),
          )
        : [],
      siteChanges(deps.clickhouse, site.id, new Date(now.getTime() - 365 * DAY_MS), new Date(now.getTime() + 1), { path }),
      pageSnapshots(deps.clickhouse, site.id, path, 20),
      errors(deps, site, reportParams),
      vitals(deps, site, { ...reportParams, percentile: '75', attribution: '1' }),
      collector
        ? vitalsRegressions(
            deps.clickhouse,
            site.id,
            { baselineFrom: previousWindow(range).from, currentFrom: range.from, to: range.to },
            { path },
          )
        : [],
      pageSearch(deps, site, path, range),
    ])
  const ownRows = collectorDays ?? dayRows
  const firstView = Number((source === 'ga4' ? importedFirst[0]?.first_view : seen[0]?.first_view) ?? 0)
  const firstCrawl = Number(seen[0]?.first_crawl ?? 0)
  if (!firstView && !firstCrawl && !snapshots.length) throw new ApiError(404, 'path: no pageview or crawl of this page')
  const launchedAt = firstView && firstCrawl ? Math.min(firstView, firstCrawl) : firstView || firstCrawl

  // the daily series
  const totals = new Map<string, DayRow>()
  for (const r of dayRows) if (r.dimension === '') totals.set(String(r.day), r)
  const own = new Map<string, DayRow>()
  for (const r of ownRows) if (r.dimension === '') own.set(String(r.day), r)
  const visitsOn = (day: string) => Number(totals.get(day)?.visits ?? 0)
  const errorsOn = (day: string) => Number(own.get(day)?.errors ?? 0)
  const windowDays = days(windowFrom, windowEndDay.add({ days: 1 }))
  const series = windowDays.map((date) => {
    const r = totals.get(date)
    return {
      date,
      visits: Number(r?.visits ?? 0),
      visitors: Number(r?.visitors ?? 0),
      pageviews: Number(r?.pageviews ?? 0),
      errors: errorsOn(date),
    }
  })
  const windowVisits = sum(series.map((s) => s.visits))
  const inWindow = new Set(windowDays)
  const engagement = wholeDays
    ? [engagementOfDays(ownRows.filter((r) => r.dimension === '' && inWindow.has(String(r.day))))]
    : engagementRead
  const drivers = (dimension: string) => {
    const by = new Map<string, number>()
    for (const r of dayRows)
      if (r.dimension === dimension && inWindow.has(String(r.day))) by.set(r.value, (by.get(r.value) ?? 0) + Number(r.visits))
    return [...by]
      .map(([value, visits]) => ({ value, visits, share: windowVisits ? round4(visits / windowVisits) : 0 }))
      .sort((a, b) => b.visits - a.visits || (a.value < b.value ? -1 : 1))
      .slice(0, 10)
  }

  // the last significant shift among complete days (today is under way)
  const lastComplete = Temporal.PlainDate.compare(windowEndDay, today) < 0 ? windowEndDay : today.subtract({ days: 1 })
  const judgedDays = days(seriesFrom, lastComplete.add({ days: 1 }))
  const found = lastShift(judgedDays, visitsOn, inWindow)
  const shift = found
    ? {
        day: found.day,
        direction: found.diff > 0 ? ('up' as const) : ('down' as const),
        beforeDays: PAGE_SHIFT_RULE.beforeDays,
        afterDays: found.afterDays,
        before: round4(found.before),
        after: round4(found.after),
        change: found.before ? round4(found.diff / found.before) : null,
      }
    : null
  const causes: Cause[] = found ? await causesOf(deps, site, path, found, judgedDays, dayRows, history, errorsOn) : []
  if (found) {
    // links to the page lost or gained near the shift; on equal confidence before the rest (a backlink names the source's cause)
    const source = causes.find((c) => c.kind === 'source_shift')
    const links = await backlinkCauses(
      deps.clickhouse,
      site.id,
      path,
      {
        startMs: Temporal.PlainDate.from(found.day).toZonedDateTime({ timeZone: tz }).epochMilliseconds,
        direction: found.diff > 0 ? 'up' : 'down',
      },
      source ? { source: String(source.evidence.source), confidence: source.confidence } : null,
    )
    causes.unshift(...links)
    causes.sort((a, b) => b.confidence - a.confidence || Number(b.kind.startsWith('backlink_')) - Number(a.kind.startsWith('backlink_')))
  }

  // the first 30 days from launch
  const launchDay = launchedAt ? zoned(launchedAt, tz).toPlainDate() : null
  const first30 = launchDay ? await firstDays(launchDay, today, { from: seriesFrom, to: seriesTo, rows: dayRows }, pageDays) : null

  const e = engagement[0]
  const reports = Number(e?.reports ?? 0)
  return {
    source,
    available: true,
    ...(source === 'ga4' ? { notAvailable: GA4_PAGE_PARTS } : {}),
    range: rangeView(range),
    page: {
      path,
      pageId: pageIdOf(path),
      launchedAt: launchedAt ? isoLocal(zoned(launchedAt, tz)) : null,
      firstPageviewAt: firstView ? isoLocal(zoned(firstView, tz)) : null,
      firstCrawledAt: firstCrawl ? isoLocal(zoned(firstCrawl, tz)) : null,
    },
    totals: { visits: windowVisits, visitors: sum(series.map((s) => s.visitors)), pageviews: sum(series.map((s) => s.pageviews)) },
    series,
    drivers: { sources: drivers('source'), channels: drivers('channel') },
    shift,
    causes,
    engagement: {
      reports,
      scrollDepth: reports ? Math.round(Number(e.scroll) * 10) / 10 : null,
      timeOnPage: reports ? Math.round(Number(e.engaged) / 100) / 10 : null,
    },
    first30,
    changes: history
      .filter((c) => c.scope === 'page')
      .slice(0, 100)
      .map(candidateOf),
    snapshots: snapshots.map((s) => ({
      id: s.id,
      fetchedAt: s.fetchedAt,
      status: s.status,
      title: s.title,
      h1: s.h1,
      wordCount: s.wordCount,
      contentHash: s.contentHash,
      removed: s.removed,
      error: s.error || null,
    })),
    errors: {
      summary: ('summary' in errorRead && errorRead.summary) || { errors: 0, groups: 0, visitors: 0 },
      groups: ('groups' in errorRead && errorRead.groups) || [],
    },
    vitals: { metrics: vitalsRead.metrics, bottlenecks: vitalsRead.contributors ?? {}, regressions },
    search,
  }
}

/**
 * The page's first 30 days from its launch. Its days' rows are those of the daily series when the
 * series read them all (`read`: its rows over the days [from, to)); each day's row depends on that
 * day's events alone.
 */
async function firstDays(
  launchDay: Temporal.PlainDate,
  today: Temporal.PlainDate,
  read: { from: Temporal.PlainDate; to: Temporal.PlainDate; rows: DayRow[] },
  pageDays: (from: Temporal.PlainDate, to: Temporal.PlainDate) => Promise<DayRow[]>,
) {
  const endDay = launchDay.add({ days: 30 })
  const end = Temporal.PlainDate.compare(endDay, today.add({ days: 1 })) < 0 ? endDay : today.add({ days: 1 })
  const covered = Temporal.PlainDate.compare(read.from, launchDay) <= 0 && Temporal.PlainDate.compare(end, read.to) <= 0
  const rows = covered ? read.rows : await pageDays(launchDay, end)
  const by = new Map(rows.filter((r) => r.dimension === '').map((r) => [String(r.day), Number(r.visits)]))
  const list = days(launchDay, end).map((date, day) => ({ day, date, visits: by.get(date) ?? 0 }))
  return {
    from: launchDay.toString(),
    days: list.length,
    complete: list.length === 30,
    visits: sum(list.map((d) => d.visits)),
    byDay: list,
  }
}

type Cause = {
  kind:
    | 'page_change'
    | 'site_change'
    | 'source_shift'
    | 'search_rank_drop'
    | 'search_demand_drop'
    | 'vitals_regression'
    | 'error_spike'
    | 'backlink_lost'
    | 'backlink_gained'
  confidence: number
  summary: string
  evidence: Record<string, unknown>
}

/** The causes of a shift, most confident first (CAUSE_RULE). */
async function causesOf(
  deps: ReportDeps,
  site: Site,
  path: string,
  shift: { index: number; day: string; before: number; after: number; afterDays: number; diff: number },
  all: string[],
  dayRows: DayRow[],
  history: StoredChange[],
  errorsOn: (day: string) => number,
): Promise<Cause[]> {
  const rule = CAUSE_RULE
  const tz = site.timezone
  const shiftStart = Temporal.PlainDate.from(shift.day).toZonedDateTime({ timeZone: tz }).epochMilliseconds
  const causes: Cause[] = []

  // crawler changes, those of one crawl together
  const near = history.filter((c) => {
    const at = Date.parse(c.detectedAt)
    return at >= shiftStart - rule.leadDays * DAY_MS && at < shiftStart + rule.lagDays * DAY_MS
  })
  const crawls = new Map<string, StoredChange[]>()
  for (const c of near) crawls.set(`${c.scope}|${c.detectedAt}`, [...(crawls.get(`${c.scope}|${c.detectedAt}`) ?? []), c])
  for (const group of crawls.values()) {
    const at = Date.parse(group[0].detectedAt)
    const daysEarly = Math.max(0, (shiftStart - DAY_MS - at) / DAY_MS)
    const proximity = Math.max(rule.floor, 1 - rule.decayPerDay * Math.ceil(daysEarly))
    const weight = Math.max(...group.map((c) => rule.changeWeights[c.type] ?? 0.3))
    const site = group[0].scope === 'site'
    causes.push({
      kind: site ? 'site_change' : 'page_change',
      confidence: round4(weight * proximity * (site ? rule.siteFactor : 1)),
      summary: `${group.map((c) => c.type).join(', ')} changed ${site ? 'across the site' : 'on the page'} (detected ${group[0].detectedAt})`,
      evidence: { detectedAt: group[0].detectedAt, changes: group.map(candidateOf) },
    })
  }

  // one source's shift
  const before = new Set(all.slice(shift.index - PAGE_SHIFT_RULE.beforeDays, shift.index))
  const after = new Set(all.slice(shift.index, shift.index + shift.afterDays))
  const meanOf = (rows: DayRow[], set: Set<string>) =>
    sum(rows.filter((r) => set.has(String(r.day))).map((r) => Number(r.visits))) / set.size
  const sources = [...new Set(dayRows.filter((r) => r.dimension === 'source').map((r) => r.value))]
  const sourceShifts = sources
    .map((value) => {
      const rows = dayRows.filter((r) => r.dimension === 'source' && r.value === value)
      const b = meanOf(rows, before)
      const a = meanOf(rows, after)
      const shareOfChange = Math.min(1, Math.max(0, (a - b) / shift.diff))
      const shareOfTraffic = shift.before ? Math.min(1, b / shift.before) : 0
      const confidence = shareOfTraffic < 1 ? Math.max(0, (shareOfChange - shareOfTraffic) / (1 - shareOfTraffic)) : 0
      return {
        value,
        before: round4(b),
        after: round4(a),
        shareOfChange: round4(shareOfChange),
        shareOfTraffic: round4(shareOfTraffic),
        confidence: round4(confidence),
      }
    })
    .filter((s) => s.confidence >= rule.minSourceConfidence)
    .sort((x, y) => y.confidence - x.confidence || (x.value < y.value ? -1 : 1))
  if (sourceShifts[0]) {
    const s = sourceShifts[0]
    causes.push({
      kind: 'source_shift',
      confidence: s.confidence,
      summary: `${s.value || '(direct)'} went from ${s.before} to ${s.after} visits a day`,
      evidence: { source: s.value, before: s.before, after: s.after, shareOfChange: s.shareOfChange, shareOfTraffic: s.shareOfTraffic },
    })
  }

  // what Search Console saw across a fall: the page lost rank, or Google's demand fell
  if (shift.diff < 0) {
    const search = await searchCauseOf(deps, site, path, {
      previous: { from: all[shift.index - PAGE_SHIFT_RULE.beforeDays], to: shift.day },
      current: {
        from: shift.day,
        to: Temporal.PlainDate.from(all[shift.index + shift.afterDays - 1])
          .add({ days: 1 })
          .toString(),
      },
    })
    if (search) causes.push(search)
  }

  // a vitals regression across the shift
  const beforeFrom = Temporal.PlainDate.from(all[shift.index - PAGE_SHIFT_RULE.beforeDays]).toZonedDateTime({ timeZone: tz })
  const afterTo = Temporal.PlainDate.from(all[shift.index + shift.afterDays - 1])
    .add({ days: 1 })
    .toZonedDateTime({ timeZone: tz })
  const regressions = await vitalsRegressions(
    deps.clickhouse,
    site.id,
    { baselineFrom: beforeFrom, currentFrom: Temporal.PlainDate.from(shift.day).toZonedDateTime({ timeZone: tz }), to: afterTo },
    { path },
  )
  for (const r of regressions) {
    causes.push({
      kind: 'vitals_regression',
      confidence: rule.vitalsRegression[r.band],
      summary: `${r.metric} went from ${r.baseline.value} to ${r.current.value}${r.contributors[0] ? ` with ${r.contributors[0].target}` : ''}`,
      evidence: {
        metric: r.metric,
        baseline: r.baseline,
        current: r.current,
        change: r.change,
        band: r.band,
        contributors: r.contributors,
      },
    })
  }

  // an error spike across the shift
  const errorsBefore = mean([...before].map(errorsOn))
  const errorsAfter = mean([...after].map(errorsOn))
  const errorCount = sum([...after].map(errorsOn))
  if (errorCount >= rule.errorSpike.minErrors && errorsAfter >= rule.errorSpike.ratio * errorsBefore) {
    causes.push({
      kind: 'error_spike',
      confidence: rule.errorSpike.confidence,
      summary: `errors went from ${round4(errorsBefore)} to ${round4(errorsAfter)} a day`,
      evidence: { before: round4(errorsBefore), after: round4(errorsAfter), errors: errorCount },
    })
  }
  const order = ['page_change', 'search_rank_drop', 'search_demand_drop', 'source_shift', 'vitals_regression', 'error_spike', 'site_change']
  return causes.sort((a, b) => b.confidence - a.confidence || order.indexOf(a.kind) - order.indexOf(b.kind))
}
