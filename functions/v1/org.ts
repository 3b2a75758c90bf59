import { z } from 'zod'
import { revokeApiKey } from '../../lib/admin'
import { uuidParam } from '../../lib/params'
import { defineEndpoint } from '../../lib/registry'

export const orgEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/org/api-keys',
    scope: 'read',
    tool: 'list_api_keys',
    summary: 'Every key of the organization: name, prefix, scope, site binding, last use. Never the secret.',
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
    async handler({ services, key }, { params }) {
      return revokeApiKey(services.store, params.id, services.now(), key.orgId)
    },
  }),
]
