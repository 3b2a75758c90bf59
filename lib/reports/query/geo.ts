import type { Site } from '../../sites/sites'
import { type GeoGranularity, geoPlacesSql } from './compile/geo'
import { type ReportParams, collectorSource } from './parse'
import { collectorRead } from './behaviour'
import { rangeView, rawDaySpans, wholeDays } from './range'
import { type ReportDeps, prepare } from './reports'
import { execute } from '../../storage/clickhouse/execute'
import { rolledDays } from './run'

type Row = Record<string, unknown>
const numberOf = (v: unknown) => Number(v ?? 0)
/** Four decimals of a degree are about 11 metres: finer than any place an address gives. */
const degrees = (v: unknown) => Math.round(numberOf(v) * 1e4) / 1e4

/**
 * GET /geo: visitors and visits per region or city with the place's coordinates. The places come
 * from the collector's lookup of each visit's address, so the read is the standalone source's;
 * a site without it answers `available: false` (the ga4 source holds no places with coordinates).
 */
async function geoRead(deps: ReportDeps, site: Site, params: ReportParams & { granularity: GeoGranularity }) {
  const { granularity } = params
  if (collectorSource(params, site) !== 'standalone') return { available: false, granularity, places: [] }
  const { query } = await prepare(deps, site, { ...params, source: 'standalone' })
  // an unfiltered read of whole days takes the days rolled up from the daily rollup
  const days = !query.filters.length && wholeDays(query.range) ? await rolledDays(deps.clickhouse, query, false) : undefined
  const rolled = days?.days.length ? { days, spans: rawDaySpans(query.range, days.days) } : undefined
  const rows = await execute<Row>(deps.clickhouse, geoPlacesSql(query, granularity, rolled))
  return {
    available: true,
    range: rangeView(query.range),
    granularity,
    places: rows.map((r) => {
      const located = numberOf(r.located_visits) > 0
      return {
        country: String(r.country),
        region: String(r.region),
        ...(granularity === 'city' ? { city: String(r.city) } : {}),
        latitude: located ? degrees(r.latitude) : null,
        longitude: located ? degrees(r.longitude) : null,
        visitors: numberOf(r.visitors),
        visits: numberOf(r.visits),
      }
    }),
  }
}

export const geo = (deps: ReportDeps, site: Site, params: ReportParams & { granularity: GeoGranularity }) =>
  collectorRead(site, params, () => geoRead(deps, site, params))
