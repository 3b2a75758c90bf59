import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import type { Source } from '../../sites/source'
import type { Query } from './model'
import type { ResolvedRange } from './range'
import { type ReportDeps, prepare } from './reports'
import type { WindowParams } from './window'

/**
 * The common filters of a read that otherwise reads its own windows (spikes, launches, page
 * detail, pages): parsed as every report parses them (goals and segments expanded, each dimension
 * checked), as a query over `range`; null without filters. A goal filter keeps the visits that
 * converted (spec 4.2). The ga4 source's imported days of these reads hold no dimension to filter.
 */
export async function filteredQuery(
  deps: ReportDeps,
  site: Site,
  params: WindowParams & { filters?: string },
  source: Source,
  range: ResolvedRange,
): Promise<Query | null> {
  if (params.filters === undefined) return null
  if (source === 'ga4')
    throw new ApiError(400, "filters: this read of the ga4 source takes no filters (GA4's imported days it reads carry no other dimension)")
  const { query } = await prepare(deps, site, {
    site_id: site.id,
    range: params.range,
    from: params.from,
    to: params.to,
    filters: params.filters,
    source,
  })
  return query.filters.length ? { ...query, range } : null
}
