import type { Query } from '../model'
import { goalCondition } from './filters'
import { queryWindow } from './scope'
import { type Fragment, bind, join, sql } from '../../../storage/clickhouse/sql'
import { selected } from './selection'

/** One row a goal: unique converters, fires, conversion rate over all visitors, revenue in its currency. */
export function goalBreakdownSql(query: Query): Fragment {
  const limit = bind('UInt32', query.limit)
  if (!query.goals.length)
    return sql`SELECT '' AS value, 0 AS visitors, 0 AS events, 0 AS total_visitors, 0 AS revenue, '' AS currency WHERE 0 LIMIT ${limit}`
  const events = selected(query, queryWindow(query))
  const tags = join(
    query.goals.map((g) => sql`if(${goalCondition(g)}, ${bind('String', g.name)}, '')`),
    ', ',
  )
  const names = bind(
    'Array(String)',
    query.goals.map((g) => g.name),
  )
  const currencies = bind(
    'Array(String)',
    query.goals.map((g) => g.currency ?? ''),
  )
  return sql`
SELECT goal AS value, uniqExact(visitor_id) AS visitors, count() AS events, any(total.visitors) AS total_visitors,
       sumIf(revenue_amount, revenue_currency = goal_currency AND goal_currency != '') AS revenue, any(goal_currency) AS currency
FROM (
  SELECT visitor_id, revenue_amount, revenue_currency, arrayJoin(arrayFilter(g -> g != '', [${tags}])) AS goal,
         transform(goal, ${names}, ${currencies}, '') AS goal_currency
  FROM events WHERE ${events}
) AS conversions
CROSS JOIN (SELECT uniqExact(visitor_id) AS visitors FROM events WHERE ${events}) AS total
GROUP BY goal
ORDER BY visitors DESC, value ASC
LIMIT ${limit}`
}
