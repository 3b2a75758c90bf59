import { z } from 'zod'
import { siteRefSchema } from './sites'

export interface Goal {
  id: string
  name: string
  type: 'event' | 'page'
  /** An event name, or a path where `*` matches any characters. */
  matchValue: string
  currency: string | null
  createdAt: string
}

export const goalInputSchema = z.strictObject({
  site_id: siteRefSchema,
  name: z.string().trim().min(1).max(120).optional(),
  type: z.enum(['event', 'page']),
  matchValue: z.string().trim().min(1).max(500),
  currency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code like EUR').nullish(),
})

/** SQL LIKE pattern of a page goal: `*` is any run of characters; `%` and `_` are literal. */
export function pageGoalPattern(matchValue: string): string {
  return matchValue.replace(/[\\%_]/g, (c) => `\\${c}`).replaceAll('*', '%')
}
