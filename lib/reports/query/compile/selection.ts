import { type Query, type RolledDays, TOTALS } from '../model'
import { isVisitAttribute } from '../../dimensions'
import { type HumanPlan, onVisitAttributes } from '../plan'
import { type ResolvedRange, rawDaySpans } from '../range'
import { dimensionSql, filterConditions, selectedEvents } from './filters'
import { type Scope, daySpansScope, queryWindow } from './scope'
import { type Fragment, raw } from '../../../storage/clickhouse/sql'
import { visitAttributeRows } from './visits'

/**
 * What a window leaves to events when part of it is rolled up: the days not rolled up, without the
 * visits the partial rollup holds. rowsWithRollup reads those from the rollups.
 */
export const unrolledScope = (siteId: string, range: ResolvedRange, rolled: RolledDays): Scope =>
  rolled.partial
    ? daySpansScope(siteId, rawDaySpans(range, [...rolled.days, rolled.partial.day]), { day: rolled.partial })
    : daySpansScope(siteId, rawDaySpans(range, rolled.days))

/** The query's scope: its window, or under the rollup plan what the rollups do not cover. */
export function queryScope(query: Query, plan: HumanPlan): Scope {
  if (plan.table === 'rollup') return unrolledScope(query.siteId, query.range, plan.rolled)
  if (plan.table === 'events' && plan.sample) return { ...queryWindow(query), sample: plan.sample }
  return queryWindow(query)
}

/** The selected events of the query: its scope and every filter. */
export const selected = (query: Query, scope: Scope) => selectedEvents(query.filters, query.goals, scope)

/** The query's filters on visit attributes, which narrow whole-visit facts read from the sessions rollup as well. */
export const visitFilters = (query: Query, scope: Scope): Fragment[] =>
  filterConditions(
    query.filters.filter((f) => isVisitAttribute(f.dimension)),
    query.goals,
    scope,
  )

/**
 * Under the rollup plan, the rows of the days not rolled up (today, mostly) from the sessions
 * rollup rather than events, where that is exact: the totals or a visit attribute, under filters
 * on visit attributes only. Undefined where events must be read.
 */
export function unrolledFromSessions(query: Query, property: string, plan: HumanPlan, scope: Scope): Fragment | undefined {
  if (plan.table !== 'rollup' || !onVisitAttributes(query)) return undefined
  if (property !== TOTALS && !isVisitAttribute(property)) return undefined
  const value = property === TOTALS ? raw("''") : dimensionSql(property)
  return visitAttributeRows(query.siteId, value, scope.visitsBegan, visitFilters(query, scope), { visitorStates: !!scope.partial })
}
