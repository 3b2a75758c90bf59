import { z } from 'zod'
import { createGoal, deleteGoal, goalInputSchema, goalPatchSchema, goalRefSchema, updateGoal } from '../../lib/sites/goals'
import { reportParams } from '../../lib/reports/query/parse'
import { goalConversions } from '../../lib/reports/query/reports'
import { defineEndpoint } from '../endpoint'
import { compareParams } from '../../lib/reports/query/compare'
import { breakdownRowSchema, changesSchema, comparisonSchema, rangeViewSchema, sourceSchema } from './report-schemas'

const goalSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  type: z.enum(['event', 'page']),
  matchValue: z.string(),
  currency: z.string().nullable(),
  createdAt: z.string(),
})

export const goalEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/goals',
    scope: 'read',
    tool: 'list_goals',
    summary: 'Goal definitions with conversions, conversion rate and revenue in the window.',
    description:
      "visitors is unique converters; conversions counts every completion; conversionRate is converters divided by all visitors of the window, a fraction from 0 to 1; revenue sums the goal currency. Conversions are the collector's: a read of the ga4 source (source=ga4, or the default on a site that reads only ga4) answers available: false with the goal definitions and no counts; a source the site does not have is a 400. compare=previous_period|year_over_year|custom adds each goal's comparison and change (docs: Comparisons).",
    params: reportParams.extend(compareParams),
    response: z.object({
      source: sourceSchema,
      available: z.boolean().describe('false for a read of the ga4 source: the collector alone records conversions'),
      range: rangeViewSchema.optional(),
      comparison: comparisonSchema.optional(),
      goals: z.array(
        goalSchema.extend({
          visitors: z.number().int().optional().describe('Unique converters; absent when available is false'),
          conversions: z.number().int().optional(),
          conversionRate: z.number().optional().describe('Converters over all visitors, 0 to 1'),
          revenue: breakdownRowSchema.shape.revenue,
          comparison: z
            .object({
              visitors: z.number().int(),
              conversions: z.number().int(),
              conversionRate: z.number(),
              revenue: breakdownRowSchema.shape.revenue,
            })
            .optional()
            .describe('compare: the figures in the comparison window'),
          change: changesSchema(['visitors', 'conversions', 'conversionRate', 'revenue']).optional(),
        }),
      ),
    }),
    async handler(ctx, { params }) {
      return goalConversions(ctx.services, await ctx.site(params.site_id), params)
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/goals',
    scope: 'write',
    tool: 'create_goal',
    summary: 'Defines a goal: an event name, or a page path where * matches anything; optional ISO 4217 currency for revenue.',
    body: goalInputSchema,
    status: 201,
    response: goalSchema,
    async handler({ services, site }, { body }) {
      return createGoal(services.repositories, (await site(body.site_id)).id, body, services.now())
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/goals',
    scope: 'write',
    tool: 'update_goal',
    summary: 'Redefines a goal: any of name, type, matchValue and currency.',
    body: goalPatchSchema,
    response: goalSchema,
    async handler({ services, site }, { body }) {
      return updateGoal(services.repositories, (await site(body.site_id)).id, body)
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/goals',
    scope: 'write',
    tool: 'delete_goal',
    summary: 'Deletes a goal. Its past conversions are computed from events, so they return if it is defined again.',
    params: goalRefSchema,
    response: z.object({ deleted: z.literal(true), id: z.uuid() }),
    async handler({ services, site }, { params }) {
      return deleteGoal(services.repositories, (await site(params.site_id)).id, params.goal_id)
    },
  }),
]
