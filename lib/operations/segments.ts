import type { SourceRepositories } from '../integrations/source-services'
import { z } from 'zod'
import { ApiError } from '../core/errors'
import { parseFilters, validateGoalFilter } from '../reports/query/parse'
import { type Site, siteRefSchema } from '../sites/sites'
import type { Segment } from '../sites/definition-records'

export const segmentInputSchema = z.strictObject({
  site_id: siteRefSchema,
  name: z.string().trim().min(1, 'required').max(120),
  filters: z.union([z.array(z.unknown()), z.string()], { message: 'must be an array of filters (or that array as a JSON string)' }),
})

/**
 * Saves a segment. Its filters go through the reports' own parser, so a filter a report would
 * refuse is refused here with the same message; they are checked against the site's first-party
 * source when it has one (a ga4 read of a segment with first-party filters is then a 400).
 */
export async function createSegment(
  repositories: Pick<SourceRepositories, 'segments' | 'goals'>,
  site: Site,
  input: z.infer<typeof segmentInputSchema>,
  now: Date,
): Promise<Segment> {
  const filters = parseFilters(
    typeof input.filters === 'string' ? input.filters : JSON.stringify(input.filters),
    site.sources.includes('standalone') ? 'standalone' : 'ga4',
  )
  if (!filters.length) throw new ApiError(400, 'filters: a segment needs at least one filter')
  filters.forEach((f, i) => {
    if (f.dimension === 'segment') throw new ApiError(400, `filters[${i}].dimension: a segment cannot contain another segment`)
  })
  const [segments, goals] = await Promise.all([
    repositories.segments.list(site.id),
    filters.some((f) => f.dimension === 'goal') ? repositories.goals.list(site.id) : [],
  ])
  for (const f of filters) if (f.dimension === 'goal') validateGoalFilter(f, goals)
  if (segments.some((s) => s.name === input.name)) throw new ApiError(409, `name: the site already has a segment named "${input.name}"`)
  const segment: Segment = { id: crypto.randomUUID(), name: input.name, filters, createdAt: now.toISOString() }
  await repositories.segments.save(site.id, segment)
  return segment
}

/** A site's segments, oldest first. */
export function listSegments(repositories: Pick<SourceRepositories, 'segments'>, site: Site): Promise<Segment[]> {
  return repositories.segments.list(site.id)
}

export async function deleteSegment(repositories: Pick<SourceRepositories, 'segments'>, site: Site, id: string) {
  if (!(await repositories.segments.delete(site.id, id.toLowerCase()))) throw new ApiError(404, 'segment not found')
}
