import { ApiError } from '../../core/errors'
import type { ClickHouse } from './types'

const zonesByEngine = new WeakMap<ClickHouse, Promise<Set<string>>>()

/** The time zones the engine knows (its own tz database, listed in system.time_zones), read once per engine. */
function engineTimezones(clickhouse: ClickHouse): Promise<Set<string>> {
  let zones = zonesByEngine.get(clickhouse)
  if (!zones) {
    zones = clickhouse
      .query<{ name: string }>('SELECT time_zone AS name FROM system.time_zones')
      .then((rows) => new Set(rows.map((r) => r.name)))
    zones.catch(() => zonesByEngine.delete(clickhouse))
    zonesByEngine.set(clickhouse, zones)
  }
  return zones
}

/**
 * A site's zone must be one the runtime and the engine both know: every query of the site names
 * it, so a zone only the runtime knows (SystemV/EST5, US/Pacific-New) would break every report.
 * The runtime check is the zod schema's; this is the engine's.
 */
export async function assertEngineKnowsTimezone(clickhouse: ClickHouse, zone: string): Promise<void> {
  if (!(await engineTimezones(clickhouse)).has(zone)) {
    throw new ApiError(
      400,
      `timezone: "${zone}" is not a time zone the analytics engine knows; use a canonical IANA name such as America/New_York`,
    )
  }
}
