import type { Query } from '../model'
import { COLLECTOR_PREFIX } from './property-keys'
import { queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, raw, sql } from '../../../storage/clickhouse/sql'

const inWindow = (query: Query) => selected(query, queryWindow(query))

/**
 * Every event a properties read counts carries a property. Stated, it lets the engine skip the
 * granules whose events carry none (the index on length(props), migration 0023).
 */
const CARRIES_PROPERTIES = raw('length(props) > 0')

/** Custom property keys on the selected events with their event and visitor counts, most events first. */
export function propertyKeyCountsSql(query: Query): Fragment {
  return sql`
SELECT key, count() AS events, uniqExact(visitor_id) AS visitors
FROM events ARRAY JOIN mapKeys(props) AS key
WHERE ${inWindow(query)} AND ${CARRIES_PROPERTIES} AND NOT startsWith(key, ${bind('String', COLLECTOR_PREFIX)})
GROUP BY key
ORDER BY events DESC, key ASC
LIMIT ${bind('UInt32', query.limit)}`
}

/** The values of one custom property key on the selected events that carry it, most events first. */
export function propertyValuesSql(query: Query, key: string): Fragment {
  const bound = bind('String', key)
  return sql`
SELECT props[${bound}] AS value, count() AS events, uniqExact(visitor_id) AS visitors
FROM events
WHERE ${inWindow(query)} AND ${CARRIES_PROPERTIES} AND mapContains(props, ${bound})
GROUP BY value
ORDER BY events DESC, value ASC
LIMIT ${bind('UInt32', query.limit)}`
}
