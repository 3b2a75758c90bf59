import { PROPERTY_PREFIX, VISIT_SCOPED_DIMENSIONS } from '../dimensions'
import type { Goal } from '../goals'
import { type Compiled, type Filter, Params, SPARSE_DIMENSIONS, compileFilters, dimensionSql, goalConditionSql } from './filters'
import { type DaySpan, type ResolvedRange, type RolledDays, ROLLUP_VERSION, chTime, rawDaySpans } from './range'

/** The query model: everything a report needs, resolved and validated. */
export interface Query {
  siteId: string
  range: ResolvedRange
  filters: Filter[]
  goals: Goal[]
  limit: number
}

/** Dimensions of visit engagement: their breakdown rows carry bounceRate and avgDuration (spec 2.5). */
const NON_ENGAGEMENT = new Set(['event', 'goal', 'link', 'outbound', 'affiliate', 'button', 'dead_click', 'form'])
export const hasEngagement = (property: string) => !NON_ENGAGEMENT.has(property) && !property.startsWith(PROPERTY_PREFIX)

/** Site and window scope, and the filters: the WHERE every report starts from. Added here, never by a handler. */
function where(query: Query, params: Params) {
  params.values.site = query.siteId
  params.values.from = chTime(query.range.from)
  params.values.to = chTime(query.range.to)
  // a visit ends when the visitor id rotates at the site-local midnight, so it began within a day of any of its events
  params.values.visitsFrom = chTime(query.range.from.subtract({ hours: 26 }))
  params.values.visitsTo = chTime(query.range.to.add({ hours: 26 }))
  const scope = 'site_id = {site:UUID} AND timestamp >= {from:DateTime64(3)} AND timestamp < {to:DateTime64(3)}'
  return [scope, ...compileFilters(query.filters, query.goals, scope, params)].join(' AND ')
}

/**
 * The events a visit-level scan reads: the window widened by 26 hours each way, since a visit ends
 * when the visitor id rotates at the site-local midnight and so never spans more than a day.
 * Visits with at least one selected event keep their whole-visit facts (pageviews, custom events,
 * first to last event), computed in the same single scan as the selected counts.
 */
const VISIT_SCAN = 'site_id = {site:UUID} AND timestamp >= {visitsFrom:DateTime64(3)} AND timestamp < {visitsTo:DateTime64(3)}'
const VISIT_FACTS = `countIf(kind = 'pageview') AS pv, countIf(kind = 'custom') AS ce,
         dateDiff('millisecond', min(timestamp), max(timestamp)) / 1000 AS duration, max(sel) AS has_sel`

/**
 * A scan restricted to whole site-local days (the days of a window the page rollup does not cover,
 * or the one day a rollup row is built from). A visit never crosses the site-local midnight, so the
 * visit-level scan needs no widening: both read the same spans.
 */
function daySpansScope(query: Pick<Query, 'siteId'>, spans: DaySpan[], params: Params) {
  params.values.site = query.siteId
  const span = spans.map((d) => `timestamp >= ${params.add('DateTime64(3)', chTime(d.from))} AND timestamp < ${params.add('DateTime64(3)', chTime(d.to))}`)
  const scope = `site_id = {site:UUID} AND (${span.length ? span.map((c) => `(${c})`).join(' OR ') : '0'})`
  // the visits the spans' events belong to (entry and exit pages) began within them; no spans, no visits
  params.values.visitsFrom = spans.length ? chTime(spans[0].from) : '1970-01-01 00:00:00.000'
  params.values.to = spans.length ? chTime(spans[spans.length - 1].to) : '1970-01-01 00:00:00.000'
  return { selected: scope, visitScan: scope }
}

/** Visit attributes the sessions table carries under the same column names as events. */
const SESSION_DIMENSIONS = new Set([
  'source', 'channel', 'referrer', 'utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content',
  'country', 'region', 'city', 'browser', 'os', 'device', 'screen_class',
])

/**
 * Whole-visit facts from the sessions rollup, one row a visit that began in the widened window:
 * visitor, pageviews, custom events, first to last event, and optionally a visit attribute as
 * `value`. Filters on visit attributes narrow it (they are stamped on every row of a visit);
 * `inWindow` keeps only visits whose last event is in or after the window's start.
 */
