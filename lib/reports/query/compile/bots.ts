import { ApiError } from '../../../core/errors'
import { dimension } from '../../dimensions'
import type { Query, Read } from '../model'
import type { ResolvedRange } from '../range'
import { operatorSql } from './filters'
import { queryWindow } from './scope'
import { bucket } from './series'
import { type Fragment, bind, join, raw, sql } from '../../../storage/clickhouse/sql'

/** A dimension's value on a bot hit: its allow-listed SQL over bot_events (dimensions.ts). */
function botDimensionSql(name: string): Fragment {
  const column = dimension(name)?.standalone.bots
  // parsing admits only what bot hits record; this guards the allow-list itself
  if (!column) throw new ApiError(400, `${name} is not recorded for bot hits`)
  return raw(column)
}

/**
 * The measures of bot hits. A bot hit has no visitor id and no visit: `visitors` counts distinct
 * crawlers (by name), `pageviews` counts hits, and the visit measures are zero.
 */
const BOT_MEASURES = raw('uniqExact(bot_name) AS visitors, 0 AS visits, count() AS pageviews, 0 AS events')

/** The site's bot hits in the window that pass every filter. */
function botHits(query: Query): Fragment {
  const filters = query.filters.map((f) => operatorSql(botDimensionSql(f.dimension), f.operator, f.value))
  return join([queryWindow(query).events, ...filters], ' AND ')
}

/** A read of bot hits: totals (as the totals row of human reads, its visit facts zero), a series, or the rows of one property. */
export function botReadSql(query: Query, read: Read): Fragment {
  const where = botHits(query)
  if (read.kind === 'stats')
    return sql`SELECT ${BOT_MEASURES}, 0 AS facts_visits, 0 AS bounces, 0 AS duration FROM bot_events WHERE ${where}`
  if (read.kind === 'series') return botSeriesSql(query.range, where)
  return sql`
SELECT ${botDimensionSql(read.property)} AS value, ${BOT_MEASURES}
FROM bot_events WHERE ${where}
GROUP BY value
ORDER BY visitors DESC, pageviews DESC, value ASC
LIMIT ${bind('UInt32', query.limit)}`
}

function botSeriesSql(range: ResolvedRange, where: Fragment): Fragment {
  return sql`
SELECT toUnixTimestamp(${bucket(range)}) AS bucket, uniqExact(bot_name) AS visitors, 0 AS visits, count() AS pageviews
FROM bot_events WHERE ${where}
GROUP BY bucket ORDER BY bucket`
}
