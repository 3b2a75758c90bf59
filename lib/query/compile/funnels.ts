import type { Goal } from '../../goals'
import type { FunnelStep } from '../../store'
import type { Query } from '../model'
import { goalCondition } from './filters'
import { windowScope } from './scope'
import { selected } from './selection'
import { type Fragment, bind, empty, join, raw, sql } from './sql'

/** The longest a visit can last: it ends when the visitor id rotates at the site-local midnight. */
const VISIT_SPAN_MS = 86_400_000

/** The condition an event meets to reach a step; a goal step whose goal is gone is never reached. */
/** The event names a step's events carry, which the sort key narrows to. */
function stepNames(step: FunnelStep, goals: readonly Goal[]): string[] {
  const goal = step.type === 'goal' ? goals.find((g) => g.id === step.value) : undefined
  const type = goal?.type ?? step.type
  if (type === 'page') return ['pageview']
  return [goal ? goal.matchValue : step.value]
}

export function stepCondition(step: FunnelStep, goals: readonly Goal[]): Fragment {
  if (step.type === 'page') return goalCondition({ type: 'page', matchValue: step.value })
  if (step.type === 'event') return goalCondition({ type: 'event', matchValue: step.value })
  const goal = goals.find((g) => g.id === step.value)
  return goal ? goalCondition(goal) : raw('toUInt8(0)')
}

/** Funnels have at most this many steps (lib/funnels.ts allows 8); a step's place fits in the low 4 bits of a time. */
const STEP_SLOTS = 16

/**
 * Per level reached, the visitors whose furthest visit reached it: a visit reaches step k when
 * steps 1 to k happen in that order within it, each strictly after the one before. Steps out of
 * order, or split across visits, do not count. With filters, the visits holding a selected event,
 * all their events in the window.
 *
 * windowFunnel in strict_increase mode walks each visit's events; only events that meet some step
 * are read. An event meeting several steps is one row per step, at its time in milliseconds times
 * 16 plus (15 - step): later steps of one event sort first, so no event fills two steps (say
 * /pricing/pro for both "/pricing*" and "/pricing/pro"), and a step met again does not restart the
 * chain ahead of its own next step. The window is two days: no visit outlasts its site-local day.
 */
export function funnelLevelsSql(query: Query, steps: readonly FunnelStep[]): Fragment {
  const scope = windowScope(query.siteId, query.range)
  const conditions = steps.map((s) => sql`(${stepCondition(s, query.goals)})`)
  const visits = query.filters.length ? sql` AND session_id IN (SELECT session_id FROM events WHERE ${selected(query, scope)})` : empty
  const window = raw(String(2 * VISIT_SPAN_MS * STEP_SLOTS))
  const levels = raw(steps.map((_, k) => `step = ${k}`).join(', '))
  return sql`
SELECT level, count() AS visitors
FROM (
  SELECT visitor_id, max(visit_level) AS level
  FROM (
    SELECT visitor_id, session_id,
           windowFunnel(${window}, 'strict_increase')(toUInt64(toUnixTimestamp64Milli(timestamp)) * ${raw(String(STEP_SLOTS))} + toUInt64(${raw(String(STEP_SLOTS - 1))} - step), ${levels}) AS visit_level
    FROM events
    ARRAY JOIN arrayFilter(k -> [${join(conditions, ', ')}][k + 1], range(${raw(String(steps.length))})) AS step
    WHERE ${scope.events} AND name IN ${bind('Array(String)', [...new Set(steps.flatMap((s) => stepNames(s, query.goals)))])} AND (${join(conditions, ' OR ')})${visits}
    GROUP BY visitor_id, session_id
  )
  GROUP BY visitor_id
)
WHERE level > 0
GROUP BY level`
}
