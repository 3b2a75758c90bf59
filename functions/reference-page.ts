import { z } from 'zod'
import { ApiError } from '../lib/core/errors'
import { defineEndpoint } from './endpoint'

/**
 * The API reference page: Swagger UI (swagger-ui-dist, Apache-2.0) rendering the OpenAPI
 * document, with its files served by this server from the package, never from a CDN.
 */

/** The package's files the page loads, and their types: nothing else is read from it. */
export const REFERENCE_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
}

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Web analytics API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<style>
  /* a phone: one column, operation ids under their path, nothing wider than the screen */
  @media (max-width: 640px) {
    .swagger-ui .wrapper { padding: 0 10px; }
    .swagger-ui .info { margin: 20px 0; }
    .swagger-ui .info .title { font-size: 26px; }
    .swagger-ui .scheme-container { padding: 12px 0; }
    .swagger-ui .filter-container .filter .operation-filter-input { width: 100%; max-width: none; margin: 10px 0; }
    .swagger-ui .opblock-tag { flex-wrap: wrap; font-size: 20px; padding: 10px 4px; }
    .swagger-ui .opblock-tag small { flex: 1 1 100%; order: 3; padding: 4px 0 0; }
    .swagger-ui .opblock .opblock-summary { padding: 4px; }
    .swagger-ui .opblock .opblock-summary-control { flex-wrap: wrap; min-width: 0; }
    .swagger-ui .opblock .opblock-summary-method { min-width: 56px; padding: 4px 0; }
    .swagger-ui .opblock .opblock-summary-path-description-wrapper { flex: 1 1 0; min-width: 0; padding: 0 0 0 8px; }
    .swagger-ui .opblock .opblock-summary-path { font-size: 14px; word-break: break-all; }
    .swagger-ui .opblock .opblock-summary-operation-id { flex: 1 1 100%; font-size: 12px; padding: 4px 0 0 64px; word-break: normal; overflow-wrap: anywhere; }
    .swagger-ui .opblock .opblock-section-header { padding: 8px 10px; }
    .swagger-ui .opblock-description-wrapper, .swagger-ui .opblock-external-docs-wrapper, .swagger-ui .opblock-title_normal { padding: 10px; }
    .swagger-ui .table-container { padding: 10px; }
    /* parameters and responses as stacked rows rather than a table wider than the screen */
    .swagger-ui table.parameters tr, .swagger-ui table.parameters td, .swagger-ui table.responses-table tr, .swagger-ui table.responses-table td { display: block; width: 100%; }
    .swagger-ui table thead { display: none; }
    .swagger-ui .parameters-col_description input, .swagger-ui .parameters-col_description select, .swagger-ui .parameters-col_description textarea { max-width: 100%; width: 100%; }
    .swagger-ui .highlight-code, .swagger-ui .microlight { max-width: 100%; overflow-x: auto; }
    .swagger-ui .responses-inner { padding: 10px; }
    .swagger-ui .model-box { max-width: 100%; overflow-x: auto; }
  }
</style>
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>
  window.ui = SwaggerUIBundle({
    url: '/api/v1/openapi.json',
    dom_id: '#reference',
    deepLinking: true,
    // a key typed into Authorize lasts as long as the tab: in localStorage it would outlive it on the machine, readable by any script of this origin
    persistAuthorization: false,
    displayOperationId: true,
    tryItOutEnabled: true,
    filter: true,
  })
</script>
</body>
</html>
`

export const referencePageEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/',
    scope: 'public',
    tool: null,
    summary: 'Redirects to the API reference page at /docs.',
    // a body type, not an empty answer: the transport answers an empty one itself, without Location
    response: { mediaType: 'text/plain', description: 'A redirect to /docs' },
    async handler() {
      return new Response(null, { status: 302, headers: { Location: '/docs' } })
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/docs',
    scope: 'public',
    tool: null,
    summary: 'The API reference page: every endpoint from the OpenAPI document, with calls to try with your key.',
    response: { mediaType: 'text/html', description: 'The page' },
    async handler({ services }) {
      if (!services.referenceAssets)
        throw new ApiError(404, 'this deployment serves no reference page; GET /api/v1/openapi.json has the OpenAPI document')
      return new Response(page, { headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache' } })
    },
  }),
  defineEndpoint({
    method: 'GET',
    path: '/docs/assets/{file}',
    scope: 'public',
    tool: null,
    summary: 'The files of the reference page (Swagger UI).',
    params: z.object({ file: z.string().describe(Object.keys(REFERENCE_ASSETS).join(', ')) }),
    response: { mediaType: 'application/octet-stream', description: 'The file' },
    async handler({ services }, { params }) {
      const type = REFERENCE_ASSETS[params.file]
      const body = type && services.referenceAssets ? await services.referenceAssets(params.file) : null
      if (!body) throw new ApiError(404, 'no such file')
      return new Response(body as BodyInit, { headers: { 'Content-Type': type, 'Cache-Control': 'public, max-age=3600' } })
    },
  }),
]
