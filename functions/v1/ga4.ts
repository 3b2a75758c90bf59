import { z } from 'zod'
import { ApiError } from '../../lib/errors'
import { CALLBACK_PATH, bindGa4Property, completeGoogleConnect, disconnectGa4, ga4Connection } from '../../lib/integrations/ga4/connection'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

const importSchema = z
  .object({
    id: z.uuid(),
    trigger: z
      .enum(['bind', 'hourly', 'daily'])
      .describe('bind: the history on binding; hourly: today and yesterday; daily: the three days before today'),
    state: z.enum(['queued', 'running', 'done', 'failed']),
    reason: z.string().nullable().describe('Why it failed, or what a queued or running import waits for'),
    from: z.string().nullable().describe('First property day (YYYY-MM-DD); null until the history import found it'),
    to: z.string(),
    rows: z.number().int().describe('Rows of imported aggregates stored'),
    progress: z.object({
      tasksDone: z.number().int(),
      tasksTotal: z.number().int().nullable(),
      fraction: z.number().min(0).max(1),
    }),
    retryAt: z.string().nullable().describe('Not before this instant (a quota, or a failure of Google)'),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
  })
  .nullable()

const propertySchema = z.object({ propertyId: z.string(), displayName: z.string(), accountId: z.string(), accountName: z.string() })

const connectionSchema = z.object({
  connected: z.boolean(),
  status: z
    .enum(['not_configured', 'not_connected', 'connected', 'needs_reconnect'])
    .describe('not_configured: this server has no Google client; needs_reconnect: Google refused the stored grant'),
  reason: z.string().nullable().describe('What to configure, why to connect again, or why the properties could not be listed'),
  account: z.object({ id: z.string(), name: z.string() }).nullable().describe('The Google Analytics account of the bound property'),
  propertyId: z.string().nullable(),
  propertyName: z.string().nullable(),
  properties: z.array(propertySchema).describe('The GA4 properties the connection can read'),
  connectUrl: z
    .string()
    .nullable()
    .describe("Open it in a browser to connect (Google's consent page; the state in it is single-use and good for 15 minutes)"),
  import: importSchema.describe('The latest import; GET /sites/{site_id}/imports lists them all'),
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
    summary:
      "The site's Google Analytics 4 connection: its state, the properties it can read, the bound one, the connect URL and the latest import.",
    description:
      'Not connected (or needing a new connection): connectUrl is the Google authorization URL to open in a browser; it comes back to /oauth/google/callback. Connected: properties lists what the connection can read; bind one with PATCH. Without a Google client on the server, status is not_configured and reason says what to set. Tokens are never shown.',
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
    summary: 'Binds a GA4 property the connection can read, adds ga4 to the site sources and starts importing its history.',
    description:
      "propertyId is the numeric id (or properties/<id>) of one of the properties GET lists; another is a 400 naming it. The import runs in the background, from the property's first day with data to today; then today and yesterday are imported every hour and the three days before once a day, replacing what was imported before. Follow it in GET /sites/{site_id}/imports.",
    params: z.object({ site_id: siteRefSchema }),
    body: z.strictObject({ propertyId: z.string().trim().min(1, 'required').max(64) }),
    response: connectionSchema,
    async handler({ services, site, baseUrl, background }, { params, body }) {
      return bindGa4Property(services, await site(params.site_id), body.propertyId, baseUrl, background)
    },
  }),
  defineEndpoint({
    method: 'DELETE',
    path: '/api/v1/sites/{site_id}/ga4',
    scope: 'write',
    tool: 'disconnect_ga4',
    summary:
      'Disconnects Google: revokes the grant at Google, forgets the tokens and stops imports. Imported data stays until ga4 leaves the site sources.',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({
      disconnected: z.literal(true),
      revoked: z.boolean().describe('Google confirmed the revocation'),
      reason: z.string().nullable().describe('Why it was not revoked at Google'),
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
      'No key: the signed, single-use state names the organization and site. A bad, expired or reused state is a 400 and stores nothing.',
    params: z.object({
      state: z.string().max(2000).optional(),
      code: z.string().max(2000).optional(),
      error: z.string().max(200).optional(),
    }),
    response: { mediaType: 'text/html', description: 'A page saying what was connected' },
    async handler({ services, baseUrl }, { params }) {
      const connected = await completeGoogleConnect(services, params, baseUrl)
      if (!connected) throw new ApiError(400, 'nothing connected')
      return new Response(
        page(
          'Google Analytics connected',
          `${escapeHtml(connected.domain)} is connected to Google with read access to Google Analytics. Choose its GA4 property with PATCH /api/v1/sites/{site_id}/ga4; you can close this page.`,
        ),
        { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } },
      )
    },
  }),
]
