import { SPIKE_DIMENSIONS } from '../../reports/dimensions'
import type { Temporal } from 'temporal-polyfill'
import type { Query } from '../../reports/query/model'
import { type ResolvedRange, chTime } from '../../reports/query/range'
import { mostFrequent } from '../../reports/query/compile/most-frequent'
import { during, windowScope } from '../../reports/query/compile/scope'
import { selected } from '../../reports/query/compile/selection'
import { type Fragment, bind, empty, join, raw, sql } from '../../storage/clickhouse/sql'
import type { RolledDays } from '../../reports/query/model'
import { ROLLUP_VERSION, daySignatures, rolledRows, storedRows, signatureOf } from '../../reports/query/compile/day-rollups'
import { VITAL_PERCENTILES, type VitalPercentile } from '../../reports/query/compile/vitals'

/**
 * The statements of the "why traffic changed" reads. Every value is bound; the only identifiers
 * are the ones written here.
 */

export type Grain = 'hour' | 'day'
type Instant = Pick<Temporal.Instant, 'epochMilliseconds'>

const time = (at: Instant) => bind('DateTime64(3)', chTime(at))
const site = (siteId: string) => sql`site_id = ${bind('UUID', siteId)}`
const between = (from: Instant, to: Instant) => during('timestamp', from.epochMilliseconds, to.epochMilliseconds)

/** The start of the site-local hour or day an event falls in. */
function grainStart(grain: Grain, timezone: string): Fragment {
  const tz = bind('String', timezone)
  return grain === 'hour' ? sql`toStartOfHour(timestamp, ${tz})` : sql`toStartOfDay(timestamp, ${tz})`
}

/**
 * The daily rollup's property holding a finished day's distinct visitors per site-local hour or
 * day, the value being the bucket's start in epoch seconds (bucket-rollup.ts). Only `visitors` is
 * stored; the other counts stay 0.
 */
export const bucketVisitorsProperty = (grain: Grain) => `visitors:${grain}`

/**
 * Distinct visitors per site-local hour or day (bucket start as epoch seconds); empty buckets have
 * no row. The finished days of `rolled` come from their rows in the daily rollup, the spans of
 * `unrolled` from events. A bucket never crosses the site-local midnight, so both never count the
 * same bucket.
 */
export function visitorsByBucketSql(
  siteId: string,
  timezone: string,
  grain: Grain,
  unrolled: readonly { from: Instant; to: Instant }[],
  rolled: RolledDays,
): Fragment {
  const fromEvents = visitorsFromEvents(siteId, timezone, grain, unrolled)
  const fromRollup = rolled.days.length
    ? rolledRows(siteId, timezone, bucketVisitorsProperty(grain), rolled, sql`toUInt32(value) AS bucket, visitors`)
    : empty
  const parts = [fromEvents, fromRollup].filter((part) => part !== empty)
  if (!parts.length) return sql`SELECT toUInt32(0) AS bucket, toUInt64(0) AS visitors WHERE 0`
  return sql`SELECT bucket, visitors FROM (${join(parts, ' UNION ALL ')}) ORDER BY bucket`
}

/** Distinct visitors per bucket of the spans, from events; nothing without spans. */
function visitorsFromEvents(siteId: string, timezone: string, grain: Grain, spans: readonly { from: Instant; to: Instant }[]): Fragment {
  if (!spans.length) return empty
  return sql`
SELECT toUnixTimestamp(${grainStart(grain, timezone)}) AS bucket, uniqExact(visitor_id) AS visitors
FROM events WHERE ${site(siteId)} AND (${join(
    spans.map((s) => between(s.from, s.to)),
    ' OR ',
  )})
GROUP BY bucket`
}

/**
 * visitorsByBucketSql with the lookup of the rolled days folded in, and the site's first quarter
 * hour, in one statement: the caller keeps the stored rows whose day's signature still matches.
 * Rows by kind:
 * - 0: bucket and visitors of the `unrolled` spans, from events;
 * - 1: bucket and visitors of the stored rows of the days of `finished`, each with the signature
 *   (d, n, s) it was built from;
 * - 2: the current signature (d, n, s) of each of those days that has events;
 * - 3: the site's first quarter hour as bucket (epoch seconds), with its count of quarter hours as
 *   visitors (0: no event yet).
 */
