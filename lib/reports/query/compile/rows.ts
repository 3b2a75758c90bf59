import { GOAL, PROPERTY_PREFIX, combinedParts, dimension, hasEngagement } from '../../dimensions'
import { type RolledDays, TOTALS } from '../model'
import { partialRows, rolledRows } from './day-rollups'
import { combinedValue, dimensionSql } from './filters'
import { type Scope, eventsFrom, siteIs } from './scope'
import { type Fragment, bind, empty, join, raw, sql } from '../../../storage/clickhouse/sql'
import { BOUNCED, visitFacts } from './visits'

/** The visit pages and hostnames: a visit's value derived from its events (its first or last pageview). */
const VISIT_PAGES = ['entry_page', 'exit_page', 'entry_page_hostname', 'exit_page_hostname']
export const isVisitPage = (property: string) => VISIT_PAGES.includes(property)

/**
 * Each visit of the scope with its entry or exit page, or the hostname of its first or last
 * pageview, as `visit_page`: pages from the sessions rollup, hostnames from the visits' events.
 */
export function visitPages(property: string, scope: Scope): Fragment {
  if (property === 'entry_page' || property === 'exit_page') {
    // FINAL merges a visit's rows in sort order, cheaper here than grouping by visit
    const merge = raw(property === 'entry_page' ? 'finalizeAggregation(entry_page)' : 'finalizeAggregation(exit_page)')
    return sql`SELECT session_id, ${merge} AS visit_page FROM sessions FINAL WHERE ${siteIs(scope.siteId)} AND ${scope.visitsBegan}`
  }
  const pick = raw(property === 'entry_page_hostname' ? 'argMinIf' : 'argMaxIf')
  return sql`SELECT session_id, ${pick}(hostname, timestamp, kind = 'pageview') AS visit_page FROM ${eventsFrom(scope)} WHERE ${scope.visitScan} GROUP BY session_id`
}

/** The relation a breakdown reads and the value expression over it. */
export interface BreakdownSource {
  from: Fragment
  value: Fragment
  presence: Fragment | null
  /** The row's values the value is made of: the value itself, or a combination's parts before they are joined into its JSON. */
  parts: readonly Fragment[]
  combined?: true
}

export function breakdownSource(property: string, scope: Scope): BreakdownSource {
  const events = eventsFrom(scope)
  if (property === TOTALS) return single(events, raw("''"), null)
  const parts = combinedParts(property)
  if (parts) return combinedSource(parts, scope)
  if (isVisitPage(property)) {
    return single(
      sql`${events} INNER JOIN (${visitPages(property, scope)}) AS visit USING session_id`,
      raw('visit.visit_page'),
      raw("visit.visit_page != ''"),
    )
  }
  if (property.startsWith(PROPERTY_PREFIX)) {
    const key = bind('String', property.slice(PROPERTY_PREFIX.length))
    return single(events, sql`props[${key}]`, sql`mapContains(props, ${key})`)
  }
  const value = dimensionSql(property)
  // the event breakdown lists what sites send and count: pageviews, custom events and link and form
  // events; autocaptured clicks, errors, vitals and engagement reports have their own reads
  if (property === 'event') return single(events, value, raw("kind NOT IN ('click', 'error', 'vital', 'engagement')"))
  return single(events, value, dimension(property)?.sparse ? sql`${value} != ''` : null)
}

const single = (from: Fragment, value: Fragment, presence: Fragment | null): BreakdownSource => ({ from, value, presence, parts: [value] })

/**
 * Several dimensions together: each event's values of all of them as one JSON array, the events
 * where every one has a value (the visit pages each joined once, as visit_<i>). The goal, where
 * one of them, is the column `goal` the goal breakdown gives each conversion (compile/goals.ts).
 */
function combinedSource(parts: readonly string[], scope: Scope): BreakdownSource {
  let from: Fragment = eventsFrom(scope)
  const values: Fragment[] = []
  const presences: Fragment[] = []
  parts.forEach((part, i) => {
    if (part === GOAL) {
      values.push(raw('goal'))
      return
    }
    if (isVisitPage(part)) {
      const alias = raw(`visit_${i}`)
      from = sql`${from} INNER JOIN (${visitPages(part, scope)}) AS ${alias} USING session_id`
      values.push(sql`${alias}.visit_page`)
      presences.push(sql`${alias}.visit_page != ''`)
      return
    }
    const one = breakdownSource(part, scope)
    values.push(sql`toString(${one.value})`)
    if (one.presence) presences.push(one.presence)
  })
  return {
    from,
    value: combinedValue(values),
    presence: presences.length ? join(presences, ' AND ') : null,
    parts: values,
    combined: true,
  }
}

