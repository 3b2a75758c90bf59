import { type Query, TOTALS } from '../model'
import { type Plan, SESSION_DIMENSIONS, onVisitAttributes } from '../plan'
import { rawDaySpans } from '../range'
import { dimensionSql, filterConditions, selectedEvents } from './filters'
import { type Scope, daySpansScope, visitsBeganIn, windowScope } from './scope'
import { type Fragment, raw } from './sql'
import { visitAttributeRows } from './visits'

/** The query's scope: its window, or under the rollup plan the days the rollup does not cover. */
export function queryScope(query: Query, plan: Plan): Scope {
  if (plan.table === 'rollup') return daySpansScope(query.siteId, rawDaySpans(query.range, plan.rolled.days))
  return windowScope(query.siteId, query.range)
}

/** The selected events of the query: its scope and every filter. */
export const selected = (query: Query, scope: Scope) => selectedEvents(query.filters, query.goals, scope)

/** The query's filters on visit attributes, which narrow whole-visit facts read from the sessions rollup as well. */
export const visitFilters = (query: Query, scope: Scope): Fragment[] =>
  filterConditions(query.filters.filter((f) => SESSION_DIMENSIONS.has(f.dimension)), query.goals, scope)

/**
 * Under the rollup plan, the rows of the days not rolled up (today, mostly) from the sessions
 * rollup rather than events, where that is exact: the totals or a visit attribute, under filters
 * on visit attributes only. Undefined where events must be read.
 */
export function unrolledFromSessions(query: Query, property: string, plan: Plan, scope: Scope): Fragment | undefined {
  if (plan.table !== 'rollup' || !onVisitAttributes(query)) return undefined
  if (property !== TOTALS && !SESSION_DIMENSIONS.has(property)) return undefined
  const value = property === TOTALS ? raw("''") : dimensionSql(property)
  return visitAttributeRows(query.siteId, value, visitsBeganIn(rawDaySpans(query.range, plan.rolled.days)), visitFilters(query, scope))
}
