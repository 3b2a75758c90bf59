import type { Query } from '../model'
import { windowScope } from './scope'
import { selected } from './selection'
import { type Fragment, bind, raw, sql } from './sql'

/** The places a geo read groups visits by. */
export const GEO_GRANULARITIES = ['region', 'city'] as const
export type GeoGranularity = (typeof GEO_GRANULARITIES)[number]

/**
 * Visitors and visits per place (country and region, and city at city granularity), most
 * visitors first, at most the query's limit. A visit counts where its first hit was located (the
 * collector stamps the place and its coordinates on every event of the visit) when it holds a
 * selected event. A place's coordinates are the mean over its visits that have coordinates:
 * for a city that is the city's point, for a region the visit-weighted centre of its cities.
 */
export function geoPlacesSql(query: Query, granularity: GeoGranularity): Fragment {
  const scope = windowScope(query.siteId, query.range)
  const place = raw(granularity === 'city' ? 'country, region, city' : 'country, region')
  return sql`
SELECT ${place}, uniqExact(visitor) AS visitors, count() AS visits,
       countIf(located) AS located_visits, avgIf(lat, located) AS latitude, avgIf(lon, located) AS longitude
FROM (
  SELECT session_id, any(visitor_id) AS visitor, any(country_code) AS country, any(region) AS region, any(city) AS city,
         any(latitude) AS lat, any(longitude) AS lon, lat != 0 OR lon != 0 AS located
  FROM events WHERE ${selected(query, scope)}
  GROUP BY session_id
)
GROUP BY ${place}
ORDER BY visitors DESC, visits DESC, ${place}
LIMIT ${bind('UInt32', query.limit)}`
}