/**
 * A row's value as a hash of its parts, to group rows by and to gather per visit: a number is
 * cheaper to hash, compare and keep in arrays than the value's string (a page's, a combination's
 * JSON, which is then made once a group rather than once a row). Two values sharing a hash are
 * about one in 2^64 a pair.
 */
const valueKey = (source: BreakdownSource) => sql`cityHash64(${join(source.parts, ', ')})`

/** The value of a group of rows of one valueKey: its parts are the same on every row. */
const groupValue = (source: BreakdownSource) =>
  source.combined ? combinedValue(source.parts.map((part) => sql`any(${part})`)) : sql`any(${source.value})`

export interface RowsOptions {
  /** An expression of the event's site-local day: rows are per day and value. */
  day?: Fragment
  /** Whether rows carry bounces and summed duration; by default for engagement properties. */
  engagement?: boolean
  /** rowsWithRollup: the selected events of the days read from events (a filtered read's); by default all of them. */
  selected?: Fragment
  /** rowsWithRollup: the rows of the days not rolled up, when they need no event scan (visitAttributeRows). */
  unrolled?: Fragment
  /** Whether rows carry the engagement reports of their events (count, scroll and engaged-time sums): path rows, for the pages read. */
  reports?: boolean
  /** Whether visitors are a uniqExact state rather than a count: rows that merge with a partial rollup's. */
  visitorStates?: boolean
  /**
   * Set when the events are a selection under filters (a filtered read's or a filter's rollup
   * build): they are read once, grouped by visit (engagementBySelectedVisit), and the visits whose
   * facts are joined are narrowed by the filters on visit attributes (selection.ts, visitFilters),
   * which every visit holding a selected event passes. Over all events (the daily rollup) the two
   * reads of the default shape cost less, except for a visit-scoped value without `day`, read this
   * way unfiltered too (its groups are one a visit either way).
   */
  filtered?: { visitFilters: readonly Fragment[] }
}

/** The properties whose daily rollup rows carry engagement reports: a page's. */
export const carriesReports = (property: string) => property === 'path'

/** The columns of engagement reports, summed by the rollup. */
const REPORT_COLUMNS = ['reports', 'scroll_sum', 'engaged_ms_sum']

/**
 * The rows of an event-scoped breakdown over the `selected` events of a scope: per value,
 * visitors, visits, pageviews and custom events of the selected events, and for engagement
 * properties the bounces and summed duration (ms) of the visits holding the value. With `day`,
 * per site-local day and value: the shape the daily rollup stores. Reports, totals and the
 * rollup build all build on it.
 */
