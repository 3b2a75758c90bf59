import { ApiError } from '../../errors'
import type { Site } from '../../sites/sites'
import type { Repositories } from '../../repositories'
import { funnelLevelsSql } from './compile/funnels'
import { type ReportParams, collectorSource } from './parse'
import { collectorRead } from './behaviour'
import { rangeView } from './range'
import { type ReportDeps, prepare } from './reports'
import { execute } from '../../storage/clickhouse/execute'
import { fraction } from './shape'

/** Visitors of a step over visitors of another, 0 when there were none. */
const rate = (part: number, whole: number) => (whole ? fraction(part / whole) : 0)

/**
 * GET /funnels: the site's saved funnels, and the result of one (`funnel_id`, else the first):
 * per step, the visitors who reached it in order within one visit, the conversion from the step
 * before and from the first, and how many dropped off since the step before. A site without the
 * standalone source lists its funnels and answers `available: false`.
 */
async function funnelReportRead(
  deps: ReportDeps & { repositories: Pick<Repositories, 'funnels'> },
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
  const rows = await execute<{ level: number | string; visitors: number | string }>(deps.clickhouse, funnelLevelsSql(query, funnel.steps))
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
  deps: ReportDeps & { repositories: Pick<Repositories, 'funnels'> },
  site: Site,
  params: ReportParams & { funnel_id?: string },
) => collectorRead(site, params, () => funnelReportRead(deps, site, params))
