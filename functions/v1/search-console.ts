import { z } from 'zod'
import {
  bindSearchConsoleProperty,
  disconnectSearchConsole,
  searchConsoleConnection,
} from '../../lib/integrations/search-console/connection'
import { keyConnectsGoogle } from '../../lib/accounts/members'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'
import { connectOfferSchema } from './ga4'

const importSchema = z
  .object({
    state: z.enum(['queued', 'running', 'waiting', 'done', 'failed']),
    siteUrl: z.string(),
    from: z.string(),
    to: z.string(),
    daysDone: z.number().int(),
    daysTotal: z.number().int(),
    progress: z.number().min(0).max(1),
    rows: z.number().int(),
    retryAt: z.string().nullable(),
    error: z.string().nullable(),
  })
  .nullable()

const propertySchema = z.object({
  siteUrl: z.string(),
  kind: z.enum(['domain', 'url_prefix']),
  permissionLevel: z.string(),
  verified: z.boolean(),
})

const connectionSchema = z.object({
  connected: z.boolean().describe('A property is bound'),
  siteUrl: z.string().nullable(),
  google: z
    .enum(['not_configured', 'not_connected', 'connected', 'needs_reconnect'])
    .describe("The site's Google connection (shared with GA4)"),
  reason: z.string().nullable(),
  sites: z.array(propertySchema),
  ...connectOfferSchema.shape,
  import: importSchema,
})

export const searchConsoleEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/search-console',
    scope: 'read',
    tool: 'get_search_console_connection',
    summary: 'Search Console connection: bound property, readable properties, where to connect (a browser page), import.',
    description:
      "connectUrl is the web application's page where an owner or admin connects the site to Google, asking for the Analytics and Search Console read scopes (null, with connectNote, for a read key or a plain member's key); a connection made for GA4 only is google needs_reconnect until it is made again. An unverified property is listed but cannot be bound.",
    params: z.object({ site_id: siteRefSchema }),
    response: connectionSchema,
    async handler({ services, site, baseUrl, key }, { params }) {
      return searchConsoleConnection(services, await site(params.site_id), baseUrl, await keyConnectsGoogle(services.repositories, key))
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/sites/{site_id}/search-console',
    scope: 'write',
    tool: 'bind_search_console',
    summary: 'Binds a verified Search Console property and imports its 16 months in the background.',
    params: z.object({ site_id: siteRefSchema }),
    body: z.strictObject({
      siteUrl: z.string().trim().min(1, 'required').max(300).describe('sc-domain:example.com or https://example.com/'),
    }),
    response: connectionSchema.pick({ connected: true, siteUrl: true, import: true }).extend({ property: propertySchema }),
    async handler({ services, site, baseUrl, background }, { params, body }) {
      return bindSearchConsoleProperty(services, await site(params.site_id), body.siteUrl, baseUrl, background)
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/sites/{site_id}/search-console',
    scope: 'write',
    tool: 'unbind_search_console',
    summary: 'Unbinds the Search Console property and stops its import. Imported data stays; the Google grant too.',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({ disconnected: z.literal(true), siteUrl: z.string().nullable() }),
    async handler({ services, site }, { params }) {
      return disconnectSearchConsole(services, await site(params.site_id))
    },
  }),
]
