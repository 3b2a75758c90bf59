import { z } from 'zod'
import { revokeApiKey } from '../../lib/admin'
import { defineEndpoint } from '../endpoint'
import { uuidParam } from '../params'

export const orgEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/org/api-keys',
    scope: 'read',
    tool: 'list_api_keys',
    orgWide: true,
    summary: 'Every key of the organization: name, prefix, scope, site binding, last use. Never the secret.',
    response: z.object({
      keys: z.array(
        z.object({
          id: z.uuid(),
          name: z.string(),
          prefix: z.string(),
          scope: z.enum(['read', 'write']),
          siteId: z.uuid().nullable().describe('Set for a site-bound ingest key'),
          createdAt: z.string(),
          revokedAt: z.string().nullable(),
          lastUsedAt: z.string().nullable(),
        }),
      ),
    }),
    async handler({ services, key }) {
      const keys = await services.store.listApiKeys(key.orgId)
      return {
        keys: keys.map(({ hash: _hash, orgId: _org, ...meta }) => meta),
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
    params: z.object({ id: uuidParam.describe('The key id from list_api_keys') }),
    response: z.object({ revoked: z.literal(true), id: z.uuid() }),
    async handler({ services, key }, { params }) {
      return revokeApiKey(services.store, params.id, services.now(), key.orgId)
    },
  }),
]
