import { z } from 'zod'
import { createFunnel, deleteFunnel, funnelCreateSchema, funnelPatchSchema, updateFunnel } from '../../lib/funnels'
import { siteRefSchema } from '../../lib/sites'
import { FUNNEL_STEP_TYPES } from '../../lib/store'
import { defineEndpoint } from '../endpoint'

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
    tool: 'list_funnels',
    summary: "The site's saved funnel definitions, oldest first.",
    description: 'Definitions only: each funnel with its ordered steps. site_id takes the UUID or the snippet id.',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({ funnels: z.array(funnelSchema) }),
    async handler({ services, site }, { params }) {
      return { funnels: await services.store.listFunnels((await site(params.site_id)).id) }
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
      return createFunnel(services.store, (await site(body.site_id)).id, body, services.now())
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
      return updateFunnel(services.store, (await site(body.site_id)).id, body, services.now())
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
      await deleteFunnel(services.store, (await site(params.site_id)).id, params.funnel_id)
      return { deleted: true as const, id: params.funnel_id.toLowerCase() }
    },
  }),
]
