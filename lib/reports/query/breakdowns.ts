import { GOAL, PROPERTY_PREFIX, dimension, hasEngagement, isVisitAttribute } from '../dimensions'
import { execute } from '../../storage/clickhouse/execute'
import type { ClickHouse } from '../../storage/clickhouse/types'
import type { Query, Read, RolledDays } from './model'
import { type ReadPlan, readsBotHits, unfilteredRollupKey } from './plan'
import { planOf, plansOf, runPlanned } from './run'
import { type BreakdownRow, type Totals, shapeBreakdown, shapeTotals } from './shape'
import {
  WINDOW_TOTALS,
  eventPropertiesSql,
  rolledEventPropertiesSql,
  rolledOnDemandEventsSql,
  rolledVisitAttributesSql,
  visitAttributesFromSessionsSql,
} from './compile/breakdowns-at-once'
import { queryScope, selected, visitFilters } from './compile/selection'
import { statsSql } from './compile/stats'
import { sql } from '../../storage/clickhouse/sql'

/**
 * Many breakdowns of one query (an export's every property) from the collector's events, each
 * the same rows as the breakdown read of that property alone. Properties whose plans can share
 * a statement (compile/breakdowns-at-once.ts) are read together: visit attributes over rolled
 * days, visit attributes from the sessions rollup, event properties without engagement. The rest
 * are read one by one, as GET /breakdown reads them.
 *
 * With `totals`, the window's totals come along when their plan is that of the visit attributes
 * over rolled days (the same rolled days, read the same way): they are that statement's row of
 * WINDOW_TOTALS. Otherwise `totals` is null and the caller reads them.
 */
