import { z } from 'zod'
import { GEO_GRANULARITIES } from '../../lib/reports/query/compile/geo'
import { geo } from '../../lib/reports/query/geo'
import { reportParams } from '../../lib/reports/query/parse'
import { defineEndpoint } from '../endpoint'
import { notAvailableSchema, rangeViewSchema, sourceSchema } from './report-schemas'

const count = z.number().int().nonnegative()
const degrees = (what: string) =>
  z.number().nullable().describe(`${what} in degrees (WGS 84), 4 decimals; null when no visit there had coordinates, and on the ga4 source`)

export const geoEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/geo',
    scope: 'read',
    tool: 'get_geo',
    summary: 'Visitors and visits per region or city, with each place’s coordinates, for a map.',
    description:
      'granularity=region groups by country and region, city by country, region and city. Most visitors first, at most limit. A visit counts at the place of its first hit; a place’s coordinates are the mean over its located visits (a city’s point, a region’s visit-weighted centre). Places the lookup did not know have empty names. The ga4 source reads GA4’s users and sessions per country, region and city (GA4’s region and city names), without coordinates.',
    params: reportParams.extend({
      granularity: z.enum(GEO_GRANULARITIES, { message: 'must be region or city' }).describe('region or city'),
    }),
    response: z.object({
      source: sourceSchema,
      available: z.boolean(),
      range: rangeViewSchema.optional().describe('Absent when not available'),
      granularity: z.enum(GEO_GRANULARITIES),
      places: z.array(
        z.object({
          country: z.string().describe('ISO 3166-1 alpha-2, empty when unknown'),
          region: z.string(),
          city: z.string().optional().describe('granularity=city only'),
          latitude: degrees('Latitude'),
          longitude: degrees('Longitude'),
          visitors: count,
          visits: count,
        }),
      ),
      notAvailable: notAvailableSchema,
    }),
    async handler(ctx, { params }) {
      return geo(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
]
