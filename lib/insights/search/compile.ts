import type { Filter } from '../../reports/query/model'
import { operatorSql } from '../../reports/query/compile/filters'
import { type Fragment, bind, join, raw, sql } from '../../storage/clickhouse/sql'

/**
 * The statements of the Search Console reads (search, seo, and the search evidence of page detail,
 * anomalies and decay) over search_console_rows and search_console_totals (migration 0014). Every
 * value is bound; the columns are the ones named here. Days are Search Console's dates.
 */

/** Days [from, to), YYYY-MM-DD. */
export interface DaySpan {
  from: string
  to: string
}

/** The windows a read compares: the current one and the one it is compared with. */
export interface Windows {
  current: DaySpan
  previous: DaySpan
}

/** What a search filter may name, and its column. */
export const SEARCH_FILTER_COLUMNS = { path: 'path', entry_page: 'path', country: 'country', device: 'device', query: 'query' } as const
export type SearchFilter = Pick<Filter, 'operator' | 'value'> & { dimension: keyof typeof SEARCH_FILTER_COLUMNS }

/** Filters that only the query rows hold (a landing page, a query): totals then come from the rows. */
export const needsRows = (filters: readonly SearchFilter[]) => filters.some((f) => f.dimension !== 'country' && f.dimension !== 'device')

const date = (day: string) => bind('Date', day)
const within = (span: DaySpan) => sql`date >= ${date(span.from)} AND date < ${date(span.to)}`
const earliest = (w: Windows) => [w.previous.from, w.current.from].sort()[0]
const latest = (w: Windows) => [w.previous.to, w.current.to].sort()[1]

function whereOf(siteId: string, w: Windows, filters: readonly SearchFilter[], paths?: readonly string[]): Fragment {
  const parts = [
    sql`site_id = ${bind('UUID', siteId)}`,
    sql`date >= ${date(earliest(w))} AND date < ${date(latest(w))}`,
    ...filters.map((f) => operatorSql(raw(SEARCH_FILTER_COLUMNS[f.dimension]), f.operator, f.value)),
    ...(paths ? [sql`path IN ${bind('Array(String)', paths)}`] : []),
  ]
  return join(parts, ' AND ')
}

/** Clicks, impressions and impression-weighted position of both windows, as c_* and p_* columns. */
function bothWindows(w: Windows, names = { current: 'c', previous: 'p' }): Fragment {
  const of = (prefix: string, span: DaySpan) =>
    sql`sumIf(clicks, ${within(span)}) AS ${raw(`${prefix}_clicks`)}, sumIf(impressions, ${within(span)}) AS ${raw(`${prefix}_impressions`)}, sumIf(position * impressions, ${within(span)}) AS ${raw(`${prefix}_weighted`)}`
  return sql`${of(names.current, w.current)}, ${of(names.previous, w.previous)}`
}

/**
 * A day's rows never span two partitions (months), so FINAL may fold each partition on its own,
 * which ClickHouse does in parallel and without merging across them.
 */
const FINAL_BY_PARTITION = raw(' SETTINGS do_not_merge_across_partitions_select_final = 1')

const table = (filters: readonly SearchFilter[]) => raw(needsRows(filters) ? 'search_console_rows' : 'search_console_totals')

/** The totals of both windows: from the day totals, or from the query rows under a landing-page or query filter. */
export function searchTotalsSql(siteId: string, w: Windows, filters: readonly SearchFilter[]): Fragment {
  return sql`SELECT ${bothWindows(w)} FROM ${table(filters)} FINAL WHERE ${whereOf(siteId, w, filters)}${FINAL_BY_PARTITION}`
}

/** The current window's days, each with its clicks, impressions and weighted position. */
export function searchSeriesSql(siteId: string, span: DaySpan, filters: readonly SearchFilter[]): Fragment {
  const w = { current: span, previous: span }
  return sql`
SELECT toString(date) AS day, sum(clicks) AS day_clicks, sum(impressions) AS day_impressions, sum(position * impressions) AS day_weighted
FROM ${table(filters)} FINAL WHERE ${whereOf(siteId, w, filters)}
GROUP BY date ORDER BY date${FINAL_BY_PARTITION}`
}

/** The top queries or landing pages of the current window, with both windows' numbers; most clicks first. */
export function searchTopSql(siteId: string, w: Windows, filters: readonly SearchFilter[], by: 'query' | 'path', limit: number): Fragment {
  return sql`
SELECT ${raw(by)} AS value, ${bothWindows(w)}
FROM search_console_rows FINAL WHERE ${whereOf(siteId, w, filters)}
GROUP BY value HAVING c_clicks > 0 OR c_impressions > 0
ORDER BY c_clicks DESC, c_impressions DESC, value LIMIT ${bind('UInt32', limit)}${FINAL_BY_PARTITION}`
}

/** How many lost queries a page names at most. */
export const LOST_QUERIES_NAMED = 5

/**
 * Every landing page with search traffic in either window (or only `paths`): both windows'
 * numbers, and the queries that brought it clicks before and no impression now (the clicks they
 * brought, and the most of them by clicks, named).
 */
export function searchPagesSql(siteId: string, w: Windows, filters: readonly SearchFilter[], paths?: readonly string[]): Fragment {
  return sql`
SELECT path,
  sum(qc_clicks) AS c_clicks, sum(qc_impressions) AS c_impressions, sum(qc_weighted) AS c_weighted,
  sum(qp_clicks) AS p_clicks, sum(qp_impressions) AS p_impressions, sum(qp_weighted) AS p_weighted,
  sumIf(qp_clicks, qc_impressions = 0) AS lost_clicks,
  arraySlice(arraySort(x -> (-x.2, x.1), groupArrayIf((query, qp_clicks), qp_clicks > 0 AND qc_impressions = 0)), 1, ${raw(String(LOST_QUERIES_NAMED))}) AS lost
FROM (
  SELECT path, query, ${bothWindows(w, { current: 'qc', previous: 'qp' })}
  FROM search_console_rows FINAL WHERE ${whereOf(siteId, w, filters, paths)}
  GROUP BY path, query
)
GROUP BY path HAVING c_impressions > 0 OR p_impressions > 0${FINAL_BY_PARTITION}`
}
