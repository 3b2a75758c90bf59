import { GOAL } from '../../dimensions'
import type { Query } from '../model'
import type { HumanPlan } from '../plan'
import type { Goal } from '../../../sites/goals'
import { goalCondition } from './filters'
import { breakdownSource } from './rows'
import { queryWindow } from './scope'
import { type Fragment, bind, join, raw, sql } from '../../../storage/clickhouse/sql'
import { selected } from './selection'
import { statsSql } from './stats'

/** The event name of a goal's events: a page goal's are pageviews. The sort of events narrows to it. */
export const goalEventName = (goal: Pick<Goal, 'type' | 'matchValue'>) => (goal.type === 'page' ? 'pageview' : goal.matchValue)

/** The event names of goals' events, each once, as a list `name IN` takes (an event goal's name bound as its condition binds it). */
function goalEventNames(goals: readonly Pick<Goal, 'type' | 'matchValue'>[]): Fragment {
  const byName = new Map(goals.map((g) => [goalEventName(g), g.type === 'page' ? raw("'pageview'") : sql`${bind('String', g.matchValue)}`]))
  return sql`(${join([...byName.values()], ', ')})`
}

/**
 * One row a goal: unique converters, fires, conversion rate over all visitors, revenue in its
 * currency. With other dimensions beside the goal (`property` combining them, holdsGoal), one row
 * a goal and the values its conversions hold, as a JSON array in the property's order.
 *
 * Conversions are read from the events of the goals' names alone. All visitors of the window (the
 * rate's whole) come, under the rollup plan (unfiltered), from the totals read's statement under
 * that plan: the rolled days from the rollup, the others from the sessions rollup; otherwise from
 * the selected events.
 */
export function goalBreakdownSql(query: Query, property = GOAL, plan: HumanPlan = { table: 'events', visits: false }): Fragment {
  const limit = bind('UInt32', query.limit)
  if (!query.goals.length)
    return sql`SELECT '' AS value, 0 AS visitors, 0 AS events, 0 AS total_visitors, 0 AS revenue, '' AS currency WHERE 0 LIMIT ${limit}`
  const scope = queryWindow(query)
  const events = selected(query, scope)
  const source = property === GOAL ? { from: raw('events'), value: raw('goal'), presence: null } : breakdownSource(property, scope)
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
  const total =
    plan.table === 'rollup'
      ? sql`SELECT visitors FROM (${statsSql(query, plan)})`
      : sql`SELECT uniqExact(visitor_id) AS visitors FROM events WHERE ${events}`
  // the conversions grouped first, then the one row of the total beside each of their few rows
  return sql`
SELECT value, conversions.visitors AS visitors, events, total.visitors AS total_visitors, revenue, currency
FROM (
  SELECT value, uniqExact(visitor_id) AS visitors, count() AS events,
         sumIf(revenue_amount, revenue_currency = goal_currency AND goal_currency != '') AS revenue, any(goal_currency) AS currency
  FROM (
    SELECT visitor_id, revenue_amount, revenue_currency, arrayJoin(arrayFilter(g -> g != '', [${tags}])) AS goal,
           transform(goal, ${names}, ${currencies}, '') AS goal_currency, ${source.value} AS value
    FROM ${source.from} WHERE ${join(source.presence ? [events, source.presence] : [events], ' AND ')} AND name IN ${goalEventNames(query.goals)}
  )
  GROUP BY value
) AS conversions
CROSS JOIN (${total}) AS total
ORDER BY visitors DESC, value ASC
LIMIT ${limit}`
}
