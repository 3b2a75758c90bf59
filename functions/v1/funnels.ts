import { z } from 'zod'
import { createFunnel, deleteFunnel, funnelCreateSchema, funnelPatchSchema, updateFunnel } from '../../lib/sites/funnels'
import { funnelReport } from '../../lib/reports/query/funnels'
import { reportParams } from '../../lib/reports/query/parse'
import { siteRefSchema } from '../../lib/sites/sites'
import { FUNNEL_STEP_TYPES } from '../../lib/sites/definition-records'
import { defineEndpoint } from '../endpoint'
import { rangeViewSchema, sourceSchema } from './report-schemas'

const count = z.number().int().nonnegative()

const funnelSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  steps: z.array(z.object({ type: z.enum(FUNNEL_STEP_TYPES), value: z.string(), label: z.string().nullable() })),
  createdAt: z.string(),
  updatedAt: z.string(),
})

const STEPS_HELP =
  'steps: 2 to 8 of {type, value, label?}, in order. type page: value is a path starting with /, where * matches any characters (as page goals); type event: value is a custom event name; type goal: value is the id of a goal of the site (an unknown id is 400). label is an optional display name, null when absent. Names are unique per site (409).'

export const funnelEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/funnels',
    scope: 'read',
    tool: 'get_funnels',
    summary: "The site's saved funnels, oldest first, and the computed result of one (funnel_id, else the first).",
    description:
      'result: per step, visitors who reached it in order within one visit (each step strictly after the one before; steps out of order or split across visits do not count; a visitor counts once, at their furthest visit), conversionFromPrevious and conversionFromFirst (fractions from 0 to 1) and dropOff (visitors lost since the step before). Filters keep the visits holding a selected event. result is null when the site has no funnel. funnels lists every definition. A site that reads only ga4 answers available: false with its definitions.',
    params: reportParams.extend({
      funnel_id: z.uuid({ message: 'must be a funnel id' }).optional().describe('The funnel to compute; default the first'),
    }),
    response: z.object({
      source: sourceSchema,
      available: z.boolean().describe('false for a site that reads only ga4: the collector alone records the steps'),
      range: rangeViewSchema.optional(),
      funnels: z.array(funnelSchema),
      result: z
        .object({
          funnelId: z.uuid(),
          name: z.string(),
          steps: z.array(
            z.object({
              type: z.enum(FUNNEL_STEP_TYPES),
              value: z.string(),
              label: z.string().nullable(),
              visitors: count,
              conversionFromPrevious: z
                .number()
                .min(0)
                .max(1)
                .describe('Visitors over those of the step before (1 for the first step with visitors)'),
              conversionFromFirst: z.number().min(0).max(1),
              dropOff: count.describe('Visitors of the step before who did not reach this one'),
            }),
          ),
        })
        .nullable(),
    }),
    async handler({ services, site }, { params }) {
      return funnelReport(services, await site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/funnels',
    scope: 'write',
    tool: 'create_funnel',
    summary: 'Saves a funnel: a name and its ordered steps.',
    description: STEPS_HELP,
    body: funnelCreateSchema,
    status: 201,
    response: funnelSchema,
    async handler({ services, site }, { body }) {
      return createFunnel(services.repositories, (await site(body.site_id)).id, body, services.now())
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/funnels',
    scope: 'write',
    tool: 'update_funnel',
    summary: 'Renames a funnel and/or replaces its whole list of steps.',
    description: `Send funnel_id and any of name and steps; steps replaces the list whole. ${STEPS_HELP}`,
    body: funnelPatchSchema,
    response: funnelSchema,
    async handler({ services, site }, { body }) {
      return updateFunnel(services.repositories, (await site(body.site_id)).id, body, services.now())
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/funnels',
    scope: 'write',
    tool: 'delete_funnel',
    summary: 'Deletes a saved funnel. The events it counted are untouched.',
    params: z.object({ site_id: siteRefSchema, funnel_id: z.uuid({ message: 'must be a funnel id' }) }),
    response: z.object({ deleted: z.literal(true), id: z.uuid() }),
    async handler({ services, site }, { params }) {
      await deleteFunnel(services.repositories, (await site(params.site_id)).id, params.funnel_id)
      return { deleted: true as const, id: params.funnel_id.toLowerCase() }
    },
  }),
]