function visitFacts(visitFilters: string[], options: { value?: string; inWindow?: boolean } = {}) {
  return `SELECT session_id, ${options.value ? `${options.value} AS value, ` : ''}any(visitor_id) AS visitor, sum(pageviews) AS pv, sum(custom_events) AS ce,
         dateDiff('millisecond', min(session_start), max(end)) / 1000 AS duration
  FROM sessions
  WHERE site_id = {site:UUID} AND session_start >= {visitsFrom:DateTime64(3)} AND session_start < {to:DateTime64(3)}${visitFilters.map((f) => ` AND ${f}`).join('')}
  GROUP BY session_id${options.inWindow ? '\n  HAVING max(end) >= {from:DateTime64(3)}' : ''}`
}

/** The visits holding a selected event, with the selected pageviews and custom events of each. */
const selectedVisits = (selected: string) =>
  `SELECT session_id, countIf(kind = 'pageview') AS sel_pv, countIf(kind = 'custom') AS sel_ce FROM events WHERE ${selected} GROUP BY session_id`

/**
 * Totals with no event-scoped filter read visits from the sessions rollup: a visit counts when it
 * began before the window's end and its last event is in or after the window's start, which for
 * windows over 30 minutes (or ending now) means it has an event inside, since a gap over 30
 * minutes ends a visit. Pageviews and custom events still come from events in the window.
 */
function compileStatsFromSessions(query: Query): Compiled {
  const params = new Params()
  const selected = where(query, params)
  const visitFilters = compileFilters(query.filters, query.goals, '', params)
  const sql = `
SELECT visitors, visits, pageviews, events, visits AS facts_visits, bounces, duration
FROM (
  SELECT countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events FROM events WHERE ${selected}
) AS counts
CROSS JOIN (
  SELECT uniqExact(visitor) AS visitors, count() AS visits, countIf(pv <= 1 AND ce = 0) AS bounces, if(count() = 0, 0, avg(duration)) AS duration
  FROM (${visitFacts(visitFilters, { inWindow: true })})
) AS visits`
  return { sql, params: params.values }
}

export function compileStats(query: Query, rolled?: RolledDays): Compiled {
  if (rolled?.days.length) return compileStatsFromRollup(query, rolled)
  if (query.filters.every((f) => SESSION_DIMENSIONS.has(f.dimension))) return compileStatsFromSessions(query)
  const params = new Params()
  const selected = where(query, params)
  // the visits holding a selected event, joined to their whole-visit facts from the sessions rollup;
  // filters on visit attributes (stamped on every row of a visit) narrow the facts read as well
  const visitFilters = compileFilters(query.filters.filter((f) => SESSION_DIMENSIONS.has(f.dimension)), query.goals, '', params)
  const sql = `
SELECT uniqExact(visitor) AS visitors, count() AS visits, sum(sel_pv) AS pageviews, sum(sel_ce) AS events,
       count() AS facts_visits, countIf(pv <= 1 AND ce = 0) AS bounces, if(count() = 0, 0, avg(duration)) AS duration
FROM (${selectedVisits(selected)}) AS selected
INNER JOIN (${visitFacts(visitFilters)}) AS facts USING session_id`
  return { sql, params: params.values }
}

function bucketSql(range: ResolvedRange, params: Params) {
  const tz = params.add('String', range.timezone)
  switch (range.interval) {
    case 'minute':
      return 'toStartOfMinute(timestamp)'
    case 'hour':
      return `toStartOfHour(timestamp, ${tz})`
    case 'day':
      return `toStartOfDay(timestamp, ${tz})`
    case 'month':
      return `toDateTime(toStartOfMonth(timestamp, ${tz}), ${tz})`
  }
}

/** A series; with `rolled`, whose buckets are days or months (seriesUsesRollup), from the daily rollup. */
export function compileTimeseries(query: Query, rolled?: RolledDays): Compiled {
  if (rolled?.days.length) return compileTimeseriesFromRollup(query, rolled)
  const params = new Params()
  const selected = where(query, params)
  const bucket = bucketSql(query.range, params)
  const sql = `
SELECT toUnixTimestamp(${bucket}) AS bucket, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits, countIf(kind = 'pageview') AS pageviews
FROM events WHERE ${selected}
GROUP BY bucket ORDER BY bucket`
  return { sql, params: params.values }
}

