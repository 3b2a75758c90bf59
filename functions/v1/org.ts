import { z } from 'zod'
import { keyMakerOf, listApiKeys, revokeApiKey } from '../../lib/accounts/admin'
import { keyActor } from '../../lib/accounts/members'
import { orgOverview } from '../../lib/operations/org'
import { FEATURES, PLAN_NAMES } from '../../lib/accounts/plans'
import { defineEndpoint } from '../endpoint'
import { uuidParam } from '../params'

const countsByKind = z
  .record(z.string(), z.number().int())
  .describe('Stored events by kind: pageview, custom, click, outbound, download, form, error, vital, engagement, bot...')

export const subscriptionSchema = z.object({
  status: z.enum(['free', 'trialing', 'active', 'past_due', 'canceled']),
  trialEndsAt: z.string().nullable(),
  trialDaysLeft: z.number().int().nullable().describe('Whole days left, rounded up; null when not trialing'),
})

export const billingPeriodSchema = z.object({
  month: z.string().describe('YYYY-MM, UTC'),
  from: z.string().describe('First instant of the period'),
  to: z.string().describe('First instant of the next period (excluded)'),
})

export const noticeSchema = z.object({
  level: z.enum(['info', 'warning']),
  code: z.enum(['quota_exceeded', 'quota_near', 'trial_ending', 'payment_past_due', 'subscription_canceled', 'sites_over_limit']),
  message: z.string(),
})

export const orgEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/org',
    scope: 'read',
    tool: 'get_organization',
    orgWide: true,
    summary:
      "The organization's plan, limits, features, subscription and trial, this month's usage by event kind and by site, billing period and team size.",
    description:
      "Usage is counted per calendar month in UTC (the billing period), by each event's own timestamp. usage.events counts billable events: everything a visitor does except bot hits, engagement (leave-time) reports and Web Vitals samples, which are stored but not billed; byKind lists every kind stored, billed or not. share is usage.events over the quota (above 1 when over it). Going over the quota adds a notice; collection never drops data for it. bySite includes sites deleted this month (domain null).",
    response: z.object({
      id: z.uuid(),
      name: z.string(),
      plan: z.enum(PLAN_NAMES),
      limits: z.object({
        monthlyEvents: z.number().int().nullable().describe('null: no limit'),
        sites: z.number().int().nullable().describe('null: no limit'),
        teamMembers: z.number().int().nullable().describe('Members, the owner and open invitations included; null: no limit'),
        retentionMonths: z.number().int().nullable().describe('null: no limit'),
        crawlPagesPerDay: z.number().int().describe('Pages the crawler fetches per site and UTC day'),
        backlinkChecksPerDay: z.number().int().describe('Referring pages the backlink discovery fetches per site and UTC day'),
        crawlPagesPerSite: z.number().int().describe('Pages the crawler keeps track of per site'),
      }),
      features: z.array(z.enum(FEATURES)),
      subscription: subscriptionSchema,
      billingPeriod: billingPeriodSchema,
      usage: z.object({
        events: z.number().int().describe('Billable events this period'),
        quota: z.number().int().nullable().describe('null: no limit'),
        share: z.number().nullable().describe('events / quota, a fraction; null without a quota'),
        byKind: countsByKind,
        bySite: z.array(z.object({ siteId: z.string(), domain: z.string().nullable(), events: z.number().int(), byKind: countsByKind })),
      }),
      sites: z.number().int(),
      team: z.object({ size: z.number().int() }),
      notices: z.array(noticeSchema),
    }),
    async handler({ services, key }) {
      return orgOverview(services.repositories, key.orgId, services.now(), services.plan)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/org/api-keys',
    scope: 'read',
    tool: 'list_api_keys',
    orgWide: true,
    summary: 'The keys of the organization: name, prefix, scope, site binding, maker, last use. Never the secret.',
    description:
      "A key made by a plain member lists only the keys that member made; other keys list every key. madeBy is the member who made the key, admin_cli for one no member made (the admin CLI, the first start's demo keys), unknown for one made before makers were recorded.",
    response: z.object({
      keys: z.array(
        z.object({
          id: z.uuid(),
          name: z.string(),
          prefix: z.string(),
          scope: z.enum(['read', 'write']),
          siteId: z.uuid().nullable().describe('Set for a site-bound ingest key'),
          createdAt: z.string(),
          madeBy: z.union([z.object({ memberId: z.uuid(), email: z.string() }), z.enum(['admin_cli', 'unknown'])]),
          revokedAt: z.string().nullable(),
          lastUsedAt: z.string().nullable(),
        }),
      ),
    }),
    async handler({ services, key }) {
      const keys = await listApiKeys(services.repositories, key.orgId, await keyActor(services.repositories, key))
      return {
        keys: keys.map((k) => ({
          id: k.id,
          name: k.name,
          prefix: k.prefix,
          scope: k.scope,
          siteId: k.siteId,
          createdAt: k.createdAt,
          madeBy: keyMakerOf(k),
          revokedAt: k.revokedAt,
          lastUsedAt: k.lastUsedAt,
        })),
      }
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/org/api-keys',
    scope: 'write',
    orgWide: true,
    tool: 'revoke_api_key',
    summary: 'Revokes one key by id. It stops working at once. Keys cannot be created through the API.',
    description: 'A key made by a plain member revokes only the keys that member made (403 for another).',
    params: z.object({ id: uuidParam.describe('The key id from list_api_keys') }),
    response: z.object({ revoked: z.literal(true), id: z.uuid() }),
    async handler({ services, key }, { params }) {
      return revokeApiKey(services.repositories, params.id, services.now(), key.orgId, await keyActor(services.repositories, key))
    },
  }),
]