export function bucketVisitorsAndSignaturesSql(
  siteId: string,
  timezone: string,
  grain: Grain,
  unrolled: readonly { from: Instant; to: Instant }[],
  finished: Pick<ResolvedRange, 'from' | 'to' | 'timezone'> | null,
): Fragment {
  const fromEvents = visitorsFromEvents(siteId, timezone, grain, unrolled)
  // the first part, always there, names the columns
  const parts = [
    sql`SELECT 3 AS kind, toUInt32(toUnixTimestamp(min(quarter))) AS bucket, count() AS visitors, '' AS d, toUInt64(0) AS n, toUInt64(0) AS s
FROM quarters WHERE ${site(siteId)} AND events > 0`,
    fromEvents === empty ? empty : sql`SELECT 0, bucket, visitors, '', toUInt64(0), toUInt64(0) FROM (${fromEvents})`,
    finished
      ? storedRows(siteId, finished, bucketVisitorsProperty(grain), sql`1, toUInt32(value), visitors, toString(day), day_events, day_sum`)
      : empty,
    finished ? sql`SELECT 2, toUInt32(0), toUInt64(0), toString(day), n, s FROM (${daySignatures(siteId, finished)})` : empty,
  ]
  return join(
    parts.filter((part) => part !== empty),
    ' UNION ALL ',
  )
}

/**
 * Builds the rows of `bucketVisitorsProperty(grain)` for whole finished site-local days (`days`,
 * with the signatures they are stamped with, spans their runs), as visitorsByBucketSql reads them
 * from events.
 */
export function bucketVisitorsInsertSql(
  siteId: string,
  timezone: string,
  grain: Grain,
  spans: readonly { from: Instant; to: Instant }[],
  days: RolledDays,
): Fragment {
  const tz = bind('String', timezone)
  const dayList = bind('Array(Date)', days.days)
  return sql`
INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors)
SELECT ${bind('UUID', siteId)}, ${tz}, ${bind('UInt16', ROLLUP_VERSION)}, ${bind('String', bucketVisitorsProperty(grain))}, day,
       ${signatureOf(days)},
       toString(bucket), visitors
FROM (
  SELECT toDate(timestamp, ${tz}) AS day, toUnixTimestamp(${grainStart(grain, timezone)}) AS bucket, uniqExact(visitor_id) AS visitors
  FROM events WHERE ${site(siteId)} AND (${join(
    spans.map((s) => between(s.from, s.to)),
    ' OR ',
  )})
  GROUP BY day, bucket
)
WHERE has(${dayList}, day)`
}

/**
 * Visitors per bucket, spike dimension (dimensions.ts) and value within the given spans (a spike's buckets and the
 * buckets of its baseline), with the most frequent full referrer of each value.
 */
export function visitorsBySourceSql(
  siteId: string,
  timezone: string,
  grain: Grain,
  spans: readonly { from: Instant; to: Instant }[],
  filtered?: Query,
): Fragment {
  const pairs = join(
    SPIKE_DIMENSIONS.map((d) => sql`tuple(${raw(`'${d.name}'`)}, toString(${raw(d.column)}))`),
    ', ',
  )
  const within = spans.length
    ? join(
        spans.map((s) => sql`(${between(s.from, s.to)})`),
        ' OR ',
      )
    : raw('0')
  return sql`
SELECT toUnixTimestamp(${grainStart(grain, timezone)}) AS bucket, pair.1 AS dimension, pair.2 AS value,
       uniqExact(visitor_id) AS visitors, ${mostFrequent(raw('referrer'))} AS referrer
FROM events ARRAY JOIN [${pairs}] AS pair
WHERE ${site(siteId)} AND (${within})${filtered ? sql` AND ${selected(filtered, windowScope(siteId, filtered.range))}` : empty}
GROUP BY bucket, dimension, value`
}

