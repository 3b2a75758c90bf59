import type { DomainRepositories } from './domain-services'
import { z } from 'zod'
import { ApiError } from '../core/errors'
import type { Goal } from './definition-records'
import { siteRefSchema } from './sites'

export type { Goal } from './definition-records'

export const goalInputSchema = z.strictObject({
  site_id: siteRefSchema,
  name: z.string().trim().min(1).max(120).optional(),
  type: z.enum(['event', 'page']),
  matchValue: z.string().trim().min(1).max(500),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code like EUR')
    .nullish(),
})

const goalIdSchema = z.uuid({ message: 'must be a goal id' })

export const goalPatchSchema = goalInputSchema.partial().extend({ site_id: siteRefSchema, goal_id: goalIdSchema })

export const goalRefSchema = z.object({ site_id: siteRefSchema, goal_id: goalIdSchema })

const defaultName = (type: Goal['type'], matchValue: string) => (type === 'event' ? matchValue : `Visit ${matchValue}`)

const nameTaken = (name: string) => new ApiError(409, `name: the site already has a goal named "${name}"`)

/** Defines a goal of a site; 409 when the site has a goal of that name. */
export async function createGoal(
  repositories: Pick<DomainRepositories, 'goals'>,
  siteId: string,
  input: z.infer<typeof goalInputSchema>,
  now: Date,
): Promise<Goal> {
  const goals = await repositories.goals.list(siteId)
  const name = input.name ?? defaultName(input.type, input.matchValue)
  if (goals.some((g) => g.name === name)) throw nameTaken(name)
  const goal: Goal = {
    id: crypto.randomUUID(),
    name,
    type: input.type,
    matchValue: input.matchValue,
    currency: input.currency ?? null,
    createdAt: now.toISOString(),
  }
  await repositories.goals.save(siteId, goal)
  return goal
}

/** Redefines a goal: the fields given. 404 for a goal not of the site, 409 for a name another goal has. */
export async function updateGoal(
  repositories: Pick<DomainRepositories, 'goals'>,
  siteId: string,
  input: z.infer<typeof goalPatchSchema>,
): Promise<Goal> {
  const goals = await repositories.goals.list(siteId)
  const current = goals.find((g) => g.id === input.goal_id)
  if (!current) throw new ApiError(404, 'goal not found')
  const next: Goal = {
    ...current,
    name: input.name ?? current.name,
    type: input.type ?? current.type,
    matchValue: input.matchValue ?? current.matchValue,
    currency: input.currency === undefined ? current.currency : input.currency,
  }
  if (goals.some((g) => g.id !== next.id && g.name === next.name)) throw nameTaken(next.name)
  await repositories.goals.save(siteId, next)
  return next
}

/** Deletes a goal; 404 for a goal not of the site. */
export async function deleteGoal(repositories: Pick<DomainRepositories, 'goals'>, siteId: string, goalId: string) {
  if (!(await repositories.goals.delete(siteId, goalId))) throw new ApiError(404, 'goal not found')
  return { deleted: true as const, id: goalId }
}

/** SQL LIKE pattern of a page goal: `*` is any run of characters; `%` and `_` are literal. */
export function pageGoalPattern(matchValue: string): string {
  return matchValue.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll('*', '%')
}
