import type { Site } from '../../sites/sites'
import { type GeoGranularity, geoPlacesSql } from './compile/geo'
import { type ReportParams, parseSource } from './parse'
import { planImported } from './plan'
import { importedPlacesSql } from './compile/imported'
import { rangeView, rawDaySpans, wholeDays } from './range'
import { type ReportDeps, prepare } from './reports'
import { execute } from '../../storage/clickhouse/execute'
import { rolledDays } from './run'

type Row = Record<string, unknown>
const numberOf = (v: unknown) => Number(v ?? 0)
/** Four decimals of a degree are about 11 metres: finer than any place an address gives. */
const degrees = (v: unknown) => Math.round(numberOf(v) * 1e4) / 1e4

/**
 * GET /geo: visitors and visits per region or city with the place's coordinates. The collector's
 * places come from its lookup of each visit's address; the ga4 source's from GA4's locations
 * (users and sessions per country, region and city), which carry no coordinates.
 */
async function geoRead(deps: ReportDeps, site: Site, params: ReportParams & { granularity: GeoGranularity }) {
  const { granularity } = params
  const source = parseSource(params, site)
  if (source === 'ga4') return importedGeo(deps, site, params)
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

/** The geo read of the ga4 source: GA4's places, the coordinates said to be missing. */
async function importedGeo(deps: ReportDeps, site: Site, params: ReportParams & { granularity: GeoGranularity }) {
  const { granularity } = params
  const { query } = await prepare(deps, site, { ...params, source: 'ga4' })
  // the planner refuses what GA4's locations cannot answer: a filter of another dataset, a window of minutes
  planImported(query, { kind: 'breakdown', property: granularity })
  const rows = await execute<Row>(deps.clickhouse, importedPlacesSql(query, granularity))
  return {
    available: true,
    range: rangeView(query.range),
    granularity,
    places: rows.map((r) => ({
      country: String(r.country),
      region: String(r.region),
      ...(granularity === 'city' ? { city: String(r.city) } : {}),
      latitude: null,
      longitude: null,
      visitors: numberOf(r.visitors),
      visits: numberOf(r.visits),
    })),
    notAvailable: [{ part: 'latitude, longitude', reason: 'GA4 reports places by name, without coordinates' }],
  }
}

export async function geo(deps: ReportDeps, site: Site, params: ReportParams & { granularity: GeoGranularity }) {
  return { source: parseSource(params, site), ...(await geoRead(deps, site, params)) }
}
