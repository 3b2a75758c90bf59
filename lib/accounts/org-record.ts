import { z } from 'zod'

/**
 * An organization's name: one line of at most 100 characters. It is the subject line of the
 * invitations the organization sends: a line break would let it write the e-mail's text.
 */
export const orgNameSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100, 'at most 100 characters')
  .regex(/^[^\p{Cc}\p{Zl}\p{Zp}]*$/u, 'one line, without control characters')

/** An organization as stored (lib/accounts/orgs-repository.ts). */
export interface Org {
  id: string
  name: string
  plan: 'free' | 'pro' | 'business'
  createdAt: string
  /** Set by the account area's billing; absent for an organization that never subscribed. */
  subscriptionStatus?: 'active' | 'past_due' | 'canceled'
  /** The end of a paid plan's trial, when it has one. */
  trialEndsAt?: string | null
}
