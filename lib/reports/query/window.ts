import { Temporal } from 'temporal-polyfill'
import type { RangeName } from '../dimensions'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { type ResolvedRange, resolveRange } from './range'
import { firstEventAt, firstImportedAt } from './site-events'
import type { Source } from '../../sites/source'
import type { Site } from '../../sites/sites'

/** What the "why traffic changed" reads use: the engine, the store and the clock. */
export interface WhyDeps {
  clickhouse: ClickHouse
  now(): Date
  /** A shared dashboard's read (DomainServices.anonymousReads): it builds no rollup, reading from events what is not rolled up. */
  anonymousReads?: true
}

export interface WindowParams {
  range: RangeName
  from?: string
  to?: string
}

/** The window of a read, resolved in the site's timezone; `all` reads the site's first event (of the ga4 source: its first imported day). */
export async function windowOf(
  deps: WhyDeps,
  site: Site,
  params: WindowParams,
  now = deps.now(),
  source: Source = 'standalone',
): Promise<ResolvedRange> {
  const first =
    params.range !== 'all'
      ? null
      : source === 'ga4'
        ? await firstImportedAt(deps.clickhouse, site)
        : await firstEventAt(deps.clickhouse, site.id)
  return resolveRange(params, site.timezone, now, { firstEventAt: first })
}

/** These reads count the collector's own events; a site without that source has none here. */
export const readsEvents = (site: Site) => site.sources.includes('standalone')

export const zoned = (epochMs: number, timezone: string) => Temporal.Instant.fromEpochMilliseconds(epochMs).toZonedDateTimeISO(timezone)

/** ISO 8601 with the site's offset, as ranges are echoed. */
export const isoLocal = (z: Temporal.ZonedDateTime) => z.toString({ timeZoneName: 'never', smallestUnit: 'second' })
