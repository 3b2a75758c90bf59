import type { Query } from '../model'
import { queryWindow } from './scope'
import { selected } from './selection'
import { type Fragment, bind, empty, join, raw, sql } from '../../../storage/clickhouse/sql'

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
  // name is in the sort key (kind is not): within each day the vitals are one run of rows
  return sql`${selected(query, queryWindow(query))} AND name = 'vital' AND kind = 'vital'${device}`
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

/** What a row of the vitals statement is: the window (''), a site-local day, or a table's row. */
export type VitalsGroup = '' | 'day' | VitalTable

const TABLES = Object.entries(VITAL_TABLES) as [VitalTable, string][]

/**
 * The vitals of the window in one scan: every metric's samples, bands and percentile, with the
 * samples and visitors behind them, once for the window (group ''), per site-local day (group
 * 'day', value YYYY-MM-DD) and per value of each table's column (group the table's name, most
 * samples first, at most the query's limit).
 */
export function vitalsSql(query: Query, options: VitalsOptions): Fragment {
  const groups = TABLES.map(([, column]) => `grouping(${column}) = 0, ${column}`).join(', ')
  const sets = TABLES.map(([, column]) => `(${column})`).join(', ')
  return sql`
SELECT group, value, samples, visitors, ${raw(VITAL_NAMES.map((n) => `n_${n}, good_${n}, poor_${n}, p_${n}`).join(', '))}
FROM (
  SELECT group, value, samples, visitors, ${raw(VITAL_NAMES.map((n) => `n_${n}, good_${n}, poor_${n}, p_${n}`).join(', '))},
         row_number() OVER (PARTITION BY group ORDER BY samples DESC, value ASC) AS rank
  FROM (
    SELECT ${raw(`multiIf(grouping(day) = 0, 'day', ${TABLES.map(([table, column]) => `grouping(${column}) = 0, '${table}'`).join(', ')}, '')`)} AS group,
           ${raw(`multiIf(grouping(day) = 0, day, ${groups}, '')`)} AS value,
           toString(toDate(timestamp, ${bind('String', query.range.timezone)})) AS day,
           count() AS samples, uniqExact(visitor_id) AS visitors,
           ${metricColumns(options)}
    FROM events WHERE ${vitalEvents(query, options)}
    GROUP BY GROUPING SETS ((), (day), ${raw(sets)})
  )
)
WHERE group IN ('', 'day') OR rank <= ${bind('UInt32', query.limit)}
ORDER BY group, rank`
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
 * The contributors of every kind in one scan: per kind and value of its attribution field, the
 * samples naming it, their share of the metric's samples that name one of that kind, and the
 * metric's percentile over them. Most samples first, at most the query's limit per kind.
 */
export function contributorsSql(query: Query, options: VitalsOptions): Fragment {
  const named = Object.entries(CONTRIBUTORS).map(
    ([kind, { metric, field }]) =>
      sql`(${raw(`'${kind}'`)}, if(vital_name = ${raw(`'${metric}'`)}, props[${bind('String', `attribution.${field}`)}], ''))`,
  )
  const metrics = [...new Set(Object.values(CONTRIBUTORS).map((c) => c.metric))]
  return sql`
SELECT contributor_kind AS kind, target, samples, share, value
FROM (
  SELECT contributor.1 AS contributor_kind, contributor.2 AS target, count() AS samples, samples / sum(samples) OVER (PARTITION BY contributor_kind) AS share,
         ${raw(`quantileExactInclusive(${VITAL_PERCENTILES[options.percentile]})(vital_value)`)} AS value,
         row_number() OVER (PARTITION BY contributor_kind ORDER BY samples DESC, target ASC) AS rank
  -- an alias named like a column (kind) would stand for it in WHERE
  FROM events ARRAY JOIN arrayFilter(c -> c.2 != '', [${join(named, ', ')}]) AS contributor
  WHERE ${vitalEvents(query, options)} AND vital_name IN ${bind('Array(String)', metrics)}
  GROUP BY contributor_kind, target
)
WHERE rank <= ${bind('UInt32', query.limit)}
ORDER BY contributor_kind, rank`
}