/**
 * Visits per page (distinct visits with an event on the path, as the path breakdown counts) in the query's window and in
 * `previous` (the window of equal length just before it), under the query's filters, for pages
 * with at least `minVisits` in one of the two; plus one row with page NULL holding the site's
 * visits (all events) in each.
 */
export function pageVisitsByPeriodSql(query: Query, previous: Pick<ResolvedRange, 'from'>, minVisits: number): Fragment {
  const selection = selected(query, windowScope(query.siteId, { from: previous.from, to: query.range.to }))
  const current = sql`timestamp >= ${time(query.range.from)}`
  return sql`
SELECT page, current, previous FROM (
  SELECT if(grouping(pathname) = 1, NULL, pathname) AS page,
         uniqExactIf(session_id, ${current}) AS current,
         uniqExactIf(session_id, NOT (${current})) AS previous
  FROM events WHERE ${selection}
  GROUP BY GROUPING SETS ((pathname), ())
)
WHERE page IS NULL OR greatest(current, previous) >= ${bind('UInt32', minVisits)}`
}

/** The same, unfiltered, from per-day path rows and the site's own per day (dayRowsSql). */
export function pageVisitsByPeriodFromDaysSql(pathDays: Fragment, siteDays: Fragment, currentFromDay: string, minVisits: number): Fragment {
  const current = sql`day >= ${bind('Date', currentFromDay)}`
  return sql`
SELECT page, current, previous FROM (
  SELECT value AS page, sumIf(visits, ${current}) AS current, sumIf(visits, NOT (${current})) AS previous FROM (${pathDays}) GROUP BY value
  UNION ALL
  SELECT NULL, sumIf(visits, ${current}), sumIf(visits, NOT (${current})) FROM (${siteDays})
)
WHERE page IS NULL OR greatest(current, previous) >= ${bind('UInt32', minVisits)}`
}

/**
 * Per page: its visits in the current 28 days, and its best 28 consecutive days (the peak)
 * among the windows ending from `peaksFromDay` on, with the last day of that window (the latest
 * of equal ones), from per-day path rows (dayRowsSql). A visit never crosses the site-local
 * midnight, so days add up.
 */
export function pagePeaksSql(pathDays: Fragment, currentFromDay: string, peaksFromDay: string, minPeak: number): Fragment {
  return sql`
SELECT pathname, max(rolling) AS peak, argMax(day, (rolling, day)) AS peak_end, any(current) AS current FROM (
  SELECT value AS pathname, day, sum(visits) OVER (PARTITION BY value ORDER BY toRelativeDayNum(day) RANGE BETWEEN 27 PRECEDING AND CURRENT ROW) AS rolling,
         sum(if(day >= ${bind('Date', currentFromDay)}, visits, 0)) OVER (PARTITION BY value) AS current
  FROM (${pathDays})
)
WHERE day >= ${bind('Date', peaksFromDay)}
GROUP BY pathname
HAVING peak >= ${bind('UInt32', minPeak)}`
}

/** Visits per page, channel and site-local day, for the given pages (any event on the path, as the path breakdown counts). */
export function pageChannelVisitsByDaySql(
  siteId: string,
  timezone: string,
  pages: readonly string[],
  from: Instant,
  to: Instant,
): Fragment {
  return sql`
SELECT pathname, toString(channel) AS channel, toString(toDate(timestamp, ${bind('String', timezone)})) AS day, uniqExact(session_id) AS visits
FROM events WHERE ${site(siteId)} AND ${between(from, to)} AND pathname IN ${bind('Array(String)', pages)}
GROUP BY pathname, channel, day`
}

/**
 * Pages that went live in the window, with their launch (epoch ms): the earlier of their first
 * pageview ever (page_first_views, kept as events arrive) and the crawler's launch date (its first
 * fetch, or an earlier pageview it saw) from a fetch that found the page (an error or a 404
 * launches nothing). A page first viewed after the window's end has no pageview before it.
 */
