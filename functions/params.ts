import { z } from 'zod'
import { RANGES } from '../lib/dimensions'

/** Query-string building blocks shared by endpoint declarations. */
export const flagParam = z.enum(['0', '1']).transform((v) => v === '1')
export const rangeParam = z.enum(RANGES)
export const uuidParam = z.uuid({ message: 'must be a UUID' })
