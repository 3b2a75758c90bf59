import { type ReportParams, parseSource } from '../../reports/query/parse'
import type { Query } from '../../reports/query/model'
import { ApiError } from '../../core/errors'
import type { Fragment } from '../../storage/clickhouse/sql'
import { importedDayRowsSql } from './imported-days'
import { type ResolvedRange, previousWindow, rangeView, wholeDays } from '../../reports/query/range'
import { type ReportDeps, prepare } from '../../reports/query/reports'
import { execute } from '../../storage/clickhouse/execute'
import type { Site } from '../../sites/sites'
import { pageVisitsByPeriodFromDaysSql, pageVisitsByPeriodSql } from './compile'
import { dayRowsSql } from './path-days'
import { siteChanges } from '../../crawl/changes'
import { candidateOf } from './candidates'
import { round4 } from './robust'
import { VITALS_REGRESSION_RULE, vitalsRegressions } from './vitals-regressions'
import { daySpanOf, evidenceView, pagesSearchEvidence, searchConnection } from '../search/search'
import { backlinkEvidenceOf, pageBacklinkEvents } from './backlink-causes'
import { targetPath } from '../../backlinks/reads'

/**
 * GET /anomalies: pages whose visits moved against the window of equal length just before,
 * largest move first (docs/traffic-changes.md). Noise is not news: a page needs MIN_VISITS in
 * one of the two windows, and a move of at least MIN_CHANGE visits and MIN_RELATIVE_CHANGE of
 * its previous visits (a page that appeared or went quiet has moved by all of them).
 */
export const ANOMALY_RULE = { minVisits: 20, minChange: 10, minRelativeChange: 0.25 }

/** Changes detected up to this many days before the window are candidates too (a crawl sees a change after it is made). */
export const CANDIDATE_LEAD_DAYS = 7

export type MoverStatus = 'rose' | 'fell' | 'appeared' | 'went_quiet'

const relative = (current: number, previous: number) => (previous ? round4((current - previous) / previous) : null)

/**
 * The day rows of a ga4 read of both windows: GA4's pages carry no other dimension a filter could
 * take with the site's own sessions beside them, and hold whole days only.
 */
function importedDays(query: Query, previous: ResolvedRange) {
  if (query.filters.length)
    throw new ApiError(
      400,
      "filters: page movers of the ga4 source take no filters (GA4's pages and the site's sessions are separate datasets)",
    )
  if (!wholeDays(query.range))
    throw new ApiError(400, `range: ${query.range.name} is not whole days; the ga4 source holds the days GA4 reported`)
  return importedDayRowsSql(query.siteId, previous.from.toPlainDate(), query.range.to.toPlainDate())
}

export async function anomalies(deps: ReportDeps, site: Site, params: ReportParams & { vitals?: '0' | '1' }) {
  const source = parseSource(params, site)
  const { query } = await prepare(deps, site, { ...params, source })
  const previous = previousWindow(query.range)
  const base = { source, range: rangeView(query.range), previousRange: rangeView(previous), rule: ANOMALY_RULE }
  const none = { current: 0, previous: 0, change: 0, relativeChange: null }
  if (params.vitals === '1') {
    // the regressions of each page against the window before, as markers and the page detail find them;
    // vitals are measured by the collector's script whichever source the traffic is read from
    const regressions = await vitalsRegressions(
      deps.clickhouse,
      site.id,
      { baselineFrom: previous.from, currentFrom: query.range.from, to: query.range.to },
      { limit: query.limit },
    )
    return { available: true, ...base, vitalsRule: VITALS_REGRESSION_RULE, site: none, pages: [], regressions }
  }
  const fromDays = (days: { paths: Fragment; site: Fragment }) =>
    pageVisitsByPeriodFromDaysSql(days.paths, days.site, query.range.from.toPlainDate().toString(), ANOMALY_RULE.minVisits)
  // the ga4 source: GA4's sessions per page and day; unfiltered whole days of the collector read
  // the daily rollup where it is current, as the path breakdown does
  const statement =
    source === 'ga4'
      ? fromDays(importedDays(query, previous))
      : !query.filters.length && wholeDays(query.range)
        ? fromDays(await dayRowsSql(deps.clickhouse, site.id, site.timezone, previous.from, query.range.to))
        : pageVisitsByPeriodSql(query, previous, ANOMALY_RULE.minVisits)
  const leadFrom = new Date(query.range.from.epochMilliseconds - CANDIDATE_LEAD_DAYS * 86_400_000)
  const [rows, changes, linkEvents] = await Promise.all([
    execute<{ page: string | null; current: number | string; previous: number | string }>(deps.clickhouse, statement),
    siteChanges(deps.clickhouse, site.id, leadFrom, new Date(query.range.to.epochMilliseconds)),
    pageBacklinkEvents(deps.clickhouse, site.id, leadFrom.getTime(), query.range.to.epochMilliseconds - 1),
  ])
  const siteWide = changes.filter((c) => c.scope === 'site')
  const total = rows.find((r) => r.page === null)
  const siteCurrent = Number(total?.current ?? 0)
  const sitePrevious = Number(total?.previous ?? 0)
  const pages = rows
    .filter((r) => r.page !== null)
    .map((r) => {
      const current = Number(r.current)
      const previous = Number(r.previous)
      const change = current - previous
      const status: MoverStatus = previous === 0 ? 'appeared' : current === 0 ? 'went_quiet' : change > 0 ? 'rose' : 'fell'
      return {
        path: r.page as string,
        status,
        current,
        previous,
        change,
        relativeChange: relative(current, previous),
        impact: sitePrevious ? round4(change / sitePrevious) : null,
      }
    })
    .filter(
      (p) =>
        Math.abs(p.change) >= ANOMALY_RULE.minChange &&
        (p.relativeChange === null || p.current === 0 || Math.abs(p.relativeChange) >= ANOMALY_RULE.minRelativeChange),
    )
    .sort((a, b) => Math.abs(b.change) - Math.abs(a.change) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .slice(0, query.limit)
    // links to the page lost (it fell) or gained (it rose) first, the most visits first; then the page's own changes, then the site's, newest first within each
    .map((p) => ({
      ...p,
      candidates: [
        ...linkEvents
          .filter((e) => targetPath(e.to) === p.path && (p.change < 0 ? e.kind === 'lost' : e.kind !== 'lost'))
          .sort((a, b) => b.visits - a.visits || b.day.localeCompare(a.day))
          .map(backlinkEvidenceOf),
        ...[...changes.filter((c) => c.scope === 'page' && c.path === p.path), ...siteWide].map(candidateOf),
      ],
    }))
  // pages that lost visits: what Search Console saw of them over the same windows (the seo diagnosis)
  const fallen = pages.filter((p) => p.change < 0).map((p) => p.path)
  const search =
    searchConnection(site) && fallen.length
      ? await pagesSearchEvidence(deps, site.id, { current: daySpanOf(query.range), previous: daySpanOf(previous) }, { paths: fallen })
      : new Map()
  return {
    available: true,
    ...base,
    site: {
      current: siteCurrent,
      previous: sitePrevious,
      change: siteCurrent - sitePrevious,
      relativeChange: relative(siteCurrent, sitePrevious),
    },
    pages: pages.map((p) => ({ ...p, search: p.change < 0 ? evidenceView(search.get(p.path)) : null })),
  }
}