export async function breakdownsAtOnce(
  clickhouse: ClickHouse,
  query: Query,
  properties: readonly string[],
  options: { totals?: boolean } = {},
): Promise<{ breakdowns: Record<string, BreakdownRow[]>; totals: Totals | null }> {
  const reads = properties.map((property): Read => ({ kind: 'breakdown', property }))
  // the first read's lookup (the window's rolled days, with today's partial rollup for a page
  // breakdown) is run once and serves the others (run.ts, lookUpOnce)
  const plans = reads.length ? [await planOf(clickhouse, query, reads[0])] : []
  // the lookups of the properties rolled up on demand in one statement (run.ts, plansOf)
  const [statsPlan, rest] = await Promise.all([
    options.totals && reads.length ? planOf(clickhouse, query, { kind: 'stats' }) : null,
    plansOf(clickhouse, query, reads.slice(1)),
  ])
  plans.push(...rest)
  const groups: Groups = { rolled: [], rolledEvents: [], demandEvents: [], sessions: [], events: [], alone: [] }
  plans.forEach((step, i) => groups[groupOf(query, properties[i], step)].push(i))
  // a group over rolled days reads the days not rolled up once for all its members: those of its first (a
  // property of the daily rollup where there is one); a member rolled up over other days is read alone
  const rolledOf = (i: number) => {
    const { plan } = plans[i]
    if (plan.table !== 'rollup') throw new Error('a rolled group without the rollup plan')
    return plan.rolled
  }
  for (const name of ['rolled', 'demandEvents'] as const) {
    const reference = groups[name].find((i) => rolledOf(i).filtersKey === undefined) ?? groups[name][0]
    if (reference === undefined) continue
    const same = groups[name].filter((i) => i !== reference && sameDays(rolledOf(i), rolledOf(reference)))
    groups.alone.push(...groups[name].filter((i) => i !== reference && !same.includes(i)))
    groups[name] = [reference, ...same]
  }
  // where each member's rolled rows are stored: under its name (the daily rollup) or its key (rolled up on demand)
  const storedAs = (names: readonly string[]) =>
    names.map((name) => (name === WINDOW_TOTALS ? WINDOW_TOTALS : (rolledOf(properties.indexOf(name)).filtersKey ?? name)))
  // the totals as one more visit attribute of the rolled group, read under the same plan
  const rolledPlan = groups.rolled.length ? plans[groups.rolled[0]].plan : null
  const withTotals =
    statsPlan !== null &&
    !statsPlan.builds.length &&
    statsPlan.plan.table === 'rollup' &&
    rolledPlan?.table === 'rollup' &&
    !statsPlan.plan.rolled.partial &&
    statsPlan.plan.rolled.filtersKey === undefined &&
    sameDays(statsPlan.plan.rolled, rolledPlan.rolled)
  // the goal breakdown with the event properties: unfiltered, it reads the same events
  const goalAt = properties.indexOf(GOAL)
  const withGoals = goalAt >= 0 && groups.events.length > 0 && !query.filters.length && query.goals.length > 0
  if (withGoals) groups.alone.splice(groups.alone.indexOf(goalAt), 1)
  // the window's visitors the goals' rate is over: under the rollup plan the goal read takes them from
  // the totals read's statement (goalBreakdownSql), so they are not counted again over every event
  const goalPlan = withGoals ? plans[goalAt].plan : null
  const goalTotal = goalPlan?.table === 'rollup' ? (withTotals ? 'rolled' : 'read') : 'events'
  let goalTotalRow: Record<string, unknown> | undefined
  // a group of one is read alone (the rolled group with the totals is two, the events with the goals)
  for (const name of ['rolled', 'rolledEvents', 'demandEvents', 'sessions', 'events'] as const)
    if (groups[name].length === 1 && !(name === 'rolled' && withTotals) && !(name === 'events' && withGoals))
      groups.alone.push(...groups[name].splice(0))

  const rowsByProperty = new Map<string, Record<string, unknown>[]>(properties.map((p) => [p, []]))
  /** The WINDOW_TOTALS row of a group's statement, by group. */
  const windowRows = new Map<keyof Groups, Record<string, unknown>>()
  const together = async (
    group: keyof Groups,
    statement: (properties: string[]) => Parameters<typeof execute>[1],
    extra: string[] = [],
  ) => {
    const indexes = groups[group]
    if (!indexes.length) return
    const rows = await execute<Record<string, unknown> & { property: string }>(
      clickhouse,
      statement([...indexes.map((i) => properties[i]), ...extra]),
    )
    for (const row of rows) {
      if (row.property === WINDOW_TOTALS) windowRows.set(group, row)
      else rowsByProperty.get(row.property)?.push(row)
    }
  }
  const first = (indexes: number[]) => plans[indexes[0]].plan
  const results = new Map<string, BreakdownRow[]>()
  await Promise.all([
    together(
      'rolled',
      (names) => {
        const plan = first(groups.rolled)
        if (plan.table !== 'rollup') throw new Error('rolled visit attributes without the rollup plan')
        return rolledVisitAttributesSql(query, names, queryScope(query, plan), plan.rolled, storedAs(names))
      },
      withTotals ? [WINDOW_TOTALS] : [],
    ),
    together('demandEvents', (names) => {
      const plan = first(groups.demandEvents)
      if (plan.table !== 'rollup') throw new Error('event properties rolled up on demand without the rollup plan')
      const scope = queryScope(query, plan)
      return rolledOnDemandEventsSql(query, names, storedAs(names), scope, plan.rolled, selected(query, scope))
    }),
    together('rolledEvents', (names) => {
      const plan = first(groups.rolledEvents)
      if (plan.table !== 'rollup') throw new Error('rolled event properties without the rollup plan')
      const scope = queryScope(query, plan)
      return rolledEventPropertiesSql(query, names, scope, plan.rolled, selected(query, scope))
    }),
    together('sessions', (names) => {
      const scope = queryScope(query, { table: 'sessions' })
      return visitAttributesFromSessionsSql(query, names, scope, visitFilters(query, scope), selected(query, scope))
    }),
    together('events', (names) => {
      const scope = queryScope(query, { table: 'events', visits: false })
      return eventPropertiesSql(query, names, scope, selected(query, scope), withGoals ? query.goals : [], goalTotal === 'events')
    }),
    withGoals && goalPlan?.table === 'rollup' && goalTotal === 'read'
      ? execute<Record<string, unknown>>(clickhouse, sql`SELECT visitors FROM (${statsSql(query, goalPlan)})`).then((rows) => {
          goalTotalRow = rows[0]
        })
      : undefined,
    ...groups.alone.map(async (i) => {
      const read = reads[i]
      results.set(
        properties[i],
        // under the plan made above: its lookup is not run again
        shapeBreakdown(properties[i], await runPlanned(clickhouse, query, read, plans[i]), readsBotHits(query, read) ? false : undefined),
      )
    }),
  ])
  if (withGoals) {
    // as the goal read's rows: conversions are its events, and every visitor of the window its total
    const total = goalTotal === 'events' ? windowRows.get('events') : goalTotal === 'rolled' ? windowRows.get('rolled') : goalTotalRow
    const rows = (rowsByProperty.get(GOAL) ?? []).map((row) => ({ ...row, events: row.conversions, total_visitors: total?.visitors ?? 0 }))
    results.set(GOAL, shapeBreakdown(GOAL, rows))
  }
  const breakdowns: Record<string, BreakdownRow[]> = {}
  for (const property of properties)
    breakdowns[property] = results.get(property) ?? shapeBreakdown(property, rowsByProperty.get(property) ?? [])
  return { breakdowns, totals: withTotals ? totalsOf(windowRows.get('rolled')) : null }
}

