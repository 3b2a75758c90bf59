import type { Temporal } from 'temporal-polyfill'
import { SPIKE_DIMENSIONS, dimension } from '../../reports/dimensions'
import { type Fragment, bind, join, raw, sql } from '../../storage/clickhouse/sql'
import type { Grain } from './compile'
import type { BucketVisitors } from './bucket-rollup'
import type { WhyDeps } from '../../reports/query/window'
import type { Site } from '../../sites/sites'
import { execute } from '../../storage/clickhouse/execute'
import { firstImportedAt } from '../../reports/query/site-events'

/**
 * The "why traffic changed" reads of the ga4 source: the same rows the collector's statements
 * give (path-days.ts, compile.ts), from what GA4 reported per property-local day and hour
 * (`imported_aggregates`, read FINAL: the newest import of a day). A page's visits are GA4's
 * sessions with a view of the page (`sessions` by `pagePath`, summed over hostnames), as the
 * collector counts the visits with a pageview of it; the site's are its daily sessions.
 * docs/traffic-changes.md says where a rule reads a different GA4 field.
 */

type Day = Pick<Temporal.PlainDate, 'toString'>

const ga4Rows = (siteId: string, dataset: string, from: Day, to: Day) =>
  sql`imported_aggregates FINAL WHERE site_id = ${bind('UUID', siteId)} AND source = 'ga4' AND dataset = ${bind('String', dataset)}
  AND date >= ${bind('Date', from.toString())} AND date < ${bind('Date', to.toString())}`

/**
 * Per day of [from, to): `paths` per path and `site` the site's own (value ''), with the columns
 * of dayRowsSql (day, value, visitors, visits, pageviews, events; events are 0: GA4's pages carry none).
 */
export function importedDayRowsSql(siteId: string, from: Day, to: Day): { paths: Fragment; site: Fragment } {
  const rows = (dataset: string, value: string) => sql`
SELECT date AS day, ${raw(value)} AS value, sum(visitors) AS visitors, sum(visits) AS visits, sum(pageviews) AS pageviews, toUInt64(0) AS events
FROM ${ga4Rows(siteId, dataset, from, to)}
GROUP BY day, value`
  return { paths: rows('pages', 'path'), site: rows('visitors', "''") }
}

/**
 * Each page's first moment with a view GA4 reported before `to` (the site-local midnight of its
 * first imported day with views: GA4's days have no time), as launchedPagesSql takes it.
 */
export function importedFirstViewsSql(siteId: string, timezone: string, to: Pick<Temporal.Instant, 'epochMilliseconds'>): Fragment {
  return sql`SELECT path AS pathname, toUnixTimestamp64Milli(toDateTime64(min(date), 3, ${bind('String', timezone)})) AS first
  FROM imported_aggregates FINAL WHERE site_id = ${bind('UUID', siteId)} AND source = 'ga4' AND dataset = 'pages' AND pageviews > 0
  GROUP BY path
  HAVING first < ${bind('UInt64', to.epochMilliseconds)}`
}

/**
 * Users per site-local hour (the hourly dataset) or day (the daily one), as epoch seconds of the
 * bucket's start, and the first imported day. GA4's users of a bucket are its distinct users, as
 * the collector's visitors of a bucket are.
 */
export function importedVisitorsByBucketSql(siteId: string, timezone: string, grain: Grain, from: Day, to: Day): Fragment {
  const tz = bind('String', timezone)
  const bucket =
    grain === 'hour'
      ? sql`toUnixTimestamp(makeDateTime(toYear(date), toMonth(date), toDayOfMonth(date), hour, 0, 0, ${tz}))`
      : sql`toUnixTimestamp(toDateTime(date, ${tz}))`
  return sql`
SELECT ${bucket} AS bucket, sum(visitors) AS visitors
FROM ${ga4Rows(siteId, grain === 'hour' ? 'visitors_hourly' : 'visitors', from, to)}
GROUP BY bucket`
}

