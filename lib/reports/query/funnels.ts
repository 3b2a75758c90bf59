import type { DomainRepositories } from '../../sites/domain-services'
import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../../core/errors'
import type { Site } from '../../sites/sites'
import { funnelLevelsSql, funnelLevelsWithRollupSql, funnelRollupInsertSql } from './compile/funnels'
import { signaturesAndBuilt } from './compile/day-rollups'
import type { FunnelStep } from '../../sites/definition-records'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { type Query, asRolledDays } from './model'
import { type SignatureRow, daysOnDemand, lastDayOf } from './plan'
import { type ReportParams, collectorSource } from './parse'
import { collectorRead } from './behaviour'
import { rangeView, wholeDays } from './range'
import { type ReportDeps, prepare } from './reports'
import { execute, executeCommand } from '../../storage/clickhouse/execute'
import { fraction } from './shape'

type LevelRow = { level: number | string; visitors: number | string }

/**
 * The rollup key of a funnel's levels: a hash of what its steps match (a goal step by its goal's
 * definition, so a redefined goal is another key). Under the filtered rollups' prefix, whose rows
 * expire 30 days after their build (migration 0007).
 */
async function funnelRollupKey(query: Query, steps: readonly FunnelStep[]): Promise<string> {
  const matches = steps.map((s) => (s.type === 'goal' ? (query.goals.find((g) => g.id === s.value) ?? null) : s))
  const canonical = JSON.stringify(matches.map((m) => (m ? [m.type, 'matchValue' in m ? m.matchValue : m.value] : null)))
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical)))
  return `filters:funnel:${Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('')}`
}

/**
 * Visitors per furthest level of a funnel. Unfiltered over whole days, the finished days come from
 * their levels rolled up under the funnel's key, built on the first read that needs them (as a
 * filtered read's days are, plan.ts) and used while the day's signature is the one they were built
 * from; the rest (today) from events. A visitor id lives one site-local day and a visit never
 * crosses its midnight, so per level the window is the sum of its days.
 */
async function funnelLevels(clickhouse: ClickHouse, query: Query, steps: readonly FunnelStep[]): Promise<LevelRow[]> {
  if (query.filters.length || !wholeDays(query.range)) return execute<LevelRow>(clickhouse, funnelLevelsSql(query, steps))
  const { key, rolled } = await rollFunnelDays(clickhouse, query, steps)
  return execute<LevelRow>(clickhouse, funnelLevelsWithRollupSql(query, steps, key, rolled))
}

/** Builds the funnel's finished days of the window that are not rolled up, or changed since; returns its key and the days rolled. */
async function rollFunnelDays(clickhouse: ClickHouse, query: Query, steps: readonly FunnelStep[]) {
  const key = await funnelRollupKey(query, steps)
  const rows = await execute<SignatureRow>(clickhouse, signaturesAndBuilt(query.siteId, query.range, key, false))
  const { missing, rolled } = daysOnDemand(rows, lastDayOf(query.range))
  if (missing.length) await executeCommand(clickhouse, funnelRollupInsertSql(query, steps, key, asRolledDays(missing)), { bounded: true })
  return { key, rolled }
}

/** How many finished days the refresh rolls up ahead for each saved funnel: the dashboard's month. */
export const FUNNEL_AHEAD_DAYS = 31

/**
 * Rolls up the finished days (at most FUNNEL_AHEAD_DAYS back, never today) of each of a site's
 * saved funnels, as their first read would: called by the rollup refresh, so that a dashboard's
 * funnel read finds its days built. Returns the number of funnels.
 */
export async function refreshFunnelRollups(
  clickhouse: ClickHouse,
  repositories: Pick<DomainRepositories, 'funnels' | 'goals'>,
  siteId: string,
  window: { timezone: string; from: Temporal.ZonedDateTime; to: Temporal.ZonedDateTime },
  now: Date,
): Promise<number> {
  const funnels = await repositories.funnels.list(siteId)
  if (!funnels.length) return 0
  const goals = await repositories.goals.list(siteId)
  const earliest = window.to.subtract({ days: FUNNEL_AHEAD_DAYS })
  const from = Temporal.ZonedDateTime.compare(window.from, earliest) < 0 ? earliest : window.from
  // a window ending tomorrow: its last day (today) is read from events and never built
  const range = { name: 'custom', timezone: window.timezone, from, to: window.to.add({ days: 1 }), interval: 'day' } as const
  const query: Query = { siteId, range, filters: [], goals, limit: 0, now }
  for (const funnel of funnels) await rollFunnelDays(clickhouse, query, funnel.steps)
  return funnels.length
}

/** Visitors of a step over visitors of another, 0 when there were none. */
const rate = (part: number, whole: number) => (whole ? fraction(part / whole) : 0)

/**
 * GET /funnels: the site's saved funnels, and the result of one (`funnel_id`, else the first):
 * per step, the visitors who reached it in order within one visit, the conversion from the step
 * before and from the first, and how many dropped off since the step before. A site without the
 * standalone source lists its funnels and answers `available: false`.
 */
async function funnelReportRead(
  deps: ReportDeps & { repositories: Pick<DomainRepositories, 'funnels'> },
  site: Site,
  params: ReportParams & { funnel_id?: string },
) {
  const funnels = await deps.repositories.funnels.list(site.id)
  const funnel = params.funnel_id === undefined ? funnels[0] : funnels.find((f) => f.id === params.funnel_id!.toLowerCase())
  if (params.funnel_id !== undefined && !funnel) throw new ApiError(404, 'funnel_id: no such funnel on this site')
  if (collectorSource(params, site) !== 'standalone') return { available: false, funnels, result: null }
  const { query } = await prepare(deps, site, { ...params, source: 'standalone' }, { withGoals: true })
  const range = rangeView(query.range)
  if (!funnel) return { available: true, range, funnels, result: null }
  const rows = await funnelLevels(deps.clickhouse, query, funnel.steps)
  // a visitor whose furthest visit reached step k reached every step before it
  const furthest = new Map(rows.map((r) => [Number(r.level), Number(r.visitors)]))
  const reached = funnel.steps.map((_, i) => [...furthest].filter(([level]) => level > i).reduce((sum, [, n]) => sum + n, 0))
  return {
    available: true,
    range,
    funnels,
    result: {
      funnelId: funnel.id,
      name: funnel.name,
      steps: funnel.steps.map((step, i) => ({
        ...step,
        visitors: reached[i],
        conversionFromPrevious: i ? rate(reached[i], reached[i - 1]) : rate(reached[0], reached[0]),
        conversionFromFirst: rate(reached[i], reached[0]),
        dropOff: i ? reached[i - 1] - reached[i] : 0,
      })),
    },
  }
}

export const funnelReport = (
  deps: ReportDeps & { repositories: Pick<DomainRepositories, 'funnels'> },
  site: Site,
  params: ReportParams & { funnel_id?: string },
) => collectorRead(site, params, () => funnelReportRead(deps, site, params))
