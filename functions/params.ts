import { z } from 'zod'
import { RANGES } from '../lib/reports/dimensions'

/** Query-string building blocks shared by endpoint declarations. */
export const flagParam = z.enum(['0', '1']).transform((v) => v === '1')
export const rangeParam = z.enum(RANGES)
export const uuidParam = z.uuid({ message: 'must be a UUID' })

const MAX_UINT64 = BigInt('18446744073709551615')
/** A 64-bit unsigned id in decimal, as answers give them (error fingerprints, visitor ids). */
export const uint64Param = (what: string) =>
  z.string().refine((v) => /^\d{1,20}$/.test(v) && BigInt(v) <= MAX_UINT64, `must be ${what} (a 64-bit unsigned decimal)`)