export function breakdownRows(property: string, scope: Scope, selected: Fragment, options: RowsOptions = {}): Fragment {
  const { day } = options
  const engagement = options.engagement ?? hasEngagement(property)
  if (VISIT_HOSTNAMES.includes(property) && !day && !options.reports)
    return visitHostnameRows(property, scope, selected, engagement, options)
  const source = breakdownSource(property, scope)
  const rows = join(source.presence ? [selected, source.presence] : [selected], ' AND ')
  // a visit-scoped value (several together too) is the same on every event of a visit: one value a visit, no arrays
  const perVisit = property === TOTALS || (combinedParts(property) ?? [property]).every((part) => dimension(part)?.scope === 'visit')
  // grouped by visit and value, a visit-scoped value's events are one group a visit: read once (and
  // a visit page derived once), not once for the counts and again for the engagement
  if (engagement && (options.filtered || (perVisit && !day)))
    return engagementBySelectedVisit(source, scope, rows, options, options.filtered?.visitFilters ?? [])
  const byDay = day ? raw('day, ') : empty
  // each visit holding a selected event: its values, and its facts (views, custom events, first to
  // last event) from the sessions rollup rather than a scan of all its events; values by their key,
  // and a visit's distinct keys by distinct of its array (cheaper than a set a visit)
  const engagementJoin = sql`LEFT JOIN (
  SELECT ${byDay}value_key, countIf(${BOUNCED}) AS bounces, toUInt64(round(sum(duration) * 1000)) AS duration_ms
  FROM (${visitFacts(scope, [])}) AS facts
  INNER JOIN (
    SELECT session_id, ${day ? sql`any(${day}) AS day, ` : empty}${raw(perVisit ? 'any(row_key) AS value_key' : 'arrayDistinct(groupArray(row_key)) AS row_keys')}
    FROM (SELECT session_id, timestamp, ${valueKey(source)} AS row_key FROM ${source.from} WHERE ${rows})
    GROUP BY session_id
  ) AS selected USING session_id
  ${raw(perVisit ? '' : 'ARRAY JOIN row_keys AS value_key')}
  GROUP BY ${byDay}value_key
) AS engagement ON engagement.value_key = counts.value_key${raw(day ? ' AND engagement.day = counts.day' : '')}`
  return sql`
SELECT ${raw(day ? 'counts.day AS day, ' : '')}counts.value AS value, visitors, visits, pageviews, events${raw(engagement ? ', bounces, duration_ms' : '')}${raw(options.reports ? `, ${REPORT_COLUMNS.join(', ')}` : '')}
FROM (
  SELECT ${day ? sql`${day} AS day, ` : empty}${valueKey(source)} AS value_key, ${groupValue(source)} AS value, ${raw(options.visitorStates ? 'uniqExactState' : 'uniqExact')}(visitor_id) AS visitors, uniqExact(session_id) AS visits,
         countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events${raw(options.reports ? REPORTS_OF_EVENTS : '')}
  FROM ${source.from} WHERE ${rows}
  GROUP BY ${byDay}value_key
) AS counts
${engagement ? engagementJoin : empty}`
}

/** The visit pages derived from events: the hostname of a visit's first or last pageview. */
const VISIT_HOSTNAMES = ['entry_page_hostname', 'exit_page_hostname']

/**
 * breakdownRows of a visit hostname, without days: one pass over the events of the visits of the
 * scope, grouped by visit, each visit's hostname and its selected events counted together, rather
 * than its hostname derived in one read and joined to its events in another. The visits holding a
 * selected event and a hostname are the rows; with `engagement`, joined to their facts as in
 * engagementBySelectedVisit.
 */
function visitHostnameRows(property: string, scope: Scope, selected: Fragment, engagement: boolean, options: RowsOptions): Fragment {
  const pick = raw(property === 'entry_page_hostname' ? 'argMinIf' : 'argMaxIf')
  return sql`
SELECT value, ${raw(options.visitorStates ? 'uniqExactState' : 'uniqExact')}(visitor) AS visitors, count() AS visits, sum(sel_pv) AS pageviews, sum(sel_ce) AS events${
    engagement ? sql`, countIf(known AND ${BOUNCED}) AS bounces, toUInt64(round(sumIf(duration, known) * 1000)) AS duration_ms` : empty
  }
FROM (
  SELECT session_id, ${pick}(hostname, timestamp, kind = 'pageview') AS value, any(visitor_id) AS visitor,
         countIf(${selected} AND kind = 'pageview') AS sel_pv, countIf(${selected} AND kind = 'custom') AS sel_ce, countIf(${selected}) AS selected_events
  FROM ${eventsFrom(scope)} WHERE ${scope.visitScan}
  GROUP BY session_id
  HAVING selected_events > 0 AND value != ''
) AS selected${
    engagement
      ? sql`
LEFT JOIN (SELECT session_id, 1 AS known, pv, ie, duration FROM (${visitFacts(scope, options.filtered?.visitFilters ?? [])})) AS facts USING session_id`
      : empty
  }
GROUP BY value`
}

/** The engagement reports of a group of events, as REPORT_COLUMNS. */
const REPORTS_OF_EVENTS =
  ", countIf(kind = 'engagement') AS reports, sumIf(scroll_depth, kind = 'engagement') AS scroll_sum, sumIf(engaged_ms, kind = 'engagement') AS engaged_ms_sum"

