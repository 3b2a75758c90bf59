import { z } from 'zod'
import { siteImports } from '../../lib/sites/imports'
import { siteRefSchema } from '../../lib/sites/sites'
import { defineEndpoint } from '../endpoint'

export const importEndpoints = [
  defineEndpoint({
    method: 'GET',
    path: '/api/v1/sites/{site_id}/imports',
    scope: 'read',
    tool: 'list_site_imports',
    summary: 'Every data import of the site, newest first: kind, when it ran, rows, the period it covers and its state.',
    description:
      'kind raw_hits is a raw-hit (NDJSON) import run: rows is what it stored for this site, rejected the hits of this site the pipeline refused or screened out (unreadable lines name no site and are reported by the import command only), from and to the first and last stored timestamp (null when none). A failed run keeps what it stored and says why in error. kind ga4 is an imported provider period: from and to are its days, rows and id are null.',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({
      imports: z.array(
        z.object({
          id: z.uuid().nullable(),
          kind: z.enum(['raw_hits', 'standalone', 'ga4']),
          state: z.enum(['completed', 'failed']),
          startedAt: z.string(),
          finishedAt: z.string(),
          rows: z.number().int().nullable(),
          rejected: z.number().int(),
          from: z.string().nullable(),
          to: z.string().nullable(),
          error: z.string().nullable(),
        }),
      ),
    }),
    async handler({ services, site }, { params }) {
      return { imports: await siteImports(services.repositories, await site(params.site_id)) }
    },
  }),
]
