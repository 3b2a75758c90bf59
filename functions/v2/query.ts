import { plausibleQuery } from '../../lib/plausible/query'
import { plausibleAnswerSchema, plausibleQuerySchema } from '../../lib/plausible/query-schema'
import { siteOfQuery } from '../../lib/plausible/site'
import { defineEndpoint } from '../endpoint'

/** Plausible's Stats API v2, so that clients written for it work by changing the host (docs/plausible.md). */
export const plausibleQueryEndpoints = [
  defineEndpoint({
    method: 'POST',
    path: '/api/v2/query',
    scope: 'read',
    tool: null,
    summary: "Plausible's Stats API v2 query: metrics by dimensions over a date range, with filters, from this service's reads.",
    description:
      "Takes Plausible's query body (site_id is the site's domain or id) and answers {results: [{metrics, dimensions}], meta, query}. bounce_rate, percentage and conversion rates are percentages here, as in Plausible; visit_duration is seconds. What this service cannot answer is a 400 naming it. Coverage and differences: docs/plausible.md.",
    body: plausibleQuerySchema,
    response: plausibleAnswerSchema,
    async handler(ctx, { body }) {
      return plausibleQuery(ctx.services, await siteOfQuery(ctx.services, ctx.key, body.site_id), body)
    },
  }),
]