/**
 * breakdownRows with engagement over a selection under filters (or a visit-scoped value's), its events read once: grouped by
 * visit, day and value, each group is one visit holding the value, joined to its visit's facts
 * from the sessions rollup (narrowed by `visitFilters`). A visit the sessions rollup does not
 * hold yet counts in visitors, visits and views, not in bounces or duration, as in the default shape.
 */
function engagementBySelectedVisit(
  source: BreakdownSource,
  scope: Scope,
  rows: Fragment,
  options: RowsOptions,
  visitFilters: readonly Fragment[],
): Fragment {
  const { day } = options
  const byDay = day ? raw('day, ') : empty
  return sql`
SELECT ${byDay}any(value) AS value, ${raw(options.visitorStates ? 'uniqExactState' : 'uniqExact')}(visitor) AS visitors, count() AS visits, sum(sel_pv) AS pageviews, sum(sel_ce) AS events,
       countIf(known AND ${BOUNCED}) AS bounces, toUInt64(round(sumIf(duration, known) * 1000)) AS duration_ms${raw(options.reports ? `, ${REPORT_COLUMNS.map((c) => `sum(${c}) AS ${c}`).join(', ')}` : '')}
FROM (
  SELECT session_id, ${day ? sql`${day} AS day, ` : empty}${valueKey(source)} AS value_key, ${groupValue(source)} AS value, any(visitor_id) AS visitor,
         countIf(kind = 'pageview') AS sel_pv, countIf(kind = 'custom') AS sel_ce${raw(options.reports ? REPORTS_OF_EVENTS : '')}
  FROM ${source.from} WHERE ${rows}
  GROUP BY session_id, ${byDay}value_key
) AS selected
LEFT JOIN (SELECT session_id, 1 AS known, pv, ie, duration FROM (${visitFacts(scope, visitFilters)})) AS facts USING session_id
GROUP BY ${byDay}value_key`
}

/**
 * The same rows over a window part rolled up: the rolled days from day_rollups (a filtered read's
 * from the rows of its filters), the other days (`scope`, their spans) from events, summed per
 * value. Visitors and visits add up across days because ids rotate and visits end at the
 * site-local midnight. Where the scope leaves a day's earlier visits to the partial rollup
 * (`scope.partial`), that day's rows are its rows merged with the later visits' from events:
 * visitors as sets, since a visitor may have visits on both sides of the cutoff; the rest add up.
 * With `day`, rows keep their day.
 */
export function rowsWithRollup(property: string, scope: Scope, timezone: string, rolled: RolledDays, options: RowsOptions = {}): Fragment {
  const engagement = options.engagement ?? hasEngagement(property)
  const keep = options.day ? 'day, ' : ''
  const metrics = [
    'visitors',
    'visits',
    'pageviews',
    'events',
    ...(engagement ? ['bounces', 'duration_ms'] : []),
    ...(options.reports ? REPORT_COLUMNS : []),
  ]
  const columns = raw(`${keep}value, ${metrics.join(', ')}`)
  const partial = scope.partial
  const events =
    options.unrolled ??
    breakdownRows(property, scope, options.selected ?? scope.events, {
      day: options.day,
      engagement,
      reports: options.reports,
      visitorStates: !!partial,
      filtered: options.filtered,
    })
  const unrolled = partial
    ? sql`SELECT ${raw(keep)}value, ${raw(metrics.map((m) => (m === 'visitors' ? 'uniqExactMerge(visitors) AS visitors' : `sum(${m}) AS ${m}`)).join(', '))}
  FROM (
    ${events}
    UNION ALL
    ${partialRows(scope.siteId, timezone, property, partial, columns)}
  )
  GROUP BY ${raw(keep)}value`
    : events
  return sql`
SELECT ${raw(keep)}value, ${raw(metrics.map((m) => `sum(${m}) AS ${m}`).join(', '))}
FROM (
  ${unrolled}${
    rolled.days.length
      ? sql`
  UNION ALL
  ${rolledRows(scope.siteId, timezone, rolled.filtersKey ?? property, rolled, columns)}`
      : empty
  }
)
GROUP BY ${raw(keep)}value`
}

/** The site-local day of an event. */
export const localDay = (timezone: string) => sql`toDate(timestamp, ${bind('String', timezone)})`
