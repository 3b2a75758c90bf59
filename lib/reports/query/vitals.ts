import { Temporal } from 'temporal-polyfill'
import type { Site } from '../../sites/sites'
import { standaloneQuery } from './behaviour'
import {
  CONTRIBUTORS,
  type ContributorKind,
  type FormFactor,
  VITAL_NAMES,
  VITAL_TABLES,
  VITAL_THRESHOLDS,
  type VitalName,
  type VitalPercentile,
  type VitalTable,
  type VitalsGroup,
  type VitalsOptions,
  contributorsSql,
  vitalsSql,
} from './compile/vitals'
import type { ReportParams } from './parse'
import { type ResolvedRange, rangeView } from './range'
import type { ReportDeps } from './reports'
import { execute } from '../../storage/clickhouse/execute'
import { fraction, vitalValue } from './shape'
import { type CompareInput, changes, resolveComparison } from './compare'

/**
 * GET /vitals: real-user Core Web Vitals from the collector's vital events. Definitions (the
 * thresholds, the percentile method, the experience score) are in docs/api.md, Vitals.
 */

type Row = Record<string, unknown>
const numberOf = (v: unknown) => Number(v ?? 0)

/** How much each metric weighs in the experience score: the three Core Web Vitals most. */
export const SCORE_WEIGHTS: Record<VitalName, number> = { LCP: 0.3, INP: 0.3, CLS: 0.25, FCP: 0.1, TTFB: 0.05 }

interface Bands {
  samples: number
  good: number
  poor: number
}

/**
 * The experience score, 0 to 100: per metric with samples, 100 for each good sample and 50 for each
 * that needs improvement, averaged; then the metrics' weighted mean, over the metrics with
 * samples. Null without samples. One decimal.
 */
export function experienceScore(bands: Record<VitalName, Bands>): number | null {
  let weighted = 0
  let weights = 0
  for (const name of VITAL_NAMES) {
    const b = bands[name]
    if (!b.samples) continue
    const needsImprovement = b.samples - b.good - b.poor
    weighted += (SCORE_WEIGHTS[name] * (100 * b.good + 50 * needsImprovement)) / b.samples
    weights += SCORE_WEIGHTS[name]
  }
  return weights ? Math.round((weighted / weights) * 10) / 10 : null
}

const bandsOf = (r: Row | undefined) =>
  Object.fromEntries(
    VITAL_NAMES.map((n) => [n, { samples: numberOf(r?.[`n_${n}`]), good: numberOf(r?.[`good_${n}`]), poor: numberOf(r?.[`poor_${n}`]) }]),
  ) as Record<VitalName, Bands>

/** The percentile of a metric, null without samples. */
const percentileOf = (r: Row | undefined, name: VitalName) =>
  numberOf(r?.[`n_${name}`]) ? vitalValue(name, numberOf(r?.[`p_${name}`])) : null

/** A row of a trend or table: samples, visitors, the score and each metric's percentile. */
function shapeRow(r: Row | undefined) {
  return {
    samples: numberOf(r?.samples),
    visitors: numberOf(r?.visitors),
    score: experienceScore(bandsOf(r)),
    ...(Object.fromEntries(VITAL_NAMES.map((n) => [n, percentileOf(r, n)])) as Record<VitalName, number | null>),
  }
}

/** Each metric of the window: its percentile, samples, and the shares of samples per band. */
function shapeMetrics(r: Row | undefined) {
  const bands = bandsOf(r)
  return Object.fromEntries(
    VITAL_NAMES.map((n) => {
      const { samples, good, poor } = bands[n]
      const share = (k: number) => (samples ? fraction(k / samples) : 0)
      return [
        n,
        {
          value: percentileOf(r, n),
          samples,
          good: share(good),
          needsImprovement: share(samples - good - poor),
          poor: share(poor),
          thresholds: VITAL_THRESHOLDS[n],
        },
      ]
    }),
  ) as Record<
    VitalName,
    {
      value: number | null
      samples: number
      good: number
      needsImprovement: number
      poor: number
      thresholds: { good: number; poor: number }
    }
  >
}

