import { V1_DIMENSIONS, METRICS, OPERATORS, PROPERTY_PREFIX, RANGES, SEGMENT } from '../../lib/reports/dimensions'
import { keyActor } from '../../lib/accounts/members'
import { findOrg } from '../../lib/operations/org'
import { LIMITS } from '../../lib/accounts/ratelimit'
import { PLAN_NAMES, planFor } from '../../lib/accounts/plans'
import { z } from 'zod'
import { defineEndpoint } from '../endpoint'

/** Each imported GA4 dataset with the dimensions a ga4 read takes from it (the dimension table's ga4 column). */
function ga4Datasets(): Record<string, string[]> {
  const datasets: Record<string, string[]> = {}
  for (const d of V1_DIMENSIONS) if (d.ga4) (datasets[d.ga4.dataset] ??= []).push(d.name)
  return datasets
}

export const metaEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/me',
    scope: 'read',
    tool: 'whoami',
    summary: 'The calling key: scope, organization, site binding, plan and permissions.',
    description:
      'Who the key is. scope is "read" (reports and settings reads) or "write" (also changes things). siteId is set when the key is bound to one site. Call this first to learn what the other tools will allow.',
    response: z.object({
      key: z.object({ id: z.uuid(), name: z.string(), prefix: z.string(), scope: z.enum(['read', 'write']), siteId: z.uuid().nullable() }),
      organization: z.object({ id: z.uuid(), name: z.string().nullable() }),
      member: z
        .object({ id: z.uuid(), email: z.string(), role: z.enum(['owner', 'admin', 'member']) })
        .nullable()
        .describe(
          "The member who made the key, with their role now: a plain member's key lists and revokes only its maker's keys. null for a key no member made (the admin CLI), which acts for the organization within its scope",
        ),
      plan: z.enum(PLAN_NAMES),
      permissions: z.array(z.enum(['read', 'write'])),
      rateLimits: z.record(z.string(), z.object({ requests: z.number().int(), perSeconds: z.number() })),
    }),
    async handler({ services, key }) {
      const [org, member] = await Promise.all([findOrg(services.repositories, key.orgId), keyActor(services.repositories, key)])
      return {
        key: { id: key.id, name: key.name, prefix: key.prefix, scope: key.scope, siteId: key.siteId },
        organization: org ? { id: org.id, name: org.name } : { id: key.orgId, name: null },
        member: member && { id: member.id, email: member.email, role: member.role },
        plan: planFor(org, services.plan).name,
        permissions: key.scope === 'write' ? (['read', 'write'] as ('read' | 'write')[]) : (['read'] as ('read' | 'write')[]),
        rateLimits: Object.fromEntries(
          Object.entries(LIMITS).map(([name, l]) => [name, { requests: l.max, perSeconds: l.windowMs / 1000 }]),
        ),
      }
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/dimensions',
    scope: 'read',
    tool: 'list_dimensions',
    summary: 'Breakdown properties, filter dimensions, operators, named ranges and metrics.',
    description:
      'The vocabulary for filters and breakdowns. A filter is {dimension, operator, value:[...]}; values of one filter are OR-ed, filters are AND-ed. firstPartyOnly dimensions fail on a ga4 read, and a ga4 read takes the dimensions of one ga4Datasets entry only (its filters and property together; hour buckets take no filter). segment (filters only) takes the id of a saved segment with operator is and stands for its filters. visitScoped dimensions keep whole visits; the others keep matching events.',
    response: z.object({
      filterDimensions: z.array(z.string()),
      breakdownProperties: z.array(z.string()),
      propertyPrefix: z.string(),
      firstPartyOnly: z.array(z.string()),
      ga4Datasets: z
        .record(z.string(), z.array(z.string()))
        .describe('The imported GA4 datasets and the dimensions each holds: one ga4 read names dimensions of one dataset only'),
      visitScoped: z.array(z.string()),
      operators: z.array(z.string()),
      ranges: z.array(z.string()),
      metrics: z.record(z.string(), z.string()),
    }),
    async handler() {
      const dimensions = V1_DIMENSIONS.map((d) => d.name)
      return {
        filterDimensions: [...dimensions, SEGMENT],
        breakdownProperties: [...dimensions, `${PROPERTY_PREFIX}<key>`],
        propertyPrefix: PROPERTY_PREFIX,
        firstPartyOnly: V1_DIMENSIONS.filter((d) => !d.sources.includes('ga4')).map((d) => d.name),
        ga4Datasets: ga4Datasets(),
        visitScoped: V1_DIMENSIONS.filter((d) => d.scope === 'visit').map((d) => d.name),
        operators: [...OPERATORS],
        ranges: [...RANGES],
        metrics: METRICS,
      }
    },
  }),
]
