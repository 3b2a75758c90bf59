import type { Org } from './org-record'

/**
 * The plans, their limits and their features: the one place they are written down. Handlers and
 * notices read them from here. No limit stops collection: going over the monthly events is a
 * notice, and the data is kept.
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

export interface PlanLimits {
  /** Billable events a calendar month (UTC). */
  monthlyEvents: number
  sites: number
  teamMembers: number
  /** How long events are kept. */
  retentionMonths: number
  /** Pages the crawler fetches for one site in a UTC day (lib/crawl). */
  crawlPagesPerDay: number
  /** Pages the crawler keeps track of per site: discovery stops adding beyond it. */
  crawlPagesPerSite: number
}

export interface Plan {
  name: Org['plan']
  limits: PlanLimits
  features: readonly Feature[]
}

const BASE: readonly Feature[] = ['goals', 'annotations', 'segments', 'funnels', 'imports', 'sharedLinks', 'alerts']

export const PLANS: Record<Org['plan'], Plan> = {
  free: {
    name: 'free',
    limits: { monthlyEvents: 100_000, sites: 3, teamMembers: 1, retentionMonths: 6, crawlPagesPerDay: 200, crawlPagesPerSite: 200 },
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
    },
    features: [...FEATURES],
  },
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
