import { FILTER_GROUPS, PROPERTY_PREFIX, combinedParts, dimension, isBehavioural } from '../../dimensions'
import { ApiError } from '../../../core/errors'
import { type Goal, pageGoalPattern } from '../../../sites/goals'
import { type Filter, goalsOfFilter } from '../model'
import type { Scope } from './scope'
import { type Fragment, bind, join, raw, sql } from '../../../storage/clickhouse/sql'

/**
 * A dimension's value on an event: its allow-listed SQL over events (dimensions.ts), or a custom
 * property by bound key; a combination of dimensions, their values together (combinedValue).
 */
export function dimensionSql(name: string): Fragment {
  const parts = combinedParts(name)
  if (parts) return combinedValue(parts.map((part) => sql`toString(${dimensionSql(part)})`))
  if (name.startsWith(PROPERTY_PREFIX)) return sql`props[${bind('String', name.slice(PROPERTY_PREFIX.length))}]`
  const column = dimension(name)?.standalone.events
  // parsing rejects unknown dimensions; this guards the allow-list itself
  if (!column) throw new ApiError(400, `unknown dimension "${name}"`)
  return raw(column)
}

/** The values of several dimensions (strings) as one row value: a JSON array of them, in order. */
export const combinedValue = (values: readonly Fragment[]): Fragment => sql`toJSONString([${join(values, ', ')}])`

/** The operator applied to an expression, the values bound. */
export function operatorSql(expr: Fragment, operator: Filter['operator'], values: string[]): Fragment {
  const list = bind('Array(String)', values)
  switch (operator) {
    case 'is':
      return sql`${expr} IN ${list}`
    case 'is_not':
      return sql`${expr} NOT IN ${list}`
    case 'contains':
      return sql`multiSearchAnyCaseInsensitiveUTF8(${expr}, ${list})`
    case 'contains_not':
      return sql`NOT multiSearchAnyCaseInsensitiveUTF8(${expr}, ${list})`
    case 'matches':
      return sql`arrayExists(pattern -> match(${expr}, pattern), ${list})`
    case 'matches_not':
      return sql`NOT arrayExists(pattern -> match(${expr}, pattern), ${list})`
  }
}

/** The condition a goal sets on one event. */
export function goalCondition(goal: Pick<Goal, 'type' | 'matchValue'>): Fragment {
  if (goal.type === 'event') return sql`name = ${bind('String', goal.matchValue)}`
  return sql`(kind = 'pageview' AND pathname LIKE ${bind('String', pageGoalPattern(goal.matchValue))})`
}

/**
 * Filter conditions on `events`. Column dimensions filter rows directly: visit-scoped ones are
 * the same on every event of a visit, so whole visits are kept. entry_page and exit_page keep
 * the visits (begun in the scope's visit span) whose first or last page matches, entry_page_hostname
 * and exit_page_hostname those whose first or last pageview's hostname does; goal keeps the
 * visits with a converting event in the scope, has_done those with a matching event, has_not_done
 * the others; a filter of groups (FILTER_GROUPS) holds where any group's conditions all do, or
 * (is_not) where none does. Goal names were checked against `goals` by parsing.
 */
export function filterConditions(filters: readonly Filter[], goals: readonly Goal[], scope: Scope): Fragment[] {
  return filters.map((f): Fragment => {
    if (f.dimension === FILTER_GROUPS) {
      const groups = (f.groups ?? []).map((group) =>
        group.length ? sql`(${join(filterConditions(group, goals, scope), ' AND ')})` : raw('1'),
      )
      const any = groups.length ? sql`(${join(groups, ' OR ')})` : raw('0')
      return f.operator === 'is_not' ? sql`NOT ${any}` : any
    }
    if (isBehavioural(f.dimension)) {
      // the first value names the event dimension the rest are matched against
      const [inner, ...values] = f.value
      const done = sql`session_id IN (SELECT session_id FROM ${raw(scope.table)} WHERE ${scope.events} AND ${operatorSql(dimensionSql(inner), f.operator, values)})`
      return f.dimension === 'has_not_done' ? sql`NOT ${done}` : done
    }
    if (f.dimension === 'goal') {
      const matched = goalsOfFilter(f, goals)
      const converting = matched.length ? join(matched.map(goalCondition), ' OR ') : raw('0')
      const converted = sql`session_id IN (SELECT session_id FROM ${raw(scope.table)} WHERE ${scope.events} AND (${converting}))`
      return f.operator === 'is_not' ? sql`NOT ${converted}` : converted
    }
    if (f.dimension === 'entry_page' || f.dimension === 'exit_page') {
      const merge = raw(f.dimension === 'entry_page' ? 'argMinMerge(entry_page)' : 'argMaxMerge(exit_page)')
      return sql`session_id IN (SELECT session_id FROM sessions WHERE site_id = ${bind('UUID', scope.siteId)} AND ${scope.visitsBegan} GROUP BY session_id HAVING ${operatorSql(merge, f.operator, f.value)})`
    }
    if (f.dimension === 'entry_page_hostname' || f.dimension === 'exit_page_hostname') {
      const pick = raw(f.dimension === 'entry_page_hostname' ? 'argMinIf' : 'argMaxIf')
      return sql`session_id IN (SELECT session_id FROM ${raw(scope.table)} WHERE ${scope.visitScan} GROUP BY session_id HAVING ${operatorSql(sql`${pick}(hostname, timestamp, kind = 'pageview')`, f.operator, f.value)})`
    }
    return operatorSql(dimensionSql(f.dimension), f.operator, f.value)
  })
}

/** The selected events: the scope and every filter. */
export const selectedEvents = (filters: readonly Filter[], goals: readonly Goal[], scope: Scope) =>
  join([scope.events, ...filterConditions(filters, goals, scope)], ' AND ')
