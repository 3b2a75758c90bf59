import type { Query } from '../model'
import { queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, sql } from '../../../storage/clickhouse/sql'

/** Custom property keys only: the collector files vitals attribution under props as well, prefixed. */
export const COLLECTOR_PREFIX = 'attribution.'

/** The custom property keys the selected events carry, most used first, at most `limit`. */
export function propertyKeysSql(query: Query, limit: number): Fragment {
  return sql`
SELECT key FROM events ARRAY JOIN mapKeys(props) AS key
WHERE ${selected(query, queryWindow(query))} AND NOT startsWith(key, ${bind('String', COLLECTOR_PREFIX)})
GROUP BY key ORDER BY count() DESC, key ASC
LIMIT ${bind('UInt32', limit)}`
}
