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
