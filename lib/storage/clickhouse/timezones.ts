import { ApiError } from '../../errors'
import type { Olap } from './types'

const zonesByEngine = new WeakMap<Olap, Promise<Set<string>>>()

/** The time zones the engine knows (its own tz database, listed in system.time_zones), read once per engine. */
function engineTimezones(olap: Olap): Promise<Set<string>> {
  let zones = zonesByEngine.get(olap)
  if (!zones) {
    zones = olap.query<{ name: string }>('SELECT time_zone AS name FROM system.time_zones').then((rows) => new Set(rows.map((r) => r.name)))
    zones.catch(() => zonesByEngine.delete(olap))
    zonesByEngine.set(olap, zones)
  }
  return zones
}

/**
 * A site's zone must be one the runtime and the engine both know: every query of the site names
 * it, so a zone only the runtime knows (SystemV/EST5, US/Pacific-New) would break every report.
 * The runtime check is the zod schema's; this is the engine's.
 */
export async function assertEngineKnowsTimezone(olap: Olap, zone: string): Promise<void> {
  if (!(await engineTimezones(olap)).has(zone)) {
    throw new ApiError(400, `timezone: "${zone}" is not a time zone the analytics engine knows; use a canonical IANA name such as America/New_York`)
  }
}