export function launchedPagesSql(siteId: string, from: Instant, to: Instant, firstViews?: Fragment): Fragment {
  const views =
    firstViews ??
    sql`SELECT pathname, toUnixTimestamp64Milli(min(first_view)) AS first
  FROM page_first_views WHERE ${site(siteId)}
  GROUP BY pathname
  HAVING min(first_view) < ${time(to)}`
  return sql`
SELECT pathname, min(first) AS first FROM (
  ${views}
  UNION ALL
  SELECT path AS pathname, toUnixTimestamp64Milli(min(launched_at)) AS first
  FROM crawl_snapshots WHERE ${site(siteId)} AND launched_at < ${time(to)} AND status > 0 AND status < 400
  GROUP BY path
)
GROUP BY pathname
HAVING first >= ${bind('UInt64', from.epochMilliseconds)}`
}

/**
 * Vital samples per page, metric and period (1: from `currentFrom` on, 0: before), with the
 * percentile of each, between `from` and `to`; only `path` with it. Periods with fewer than
 * `minSamples` samples are left out: no rule compares them, and a page of rare vitals is the common case.
 */
export function vitalsByPagePeriodSql(
  siteId: string,
  from: Instant,
  currentFrom: Instant,
  to: Instant,
  level: VitalPercentile,
  minSamples: number,
  path?: string,
): Fragment {
  const onPath = path === undefined ? raw('') : sql` AND pathname = ${bind('String', path)}`
  return sql`
SELECT pathname, vital_name AS metric, timestamp >= ${time(currentFrom)} AS current, count() AS samples,
       ${raw(`quantileExactInclusive(${VITAL_PERCENTILES[level]})(vital_value)`)} AS value
FROM events WHERE ${site(siteId)} AND ${between(from, to)} AND name = 'vital' AND kind = 'vital'${onPath}
GROUP BY pathname, metric, current
HAVING samples >= ${bind('UInt32', minSamples)}`
}

/**
 * For the given pages, the samples per metric, period and contributor named by the attribution
 * (fields from the vitals' contributor table), with the percentile of those samples.
 */
export function vitalContributorsByPagePeriodSql(
  siteId: string,
  from: Instant,
  currentFrom: Instant,
  to: Instant,
  level: VitalPercentile,
  paths: readonly string[],
  named: readonly { kind: string; metric: string; field: string }[],
): Fragment {
  const pairs = join(
    named.map(
      (c) => sql`(${raw(`'${c.kind}'`)}, if(vital_name = ${raw(`'${c.metric}'`)}, props[${bind('String', `attribution.${c.field}`)}], ''))`,
    ),
    ', ',
  )
  return sql`
SELECT pathname, vital_name AS metric, timestamp >= ${time(currentFrom)} AS current, contributor.1 AS contributor_kind, contributor.2 AS target,
       count() AS samples, ${raw(`quantileExactInclusive(${VITAL_PERCENTILES[level]})(vital_value)`)} AS value
FROM events ARRAY JOIN arrayFilter(c -> c.2 != '', [${pairs}]) AS contributor
WHERE ${site(siteId)} AND ${between(from, to)} AND name = 'vital' AND kind = 'vital' AND pathname IN ${bind('Array(String)', paths)}
GROUP BY pathname, metric, current, contributor_kind, target`
}

/**
 * One page's visits per site-local day with its visitors, pageviews, errors and engagement reports
 * (their count and the sums of their scroll depth and engaged time), and its visits per day by
 * referring source and channel (dimension rows), in [from, to). The page's events are selected
 * before the ARRAY JOIN: a condition after it is not read first (PREWHERE), and every column of
 * every event of the site was read to test the path.
 */
