import { z } from 'zod'
import { keyConnectsGoogle } from '../../lib/accounts/members'
import { bindGa4Property, disconnectGa4, ga4Connection } from '../../lib/integrations/ga4/connection'
import {
  CALLBACK_PATH,
  GoogleConnectFailed,
  completeGoogleConnect,
  confirmPagePath,
  googleSettingsPath,
} from '../../lib/integrations/google/connect'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'
import { connectBinding } from '../google-binding'

const importSchema = z
  .object({
    id: z.uuid(),
    trigger: z.enum(['bind', 'hourly', 'daily']),
    state: z.enum(['queued', 'running', 'done', 'failed']),
    reason: z.string().nullable(),
    from: z.string().nullable(),
    to: z.string(),
    rows: z.number().int(),
    progress: z.object({
      tasksDone: z.number().int(),
      tasksTotal: z.number().int().nullable(),
      fraction: z.number().min(0).max(1),
    }),
    retryAt: z.string().nullable(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .nullable()

const propertySchema = z.object({ propertyId: z.string(), displayName: z.string(), accountId: z.string(), accountName: z.string() })

/** Where to connect Google, as the ga4 and search-console reads offer it. */
export const connectOfferSchema = z.object({
  connectUrl: z
    .string()
    .nullable()
    .describe(
      "Where a connection is needed: the web application's page where an owner or admin, signed in, connects the site to Google. Given to write keys of owners and admins",
    ),
  connectNote: z.string().nullable().describe('Why connectUrl is null although a connection is needed (this key cannot connect)'),
})

const connectionSchema = z.object({
  connected: z.boolean(),
  status: z.enum(['not_configured', 'not_connected', 'connected', 'needs_reconnect']),
  reason: z.string().nullable().describe('What to configure, or why to connect again'),
  account: z.object({ id: z.string(), name: z.string() }).nullable(),
  propertyId: z.string().nullable(),
  propertyName: z.string().nullable(),
  properties: z.array(propertySchema),
  ...connectOfferSchema.shape,
  import: importSchema,
})

export const ga4Endpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/ga4',
    scope: 'read',
    tool: 'get_ga4_connection',
    summary: "The site's GA4 connection: state, readable properties, the bound one, where to connect (a browser page), latest import.",
    description:
      'Connecting Google happens in the browser of an owner or admin: connectUrl opens the web application, which sends them to Google and asks them to confirm the Google account before the connection is stored. A read key, or a key of a plain member, gets connectUrl null and connectNote saying so.',
    params: z.object({ site_id: siteRefSchema }),
    response: connectionSchema,
    async handler({ services, site, baseUrl, key }, { params }) {
      return ga4Connection(services, await site(params.site_id), baseUrl, await keyConnectsGoogle(services.repositories, key))
    },
  }),
  defineEndpoint({
    method: 'PATCH',
    path: '/api/v1/sites/{site_id}/ga4',
    scope: 'write',
    tool: 'bind_ga4_property',
    summary: 'Binds a GA4 property the ga4 read lists, adds ga4 to the site sources and imports its history in the background.',
    params: z.object({ site_id: siteRefSchema }),
    body: z.strictObject({ propertyId: z.string().trim().min(1, 'required').max(64).describe('An id, or properties/<id>') }),
    response: connectionSchema.pick({ propertyId: true, propertyName: true, account: true, import: true }),
    async handler({ services, site, baseUrl, background }, { params, body }) {
      const {
        propertyId,
        propertyName,
        account,
        import: started,
      } = await bindGa4Property(services, await site(params.site_id), body.propertyId, baseUrl, background)
      return { propertyId, propertyName, account, import: started }
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/sites/{site_id}/ga4',
    scope: 'write',
    tool: 'disconnect_ga4',
    summary: 'Disconnects Google: revokes the grant, forgets the tokens, stops imports. Imported data stays.',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({
      disconnected: z.literal(true),
      revoked: z.boolean(),
      reason: z.string().nullable(),
    }),
    async handler({ services, site }, { params }) {
      return disconnectGa4(services, await site(params.site_id))
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: CALLBACK_PATH,
    scope: 'public',
    tool: null,
    summary: "Where Google's consent page sends the browser back: on to the web application, to confirm the Google account.",
    description:
      "No key: the signed, single-use state names the organization and site, and is taken only from the browser that started the connect (its cookie). A bad state, or one started in another browser, is a 400; an expired or reused one, or Google's refusal, goes back to the site's page in the web application, which says why (303); none stores anything. A good one holds Google's grant until the person who started the connect confirms it on the page the answer (303) leads to.",
    params: z.object({
      state: z.string().max(2000).optional(),
      code: z.string().max(2000).optional(),
      error: z.string().max(200).optional(),
    }),
    // a redirect, never a body of its own: the media type only keeps the transport from answering it as empty
    response: {
      mediaType: 'text/html',
      description: "A redirect (303) to the web application: the confirmation page, or the site's Google settings",
    },
    async handler({ services, baseUrl, request }, { params }) {
      const to = (path: string) =>
        new Response(null, {
          status: 303,
          headers: { location: `${baseUrl}${path}`, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
        })
      try {
        const { siteId } = await completeGoogleConnect(services, params, baseUrl, connectBinding(request))
        return to(confirmPagePath(siteId))
      } catch (err) {
        if (err instanceof GoogleConnectFailed) return to(googleSettingsPath(err.siteId, err.reason))
        throw err
      }
    },
  }),
]