export interface VitalsParams extends ReportParams, CompareInput {
  percentile: VitalPercentile
  form_factor?: FormFactor
  attribution?: '0' | '1'
  crux?: '0' | '1'
}

/** The site-local days the window touches, first to last (realtime and today: one). */
function trendDays(range: ResolvedRange): string[] {
  const last = range.to.subtract({ nanoseconds: 1 }).toPlainDate()
  const days: string[] = []
  for (let d = range.from.toPlainDate(); Temporal.PlainDate.compare(d, last) <= 0; d = d.add({ days: 1 })) days.push(d.toString())
  return days
}

/** The figures of a summary a comparison changes. */
const SUMMARY_FIGURES = ['samples', 'visitors', 'score', ...VITAL_NAMES]

const TABLES = Object.keys(VITAL_TABLES) as VitalTable[]
const KINDS = Object.keys(CONTRIBUTORS) as ContributorKind[]

export async function vitals(deps: ReportDeps, site: Site, params: VitalsParams) {
  const options: VitalsOptions = { percentile: params.percentile, formFactor: params.form_factor }
  const echo = { percentile: Number(params.percentile), formFactor: params.form_factor ?? null }
  const withAttribution = params.attribution === '1'
  const query = await standaloneQuery(deps, site, params)
  if (!query) {
    return {
      available: false,
      ...echo,
      summary: shapeRow(undefined),
      metrics: shapeMetrics(undefined),
      trend: [],
      tables: Object.fromEntries(TABLES.map((t) => [t, []])) as Record<VitalTable, []>,
      ...(withAttribution ? { contributors: Object.fromEntries(KINDS.map((k) => [k, []])) as Record<ContributorKind, []> } : {}),
    }
  }
  const compare = resolveComparison(query.range, params, query.now)
  const [rows, contributorRows, comparedRows] = await Promise.all([
    execute<Row>(deps.clickhouse, vitalsSql(query, options)),
    withAttribution ? execute<Row>(deps.clickhouse, contributorsSql(query, options)) : null,
    // the comparison window's summary is its window row (group '')
    compare ? execute<Row>(deps.clickhouse, vitalsSql({ ...query, range: compare.window }, options)) : null,
  ])
  const of = (group: VitalsGroup) => rows.filter((r) => r.group === group)
  const window = of('')
  const metrics = shapeMetrics(window[0])
  const byDay = new Map(of('day').map((r) => [String(r.value), r]))
  return {
    available: true,
    range: rangeView(query.range),
    ...echo,
    summary: shapeRow(window[0]),
    metrics,
    ...(compare && comparedRows
      ? {
          comparison: {
            mode: compare.mode,
            range: rangeView(compare.window),
            summary: shapeRow(comparedRows.find((r) => r.group === '')),
            change: changes(shapeRow(window[0]), shapeRow(comparedRows.find((r) => r.group === '')), SUMMARY_FIGURES),
          },
        }
      : {}),
    trend: trendDays(query.range).map((date) => ({ date, ...shapeRow(byDay.get(date)) })),
    tables: Object.fromEntries(TABLES.map((t) => [t, of(t).map((r) => ({ value: String(r.value), ...shapeRow(r) }))])) as Record<
      VitalTable,
      ({ value: string } & ReturnType<typeof shapeRow>)[]
    >,
    ...(contributorRows
      ? {
          contributors: Object.fromEntries(
            KINDS.map((kind) => {
              const metric = CONTRIBUTORS[kind].metric
              const overall = metrics[metric].value ?? 0
              return [
                kind,
                contributorRows
                  .filter((r) => r.kind === kind)
                  .map((r) => ({
                    target: String(r.target),
                    samples: numberOf(r.samples),
                    share: fraction(numberOf(r.share)),
                    value: vitalValue(metric, numberOf(r.value)),
                    effect: vitalValue(metric, vitalValue(metric, numberOf(r.value)) - overall),
                  })),
              ]
            }),
          ) as Record<ContributorKind, { target: string; samples: number; share: number; value: number; effect: number }[]>,
        }
      : {}),
  }
}