export function pageDaysSql(siteId: string, timezone: string, path: string, from: Instant, to: Instant, filtered?: Query): Fragment {
  const reported = raw("name = 'engagement' AND kind = 'engagement' AND pair.1 = 'source'")
  return sql`
SELECT toString(toDate(timestamp, ${bind('String', timezone)})) AS day,
       if(grouping(pair) = 1, '', pair.1) AS dimension, if(grouping(pair) = 1, '', pair.2) AS value,
       uniqExact(session_id) AS visits, uniqExact(visitor_id) AS visitors,
       -- each event is joined once per pair: counted under its first pair only
       countIf(kind = 'pageview' AND pair.1 = 'source') AS pageviews, countIf(kind = 'error' AND pair.1 = 'source') AS errors,
       countIf(${reported}) AS reports, sumIf(scroll_depth, ${reported}) AS scroll_sum, sumIf(engaged_ms, ${reported}) AS engaged_sum
FROM (
  SELECT timestamp, session_id, visitor_id, name, kind, referrer_source, channel, scroll_depth, engaged_ms
  FROM events WHERE ${site(siteId)} AND ${between(from, to)} AND pathname = ${bind('String', path)}${
    // the filters' selection over the query's window, which the caller makes the same as [from, to)
    filtered ? sql` AND ${selected(filtered, windowScope(siteId, filtered.range))}` : empty
  }
)
ARRAY JOIN [tuple('source', toString(referrer_source)), tuple('channel', toString(channel))] AS pair
GROUP BY GROUPING SETS ((day), (day, pair))`
}

/** One page's engagement reports in [from, to): their count, mean scroll depth and mean engaged time. */
export function pageEngagementSql(siteId: string, path: string, from: Instant, to: Instant): Fragment {
  return sql`
SELECT count() AS reports, avg(scroll_depth) AS scroll, avg(engaged_ms) AS engaged
FROM events WHERE ${site(siteId)} AND name = 'engagement' AND kind = 'engagement' AND ${between(from, to)} AND pathname = ${bind('String', path)}`
}

/**
 * A page's first pageview ever (epoch ms; 0 without one) and the first crawl's launch date (0 without one).
 * A pageview's name is its kind (lib/ingest/rows.ts): the name narrows the read by the order key.
 */
export function pageFirstSeenSql(siteId: string, path: string): Fragment {
  return sql`
SELECT (SELECT toUnixTimestamp64Milli(min(timestamp)) FROM events WHERE ${site(siteId)} AND name = 'pageview' AND kind = 'pageview' AND pathname = ${bind('String', path)} HAVING count() > 0) AS first_view,
       (SELECT toUnixTimestamp64Milli(min(launched_at)) FROM crawl_snapshots WHERE ${site(siteId)} AND path = ${bind('String', path)} HAVING count() > 0) AS first_crawl`
}

/**
 * dayRowsSql's rows under the query's filters, over its window: per site-local day, `paths` per
 * path and `site` the site's own (value ''), from the events the filters select (a visit-scoped
 * filter such as a goal keeps the visits that match it). No rollup holds a filtered day.
 */
export function filteredDayRowsSql(query: Query): { paths: Fragment; site: Fragment } {
  const selection = selected(query, windowScope(query.siteId, query.range))
  const day = sql`toDate(timestamp, ${bind('String', query.range.timezone)})`
  const rows = (value: Fragment) => sql`
SELECT ${day} AS day, ${value} AS value, uniqExact(visitor_id) AS visitors, uniqExact(session_id) AS visits,
       countIf(kind = 'pageview') AS pageviews, toUInt64(0) AS events
FROM events WHERE ${selection}
GROUP BY day, value`
  return { paths: rows(raw('toString(pathname)')), site: rows(raw("''")) }
}

/** Distinct visitors per site-local hour or day of the query's window under its filters (bucket start as epoch seconds). */
export function filteredVisitorsByBucketSql(query: Query, grain: Grain): Fragment {
  return sql`
SELECT toUnixTimestamp(${grainStart(grain, query.range.timezone)}) AS bucket, uniqExact(visitor_id) AS visitors
FROM events WHERE ${selected(query, windowScope(query.siteId, query.range))}
GROUP BY bucket`
}