const sameDays = (a: RolledDays, b: RolledDays) =>
  a.days.join() === b.days.join() && a.events.join() === b.events.join() && a.sums.join() === b.sums.join()

/**
 * The totals from their row of rolledVisitAttributesSql, as shapeTotals takes the stats read's:
 * the same sums, and the average duration divided as that read divides it. No row: no visits.
 */
const totalsOf = (row: Record<string, unknown> | undefined): Totals =>
  shapeTotals(row && { ...row, facts_visits: row.visits, duration: row.avg_duration })

/** Properties (their indexes) by the statement they share. */
type Groups = Record<'rolled' | 'rolledEvents' | 'demandEvents' | 'sessions' | 'events' | 'alone', number[]>

/** Which statement a property's breakdown can share, from its plan; `alone` when none. */
function groupOf(query: Query, property: string, { builds, plan, after }: ReadPlan): keyof Groups {
  if (builds.length || after?.length || property === 'goal' || readsBotHits(query, { kind: 'breakdown', property })) return 'alone'
  if (plan.table === 'rollup') {
    // unfiltered: the rows of the days not rolled up need no filters, and are the same for every property of a group
    if (query.filters.length) return 'alone'
    if (plan.rolled.filtersKey !== undefined) {
      // rolled up on demand, unfiltered (plan.ts): visit attributes with the daily ones, event properties without engagement together
      if (plan.rolled.filtersKey !== unfilteredRollupKey(property) || plan.rolled.partial) return 'alone'
      if (isVisitAttribute(property)) return 'rolled'
      return (dimension(property)?.scope === 'event' || property.startsWith(PROPERTY_PREFIX)) && !hasEngagement(property)
        ? 'demandEvents'
        : 'alone'
    }
    // the days not rolled up from the sessions rollup (unrolledFromSessions): visit attributes take no partial rollup
    if (isVisitAttribute(property)) return plan.rolled.partial ? 'alone' : 'rolled'
    return property === 'path' || property === 'hostname' || property === 'entry_page' || property === 'exit_page'
      ? 'rolledEvents'
      : 'alone'
  }
  if (plan.table === 'sessions') return isVisitAttribute(property) ? 'sessions' : 'alone'
  if (plan.table === 'events' && !plan.visits && !hasEngagement(property) && property !== 'entry_page' && property !== 'exit_page')
    return 'events'
  return 'alone'
}
