import { z } from 'zod'
import { RANGES } from './dimensions'

/** Query-string building blocks shared by endpoint declarations. */
export const siteIdParam = z.string().min(1, 'required').max(64).describe('Site UUID or public snippet id (the data-site value)')
export const flagParam = z.enum(['0', '1']).transform((v) => v === '1')
export const rangeParam = z.enum(RANGES)
export const uuidParam = z.uuid({ message: 'must be a UUID' })
