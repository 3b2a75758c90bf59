import type { Query } from '../model'
import { queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, sql } from '../../../storage/clickhouse/sql'

/** Custom property keys only: the collector files vitals attribution under props as well, prefixed. */
export const COLLECTOR_PREFIX = 'attribution.'

/**
 * The custom property keys the selected events carry, most used first, at most `limit`. An event
 * without properties has no key: `length(props) > 0` changes no row, and lets the events' props
 * index (migration 0023) skip the granules without any.
 */
export function propertyKeysSql(query: Query, limit: number): Fragment {
  return sql`
SELECT key FROM events ARRAY JOIN mapKeys(props) AS key
WHERE ${selected(query, queryWindow(query))} AND length(props) > 0 AND NOT startsWith(key, ${bind('String', COLLECTOR_PREFIX)})
GROUP BY key ORDER BY count() DESC, key ASC
LIMIT ${bind('UInt32', limit)}`
}
