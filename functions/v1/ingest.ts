import { z } from 'zod'
import { ApiError } from '../../lib/core/errors'
import { MAX_COLLECT_HITS, collectBotHits } from '../../lib/ingest/collect'
import { randomString } from '../../lib/core/crypto'
import { ingestKeyOf, rotateIngestKey } from '../../lib/sites/ingest-key'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

const collectBody = z
  .looseObject({ site_id: siteRefSchema.optional(), events: z.array(z.unknown()).optional() })
  .refine((b) => b.events === undefined || b.events.length <= MAX_COLLECT_HITS, {
    message: `at most ${MAX_COLLECT_HITS} hits a request`,
    path: ['events'],
  })

export const ingestEndpoints = [
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/collect',
    scope: 'write',
    limit: 'collect',
    keyInUrl: true,
    // 500 hits of about 2 KB each at most
    maxBodyBytes: 1024 * 1024,
    group: 'tracking',
    tool: 'collect_bot_hits',
    summary: 'Server-side bot collection: stores bot and AI-crawler hits, drops humans and junk.',
    description:
      'Send up to 500 hits from your server logs: {site_id, events:[{path, userAgent, ip?, referrer?, hostname?, timestamp?}]}, or one hit as the body itself. Aliases user_agent, ua, clientIp, referer and host are accepted. Only bots are stored (not billed), placed in the country of their ip where one is sent; answers {ingested, dropped}.',
    params: z.object({ site_id: siteRefSchema.optional() }),
    body: collectBody,
    response: z.object({
      ingested: z.number().int().describe('Bot hits stored'),
      dropped: z.number().int().describe('Humans, junk and invalid hits'),
    }),
    async handler({ services, key, site }, { params, body }) {
      const siteRef = body.site_id ?? params.site_id ?? key.siteId
      if (!siteRef) throw new ApiError(400, 'site_id: required (the site snippet id)')
      const target = await site(siteRef)
      const hits = body.events ?? [body]
      const { rows, dropped } = await collectBotHits(target, hits, {
        dns: services.dns,
        now: services.now,
        countryOf: (ip) => services.ingestor.countryOf(ip),
      })
      await services.ingestor.writeBots(target.orgId, rows)
      return { ingested: rows.length, dropped }
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/ingest-key',
    scope: 'read',
    tool: 'get_ingest_key',
    summary: 'Whether the site has a server-side ingest key, with its prefix (never the secret).',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({ exists: z.boolean(), id: z.uuid().optional(), prefix: z.string().optional(), createdAt: z.string().optional() }),
    async handler({ services, site }, { params }) {
      const current = await site(params.site_id)
      return ingestKeyOf(services, current)
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/sites/{site_id}/ingest-key',
    scope: 'write',
    orgWide: true,
    destructive: true,
    tool: 'rotate_ingest_key',
    summary: 'Mints, or rotates, the site-bound write key for server-side ingestion; the secret is shown once.',
    description:
      'Creates a write-scoped key bound to this one site, for log drains and servers (collect and proxy-config also take it as ?key=). Every earlier key bound to the site stops working at once. The secret is in the answer only this time.',
    params: z.object({ site_id: siteRefSchema }),
    status: 201,
    response: z.object({
      key: z.string().describe('The secret, shown only in this answer'),
      id: z.uuid(),
      prefix: z.string(),
      scope: z.literal('write'),
      siteId: z.uuid(),
      rotated: z.boolean().describe('Whether an earlier ingest key was revoked'),
    }),
    async handler({ services, site, key }, { params }) {
      const current = await site(params.site_id)
      return rotateIngestKey(services, current, key.madeBy)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/proxy-config',
    scope: 'write',
    limit: 'proxy',
    keyInUrl: true,
    tool: 'get_proxy_config',
    summary: "What a first-party proxy needs: upstream URLs, the path mapping and the site's proxy secret.",
    description:
      'For serving the script and the event endpoint from your own domain. A site-bound ingest key resolves its own site; an organization-wide write key passes site_id. The proxy must send X-Proxy-Secret with the visitor address in X-Forwarded-For.',
    params: z.object({ site_id: siteRefSchema.optional() }),
    response: z.object({
      siteId: z.uuid(),
      snippetId: z.string(),
      proxySecret: z.string(),
      upstream: z.object({ script: z.string(), event: z.string() }),
      paths: z.record(z.string(), z.string()).describe('Your path -> the upstream URL it forwards to'),
      requestHeaders: z.record(z.string(), z.string()),
      snippet: z.string(),
    }),
    async handler({ services, key, site, baseUrl }, { params }) {
      // a site-bound key names its own site or none; another site's id is the same 404 as a missing one
      const siteRef = params.site_id ?? key.siteId
      if (!siteRef) throw new ApiError(400, 'site_id: required with an organization-wide key')
      const current = await site(siteRef)
      // two first calls at once mint one secret: the second finds the first's stored
      const minted = `wps_${randomString(40)}`
      const { proxySecret = minted } = current.proxySecret
        ? current
        : await services.sites.update(current.id, (fresh) => (fresh.proxySecret ? fresh : { ...fresh, proxySecret: minted }))
      return {
        siteId: current.id,
        snippetId: current.snippetId,
        proxySecret,
        upstream: { script: `${baseUrl}/js/script.js`, event: `${baseUrl}/api/event` },
        paths: { '/stats/script.js': `${baseUrl}/js/script.js`, '/stats/event': `${baseUrl}/api/event` },
        requestHeaders: { 'X-Proxy-Secret': proxySecret, 'X-Forwarded-For': '<visitor IP address>' },
        snippet: `<script defer data-site="${current.snippetId}" data-api="/stats/event" src="/stats/script.js"></script>`,
      }
    },
  }),
]