/** The relation a breakdown reads and the value expression over it. */
function breakdownSource(property: string, params: Params): { from: string; value: string; presence: string | null } {
  if (property === TOTALS) return { from: 'events', value: "''", presence: null }
  if (property === 'entry_page' || property === 'exit_page') {
    // FINAL merges a visit's rows in sort order, cheaper here than grouping by visit
    const merge = property === 'entry_page' ? 'finalizeAggregation(entry_page)' : 'finalizeAggregation(exit_page)'
    return {
      from: `events INNER JOIN (SELECT session_id, ${merge} AS visit_page FROM sessions FINAL WHERE site_id = {site:UUID} AND session_start >= {visitsFrom:DateTime64(3)} AND session_start < {to:DateTime64(3)}) AS visit USING session_id`,
      value: 'visit.visit_page',
      presence: "visit.visit_page != ''",
    }
  }
  if (property.startsWith(PROPERTY_PREFIX)) {
    const key = params.add('String', property.slice(PROPERTY_PREFIX.length))
    return { from: 'events', value: `props[${key}]`, presence: `mapContains(props, ${key})` }
  }
  const value = dimensionSql(property, params)
  // the event breakdown lists what sites send and count: pageviews, custom events and link and form
  // events; autocaptured clicks, errors, vitals and engagement reports have their own reads
  if (property === 'event') return { from: 'events', value, presence: "kind NOT IN ('click', 'error', 'vital', 'engagement')" }
  return { from: 'events', value, presence: SPARSE_DIMENSIONS.has(property) ? `${value} != ''` : null }
}

/** A visit-attribute breakdown with visit-attribute filters: visits from the sessions rollup, views from events. */
function compileVisitBreakdownFromSessions(query: Query, property: string): Compiled {
  const params = new Params()
  const selected = where(query, params)
  const visitFilters = compileFilters(query.filters, query.goals, '', params)
  const value = dimensionSql(property, params)
  const limit = params.add('UInt32', query.limit)
  const sql = `
SELECT visits_by_value.value AS value, visitors, visits, pageviews, events, bounce_rate, avg_duration
FROM (
  SELECT value, uniqExact(visitor) AS visitors, count() AS visits, countIf(pv <= 1 AND ce = 0) / count() AS bounce_rate, avg(duration) AS avg_duration
  FROM (${visitFacts(visitFilters, { value: `any(${value})`, inWindow: true })})
  GROUP BY value
) AS visits_by_value
LEFT JOIN (
  SELECT ${value} AS value, countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events FROM events WHERE ${selected} GROUP BY value
) AS views USING value
ORDER BY visitors DESC, value ASC
LIMIT ${limit}`
  return { sql, params: params.values }
}

/**
 * A visit-attribute breakdown under any other filters: the visits holding a selected event, each
 * joined once to its whole-visit facts and attribute (entry and exit pages included) from the
 * sessions rollup, instead of joining every event to its visit.
 */
function compileVisitBreakdown(query: Query, property: string): Compiled {
  const params = new Params()
  const selected = where(query, params)
  const visitFilters = compileFilters(query.filters.filter((f) => SESSION_DIMENSIONS.has(f.dimension)), query.goals, '', params)
  const page = property === 'entry_page' ? 'argMinMerge(entry_page)' : property === 'exit_page' ? 'argMaxMerge(exit_page)' : null
  const value = page ?? `any(${dimensionSql(property, params)})`
  const limit = params.add('UInt32', query.limit)
  const sql = `
SELECT value, uniqExact(visitor) AS visitors, count() AS visits, sum(sel_pv) AS pageviews, sum(sel_ce) AS events,
       countIf(pv <= 1 AND ce = 0) / count() AS bounce_rate, avg(duration) AS avg_duration
FROM (${selectedVisits(selected)}) AS selected
INNER JOIN (${visitFacts(visitFilters, { value })}) AS facts USING session_id
${page ? "WHERE value != ''" : ''}
GROUP BY value
ORDER BY visitors DESC, value ASC
LIMIT ${limit}`
  return { sql, params: params.values }
}

/** The breakdown "property" of a window's totals: one row, value ''. */
export const TOTALS = ''

/**
 * The rows of an event-scoped breakdown over a scope: per value, visitors, visits, pageviews and
 * custom events of the selected events, and for engagement dimensions the bounces and summed
 * duration (ms) of the visits holding the value. With `day`, per site-local day and value: the
 * shape the daily rollup stores (rollup.ts). Reports, totals and the rollup all build on it.
 */
