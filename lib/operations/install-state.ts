import { eventEdges } from '../reports/query/site-events'
import { type SiteInstall, installOf } from '../sites/site-install'
import type { Site } from '../sites/sites'
import type { ClickHouse } from '../storage/clickhouse/types'

/** The sites with their install state, read in one statement. */
export async function withInstallState<S extends Site>(
  clickhouse: ClickHouse,
  sites: S[],
  now: Date,
): Promise<(S & { install: SiteInstall })[]> {
  const edges = await eventEdges(
    clickhouse,
    sites.map((s) => s.id),
  )
  return sites.map((site) => ({ ...site, install: installOf(site, edges.get(site.id), now) }))
}
