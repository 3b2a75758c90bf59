import { z } from 'zod'
import { OPERATORS } from '../../lib/reports/dimensions'
import { createSegment, deleteSegment, listSegments, segmentInputSchema } from '../../lib/operations/segments'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'
import { uuidParam } from '../params'

const segmentSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  filters: z.array(z.object({ dimension: z.string(), operator: z.enum(OPERATORS), value: z.array(z.string()) })),
  createdAt: z.string(),
})

export const segmentEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/segments',
    scope: 'read',
    tool: 'list_segments',
    summary: "The site's saved segments, oldest first.",
    description:
      'Each segment has an id, a name and its filters. Use one in any report as the filter {"dimension":"segment","operator":"is","value":["<segment id>"]}.',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({ segments: z.array(segmentSchema) }),
    async handler({ services, site }, { params }) {
      return { segments: await listSegments(services.repositories, await site(params.site_id)) }
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/segments',
    scope: 'write',
    tool: 'create_segment',
    summary: 'Saves a named set of filters, shared by everyone in the organization.',
    description:
      'filters is an array of {dimension, operator, value:[...]} exactly as the reports take them (or that array as a JSON string), checked the same way: a filter a report would refuse is the same 400. At least one filter; no segment inside a segment. Names are unique per site (409). In a report, {"dimension":"segment","operator":"is","value":["<id>"]} stands for the segment\'s filters, AND-ed with the others; only is with one id is taken (is_not, contains and matches on segments are 400).',
    body: segmentInputSchema,
    status: 201,
    response: segmentSchema,
    async handler({ services, site }, { body }) {
      return createSegment(services.repositories, await site(body.site_id), body, services.now())
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/segments',
    scope: 'write',
    tool: 'delete_segment',
    summary: 'Deletes a saved segment. A report naming it afterwards is a 400.',
    params: z.object({ site_id: siteRefSchema, id: uuidParam.describe('The segment id') }),
    response: z.object({ deleted: z.literal(true), id: z.uuid() }),
    async handler({ services, site }, { params }) {
      await deleteSegment(services.repositories, await site(params.site_id), params.id)
      return { deleted: true as const, id: params.id.toLowerCase() }
    },
  }),
]
