import type { Goal } from '../../../sites/goals'
import type { FunnelStep } from '../../../sites/definition-records'
import type { Query, RolledDays } from '../model'
import { goalCondition } from './filters'
import { goalEventName } from './goals'
import { type Scope, daySpansScope, queryWindow } from './scope'
import { selected, unrolledScope } from './selection'
import { ROLLUP_VERSION, rolledRows, signatureOf } from './day-rollups'
import { localDay } from './rows'
import { daySpans } from '../range'
import { type Fragment, bind, empty, join, raw, sql } from '../../../storage/clickhouse/sql'

/** The longest a visit can last: it ends when the visitor id rotates at the site-local midnight. */
const VISIT_SPAN_MS = 86_400_000

/** What events meet a step: pageviews of a path pattern, or events of a name; null for a goal step whose goal is gone. */
type StepMatch = Pick<Goal, 'type' | 'matchValue'> | null

function stepMatch(step: FunnelStep, goals: readonly Goal[]): StepMatch {
  if (step.type !== 'goal') return { type: step.type, matchValue: step.value }
  return goals.find((g) => g.id === step.value) ?? null
}

/**
 * Whether one event can meet both steps. Paths can meet both patterns unless their literal parts
 * before the first * already differ (a sound test that keeps the check small).
 */
function mayOverlap(a: StepMatch, b: StepMatch): boolean {
  if (!a || !b || goalEventName(a) !== goalEventName(b)) return false
  if (a.type === 'event' || b.type === 'event') return true
  const prefix = (pattern: string) => pattern.split('*')[0]
  const [pa, pb] = [prefix(a.matchValue), prefix(b.matchValue)]
  if (!a.matchValue.includes('*') && !b.matchValue.includes('*')) return a.matchValue === b.matchValue
  return pa.startsWith(pb) || pb.startsWith(pa)
}

/** Funnels have at most this many steps (lib/sites/funnels.ts allows 8); a step's place fits in the low 4 bits of a time. */
const STEP_SLOTS = 16

/**
 * Per level reached, the visitors whose furthest visit reached it: a visit reaches step k when
 * steps 1 to k happen in that order within it, each strictly after the one before. Steps out of
 * order, or split across visits, do not count. With filters, the visits holding a selected event,
 * all their events in the window.
 *
 * windowFunnel in strict_increase mode walks each visit's events; only events that meet some step
 * are read. Where one event may meet two steps in a row (/pricing/pro for both "/pricing*" and
 * "/pricing/pro"), windowFunnel would let it fill neither (the first step met again restarts the
 * chain) or, in its default mode, both. Then the event is one row per step it meets, at its time in
 * milliseconds times 16 plus (15 - step): its later steps sort first, so it fills one step only and
 * never moves the chain ahead of its own next step. The window is two days: no visit outlasts its
 * site-local day.
 *
 * Only the visits that reached a step go on to be grouped by visitor.
 */
export const funnelLevelsSql = (query: Query, steps: readonly FunnelStep[]): Fragment => visitorLevels(query, steps, queryWindow(query))

/**
 * funnelLevelsSql over a scope; with `timezone`, per site-local day as well (column `day`). A
 * visitor id lives one site-local day and a visit never crosses its midnight, so a window of
 * whole days has, per level, the sum of its days' visitors.
 */
function visitorLevels(query: Query, steps: readonly FunnelStep[], scope: Scope, timezone?: string): Fragment {
  const matches = steps.map((s) => stepMatch(s, query.goals))
  const conditions = matches.map((m) => (m ? sql`(${goalCondition(m)})` : raw('toUInt8(0)')))
  const names = [...new Set(matches.flatMap((m) => (m ? [goalEventName(m)] : [])))]
  const visits = query.filters.length ? sql` AND session_id IN (SELECT session_id FROM events WHERE ${selected(query, scope)})` : empty
  const time = raw('toUInt64(toUnixTimestamp64Milli(timestamp))')
  const perStep = matches.some((m, i) => i > 0 && mayOverlap(matches[i - 1], m))
  const funnel = perStep
    ? sql`windowFunnel(${raw(String(2 * VISIT_SPAN_MS * STEP_SLOTS))}, 'strict_increase')(${time} * ${raw(String(STEP_SLOTS))} + toUInt64(${raw(String(STEP_SLOTS - 1))} - step), ${raw(steps.map((_, k) => `step = ${k}`).join(', '))})`
    : sql`windowFunnel(${raw(String(2 * VISIT_SPAN_MS))}, 'strict_increase')(${time}, ${join(conditions, ', ')})`
  const rowPerStep = perStep
    ? sql`ARRAY JOIN arrayFilter(k -> [${join(conditions, ', ')}][k + 1], range(${raw(String(steps.length))})) AS step`
    : empty
  const [day, visitDay, visitorDay] = timezone
    ? [raw('day, '), sql`min(${localDay(timezone)}) AS day, `, raw('any(day) AS day, ')]
    : [empty, empty, empty]
  return sql`
SELECT ${day}level, count() AS visitors
FROM (
  SELECT visitor_id, ${visitorDay}max(visit_level) AS level
  FROM (
    SELECT visitor_id, session_id, ${visitDay}${funnel} AS visit_level
    FROM events ${rowPerStep}
    WHERE ${scope.events} AND name IN ${bind('Array(String)', names)} AND (${join(conditions, ' OR ')})${visits}
    GROUP BY visitor_id, session_id
    HAVING visit_level > 0
  )
  GROUP BY visitor_id
)
GROUP BY ${day}level`
}

/**
 * A funnel's levels rolled up per finished site-local day under `key` (lib/reports/query/funnels.ts):
 * per day and level the visitors funnelLevelsSql counts, value the level, stamped with the day's
 * signature. Every day gets a row of value '' so a day without a visitor in the funnel counts as
 * built; reads skip it.
 */
export function funnelRollupInsertSql(query: Query, steps: readonly FunnelStep[], key: string, days: RolledDays): Fragment {
  const { timezone } = query.range
  const dayList = bind('Array(Date)', days.days)
  const levels = visitorLevels(query, steps, daySpansScope(query.siteId, daySpans(days.days, timezone)), timezone)
  return sql`
INSERT INTO day_rollups (site_id, timezone, version, property, day, day_events, day_sum, value, visitors, visits, pageviews, events, bounces, duration_ms)
SELECT ${bind('UUID', query.siteId)}, ${bind('String', timezone)}, ${bind('UInt16', ROLLUP_VERSION)}, ${bind('String', key)}, day,
       ${signatureOf(days)},
       value, sum(visitors), 0, 0, 0, 0, 0
FROM (
  SELECT day, toString(level) AS value, visitors FROM (${levels})
  UNION ALL
  SELECT arrayJoin(${dayList}) AS day, '' AS value, toUInt64(0)
)
WHERE has(${dayList}, day)
GROUP BY day, value`
}

/** The levels of a funnel over a window of whole days: the rolled days' from the rollup under `key`, the rest's from events. */
export function funnelLevelsWithRollupSql(query: Query, steps: readonly FunnelStep[], key: string, rolled: RolledDays): Fragment {
  const stored = rolledRows(query.siteId, query.range.timezone, key, rolled, raw('value, visitors'))
  return sql`
SELECT level, sum(visitors) AS visitors
FROM (
  SELECT toUInt8(value) AS level, visitors FROM (${stored}) WHERE value != ''
  UNION ALL
  SELECT level, visitors FROM (${visitorLevels(query, steps, unrolledScope(query.siteId, query.range, rolled))})
)
GROUP BY level`
}
