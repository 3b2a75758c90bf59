import { z } from 'zod'
import { ApiError } from '../../lib/errors'
import {
  CALLBACK_PATH,
  GoogleConnectFailed,
  bindGa4Property,
  completeGoogleConnect,
  disconnectGa4,
  ga4Connection,
} from '../../lib/integrations/ga4/connection'
import { SEARCH_CONSOLE_SCOPE } from '../../lib/integrations/search-console/connector'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

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

const connectionSchema = z.object({
  connected: z.boolean(),
  status: z.enum(['not_configured', 'not_connected', 'connected', 'needs_reconnect']),
  reason: z.string().nullable().describe('What to configure, or why to connect again'),
  account: z.object({ id: z.string(), name: z.string() }).nullable(),
  propertyId: z.string().nullable(),
  propertyName: z.string().nullable(),
  properties: z.array(propertySchema),
  connectUrl: z.string().nullable().describe('Single use, good for 15 minutes'),
  import: importSchema,
})

const page = (title: string, text: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title></head><body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem"><h1>${title}</h1><p>${text}</p></body></html>`
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

export const ga4Endpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/ga4',
    scope: 'read',
    tool: 'get_ga4_connection',
    summary: "The site's GA4 connection: state, readable properties, the bound one, connect URL (for a browser), latest import.",
    params: z.object({ site_id: siteRefSchema }),
    response: connectionSchema,
    async handler({ services, site, baseUrl }, { params }) {
      return ga4Connection(services, await site(params.site_id), baseUrl)
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
    summary: "Where Google's consent page sends the browser back: connects the site and shows a short page.",
    description:
      "No key: the signed, single-use state names the organization and site. A bad, expired or reused state is a 400 and stores nothing. A connect started in the web application's site page goes back there (303).",
    params: z.object({
      state: z.string().max(2000).optional(),
      code: z.string().max(2000).optional(),
      error: z.string().max(200).optional(),
    }),
    response: { mediaType: 'text/html', description: 'A page saying what was connected' },
    async handler({ services, baseUrl }, { params }) {
      // a connect started in the web application goes back to the site's page there, with what happened
      const backToApp = (siteId: string, outcome: string) =>
        new Response(null, {
          status: 303,
          headers: {
            location: `${baseUrl}/app/sites/${siteId}/settings/integrations?google=${outcome}#google`,
            'cache-control': 'no-store',
          },
        })
      let connected: Awaited<ReturnType<typeof completeGoogleConnect>>
      try {
        connected = await completeGoogleConnect(services, params, baseUrl)
      } catch (err) {
        if (err instanceof GoogleConnectFailed) return backToApp(err.siteId, err.reason)
        throw err
      }
      if (!connected) throw new ApiError(400, 'nothing connected')
      if (connected.returnTo === 'app') return backToApp(connected.siteId, 'connected')
      const searchConsole = connected.scopes.includes(SEARCH_CONSOLE_SCOPE)
      return new Response(
        searchConsole
          ? page(
              'Google Analytics and Search Console connected',
              `${escapeHtml(connected.domain)} is connected to Google with read access to Google Analytics and Search Console. Choose its properties with PATCH /api/v1/sites/{site_id}/ga4 and PATCH /api/v1/sites/{site_id}/search-console; you can close this page.`,
            )
          : page(
              'Google Analytics connected',
              `${escapeHtml(connected.domain)} is connected to Google with read access to Google Analytics. Choose its GA4 property with PATCH /api/v1/sites/{site_id}/ga4; you can close this page.`,
            ),
        { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } },
      )
    },
  }),
]
