import type { SourceRepositories } from '../integrations/source-services'
import { type Plan, type PlanName, QUOTA_WARNING_SHARE, billableTotal, planFor } from '../accounts/plans'
import type { ClickHouse } from '../storage/clickhouse/types'
import { withInstallState } from './install-state'
import type { Site } from '../sites/sites'
import type { Org } from '../accounts/org-record'

/**
 * The organization's account facts: plan, subscription, the billing period and its usage, and
 * the notices that follow from them. Usage months are calendar months in UTC, as the collector
 * counts them (by each event's own timestamp).
 */

export interface Notice {
  level: 'info' | 'warning'
  code: 'quota_exceeded' | 'quota_near' | 'trial_ending' | 'payment_past_due' | 'subscription_canceled' | 'sites_over_limit'
  message: string
}

const DAY_MS = 86_400_000
const TRIAL_ENDING_DAYS = 7

/** The billing period holding `now`: its month, its first instant, and the first instant of the next (excluded). */
export function billingPeriod(now: Date) {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))
  return { month: from.toISOString().slice(0, 7), from: from.toISOString(), to: to.toISOString() }
}

export function subscriptionOf(org: Org, now: Date) {
  const trialEnd = org.trialEndsAt ? Date.parse(org.trialEndsAt) : null
  const trialing = trialEnd !== null && trialEnd > now.getTime()
  const status = trialing ? 'trialing' : (org.subscriptionStatus ?? (org.plan === 'free' ? 'free' : 'active'))
  return {
    status: status as 'free' | 'trialing' | 'active' | 'past_due' | 'canceled',
    trialEndsAt: org.trialEndsAt ?? null,
    trialDaysLeft: trialing ? Math.ceil((trialEnd - now.getTime()) / DAY_MS) : null,
  }
}

/** Team size: the members GET /org/members lists, the owner included, and no one else. */
const teamSize = async (repositories: Pick<SourceRepositories, 'team'>, orgId: string) =>
  (await repositories.team.list(orgId)).members.length

function notices(plan: Plan, org: Org, billable: number, siteCount: number, now: Date): Notice[] {
  const found: Notice[] = []
  const quota = plan.limits.monthlyEvents ?? Number.POSITIVE_INFINITY
  const quotaText = `the ${plan.name} plan's ${quota.toLocaleString('en-US')} events a month`
  if (billable > quota) {
    found.push({
      level: 'warning',
      code: 'quota_exceeded',
      message: `${billable.toLocaleString('en-US')} billable events this month, over ${quotaText}. Collection continues and nothing is dropped; upgrade to stay within the plan.`,
    })
  } else if (billable >= quota * QUOTA_WARNING_SHARE) {
    found.push({
      level: 'info',
      code: 'quota_near',
      message: `${billable.toLocaleString('en-US')} billable events this month, ${Math.floor((billable / quota) * 100)}% of ${quotaText}.`,
    })
  }
  const subscription = subscriptionOf(org, now)
  if (subscription.trialDaysLeft !== null && subscription.trialDaysLeft <= TRIAL_ENDING_DAYS) {
    found.push({
      level: 'info',
      code: 'trial_ending',
      message: `The ${plan.name} trial ends in ${subscription.trialDaysLeft} day(s), on ${subscription.trialEndsAt}.`,
    })
  }
  if (subscription.status === 'past_due')
    found.push({
      level: 'warning',
      code: 'payment_past_due',
      message: 'The last payment failed; update the payment method in the account area.',
    })
  if (subscription.status === 'canceled')
    found.push({
      level: 'warning',
      code: 'subscription_canceled',
      message: 'The subscription is canceled; the organization is on the plan shown until the period ends.',
    })
  if (plan.limits.sites !== null && siteCount > plan.limits.sites) {
    found.push({
      level: 'info',
      code: 'sites_over_limit',
      message: `${siteCount} sites, over the ${plan.name} plan's ${plan.limits.sites}. Every site keeps collecting.`,
    })
  }
  return found
}

/** The organization of an id; null when there is none. */
export function findOrg(repositories: Pick<SourceRepositories, 'orgs'>, orgId: string): Promise<Org | null> {
  return repositories.orgs.get(orgId)
}

/** GET /org: the whole account picture, on the deployment's plan when it sets one. */
export async function orgOverview(repositories: SourceRepositories, orgId: string, now: Date, deploymentPlan?: PlanName) {
  const period = billingPeriod(now)
  const [org, sites, byKind, bySite, team] = await Promise.all([
    repositories.orgs.get(orgId),
    repositories.sites.list(orgId),
    repositories.usage.get(orgId, period.month),
    repositories.usage.bySite(orgId, period.month),
    teamSize(repositories, orgId),
  ])
  const account: Org = org ?? { id: orgId, name: '', plan: 'free', createdAt: now.toISOString() }
  const plan = planFor(account, deploymentPlan)
  const billable = billableTotal(byKind)
  const domains = new Map(sites.map((s) => [s.id, s.domain]))
  return {
    id: account.id,
    name: account.name,
    plan: plan.name,
    limits: plan.limits,
    features: [...plan.features],
    subscription: subscriptionOf(account, now),
    billingPeriod: period,
    usage: {
      events: billable,
      quota: plan.limits.monthlyEvents,
      share: plan.limits.monthlyEvents === null ? null : billable / plan.limits.monthlyEvents,
      byKind,
      bySite: Object.entries(bySite)
        .map(([siteId, kinds]) => ({ siteId, domain: domains.get(siteId) ?? null, events: billableTotal(kinds), byKind: kinds }))
        .sort((a, b) => b.events - a.events || a.siteId.localeCompare(b.siteId)),
    },
    sites: sites.length,
    team: { size: team },
    notices: notices(plan, account, billable, sites.length, now),
  }
}

/** GET /site: one site's facts, its events this month, and the organization's billing and quota notices. */
export async function siteFacts(
  deps: { clickhouse: ClickHouse; repositories: SourceRepositories; plan?: PlanName },
  site: Site,
  now: Date,
) {
  const period = billingPeriod(now)
  const [org, sites, orgKinds, bySite, [withInstall]] = await Promise.all([
    deps.repositories.orgs.get(site.orgId),
    deps.repositories.sites.list(site.orgId),
    deps.repositories.usage.get(site.orgId, period.month),
    deps.repositories.usage.bySite(site.orgId, period.month),
    withInstallState(deps.clickhouse, [site], now),
  ])
  const account: Org = org ?? { id: site.orgId, name: '', plan: 'free', createdAt: now.toISOString() }
  const plan = planFor(account, deps.plan)
  const kinds = bySite[site.id] ?? {}
  return {
    id: site.id,
    snippetId: site.snippetId,
    domain: site.domain,
    timezone: site.timezone,
    sources: site.sources,
    primarySource: site.primarySource,
    createdAt: site.createdAt,
    install: withInstall.install,
    eventsThisMonth: { month: period.month, events: billableTotal(kinds), byKind: kinds },
    billing: {
      plan: plan.name,
      subscription: subscriptionOf(account, now),
      billingPeriod: period,
      organizationEvents: billableTotal(orgKinds),
      quota: plan.limits.monthlyEvents,
    },
    notices: notices(plan, account, billableTotal(orgKinds), sites.length, now),
  }
}
