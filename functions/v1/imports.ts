import { z } from 'zod'
import { MAX_ZIP_BYTES, importPlausibleExport } from '../../lib/plausible/csv-import'
import { siteImports } from '../../lib/operations/imports'
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
      'kind raw_hits is a raw-hit (NDJSON) import run, completed or failed: rows is what it stored for this site, rejected the hits of this site the pipeline refused or screened out (unreadable lines name no site and are reported by the import command only), from and to the first and last stored timestamp (null when none). A failed run keeps what it stored and says why in error. kind plausible is an imported Plausible export (completed): rows the aggregate rows stored, from and to its first and last day; a newer one replaces it. kind ga4 is a GA4 import run: state queued, running, done or failed (error says why; while queued or running, what it waits for, until retryAt); trigger bind (the history), hourly (today and yesterday) or daily (the three days before today); from and to are the property days it covers (from is null until the history import found the first day with data); rows the aggregate rows stored; progress the dataset-and-days tasks done of all. A re-import replaces the days it covers. kind search_console is the Search Console import of the bound property (id null): state queued, running, waiting (until retryAt, after a quota or server failure), done or failed; from and to the days it covers; rows the rows stored; progress the days done of all.',
    params: z.object({ site_id: siteRefSchema }),
    response: z.object({
      imports: z.array(
        z.object({
          id: z.uuid().nullable(),
          kind: z.enum(['raw_hits', 'standalone', 'ga4', 'search_console', 'plausible']),
          state: z
            .enum(['completed', 'queued', 'running', 'waiting', 'done', 'failed'])
            .describe('raw_hits: completed or failed; ga4: queued, running, done or failed; search_console: also waiting'),
          trigger: z.enum(['bind', 'hourly', 'daily']).nullable().describe('ga4 only'),
          startedAt: z.string(),
          finishedAt: z.string().nullable().describe('null while a ga4 import is queued or running'),
          rows: z.number().int().nullable(),
          rejected: z.number().int(),
          from: z.string().nullable(),
          to: z.string().nullable(),
          error: z.string().nullable(),
          progress: z
            .object({ tasksDone: z.number().int(), tasksTotal: z.number().int().nullable(), fraction: z.number().min(0).max(1) })
            .nullable()
            .describe('ga4 and search_console'),
          retryAt: z.string().nullable().describe('ga4 and search_console: a waiting import goes on after this instant'),
        }),
      ),
    }),
    async handler({ services, site }, { params }) {
      return { imports: await siteImports(services.repositories, await site(params.site_id)) }
    },
  }),
  defineEndpoint({
    method: 'POST',
    path: '/api/v1/sites/{site_id}/imports/plausible',
    scope: 'write',
    // the body is a zip file, which a tool call cannot carry
    tool: null,
    maxBodyBytes: MAX_ZIP_BYTES,
    summary: "Imports a Plausible CSV export (the zip Plausible's site settings export) as the site's history.",
    description:
      "The body is the zip itself (Content-Type application/zip). Every file is checked before anything is stored: a bad one is a 400 naming the file and the line. The import replaces the site's earlier Plausible import whole; Stats API v2 queries add it with include.imports, for the days before the first tracked day (docs/import.md, Plausible's CSV export).",
    params: z.object({ site_id: siteRefSchema }),
    status: 201,
    response: z.object({
      rows: z.number().int().describe('Aggregate rows stored'),
      lines: z.number().int().describe('Lines read, headers left out'),
      from: z.string().describe('The first day of the imported visitors (YYYY-MM-DD)'),
      to: z.string().describe('The last day of the imported visitors'),
      files: z.array(z.string()).describe('The files read'),
    }),
    async handler({ services, site, request }, { params }) {
      const target = await site(params.site_id)
      return await importPlausibleExport(services, target, new Uint8Array(await request.arrayBuffer()))
    },
  }),
]
