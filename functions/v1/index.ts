import { endpointIndex, openApiDocument } from '../../lib/openapi'
import { type Endpoint, defineEndpoint } from '../../lib/registry'
import { goalEndpoints } from './goals'
import { ingestEndpoints } from './ingest'
import { metaEndpoints } from './meta'
import { orgEndpoints } from './org'
import { reportEndpoints } from './reports'
import { siteEndpoints } from './sites'

/** The one endpoint registry: routes, the index, the OpenAPI document and MCP tools all come from it. */
export const endpoints: Endpoint[] = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1',
    scope: 'public',
    tool: null,
    summary: 'This index: every endpoint with its method, path, scope, description and parameters as JSON Schema.',
    async handler() {
      return endpointIndex(endpoints)
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/openapi.json',
    scope: 'public',
    tool: null,
    summary: 'The OpenAPI 3.1 document of this API.',
    async handler({ baseUrl }) {
      return openApiDocument(endpoints, baseUrl)
    },
  }),
  ...metaEndpoints,
  ...orgEndpoints,
  ...siteEndpoints,
  ...ingestEndpoints,
  ...reportEndpoints,
  ...goalEndpoints,
]
