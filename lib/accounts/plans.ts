import { ApiError } from '../core/errors'
import type { Org } from './org-record'

/**
 * The plans, their limits and their features: the one place they are written down. Handlers and
 * notices read them from here. No limit stops collection: going over the monthly events is a
 * notice, and the data is kept. Creating past a limit (a site, a team member) is refused.
 *
 * A self-hosted deployment has no plans to buy: it runs every organization on `unlimited` unless
 * `PLAN` names another (lib/runtime/env.ts). The hosted service sets no deployment plan and reads
 * each organization's own, as its billing keeps it.
 */

export const FEATURES = [
  'goals',
  'annotations',
  'segments',
  'funnels',
  'imports',
  'revenue',
  'customProperties',
  'sharedLinks',
  'alerts',
  'webhooks',
  'ga4',
  'searchConsole',
  'changeDetection',
  'backlinks',
] as const
export type Feature = (typeof FEATURES)[number]

/** The plans an organization can be on: the billed ones, and the self-hosted default. */
export const PLAN_NAMES = ['free', 'pro', 'business', 'unlimited'] as const
export type PlanName = (typeof PLAN_NAMES)[number]

/** null where the plan sets no limit. */
export interface PlanLimits {
  /** Billable events a calendar month (UTC). */
  monthlyEvents: number | null
  sites: number | null
  /** The team, its owner and open invitations included. */
  teamMembers: number | null
  /** How long events are kept. */
  retentionMonths: number | null
  /** Pages the crawler fetches for one site in a UTC day (lib/crawl). */
  crawlPagesPerDay: number
  /** Pages the crawler keeps track of per site: discovery stops adding beyond it. */
  crawlPagesPerSite: number
  /** Referring pages the backlink discovery fetches for one site in a UTC day (lib/backlinks). */
  backlinkChecksPerDay: number
}

export interface Plan {
  name: PlanName
  limits: PlanLimits
  features: readonly Feature[]
}

const BASE: readonly Feature[] = ['goals', 'annotations', 'segments', 'funnels', 'imports', 'sharedLinks', 'alerts']

export const PLANS: Record<PlanName, Plan> = {
  free: {
    name: 'free',
    limits: {
      monthlyEvents: 100_000,
      sites: 3,
      teamMembers: 1,
      retentionMonths: 6,
      crawlPagesPerDay: 200,
      crawlPagesPerSite: 200,
      backlinkChecksPerDay: 50,
    },
    features: BASE,
  },
  pro: {
    name: 'pro',
    limits: {
      monthlyEvents: 1_000_000,
      sites: 20,
      teamMembers: 10,
      retentionMonths: 60,
      crawlPagesPerDay: 2_000,
      crawlPagesPerSite: 5_000,
      backlinkChecksPerDay: 500,
    },
    features: [...BASE, 'revenue', 'customProperties', 'webhooks', 'ga4', 'searchConsole', 'changeDetection'],
  },
  business: {
    name: 'business',
    limits: {
      monthlyEvents: 10_000_000,
      sites: 100,
      teamMembers: 50,
      retentionMonths: 60,
      crawlPagesPerDay: 10_000,
      crawlPagesPerSite: 20_000,
      backlinkChecksPerDay: 2_000,
    },
    features: [...FEATURES],
  },
  unlimited: {
    name: 'unlimited',
    // the crawler still paces itself: these are its business-plan budgets
    limits: {
      monthlyEvents: null,
      sites: null,
      teamMembers: null,
      retentionMonths: null,
      crawlPagesPerDay: 10_000,
      crawlPagesPerSite: 20_000,
      backlinkChecksPerDay: 2_000,
    },
    features: [...FEATURES],
  },
}

/** The plan an organization is on: the deployment's when it names one (self-hosting), else the organization's own. */
export function planFor(org: Pick<Org, 'plan'> | null, deploymentPlan: PlanName | undefined): Plan {
  return PLANS[deploymentPlan ?? org?.plan ?? 'free']
}

/** Refuses creating the `count + 1`th of a limited thing: 403 naming the plan and its limit. */
export function checkLimit(plan: Plan, limit: 'sites' | 'teamMembers', count: number) {
  const allowed = plan.limits[limit]
  if (allowed === null || count < allowed) return
  const what =
    limit === 'sites'
      ? `${allowed} site${allowed === 1 ? '' : 's'} (limits.sites)`
      : `${allowed} team member${allowed === 1 ? '' : 's'}, open invitations included (limits.teamMembers)`
  throw new ApiError(403, `the ${plan.name} plan allows ${what}; this organization has ${count}`)
}

/**
 * Usage kinds that count against the monthly events: what a visitor does. Bot hits (stored by
 * server-side collection), leave-time engagement reports and Web Vitals samples are not billed.
 */
const UNBILLED_KINDS = new Set(['bot', 'engagement', 'vital'])
export const isBillable = (kind: string) => !UNBILLED_KINDS.has(kind)

export const billableTotal = (byKind: Record<string, number>) =>
  Object.entries(byKind).reduce((sum, [kind, n]) => (isBillable(kind) ? sum + n : sum), 0)

/** Share of the monthly events from which a notice warns that the quota is near. */
export const QUOTA_WARNING_SHARE = 0.8
