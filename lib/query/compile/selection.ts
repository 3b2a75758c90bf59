import type { Query } from '../model'
import { type Plan, SESSION_DIMENSIONS } from '../plan'
import { rawDaySpans } from '../range'
import { filterConditions, selectedEvents } from './filters'
import { type Scope, daySpansScope, windowScope } from './scope'
import type { Fragment } from './sql'

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
