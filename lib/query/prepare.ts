import { z } from 'zod'
import { RANGES } from '../dimensions'
import { ApiError } from '../errors'
import type { Olap } from '../olap/types'
import type { Store } from '../store'
import { SOURCES, type Site } from '../sites'
import type { Query } from './compile'
import { type Compiled, parseFilters } from './filters'
import { resolveRange } from './range'

/**
 * A row count (spec 4.1): any integer is taken and clamped to 1..max, so the documents show the
 * bounds that matter rather than the whole integer range.
 */
export const limitParam = (max: number, fallback: number) =>
  z.coerce.number({ message: 'must be a number' }).int('must be an integer').meta({ minimum: 1, maximum: max }).optional().describe(`Rows for lists, clamped to 1-${max}, default ${fallback}`)

/** The common parameters of spec 4.1. */
export const reportParams = z.object({
  site_id: z.string().min(1, 'required').max(64).describe('Site UUID or public snippet id'),
  range: z.enum(RANGES).default('30d').describe('Named range, resolved in the site timezone; custom needs from and to'),
  from: z.string().optional().describe('YYYY-MM-DD, with range=custom'),
  to: z.string().optional().describe('YYYY-MM-DD, with range=custom (included)'),
  filters: z.string().optional().describe('URL-encoded JSON array of {dimension, operator: is|is_not|contains|matches, value: [strings]}'),
  source: z.enum(SOURCES).optional().describe("standalone or ga4; default: the site's primary source"),
  limit: limitParam(1000, 100),
})
export type ReportParams = z.infer<typeof reportParams>

export interface Prepared {
  site: Site
  source: 'standalone' | 'ga4'
  query: Query
}

export async function firstEventAt(olap: Olap, siteId: string): Promise<Date | null> {
  const [row] = await olap.query<{ first: string | null }>(
    "SELECT if(count() = 0, NULL, toString(min(timestamp))) AS first FROM events WHERE site_id = {site:UUID}",
    { site: siteId },
  )
  return row?.first ? new Date(`${row.first.replace(' ', 'T')}Z`) : null
}

/** Parses and validates the common parameters against the site: the query model, or a 400 naming the parameter. */
/** What parsing reads: the site as the caller may see it, its goals, its first event. */
interface QueryContext {
  services: { olap: Olap; store: Store; now: () => Date }
  site(idOrSnippet: string): Promise<Site>
}

export async function prepareQuery(ctx: QueryContext, params: ReportParams, options: { series?: boolean; range?: ReportParams['range']; withGoals?: boolean } = {}): Promise<Prepared> {
  const site = await ctx.site(params.site_id)
  const source = params.source ?? site.primarySource
  if (!site.sources.includes(source)) throw new ApiError(400, `source: this site has no ${source} source (it has ${site.sources.join(', ')})`)
  const filters = parseFilters(params.filters, source)
  {
    const range = options.range ?? params.range
    const needsGoals = options.withGoals || filters.some((f) => f.dimension === 'goal')
    const [goals, first] = await Promise.all([
      needsGoals ? ctx.services.store.listGoals(site.id) : Promise.resolve([]),
      range === 'all' ? firstEventAt(ctx.services.olap, site.id) : Promise.resolve(null),
    ])
    const resolved = resolveRange({ range, from: params.from, to: params.to }, site.timezone, ctx.services.now(), { series: options.series, firstEventAt: first })
    const limit = Math.min(1000, Math.max(1, params.limit ?? 100))
    return { site, source, query: { siteId: site.id, range: resolved, filters, goals, limit } }
  }
}

/** Runs compiled report SQL; an invalid RE2 pattern from a `matches` filter is the caller's 400. */
export async function runReport<Row>(olap: Olap, compiled: Compiled): Promise<Row[]> {
  try {
    return await olap.query<Row>(compiled.sql, compiled.params)
  } catch (err) {
    if (/CANNOT_COMPILE_REGEXP|Code: 427\b/.test(String((err as Error).message))) throw new ApiError(400, 'filters: invalid regular expression in a matches filter')
    throw err
  }
}