function breakdownRows(property: string, params: Params, selected: string, visitScan: string, day?: string, engagement = hasEngagement(property)) {
  const source = breakdownSource(property, params)
  const rows = [selected, source.presence].filter(Boolean).join(' AND ')
  // a visit-scoped value is the same on every event of a visit: one value a visit, no arrays
  const perVisit = property === TOTALS || (VISIT_SCOPED_DIMENSIONS as readonly string[]).includes(property)
  const byDay = day ? 'day, ' : ''
  return `
SELECT ${day ? 'counts.day AS day, ' : ''}counts.value AS value, visitors, visits, pageviews, events${engagement ? ', bounces, duration_ms' : ''}
FROM (
  SELECT ${day ? `${day} AS day, ` : ''}${source.value} AS value, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits,
         countIf(kind = 'pageview') AS pageviews, countIf(kind = 'custom') AS events
  FROM ${source.from} WHERE ${rows}
  GROUP BY ${byDay}value
) AS counts
${
  engagement
    ? `LEFT JOIN (
  SELECT ${byDay}value, countIf(pv <= 1 AND ce = 0) AS bounces, toUInt64(round(sum(duration) * 1000)) AS duration_ms
  FROM (
    SELECT session_id, ${day ? `anyIf(${day}, sel) AS day, ` : ''}${perVisit ? 'anyIf(row_value, sel) AS value' : 'groupUniqArrayIf(row_value, sel) AS row_values'}, ${VISIT_FACTS}
    FROM (SELECT session_id, kind, timestamp, ${source.value} AS row_value, (${rows}) AS sel FROM ${source.from} WHERE ${visitScan})
    GROUP BY session_id
    HAVING has_sel
  )
  ${perVisit ? '' : 'ARRAY JOIN row_values AS value'}
  GROUP BY ${byDay}value
) AS engagement ON engagement.value = counts.value${day ? ' AND engagement.day = counts.day' : ''}`
    : ''
}`
}

/**
 * The rows of a read that may use the daily rollup: with `rolled` (no filters, whole site-local
 * days, a rolled property: see rollup.ts), the days whose rollup is current come from day_rollups
 * and only the rest from events. Visitors and visits add up across days because ids rotate and
 * visits end at the site-local midnight. With `perDay`, rows keep their day.
 */
function rollupAwareRows(query: Query, property: string, params: Params, rolled: RolledDays | undefined, options: { perDay?: boolean; engagement?: boolean } = {}) {
  const engagement = options.engagement ?? hasEngagement(property)
  const day = options.perDay ? `toDate(timestamp, ${params.add('String', query.range.timezone)})` : undefined
  if (!rolled?.days.length) return breakdownRows(property, params, where(query, params), VISIT_SCAN, day, engagement)
  const { selected, visitScan } = daySpansScope(query, rawDaySpans(query.range, rolled.days), params)
  const keep = options.perDay ? 'day, ' : ''
  const metrics = ['visitors', 'visits', 'pageviews', 'events', ...(engagement ? ['bounces', 'duration_ms'] : [])]
  return `
SELECT ${keep}value, ${metrics.map((m) => `sum(${m}) AS ${m}`).join(', ')}
FROM (
  ${breakdownRows(property, params, selected, visitScan, day, engagement)}
  UNION ALL
  SELECT ${keep}value, ${metrics.join(', ')}
  FROM day_rollups FINAL
  WHERE site_id = {site:UUID} AND timezone = ${params.add('String', query.range.timezone)} AND version = ${params.add('UInt16', ROLLUP_VERSION)} AND property = ${params.add('String', property)}
    AND (day, day_events, day_sum) IN arrayZip(${params.add('Array(Date)', rolled.days)}, ${uint64s(params, rolled.events)}, ${uint64s(params, rolled.sums)})
)
GROUP BY ${keep}value`
}

/** 64-bit values travel as strings. */
const uint64s = (params: Params, values: string[]) => `arrayMap(x -> toUInt64(x), ${params.add('Array(String)', values)})`

export function compileBreakdown(query: Query, property: string, rolled?: RolledDays): Compiled {
  if (property === 'goal') return compileGoalBreakdown(query)
  if (!rolled?.days.length && SESSION_DIMENSIONS.has(property) && query.filters.every((f) => SESSION_DIMENSIONS.has(f.dimension))) return compileVisitBreakdownFromSessions(query, property)
  if (!rolled?.days.length && (SESSION_DIMENSIONS.has(property) || property === 'entry_page' || property === 'exit_page')) return compileVisitBreakdown(query, property)
  const params = new Params()
  const rates = hasEngagement(property) ? ', bounces / visits AS bounce_rate, duration_ms / 1000 / visits AS avg_duration' : ''
  const inner = rollupAwareRows(query, property, params, rolled)
  const limit = params.add('UInt32', query.limit)
  const sql = `
SELECT value, visitors, visits, pageviews, events${rates}
FROM (${inner})
ORDER BY visitors DESC, value ASC
LIMIT ${limit}`
  return { sql, params: params.values }
}

