import { z } from 'zod'
import { siteFacts } from '../../lib/operations/org'
import { PLAN_NAMES } from '../../lib/accounts/plans'
import { SOURCES, siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'
import { billingPeriodSchema, noticeSchema, subscriptionSchema } from './org'

export const siteFactEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/site',
    scope: 'read',
    tool: 'get_site_facts',
    summary: "One site's facts (domain, timezone, sources, created, install state, events this month) with billing and quota notices.",
    description:
      "eventsThisMonth counts the site's billable events in the current calendar month (UTC), the organization's billing period; byKind lists every kind stored, billed or not (bots, engagement reports and vitals are not billed). install.installed is true once any event arrived (or an install check found the tag), and recording while events arrived in the last 24 hours: as GET /sites/{site_id} and its install read say. notices carry the organization's billing and quota state: over the monthly quota is a warning, and collection never drops data for it.",
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({
      id: z.uuid(),
      snippetId: z.string(),
      domain: z.string(),
      timezone: z.string(),
      sources: z.array(z.enum(SOURCES)),
      primarySource: z.enum(SOURCES),
      createdAt: z.string(),
      install: z.object({
        installed: z.boolean(),
        recording: z.boolean().describe('Events were received in the last 24 hours'),
        firstEventAt: z.string().nullable(),
        lastEventAt: z.string().nullable(),
        checkedAt: z.string().nullable(),
      }),
      eventsThisMonth: z.object({ month: z.string(), events: z.number().int(), byKind: z.record(z.string(), z.number().int()) }),
      billing: z.object({
        plan: z.enum(PLAN_NAMES),
        subscription: subscriptionSchema,
        billingPeriod: billingPeriodSchema,
        organizationEvents: z.number().int().describe("The organization's billable events this period, all sites"),
        quota: z.number().int().nullable().describe('null: no limit'),
      }),
      notices: z.array(noticeSchema),
    }),
    async handler({ services, site }, { params }) {
      return siteFacts(services, await site(params.site_id), services.now())
    },
  }),
]
