import type { Query, RolledDays } from '../model'
import type { DaySpan } from '../range'
import { ROLLUP_VERSION, rolledRows, signatureOf } from './day-rollups'
import { localDay } from './rows'
import { type Scope, daySpansScope, queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, empty, raw, sql } from '../../../storage/clickhouse/sql'

/** The places a geo read groups visits by. */
export const GEO_GRANULARITIES = ['region', 'city'] as const
export type GeoGranularity = (typeof GEO_GRANULARITIES)[number]

/**
 * The daily rollup's property of each granularity: per day and place, visitors, visits, and the
 * located visits with the sums of their coordinates. Kept per granularity, since a visitor's
 * places of a day add up to a region's visitors only when counted at that granularity.
 */
export const geoRollupProperty = (granularity: GeoGranularity) => `geo:${granularity}`

const placeOf = (granularity: GeoGranularity) => raw(granularity === 'city' ? 'country, region, city' : 'country, region')

/**
 * Per place (and per site-local day with `day`): visitors, visits, located visits and the sums of
 * their coordinates, over the visits holding one of the `picked` events. A visit counts where its
 * first hit was located: the collector stamps the place and its coordinates on every event of the
 * visit.
 */
function placeRows(granularity: GeoGranularity, picked: Fragment, day?: Fragment): Fragment {
  const place = placeOf(granularity)
  return sql`
SELECT ${day ? raw('day, ') : empty}${place}, uniqExact(visitor) AS place_visitors, count() AS place_visits, countIf(located) AS place_located,
       sumIf(lat, located) AS lat_sum, sumIf(lon, located) AS lon_sum
FROM (
  SELECT session_id, any(visitor_id) AS visitor, any(country_code) AS country, any(region) AS region, any(city) AS city,
         any(latitude) AS lat, any(longitude) AS lon, lat != 0 OR lon != 0 AS located${day ? sql`, any(${day}) AS day` : empty}
  FROM events WHERE ${picked}
  GROUP BY session_id
)
GROUP BY ${day ? raw('day, ') : empty}${place}`
}

/** A place as one rollup value: its parts as a JSON array, so any name round-trips. */
const placeValue = (granularity: GeoGranularity) =>
  raw(granularity === 'city' ? 'toJSONString([country, region, city])' : 'toJSONString([country, region])')
const placeFromValue = (granularity: GeoGranularity) =>
  raw(
    granularity === 'city'
      ? "JSONExtract(value, 'Array(String)') AS parts, parts[1] AS country, parts[2] AS region, parts[3] AS city"
      : "JSONExtract(value, 'Array(String)') AS parts, parts[1] AS country, parts[2] AS region",
  )

/**
 * Visitors and visits per place (country and region, and city at city granularity), most
 * visitors first, at most the query's limit. A place's coordinates are the mean over its visits
 * that have coordinates: for a city that is the city's point, for a region the visit-weighted
 * centre of its cities. With `rolled` (an unfiltered read of whole days), the rolled days come
 * from the daily rollup and only the others from events; visitors and visits of days add up, as
 * ids rotate and visits end at the site-local midnight.
 */
export function geoPlacesSql(query: Query, granularity: GeoGranularity, rolled?: { days: RolledDays; spans: DaySpan[] }): Fragment {
  const place = placeOf(granularity)
  const scope: Scope = rolled ? daySpansScope(query.siteId, rolled.spans) : queryWindow(query)
  const fromRollup = rolled?.days.days.length
    ? sql`
  UNION ALL
  SELECT ${place}, visitors, visits, located, lat_sum, lon_sum
  FROM (
    SELECT ${placeFromValue(granularity)}, visitors, visits, located, lat_sum, lon_sum
    FROM (${rolledRows(query.siteId, query.range.timezone, geoRollupProperty(granularity), rolled.days, raw('value, visitors, visits, located, lat_sum, lon_sum'))})
  )`
    : empty
  return sql`
SELECT ${place}, sum(place_visitors) AS visitors, sum(place_visits) AS visits, sum(place_located) AS located_visits,
       if(located_visits = 0, 0, sum(lat_sum) / located_visits) AS latitude, if(located_visits = 0, 0, sum(lon_sum) / located_visits) AS longitude
FROM (
  ${placeRows(granularity, selected(query, scope))}${fromRollup}
)
GROUP BY ${place}
ORDER BY visitors DESC, visits DESC, ${place}
LIMIT ${bind('UInt32', query.limit)}`
}

/** The daily rollup rows of places at one granularity over whole days, stamped with each day's signature (see rollup-build.ts). */
export function geoRollupInsertSql(
  siteId: string,
  timezone: string,
  granularity: GeoGranularity,
  spans: DaySpan[],
  days: RolledDays,
): Fragment {
  const scope = daySpansScope(siteId, spans)
  const dayList = bind('Array(Date)', days.days)
  return sql`
INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms, located, lat_sum, lon_sum)
SELECT ${bind('UUID', siteId)}, ${bind('String', timezone)}, ${bind('UInt16', ROLLUP_VERSION)}, ${bind('String', geoRollupProperty(granularity))}, day,
       ${signatureOf(days)},
       ${placeValue(granularity)}, place_visitors, place_visits, 0, 0, 0, 0, place_located, lat_sum, lon_sum
FROM (${placeRows(granularity, scope.events, localDay(timezone))})
WHERE has(${dayList}, day)`
}
