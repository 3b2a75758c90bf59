import type { Query } from '../model'
import { windowScope } from './scope'
import { selected } from './selection'
import { type Fragment, bind, empty, raw, sql } from './sql'

/** The metrics the tracker sends, in the order reads list them. */
export const VITAL_NAMES = ['LCP', 'INP', 'CLS', 'FCP', 'TTFB'] as const
export type VitalName = (typeof VITAL_NAMES)[number]

/**
 * The web.dev thresholds: a sample is good at or below `good`, poor above `poor`, and needs
 * improvement between. Milliseconds, except CLS (unitless).
 */
export const VITAL_THRESHOLDS: Record<VitalName, { good: number; poor: number }> = {
  LCP: { good: 2500, poor: 4000 },
  INP: { good: 200, poor: 500 },
  CLS: { good: 0.1, poor: 0.25 },
  FCP: { good: 1800, poor: 3000 },
  TTFB: { good: 800, poor: 1800 },
}

/** The percentiles a read may ask for, as the level the engine takes. */
export const VITAL_PERCENTILES = { '50': '0.5', '75': '0.75', '90': '0.9', '99': '0.99' } as const
export type VitalPercentile = keyof typeof VITAL_PERCENTILES

/** The device classes a form factor keeps. */
export const FORM_FACTORS = { phone: 'Mobile', desktop: 'Desktop' } as const
export type FormFactor = keyof typeof FORM_FACTORS

export interface VitalsOptions {
  percentile: VitalPercentile
  formFactor?: FormFactor
}

/** The vital samples of the query: its window and filters, one form factor when asked. */
function vitalEvents(query: Query, options: VitalsOptions): Fragment {
  const device = options.formFactor ? sql` AND device = ${bind('String', FORM_FACTORS[options.formFactor])}` : empty
  return sql`${selected(query, windowScope(query.siteId, query.range))} AND kind = 'vital'${device}`
}

/**
 * Per metric: samples (n_), samples at or under the good threshold (good_) and over the poor one
 * (poor_), and the percentile (p_), exact, by linear interpolation between the two nearest ranks
 * (quantileExactInclusive; NaN without samples).
 */
function metricColumns(options: VitalsOptions): Fragment {
  const level = VITAL_PERCENTILES[options.percentile]
  const columns = VITAL_NAMES.map((name) => {
    const t = VITAL_THRESHOLDS[name]
    const is = `vital_name = '${name}'`
    return `countIf(${is}) AS n_${name}, countIf(${is} AND vital_value <= ${t.good}) AS good_${name}, countIf(${is} AND vital_value > ${t.poor}) AS poor_${name}, quantileExactInclusiveIf(${level})(vital_value, ${is}) AS p_${name}`
  })
  // names, thresholds and levels come from the tables above, never from input
  return raw(columns.join(',\n       '))
}

/** The columns a vitals table breaks down by; identifiers only from here. */
export const VITAL_TABLES = { pages: 'pathname', countries: 'country_code', devices: 'device', browsers: 'browser', os: 'os' } as const
export type VitalTable = keyof typeof VITAL_TABLES

export type VitalsGrouping = { by: 'none' } | { by: 'day' } | { by: 'table'; table: VitalTable }

/**
 * The vitals of the window: every metric's samples, bands and percentile, with the samples and
 * visitors behind them. Once for the window, per site-local day, or per value of a table's
 * column (most samples first, at most the query's limit).
 */
export function vitalsSql(query: Query, options: VitalsOptions, grouping: VitalsGrouping): Fragment {
  const value =
    grouping.by === 'none' ? raw("''") : grouping.by === 'day' ? sql`toString(toDate(timestamp, ${bind('String', query.range.timezone)}))` : raw(VITAL_TABLES[grouping.table])
  const tail = grouping.by === 'none' ? empty : grouping.by === 'day' ? raw('GROUP BY value ORDER BY value') : sql`GROUP BY value ORDER BY samples DESC, value ASC LIMIT ${bind('UInt32', query.limit)}`
  return sql`
SELECT ${value} AS value, count() AS samples, uniqExact(visitor_id) AS visitors,
       ${metricColumns(options)}
FROM events WHERE ${vitalEvents(query, options)}
${tail}`
}

/**
 * What the attribution build names behind a metric: the metric and the attribution field that
 * names the contributor (props under `attribution.`).
 */
export const CONTRIBUTORS = {
  lcpElements: { metric: 'LCP', field: 'target' },
  layoutShifts: { metric: 'CLS', field: 'largestShiftTarget' },
  blockingScripts: { metric: 'INP', field: 'scriptUrl' },
  interactionTargets: { metric: 'INP', field: 'interactionTarget' },
} as const satisfies Record<string, { metric: VitalName; field: string }>
export type ContributorKind = keyof typeof CONTRIBUTORS

/**
 * One kind of contributor: per value of its attribution field, the samples naming it, their share
 * of the metric's samples that name any, and the metric's percentile over them. Most samples first.
 */
export function contributorsSql(query: Query, options: VitalsOptions, kind: ContributorKind): Fragment {
  const { metric, field } = CONTRIBUTORS[kind]
  const key = bind('String', `attribution.${field}`)
  return sql`
SELECT props[${key}] AS target, count() AS samples, samples / sum(samples) OVER () AS share,
       ${raw(`quantileExactInclusive(${VITAL_PERCENTILES[options.percentile]})(vital_value)`)} AS value
FROM events WHERE ${vitalEvents(query, options)} AND vital_name = ${bind('String', metric)} AND props[${key}] != ''
GROUP BY target
ORDER BY samples DESC, target ASC
LIMIT ${bind('UInt32', query.limit)}`
}