/**
 * Users per site-local hour or day over [from, to), as the spike rule reads them (visitorsByBucket
 * of the collector): the rows, and the start of the first imported day (GA4's days have no time).
 */
export async function importedVisitorsByBucket(
  deps: WhyDeps,
  site: Site,
  grain: Grain,
  from: Temporal.ZonedDateTime,
  to: Temporal.ZonedDateTime,
): Promise<BucketVisitors> {
  // the days touched by [from, to): a bucket of an hour or a day lies in one
  const lastDay = to.subtract({ nanoseconds: 1 }).toPlainDate().add({ days: 1 })
  const [rows, first] = await Promise.all([
    execute<{ bucket: number | string; visitors: number | string }>(
      deps.clickhouse,
      importedVisitorsByBucketSql(site.id, site.timezone, grain, from.toPlainDate(), lastDay),
    ),
    firstImportedAt(deps.clickhouse, site),
  ])
  const [lo, hi] = [from.epochMilliseconds / 1000, to.epochMilliseconds / 1000]
  return { rows: rows.filter((r) => Number(r.bucket) >= lo && Number(r.bucket) < hi), first: first?.getTime() ?? null }
}

/**
 * Users per site-local day and spike dimension value (campaign, source, channel) from the
 * imported sources, for the days given: the day-grain attribution of a spike. The sources dataset
 * is daily, so hour-grain spikes of the ga4 source cannot be attributed.
 */
export function importedVisitorsBySourceSql(siteId: string, timezone: string, days: readonly Day[]): Fragment {
  const pairs = join(
    SPIKE_DIMENSIONS.filter((d) => dimension(d.name)?.ga4?.dataset === 'sources').map(
      // the column as stored: a direct visit's source is '', as the collector's spike attribution reads it
      (d) => sql`tuple(${bind('String', d.name)}, toString(${raw(dimension(d.name)?.ga4?.column ?? "''")}))`,
    ),
    ', ',
  )
  return sql`
SELECT toUnixTimestamp(toDateTime(date, ${bind('String', timezone)})) AS bucket, pair.1 AS dimension, pair.2 AS value,
       sum(visitors) AS visitors, '' AS referrer
FROM imported_aggregates FINAL ARRAY JOIN [${pairs}] AS pair
WHERE site_id = ${bind('UUID', siteId)} AND source = 'ga4' AND dataset = 'sources'
  AND date IN ${bind(
    'Array(Date)',
    days.map((d) => d.toString()),
  )}
GROUP BY bucket, dimension, value`
}

/**
 * One page's days of [from, to) as pageDaysSql gives them (the day rows only: GA4's pages carry no
 * source or channel), from GA4's pages summed over hostnames; errors and engagement reports are the
 * collector's and are 0 here.
 */
export function importedPageDaysSql(siteId: string, path: string, from: Day, to: Day): Fragment {
  return sql`
SELECT toString(date) AS day, '' AS dimension, '' AS value, sum(visits) AS visits, sum(visitors) AS visitors, sum(pageviews) AS pageviews,
       toUInt64(0) AS errors, toUInt64(0) AS reports, toUInt64(0) AS scroll_sum, toUInt64(0) AS engaged_sum
FROM ${ga4Rows(siteId, 'pages', from, to)} AND path = ${bind('String', path)}
GROUP BY date`
}

/** A page's first imported day with views, as the site-local midnight in epoch ms (0 without one), as pageFirstSeenSql's first_view. */
export function importedPageFirstViewSql(siteId: string, timezone: string, path: string): Fragment {
  return sql`
SELECT if(count() = 0, 0, toUnixTimestamp64Milli(toDateTime64(min(date), 3, ${bind('String', timezone)}))) AS first_view
FROM imported_aggregates FINAL WHERE site_id = ${bind('UUID', siteId)} AND source = 'ga4' AND dataset = 'pages'
  AND path = ${bind('String', path)} AND pageviews > 0`
}