/** Totals over rolled days and the rest, in the shape of compileStats. */
function compileStatsFromRollup(query: Query, rolled: RolledDays): Compiled {
  const params = new Params()
  const sql = `
SELECT sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews, sum(events) AS events,
       visits AS facts_visits, sum(bounces) AS bounces, if(visits = 0, 0, sum(duration_ms) / 1000 / visits) AS duration
FROM (${rollupAwareRows(query, TOTALS, params, rolled)})`
  return { sql, params: params.values }
}

/** A day or month series over rolled days and the rest: per-day totals summed into buckets. */
function compileTimeseriesFromRollup(query: Query, rolled: RolledDays): Compiled {
  const params = new Params()
  const inner = rollupAwareRows(query, TOTALS, params, rolled, { perDay: true, engagement: false })
  const tz = params.add('String', query.range.timezone)
  const bucket = query.range.interval === 'month' ? `toDateTime(toStartOfMonth(day), ${tz})` : `toDateTime(day, ${tz})`
  const sql = `
SELECT toUnixTimestamp(${bucket}) AS bucket, sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews
FROM (${inner})
GROUP BY bucket ORDER BY bucket`
  return { sql, params: params.values }
}

/**
 * The daily rollup of one property over whole site-local days: per day and value, the rows a
 * read would compute, stamped with each day's signature (see rollup.ts).
 */
export function compileRollup(siteId: string, timezone: string, property: string, spans: DaySpan[], days: RolledDays): Compiled {
  const params = new Params()
  const { selected, visitScan } = daySpansScope({ siteId }, spans, params)
  const tz = params.add('String', timezone)
  const dayList = params.add('Array(Date)', days.days)
  const sql = `
INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms)
SELECT {site:UUID}, ${tz}, ${params.add('UInt16', ROLLUP_VERSION)}, ${params.add('String', property)}, day,
       transform(day, ${dayList}, ${uint64s(params, days.events)}, toUInt64(0)), transform(day, ${dayList}, ${uint64s(params, days.sums)}, toUInt64(0)),
       value, visitors, visits, pageviews, events, bounces, duration_ms
FROM (${breakdownRows(property, params, selected, visitScan, `toDate(timestamp, ${tz})`)})
WHERE has(${dayList}, day)`
  return { sql, params: params.values }
}

/** One row a goal: unique converters, fires, conversion rate over all visitors, revenue in its currency. */
export function compileGoalBreakdown(query: Query): Compiled {
  const params = new Params()
  const selected = where(query, params)
  const limit = params.add('UInt32', query.limit)
  if (!query.goals.length) return { sql: `SELECT '' AS value, 0 AS visitors, 0 AS events, 0 AS total_visitors, 0 AS revenue, '' AS currency WHERE 0 LIMIT ${limit}`, params: params.values }
  const tags = query.goals.map((g) => `if(${goalConditionSql(g, params)}, ${params.add('String', g.name)}, '')`).join(', ')
  const names = params.add('Array(String)', query.goals.map((g) => g.name))
  const currencies = params.add('Array(String)', query.goals.map((g) => g.currency ?? ''))
  const sql = `
SELECT goal AS value, uniqExact(visitor_id) AS visitors, count() AS events, any(total.visitors) AS total_visitors,
       sumIf(revenue_amount, revenue_currency = goal_currency AND goal_currency != '') AS revenue, any(goal_currency) AS currency
FROM (
  SELECT visitor_id, revenue_amount, revenue_currency, arrayJoin(arrayFilter(g -> g != '', [${tags}])) AS goal,
         transform(goal, ${names}, ${currencies}, '') AS goal_currency
  FROM events WHERE ${selected}
) AS conversions
CROSS JOIN (SELECT uniqExact(visitor_id) AS visitors FROM events WHERE ${selected}) AS total
GROUP BY goal
ORDER BY visitors DESC, value ASC
LIMIT ${limit}`
  return { sql, params: params.values }
}

