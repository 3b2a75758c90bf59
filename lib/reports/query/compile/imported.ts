import { dimension } from '../../dimensions'
import { GA4_AUTOMATIC_EVENTS } from '../ga4-datasets'
import type { Filter, Query } from '../model'
import type { ImportOrigins, ImportedPlan } from '../plan'
import type { ResolvedRange } from '../range'
import { operatorSql } from './filters'
import { type Fragment, bind, join, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * Reads of imported aggregates (`imported_aggregates`, migration 0013): what GA4 reported per
 * property-local day (and hour), read as the site's local days. The planner (plan.ts, planImported)
 * picks the one dataset a read takes; these builders sum its rows. Every column comes from the
 * dimension table's `ga4` mapping, every value is bound.
 */

const AUTOMATIC = bind('Array(String)', [...GA4_AUTOMATIC_EVENTS])

/** A dimension's value in its imported dataset: source and referrer name the direct visits as the collector does. */
export function importedValueSql(name: string): Fragment {
  const column = dimension(name)?.ga4?.column
  // parsing and the planner refuse dimensions without a mapping; this guards the allow-list itself
  if (!column) throw new Error(`no imported column for ${name}`)
  if (name === 'source' || name === 'referrer') return raw(`if(${column} = '', 'Direct / None', ${column})`)
  return raw(column)
}

const day = (date: { toPlainDate(): { toString(): string } }) => bind('Date', date.toPlainDate().toString())

/**
 * Whose rows a read takes: GA4's alone, or every import with each day counted once. A day from
 * the first to the last day of the site's Plausible import takes Plausible's rows (the same
 * definitions as the tracker's), any other day GA4's.
 */
function originsSql(siteId: string, origins: ImportOrigins): Fragment {
  if (origins === 'ga4') return raw("source = 'ga4'")
  const plausibleDays = (edge: string) =>
    sql`(SELECT ${raw(edge)}(date) FROM imported_aggregates WHERE site_id = ${bind('UUID', siteId)} AND source = 'plausible' AND dataset = 'visitors')`
  return sql`(source = 'plausible' OR (source = 'ga4' AND NOT (date BETWEEN ${plausibleDays('min')} AND ${plausibleDays('max')})))`
}

/** The rows of one dataset of the site in the window's days (read FINAL: the newest import of a day), under the filters. */
function datasetRows(
  siteId: string,
  range: ResolvedRange,
  dataset: string,
  filters: readonly Filter[],
  origins: ImportOrigins = 'ga4',
): Fragment {
  const conditions = [
    sql`site_id = ${bind('UUID', siteId)}`,
    originsSql(siteId, origins),
    sql`dataset = ${bind('String', dataset)}`,
    sql`date >= ${day(range.from)} AND date < ${day(range.to)}`,
    ...filters.map((f) => operatorSql(importedValueSql(f.dimension), f.operator, f.value)),
  ]
  return sql`imported_aggregates FINAL WHERE ${join(conditions, ' AND ')}`
}

/** Custom (not automatic) events' count in the events dataset. */
const customEventsSql = () => sql`sumIf(events, event NOT IN ${AUTOMATIC})`

/** The sums every read takes; bounces and duration derive from them (shape.ts, shapeImportedTotals). */
const SUMS =
  'sum(visitors) AS visitors, sum(visits) AS visits, sum(engaged_visits) AS engaged, sum(pageviews) AS pageviews, sum(engagement_seconds) AS seconds'

/**
 * The window's totals as one row, from the plan's dataset; `events` from the events dataset when the
 * plan reads it (the only one that tells GA4's automatic events apart), else absent.
 */
export function importedStatsSql(query: Query, plan: ImportedPlan): Fragment {
  const rows = datasetRows(query.siteId, query.range, plan.dataset, query.filters, plan.origins)
  if (plan.events === 'same') return sql`SELECT ${raw(SUMS)}, ${customEventsSql()} AS events FROM ${rows}`
  if (plan.events === 'separate') {
    const events = datasetRows(query.siteId, query.range, 'events', [], plan.origins)
    return sql`SELECT ${raw(SUMS)}, (SELECT ${customEventsSql()} FROM ${events}) AS events FROM ${rows}`
  }
  return sql`SELECT ${raw(SUMS)} FROM ${rows}`
}

/** The bucket a row's date (and hour) falls in, as epoch seconds of its site-local start. */
function importedBucket(range: ResolvedRange): Fragment {
  const tz = bind('String', range.timezone)
  switch (range.interval) {
    case 'hour':
      return sql`toUnixTimestamp(makeDateTime(toYear(date), toMonth(date), toDayOfMonth(date), hour, 0, 0, ${tz}))`
    case 'day':
      return sql`toUnixTimestamp(toDateTime(date, ${tz}))`
    case 'week':
      return sql`toUnixTimestamp(toDateTime(toMonday(date), ${tz}))`
    default:
      return sql`toUnixTimestamp(toDateTime(toStartOfMonth(date), ${tz}))`
  }
}

/** Visitors, visits and pageviews per bucket; buckets without rows have none. */
export function importedSeriesSql(query: Query, plan: ImportedPlan): Fragment {
  return sql`
SELECT ${importedBucket(query.range)} AS bucket, sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews
FROM ${datasetRows(query.siteId, query.range, plan.dataset, query.filters, plan.origins)}
GROUP BY bucket ORDER BY bucket`
}

/** The rows of one property, most visitors first; the event property skips rows without a name. */
export function importedBreakdownSql(query: Query, property: string, plan: ImportedPlan): Fragment {
  const value = importedValueSql(property)
  const sparse = dimension(property)?.sparse ? sql` AND ${value} != ''` : raw('')
  const events = plan.events === 'same' ? sql`, ${customEventsSql()} AS events` : raw('')
  return sql`
SELECT ${value} AS value, ${raw(SUMS)}${events}
FROM ${datasetRows(query.siteId, query.range, plan.dataset, query.filters, plan.origins)}${sparse}
GROUP BY value
ORDER BY visitors DESC, value ASC
LIMIT ${bind('UInt32', query.limit)}`
}

/** GA4 events of the window with their count and users (summed daily), most first; automatic ones only with `builtin`. */
export function importedEventsSql(query: Query, builtin: boolean): Fragment {
  const automatic = builtin ? raw('') : sql` AND event NOT IN ${AUTOMATIC}`
  return sql`
SELECT event AS name, sum(events) AS count, sum(visitors) AS users
FROM ${datasetRows(query.siteId, query.range, 'events', query.filters)}${automatic} AND event != ''
GROUP BY name
ORDER BY count DESC, name ASC
LIMIT ${bind('UInt32', query.limit)}`
}

/** The first day a site has imported data for (YYYY-MM-DD; GA4's, or any product's), which bounds the `all` range of a read of imports. */
export const firstImportedDaySql = (siteId: string, origins: ImportOrigins = 'ga4') =>
  sql`SELECT toString(min(date)) AS first, count() AS n FROM imported_aggregates WHERE site_id = ${bind('UUID', siteId)}
    AND source IN ${bind('Array(String)', origins === 'ga4' ? ['ga4'] : ['ga4', 'plausible'])} AND dataset = 'visitors'`

/** Users and sessions per country and region (and city), most users first: the geo read of the ga4 source (GA4 gives no coordinates). */
export function importedPlacesSql(query: Query, granularity: 'region' | 'city'): Fragment {
  const city = granularity === 'city' ? raw(', city') : raw('')
  return sql`
SELECT country, region${city}, sum(visitors) AS visitors, sum(visits) AS visits
FROM ${datasetRows(query.siteId, query.range, 'locations', query.filters)} AND country != ''
GROUP BY country, region${city}
ORDER BY visitors DESC, country ASC, region ASC${city}
LIMIT ${bind('UInt32', query.limit)}`
}
