import type { DomainRepositories } from './domain-services'
import { z } from 'zod'
import { ApiError } from '../core/errors'
import { siteRefSchema } from './sites'
import { FUNNEL_STEP_TYPES, type Funnel, type FunnelStep } from './definition-records'

const stepSchema = z
  .strictObject({
    type: z.enum(FUNNEL_STEP_TYPES),
    value: z.string().trim().min(1, 'required').max(500),
    label: z.string().trim().min(1).max(120).nullish(),
  })
  .superRefine((step, ctx) => {
    if (step.type === 'page' && !step.value.startsWith('/'))
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'a page step is a path starting with /' })
    if (step.type === 'goal' && !z.uuid().safeParse(step.value).success)
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'a goal step is a goal id' })
  })

const stepsSchema = z.array(stepSchema).min(2, 'a funnel has 2 to 8 steps').max(8, 'a funnel has 2 to 8 steps')
const nameSchema = z.string().trim().min(1, 'required').max(120)

export const funnelCreateSchema = z.strictObject({ site_id: siteRefSchema, name: nameSchema, steps: stepsSchema })
export const funnelPatchSchema = z
  .strictObject({
    site_id: siteRefSchema,
    funnel_id: z.uuid({ message: 'must be a funnel id' }),
    name: nameSchema.optional(),
    steps: stepsSchema.optional(),
  })
  .refine((p) => p.name !== undefined || p.steps !== undefined, 'body must name at least one of name and steps')

type StepInput = z.infer<typeof stepSchema>

/** Steps as stored; a goal step must name a goal of the site. */
async function checkedSteps(repositories: Pick<DomainRepositories, 'goals'>, siteId: string, steps: StepInput[]): Promise<FunnelStep[]> {
  if (steps.some((s) => s.type === 'goal')) {
    const goals = new Set((await repositories.goals.list(siteId)).map((g) => g.id))
    steps.forEach((s, i) => {
      if (s.type === 'goal' && !goals.has(s.value.toLowerCase())) throw new ApiError(400, `steps.${i}.value: not a goal id of this site`)
    })
  }
  return steps.map((s) => ({ type: s.type, value: s.type === 'goal' ? s.value.toLowerCase() : s.value, label: s.label ?? null }))
}

function assertNameFree(funnels: Funnel[], name: string, except?: string) {
  if (funnels.some((f) => f.id !== except && f.name === name))
    throw new ApiError(409, `name: the site already has a funnel named "${name}"`)
}

export async function createFunnel(
  repositories: Pick<DomainRepositories, 'funnels' | 'goals'>,
  siteId: string,
  input: z.infer<typeof funnelCreateSchema>,
  now: Date,
): Promise<Funnel> {
  const funnels = await repositories.funnels.list(siteId)
  assertNameFree(funnels, input.name)
  const at = now.toISOString()
  const funnel: Funnel = {
    id: crypto.randomUUID(),
    name: input.name,
    steps: await checkedSteps(repositories, siteId, input.steps),
    createdAt: at,
    updatedAt: at,
  }
  await repositories.funnels.save(siteId, funnel)
  return funnel
}

/** Renames a funnel or replaces its steps (the whole list). */
export async function updateFunnel(
  repositories: Pick<DomainRepositories, 'funnels' | 'goals'>,
  siteId: string,
  input: z.infer<typeof funnelPatchSchema>,
  now: Date,
): Promise<Funnel> {
  const funnels = await repositories.funnels.list(siteId)
  const current = funnels.find((f) => f.id === input.funnel_id.toLowerCase())
  if (!current) throw new ApiError(404, 'funnel not found')
  const next: Funnel = {
    ...current,
    name: input.name ?? current.name,
    steps: input.steps ? await checkedSteps(repositories, siteId, input.steps) : current.steps,
    updatedAt: now.toISOString(),
  }
  assertNameFree(funnels, next.name, next.id)
  await repositories.funnels.save(siteId, next)
  return next
}

export async function deleteFunnel(repositories: Pick<DomainRepositories, 'funnels'>, siteId: string, funnelId: string) {
  if (!(await repositories.funnels.delete(siteId, funnelId.toLowerCase()))) throw new ApiError(404, 'funnel not found')
}
