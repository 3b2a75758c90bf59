import { CONTRIBUTORS, VITAL_NAMES, VITAL_THRESHOLDS, type VitalName } from '../../reports/query/compile/vitals'
import type { ClickHouse } from '../../storage/clickhouse/types'
import { execute } from '../../storage/clickhouse/execute'
import { vitalContributorsByPagePeriodSql, vitalsByPagePeriodSql } from './compile'
import { round4 } from './robust'
import { vitalValue } from '../../reports/query/shape'

/**
 * Vitals regressions: a page's metric, at the 75th percentile, in a window against its baseline
 * window (docs/traffic-changes.md), with the element or script the attribution names behind it.
 * The one place anomalies (vitals=1), markers and the page detail find them.
 */
export const VITALS_REGRESSION_RULE = {
  percentile: 75,
  /** Samples of the metric on the page in each window. */
  minSamples: 20,
  /** The current percentile is at least this many times the baseline's... */
  minRatio: 1.2,
  /** ... and no longer good by the web.dev thresholds. */
  leavesGood: true,
}
const LEVEL = '75' as const

type Instant = { epochMilliseconds: number }

export interface VitalsRegression {
  path: string
  metric: VitalName
  baseline: { samples: number; value: number }
  current: { samples: number; value: number }
  change: number
  band: 'needs_improvement' | 'poor'
  /** The contributors whose share of the metric's samples grew most, the first one the likeliest cause. */
  contributors: { kind: string; target: string; samples: number; share: number; baselineShare: number; value: number }[]
}

const bandOf = (metric: VitalName, value: number) => (value > VITAL_THRESHOLDS[metric].poor ? 'poor' : 'needs_improvement')

/**
 * Regressions of the window [currentFrom, to) against the baseline [baselineFrom, currentFrom),
 * largest relative change first; only `path` with it.
 */
export async function vitalsRegressions(
  clickhouse: ClickHouse,
  siteId: string,
  window: { baselineFrom: Instant; currentFrom: Instant; to: Instant },
  options: { path?: string; limit?: number } = {},
): Promise<VitalsRegression[]> {
  const rows = await execute<{
    pathname: string
    metric: string
    current: number | string
    samples: number | string
    value: number | string
  }>(
    clickhouse,
    vitalsByPagePeriodSql(
      siteId,
      window.baselineFrom,
      window.currentFrom,
      window.to,
      LEVEL,
      VITALS_REGRESSION_RULE.minSamples,
      options.path,
    ),
  )
  const key = (path: string, metric: string) => `${path}\u0000${metric}`
  const periods = new Map<
    string,
    { path: string; metric: VitalName; baseline?: { samples: number; value: number }; current?: { samples: number; value: number } }
  >()
  for (const r of rows) {
    if (!(VITAL_NAMES as readonly string[]).includes(r.metric)) continue
    const k = key(r.pathname, r.metric)
    const entry = periods.get(k) ?? { path: r.pathname, metric: r.metric as VitalName }
    entry[Number(r.current) === 1 ? 'current' : 'baseline'] = { samples: Number(r.samples), value: Number(r.value) }
    periods.set(k, entry)
  }
  const rule = VITALS_REGRESSION_RULE
  const regressed = [...periods.values()]
    .filter(
      (p): p is typeof p & { baseline: { samples: number; value: number }; current: { samples: number; value: number } } =>
        !!p.baseline && !!p.current,
    )
    .filter((p) => p.baseline.samples >= rule.minSamples && p.current.samples >= rule.minSamples)
    .filter(
      (p) =>
        p.current.value >= rule.minRatio * p.baseline.value &&
        p.current.value > VITAL_THRESHOLDS[p.metric].good &&
        p.current.value > p.baseline.value,
    )
    .map((p) => ({ ...p, change: p.baseline.value ? round4(p.current.value / p.baseline.value - 1) : 1 }))
    .sort((a, b) => b.change - a.change || (a.path < b.path ? -1 : a.path > b.path ? 1 : a.metric < b.metric ? -1 : 1))
    .slice(0, options.limit ?? 100)
  if (!regressed.length) return []

  const named = Object.entries(CONTRIBUTORS)
    .filter(([, c]) => regressed.some((r) => r.metric === c.metric))
    .map(([kind, c]) => ({ kind, metric: c.metric, field: c.field }))
  const contributorRows = named.length
    ? await execute<{
        pathname: string
        metric: string
        current: number | string
        contributor_kind: string
        target: string
        samples: number | string
        value: number | string
      }>(
        clickhouse,
        vitalContributorsByPagePeriodSql(
          siteId,
          window.baselineFrom,
          window.currentFrom,
          window.to,
          LEVEL,
          [...new Set(regressed.map((r) => r.path))],
          named,
        ),
      )
    : []
  return regressed.map((r) => {
    const of = contributorRows.filter((c) => c.pathname === r.path && c.metric === r.metric)
    const targets = [...new Set(of.map((c) => `${c.contributor_kind}\u0000${c.target}`))].map((k) => {
      const [kind, target] = k.split('\u0000')
      const now = of.find((c) => c.contributor_kind === kind && c.target === target && Number(c.current) === 1)
      const before = of.find((c) => c.contributor_kind === kind && c.target === target && Number(c.current) === 0)
      const samples = Number(now?.samples ?? 0)
      return {
        kind,
        target,
        samples,
        share: round4(samples / r.current.samples),
        baselineShare: round4(Number(before?.samples ?? 0) / r.baseline.samples),
        value: vitalValue(r.metric, Number(now?.value ?? 0)),
      }
    })
    const contributors = targets
      .filter((t) => t.samples > 0 && t.share > t.baselineShare)
      .sort((a, b) => b.share - b.baselineShare - (a.share - a.baselineShare) || b.samples - a.samples || (a.target < b.target ? -1 : 1))
      .slice(0, 3)
    return {
      path: r.path,
      metric: r.metric,
      baseline: { samples: r.baseline.samples, value: vitalValue(r.metric, r.baseline.value) },
      current: { samples: r.current.samples, value: vitalValue(r.metric, r.current.value) },
      change: r.change,
      band: bandOf(r.metric, r.current.value),
      contributors,
    }
  })
}
