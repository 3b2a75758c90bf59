import { z } from 'zod'
import { ApiError } from '../../lib/errors'
import { type Goal, goalInputSchema } from '../../lib/sites/goals'
import { siteRefSchema } from '../../lib/sites/sites'
import { reportParams } from '../../lib/reports/query/parse'
import { goalConversions } from '../../lib/reports/query/reports'
import { defineEndpoint } from '../endpoint'
import { breakdownRowSchema, rangeViewSchema } from './report-schemas'

const goalSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  type: z.enum(['event', 'page']),
  matchValue: z.string(),
  currency: z.string().nullable(),
  createdAt: z.string(),
})

const defaultName = (type: Goal['type'], matchValue: string) => (type === 'event' ? matchValue : `Visit ${matchValue}`)

export const goalEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/goals',
    scope: 'read',
    tool: 'list_goals',
    summary: 'Goal definitions with conversions, conversion rate and revenue in the window.',
    description:
      'visitors is unique converters; conversions counts every completion; conversionRate is converters divided by all visitors of the window, a fraction from 0 to 1; revenue sums the goal currency. A site that reads only ga4 answers available: false.',
    params: reportParams,
    response: z.object({
      available: z.boolean().describe('false for a site that reads only ga4'),
      range: rangeViewSchema.optional(),
      goals: z.array(
        goalSchema.extend({
          visitors: z.number().int().describe('Unique converters'),
          conversions: z.number().int(),
          conversionRate: z.number().describe('Converters over all visitors, 0 to 1'),
          revenue: breakdownRowSchema.shape.revenue,
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
      const target = await site(body.site_id)
      const goals = await services.store.listGoals(target.id)
      const name = body.name ?? defaultName(body.type, body.matchValue)
      if (goals.some((g) => g.name === name)) throw new ApiError(409, `name: the site already has a goal named "${name}"`)
      const goal: Goal = { id: crypto.randomUUID(), name, type: body.type, matchValue: body.matchValue, currency: body.currency ?? null, createdAt: services.now().toISOString() }
      await services.store.saveGoal(target.id, goal)
      return goal
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/goals',
    scope: 'write',
    tool: 'update_goal',
    summary: 'Redefines a goal: any of name, type, matchValue and currency.',
    body: goalInputSchema.partial().extend({ site_id: siteRefSchema, goal_id: z.uuid({ message: 'must be a goal id' }) }),
    response: goalSchema,
    async handler({ services, site }, { body }) {
      const target = await site(body.site_id)
      const goals = await services.store.listGoals(target.id)
      const current = goals.find((g) => g.id === body.goal_id)
      if (!current) throw new ApiError(404, 'goal not found')
      const next: Goal = {
        ...current,
        name: body.name ?? current.name,
        type: body.type ?? current.type,
        matchValue: body.matchValue ?? current.matchValue,
        currency: body.currency === undefined ? current.currency : body.currency,
      }
      if (goals.some((g) => g.id !== next.id && g.name === next.name)) throw new ApiError(409, `name: the site already has a goal named "${next.name}"`)
      await services.store.saveGoal(target.id, next)
      return next
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/goals',
    scope: 'write',
    tool: 'delete_goal',
    summary: 'Deletes a goal. Its past conversions are computed from events, so they return if it is defined again.',
    params: z.object({ site_id: siteRefSchema, goal_id: z.uuid({ message: 'must be a goal id' }) }),
    response: z.object({ deleted: z.literal(true), id: z.uuid() }),
    async handler({ services, site }, { params }) {
      const target = await site(params.site_id)
      if (!(await services.store.deleteGoal(target.id, params.goal_id))) throw new ApiError(404, 'goal not found')
      return { deleted: true as const, id: params.goal_id }
    },
  }),
]
