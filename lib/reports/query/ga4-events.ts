import type { Site } from '../../sites/sites'
import { execute } from '../../storage/clickhouse/execute'
import { importedEventsSql } from './compile/imported'
import type { ReportParams } from './parse'
import { planImported } from './plan'
import { rangeView } from './range'
import { type ReportDeps, prepare } from './reports'

export interface Ga4EventsParams extends Omit<ReportParams, 'source'> {
  source?: 'ga4'
  builtin?: '0' | '1'
}

/**
 * GET /ga4-events: the imported GA4 events of the window with their count (eventCount) and users
 * (totalUsers, summed over the days), most first; GA4's automatic events only with builtin=1. A site
 * without the ga4 source answers `available: false`.
 */
export async function ga4Events(deps: ReportDeps, site: Site, params: Ga4EventsParams) {
  const builtin = params.builtin === '1'
  if (!site.sources.includes('ga4')) return { available: false, source: 'ga4' as const, builtin, events: [] }
  const { query } = await prepare(deps, site, { ...params, source: 'ga4' })
  // the events dataset holds the filters, as for a breakdown by event
  planImported(query, { kind: 'breakdown', property: 'event' })
  const rows = await execute<{ name: string; count: string; users: string }>(deps.clickhouse, importedEventsSql(query, builtin))
  return {
    available: true,
    source: 'ga4' as const,
    range: rangeView(query.range),
    builtin,
    events: rows.map((r) => ({ name: r.name, count: Number(r.count), users: Number(r.users) })),
  }
}
