import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../core/errors'
import { GOAL, SEGMENT, combinable, combinedParts, combinedProperty, hasEngagement, holdsGoal } from '../reports/dimensions'
import { type Filter, type Query, type Read, TOTALS, goalsOfFilter } from '../reports/query/model'
import { type ReportParams, expandSegments, validateGoalFilter } from '../reports/query/parse'
import { type Interval, type ResolvedRange, buckets, startsDay } from '../reports/query/range'
import { type ReportDeps, prepare, readerWithImports, sourceReader } from '../reports/query/reports'
import { firstEventAt, firstImportedAt } from '../reports/query/site-events'
import { countRows, planOf, runRead } from '../reports/query/run'
import { valuesPerRolledDaySql } from '../reports/query/compile/day-rollups'
import { execute } from '../storage/clickhouse/execute'
import { type BreakdownRow, type Totals, shapeBreakdown } from '../reports/query/shape'
import type { Segment } from '../sites/definition-records'
import type { Goal } from '../sites/goals'
import { type Site, hasImportedData } from '../sites/sites'
import type { Source } from '../sites/source'
import { comparisonWindow } from './comparison-window'
import type { PlausibleAnswer, PlausibleDateRange, PlausibleMetric, PlausibleQuery } from './query-schema'
import { type TimeDimension, checkReadable, isTimeDimension, plausibleValue, serviceDimension, translateFilters } from './translate'

/**
 * POST /api/v2/query: Plausible's Stats API v2 answered from this service's own reads. A query
 * becomes one of the pipeline's reads (totals, a series, or the breakdown of one dimension or several) with
 * the same planner and rollups as GET /api/v1/stats, /timeseries and /breakdown, then its rows are
 * shaped as Plausible answers them (rates as percentages, time buckets as dates).
 */

type MetricValue = PlausibleAnswer['results'][number]['metrics'][number]
type ResultRow = PlausibleAnswer['results'][number]

/** Rows read when the whole breakdown is needed (another order, total_rows, per-group joins). */
const ALL_ROWS = 100_000

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits
const percent = (part: number, whole: number, digits: number) => (whole ? round((part / whole) * 100, digits) : 0)

/** What the query asks, checked: its one read (totals, series or breakdown) and the pipeline's filters. */
interface Plan {
  source: Source
  time?: TimeDimension
  /** The service dimension of the non-time dimensions: one, or several as one combined property. */
  property?: string
  /** Whether the non-time dimensions were combined: each row's value holds theirs as a JSON array. */
  combined: boolean
  filters: Filter[]
  goals: Goal[]
  metrics: PlausibleMetric[]
  /** The non-time dimensions, in the query's order: each row value is answered as Plausible labels it (plausibleValue). */
  others: string[]
}

const SERIES_METRICS: readonly PlausibleMetric[] = ['visitors', 'visits', 'pageviews', 'views_per_visit']
/** Metrics of a time dimension read as each bucket's totals (the series read holds the others). */
const BUCKET_TOTALS_METRICS: readonly PlausibleMetric[] = ['bounce_rate', 'visit_duration', 'events']
/** Buckets with data read one by one for BUCKET_TOTALS_METRICS, at most. */
const MAX_BUCKET_READS = 400
const GOAL_METRICS: readonly PlausibleMetric[] = ['conversion_rate', 'group_conversion_rate', 'total_revenue', 'average_revenue']
const PAGE_METRICS: readonly PlausibleMetric[] = ['scroll_depth', 'time_on_page']
/** Metrics of a breakdown row from its visitors and visits alone (and the reads beside it): such a query's rows read nothing else. */
const VISIT_METRICS: readonly PlausibleMetric[] = ['visitors', 'visits', 'percentage', 'conversion_rate', 'group_conversion_rate']

function metricError(metric: string, why: string) {
  return new ApiError(400, `metrics: ${metric} ${why}`)
}

/** The query's dimensions, filters and metrics against what this service reads, or a 400 naming the first that does not fit. */
function planQuery(body: PlausibleQuery, source: Source, goals: Goal[]): Plan {
  const times = body.dimensions.filter(isTimeDimension)
  const others = body.dimensions.filter((d) => !isTimeDimension(d))
  if (times.length > 1) throw new ApiError(400, 'dimensions: at most one time dimension')
  if (new Set(body.dimensions).size !== body.dimensions.length) throw new ApiError(400, 'dimensions: a dimension is listed twice')
  if (new Set(body.metrics).size !== body.metrics.length) throw new ApiError(400, 'metrics: a metric is listed twice')
  const time = times[0]
  const names = others.map((name) => {
    const where = `dimensions[${body.dimensions.indexOf(name)}]`
    const service = serviceDimension(name, where)
    checkReadable(name, service, source, where)
    if (service === GOAL && source !== 'standalone') throw new ApiError(400, `${where}: event:goal needs the tracker source`)
    if (others.length > 1 && !combinable(service) && service !== GOAL)
      throw new ApiError(400, `${where}: ${name} cannot be combined with another dimension besides time here`)
    if (others.length > 1 && source !== 'standalone')
      throw new ApiError(
        400,
        `${where}: several dimensions together need the tracker source (imported data is read one dimension at a time)`,
      )
    return service
  })
  const combined = names.length > 1
  const property = combined ? combinedProperty(names) : names[0]
  const goalRows = property !== undefined && holdsGoal(property)
  // the name metric errors give: the one dimension, or the combination
  const plausibleProperty = others.join(' and ')
  const filters = translateFilters(body.filters, source, goals)
  const goalFiltered = filters.some((f) => f.dimension === GOAL)
  for (const metric of body.metrics) {
    if (
      goalRows &&
      (metric === 'visits' ||
        metric === 'pageviews' ||
        metric === 'views_per_visit' ||
        metric === 'bounce_rate' ||
        metric === 'visit_duration')
    )
      throw metricError(
        metric,
        'is not defined for goals (visitors, events, percentage, conversion_rate, group_conversion_rate and the revenue metrics are)',
      )
    if (time && !property && !SERIES_METRICS.includes(metric) && !BUCKET_TOTALS_METRICS.includes(metric))
      throw metricError(
        metric,
        `is not available with a time dimension here (${[...SERIES_METRICS, ...BUCKET_TOTALS_METRICS].join(', ')} are)`,
      )
    if (PAGE_METRICS.includes(metric)) {
      if (property !== 'path') throw metricError(metric, 'needs the dimension event:page alone')
      if (source !== 'standalone') throw metricError(metric, 'is recorded only by the tracker')
    }
    if ((metric === 'bounce_rate' || metric === 'visit_duration') && property && !hasEngagement(property))
      throw metricError(metric, `is not defined for the event dimension${combined ? 's' : ''} ${plausibleProperty}`)
    if (metric === 'percentage' && !property) throw metricError(metric, 'needs a dimension')
    if (metric === 'group_conversion_rate' && !property) throw metricError(metric, 'needs a dimension')
    if (GOAL_METRICS.includes(metric) && !goalRows && !goalFiltered)
      throw metricError(metric, 'needs an event:goal filter (outside an "or" or "not" across dimensions) or the event:goal dimension')
    if ((metric === 'total_revenue' || metric === 'average_revenue') && property && !goalRows)
      throw metricError(metric, 'is available with no dimension or with the event:goal dimension here')
  }
  return { source, time, property, combined, filters, goals, metrics: body.metrics, others }
}

/** Plausible's named ranges and date pairs as the pipeline's range parameters; date-times also as the exact window. */
function rangeParams(dateRange: PlausibleDateRange, timezone: string, now: Date) {
  const today = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(timezone).toPlainDate()
  const custom = (from: Temporal.PlainDate, to: Temporal.PlainDate) => ({
    range: 'custom' as const,
    from: from.toString(),
    to: to.toString(),
  })
  if (typeof dateRange === 'string') {
    switch (dateRange) {
      case 'day':
        return { params: { range: 'today' as const } }
      case '28d':
      case '91d':
        return { params: custom(today.subtract({ days: Number.parseInt(dateRange, 10) - 1 }), today) }
      case '6mo':
        return { params: custom(today.with({ day: 1 }).subtract({ months: 5 }), today) }
      default:
        return { params: { range: dateRange } }
    }
  }
  const [from, to] = dateRange.map((value, i) => {
    try {
      if (value.length === 10) return { date: Temporal.PlainDate.from(value, { overflow: 'reject' }) }
      const at = Temporal.Instant.from(value).toZonedDateTimeISO(timezone)
      return { date: at.toPlainDate(), at }
    } catch {
      throw new ApiError(400, `date_range[${i}]: ${value} is not a valid date or date-time`)
    }
  })
  if (from.at && to.at) {
    if (Temporal.ZonedDateTime.compare(from.at, to.at) > 0) throw new ApiError(400, 'date_range: the start is after the end')
    // the end second is included, as in Plausible's "…T15:59:59"
    return { params: custom(from.date, to.date), exact: { from: from.at, to: to.at.add({ seconds: 1 }) } }
  }
  if (from.at || to.at) throw new ApiError(400, 'date_range: give two dates or two date-times, not one of each')
  return { params: custom(from.date, to.date) }
}

const INTERVALS: Record<Exclude<TimeDimension, 'time'>, Interval> = {
  'time:hour': 'hour',
  'time:day': 'day',
  'time:week': 'week',
  'time:month': 'month',
}

/** The date-times of a date_range given as two date-times, in the site's timezone, the end excluded. */
type ExactWindow = { from: Temporal.ZonedDateTime; to: Temporal.ZonedDateTime }

const HOUR_S = 3600
const DAY_S = 24 * HOUR_S

/**
 * Plausible's bucket of the `time` dimension over a window: whole hours, days and weeks from its
 * first to its last second counted, hours up to 48 of them, days up to 40, weeks up to 52, else months.
 */
function intervalOfTime(from: Temporal.ZonedDateTime, to: Temporal.ZonedDateTime): Interval {
  const seconds = (to.epochMilliseconds - from.epochMilliseconds) / 1000 - 1
  if (seconds < 49 * HOUR_S) return 'hour'
  if (seconds < 41 * DAY_S) return 'day'
  if (seconds < 53 * 7 * DAY_S) return 'week'
  return 'month'
}

/** The window to read: the pipeline's resolution, the exact date-times given, the bucket a time dimension asks. */
function windowOf(resolved: ResolvedRange, exact: ExactWindow | undefined, time?: TimeDimension) {
  let range = exact ? { ...resolved, ...exact } : resolved
  if (exact && Temporal.Duration.compare(exact.from.until(exact.to), { hours: 48 }) <= 0) range = { ...range, interval: 'hour' }
  if (time) range = { ...range, interval: time === 'time' ? intervalOfTime(range.from, range.to) : INTERVALS[time] }
  if (range.interval === 'minute') range = { ...range, interval: 'hour' }
  return range
}

/** A bucket's label as Plausible writes time dimensions: the date, or the date and hour for hours. */
function timeLabel(zoned: Temporal.ZonedDateTime, interval: Interval) {
  const date = zoned.toPlainDate().toString()
  return interval === 'hour' || interval === 'minute' ? `${date} ${zoned.toPlainTime().toString({ smallestUnit: 'second' })}` : date
}

/** Plausible's `events`: pageviews and custom events (the pipeline's `events` are the custom ones); null where those are unknown. */
const pageviewsAndCustomEvents = (pageviews: number | undefined, custom: number | null) =>
  custom === null ? null : (pageviews ?? 0) + custom

const revenueValue = (amount: number, currency: string): MetricValue => {
  const format = (digits: number, notation: 'standard' | 'compact') =>
    new Intl.NumberFormat('en-US', { style: 'currency', currency, notation, maximumFractionDigits: digits }).format(amount)
  return { value: round(amount, 2), currency, short: format(1, 'compact'), long: format(2, 'standard') }
}

/** The value of a metric on totals (no dimension). */
function totalsMetric(metric: PlausibleMetric, t: Totals): MetricValue {
  switch (metric) {
    case 'visitors':
      return t.visitors
    case 'visits':
      return t.visits
    case 'pageviews':
      return t.pageviews
    case 'views_per_visit':
      return t.viewsPerVisit
    case 'bounce_rate':
      return Math.round(t.bounceRate * 100)
    case 'visit_duration':
      return t.avgDuration
    case 'events':
      return pageviewsAndCustomEvents(t.pageviews, t.events)
    default:
      return null
  }
}

type Reader = Pick<ReturnType<typeof sourceReader>, 'totals' | 'series' | 'breakdown'>

interface Context {
  deps: ReportDeps
  site: Site
  plan: Plan
  query: Query
  /** The reads of the query's source, with the imported data added when include.imports adds it. */
  reader: Reader
  /** The query without its goal filters, over the part of the window read (a time bucket): what group conversion rates divide by. */
  withoutGoals(): Query
  /** The totals of the query without its goal filters over its whole window, read once: what conversion_rate divides by. */
  conversionTotals(): Promise<Totals>
  /** Whether `query` is one time bucket of the window (timeBreakdown). */
  bucket?: true
  /** The currency of the revenue metrics without the goal dimension, or why they are null (revenueCurrency). */
  revenue: ReturnType<typeof revenueCurrency>
  /** The reader is the tracker's alone, no imported data added: a read run directly (runRead) answers the same. */
  trackerOnly: boolean
  /**
   * The rows a read by bucket and value (bucketRows) takes: the first in the order of buckets, then
   * visitors, with every row tied with the last; all of them for another order or total_rows.
   */
  bucketRows?: number
}

/** A read done once, when first asked. */
function once<T>(read: () => Promise<T>): () => Promise<T> {
  let answer: Promise<T> | undefined
  return () => {
    answer ??= read()
    return answer
  }
}

/**
 * The names of the goals every positive top-level goal filter selects, or undefined without one (a
 * negative one keeps visits that converted none of its goals, so its goals have no conversions).
 */
function selectedGoals(ctx: Context): Set<string> | undefined {
  const goalFilters = ctx.query.filters.filter((f) => f.dimension === GOAL && f.operator === 'is')
  if (!goalFilters.length) return undefined
  return new Set(ctx.plan.goals.filter((g) => goalFilters.every((f) => goalsOfFilter(f, [g]).length)).map((g) => g.name))
}

/** Revenue of the goals the goal filters select in `currency`, over the query: the total and the conversions. */
async function filteredRevenue(ctx: Context, currency: string): Promise<{ amount: number; conversions: number }> {
  const names = selectedGoals(ctx) ?? new Set()
  const rows = (await sourceReader(ctx.deps.clickhouse, 'standalone').breakdown({ ...ctx.query, limit: 1000 }, 'goal')).filter(
    (r) => names.has(r.value) && r.revenue?.currency === currency,
  )
  return {
    amount: rows.reduce((n, r) => n + (r.revenue?.amount ?? 0), 0),
    conversions: rows.reduce((n, r) => n + (r.conversions ?? 0), 0),
  }
}

/** Plausible's warnings of revenue metrics, by code. */
const REVENUE_WARNINGS = {
  no_single_revenue_currency: 'Revenue metrics are null as there are multiple currencies for the selected event:goals.',
  no_revenue_goals_matching: 'Revenue metrics are null as there are no matching revenue goals.',
} as const

/**
 * The currency revenue metrics are answered in, as Plausible decides it from the goals the top-level
 * goal filters select (all goals without one): their one currency; by goal, each goal's own; else
 * why the revenue metrics are null.
 */
function revenueCurrency(plan: Plan, filters: readonly Filter[]): { currency?: string; warning?: keyof typeof REVENUE_WARNINGS } {
  const goalFilters = filters.filter((f) => f.dimension === GOAL && f.operator === 'is')
  const goals = plan.goals.filter((g) => goalFilters.every((f) => goalsOfFilter(f, [g]).length))
  const currencies = [...new Set(goals.flatMap((g) => (g.currency ? [g.currency] : [])))]
  if (currencies.length === 0) return { warning: 'no_revenue_goals_matching' }
  if (plan.property !== undefined && holdsGoal(plan.property)) return {}
  return currencies.length === 1 ? { currency: currencies[0] } : { warning: 'no_single_revenue_currency' }
}

async function aggregate(ctx: Context): Promise<ResultRow[]> {
  const { reader } = ctx
  const totals = await reader.totals(ctx.query)
  const needsBase = ctx.plan.metrics.includes('conversion_rate')
  const base = needsBase ? await ctx.conversionTotals() : undefined
  const { currency } = ctx.revenue
  const asksRevenue = ctx.plan.metrics.some((m) => m === 'total_revenue' || m === 'average_revenue')
  const revenue = asksRevenue && currency ? await filteredRevenue(ctx, currency) : undefined
  const metrics = ctx.plan.metrics.map((metric): MetricValue => {
    if (metric === 'conversion_rate') return percent(totals.visitors, base?.visitors ?? 0, 2)
    if (metric === 'total_revenue') return revenue && currency ? revenueValue(revenue.amount, currency) : null
    if (metric === 'average_revenue')
      return revenue && currency ? revenueValue(revenue.conversions ? revenue.amount / revenue.conversions : 0, currency) : null
    return totalsMetric(metric, totals)
  })
  return [{ metrics, dimensions: [] }]
}

async function timeseries(ctx: Context, range: ResolvedRange): Promise<{ rows: ResultRow[]; labels: string[] }> {
  const series = await ctx.reader.series({ ...ctx.query, range })
  const starts = buckets(range)
  const rows: ResultRow[] = []
  const labels = starts.map((b) =>
    timeLabel(Temporal.Instant.fromEpochMilliseconds(b.epoch * 1000).toZonedDateTimeISO(range.timezone), range.interval),
  )
  // Plausible lists buckets with data; time_labels lists them all
  const filled = series.flatMap((bucket, i) => (bucket.visitors || bucket.visits || bucket.pageviews ? [{ bucket, i }] : []))
  // bounce rate, duration and custom events: each bucket's totals, in one read by bucket where readByBucket allows, else
  // read over each bucket's part of the window
  const perBucket = ctx.plan.metrics.some((m) => BUCKET_TOTALS_METRICS.includes(m))
  const byBucket = perBucket && readByBucket(ctx, range, TOTALS)
  if (perBucket && !byBucket && filled.length > MAX_BUCKET_READS)
    throw new ApiError(
      400,
      `metrics: bounce_rate and visit_duration by hour, and imported data by time, are read bucket by bucket, at most ${MAX_BUCKET_READS} buckets with data; this query has ${filled.length} (use a larger time dimension or a shorter date_range)`,
    )
  const { reader } = ctx
  const inOneRead = byBucket ? await totalsByBucket(ctx, range) : undefined
  const bucketTotals = async (i: number): Promise<Partial<Totals> | undefined> =>
    inOneRead
      ? (inOneRead.get(starts[i].epoch) ?? {})
      : perBucket
        ? reader.totals({ ...ctx.query, range: bucketWindow(range, starts, i) })
        : undefined
  for (const { bucket, i } of filled) {
    const read = await bucketTotals(i)
    const totals: Totals = {
      ...bucket,
      bounceRate: read?.bounceRate ?? 0,
      avgDuration: read?.avgDuration ?? 0,
      events: read?.events ?? 0,
      viewsPerVisit: bucket.visits ? round(bucket.pageviews / bucket.visits, 2) : 0,
    }
    rows.push({ metrics: ctx.plan.metrics.map((m) => totalsMetric(m, totals)), dimensions: [labels[i]] })
  }
  return { rows, labels }
}

/** Each bucket's totals in one read by bucket (readByBucket), by the bucket's start (epoch seconds). */
async function totalsByBucket(ctx: Context, range: ResolvedRange): Promise<Map<number, Partial<Totals>>> {
  const query = { ...ctx.query, range, limit: ALL_ROWS }
  const engagement = range.interval !== 'hour' && ctx.plan.metrics.some((m) => m === 'bounce_rate' || m === 'visit_duration')
  const rows = await runRead<Record<string, unknown>>(ctx.deps.clickhouse, query, {
    kind: 'breakdown',
    property: TOTALS,
    byBucket: true,
    ...(engagement ? {} : { withoutEngagement: true as const }),
  })
  const shaped = shapeBreakdown(TOTALS, rows, engagement)
  return new Map(
    rows.map((r, k) => [
      Number(r.bucket),
      { ...shaped[k], bounceRate: shaped[k].bounceRate ?? 0, avgDuration: shaped[k].avgDuration ?? 0 },
    ]),
  )
}

/** The part of the window in bucket `i` of `starts` (the first bucket may begin before the window). */
function bucketWindow(range: ResolvedRange, starts: readonly { epoch: number }[], i: number): ResolvedRange {
  const at = (epoch: number) => Temporal.Instant.fromEpochMilliseconds(epoch * 1000).toZonedDateTimeISO(range.timezone)
  const start = at(starts[i].epoch)
  const from = Temporal.ZonedDateTime.compare(start, range.from) < 0 ? range.from : start
  return { ...range, from, to: i + 1 < starts.length ? at(starts[i + 1].epoch) : range.to }
}

/** The metrics of a time dimension beside others that one read by bucket answers (bucketRows). */
const BY_BUCKET_METRICS: readonly PlausibleMetric[] = [
  'visitors',
  'visits',
  'pageviews',
  'views_per_visit',
  'bounce_rate',
  'visit_duration',
  'events',
  'percentage',
  'conversion_rate',
]

/**
 * Whether a time dimension beside others is one read by bucket: the tracker's own data, rows that
 * are not goals, metrics of BY_BUCKET_METRICS (hour buckets carry no engagement). The others, such
 * as goal rows and group conversion rates, are read bucket by bucket.
 */
const readByBucket = (ctx: Context, range: ResolvedRange, property: string) =>
  ctx.trackerOnly &&
  !holdsGoal(property) &&
  ctx.plan.metrics.every((m) => BY_BUCKET_METRICS.includes(m)) &&
  !(range.interval === 'hour' && ctx.plan.metrics.some((m) => m === 'bounce_rate' || m === 'visit_duration'))

/**
 * A time dimension with another: the other's rows in each bucket with data, in the query's order of
 * dimensions. One statement grouped by bucket and value where readByBucket allows (and the series
 * beside it for percentage); otherwise each bucket with data read as its own window.
 */
async function timeBreakdown(ctx: Context, range: ResolvedRange, property: string, timeAt: number) {
  const starts = buckets(range)
  const labels = starts.map((b) =>
    timeLabel(Temporal.Instant.fromEpochMilliseconds(b.epoch * 1000).toZonedDateTimeISO(range.timezone), range.interval),
  )
  if (readByBucket(ctx, range, property)) return { rows: await bucketRows(ctx, range, property, timeAt, labels), labels }
  const series = await ctx.reader.series({ ...ctx.query, range })
  const filled = series.flatMap((bucket, i) => (bucket.visitors || bucket.visits || bucket.pageviews ? [i] : []))
  if (filled.length > MAX_BUCKET_READS)
    throw new ApiError(
      400,
      `dimensions: a time dimension with another is read bucket by bucket here (goal rows, group conversion rates, imported data), at most ${MAX_BUCKET_READS} buckets with data; this query has ${filled.length} (use a larger time dimension or a shorter date_range)`,
    )
  const rows: ResultRow[] = []
  for (const i of filled) {
    const window = bucketWindow(range, starts, i)
    const inBucket: Context = {
      ...ctx,
      query: { ...ctx.query, range: window },
      withoutGoals: () => ({ ...ctx.withoutGoals(), range: window }),
      bucket: true,
    }
    for (const row of await grouped(inBucket, property, ALL_ROWS))
      rows.push({ metrics: row.metrics, dimensions: row.dimensions.toSpliced(timeAt, 0, labels[i]) })
  }
  return { rows, labels }
}

/**
 * A read by bucket of the rows up to the page's last with their ties (the bucket, then visitors:
 * ctx.bucketRows), its window cut after the first buckets that hold that many rows for sure: every
 * row it answers is in those buckets, so the rest of the window need not be read. A bucket holds at
 * least as many rows as its fullest rolled day has values with visitors (counted from the rollup
 * rows the read takes; a day not rolled up counts none). The whole window where those do not reach
 * the page, or where the read takes no rolled days.
 */
async function firstBucketsQuery(clickhouse: ReportDeps['clickhouse'], query: Query, read: Read): Promise<Query> {
  const { range } = query
  const starts = buckets(range)
  if (starts.length < 2 || read.kind !== 'breakdown') return query
  const { plan } = await planOf(clickhouse, query, read)
  if (plan.table !== 'rollup' || !plan.rolled.days.length) return query
  const perDay = await execute<{ d: string; n: string }>(
    clickhouse,
    valuesPerRolledDaySql(query.siteId, range.timezone, read.property, plan.rolled),
  )
  const least = starts.map(() => 0)
  for (const { d, n } of perDay) {
    const epoch = Temporal.PlainDate.from(d).toZonedDateTime(range.timezone).epochMilliseconds / 1000
    const i = starts.findLastIndex((b) => b.epoch <= epoch)
    if (i >= 0) least[i] = Math.max(least[i], Number(n))
  }
  let held = 0
  for (let i = 0; i + 1 < starts.length; i++) {
    held += least[i]
    if (held >= query.limit) {
      const to = Temporal.Instant.fromEpochMilliseconds(starts[i + 1].epoch * 1000).toZonedDateTimeISO(range.timezone)
      return { ...query, range: { ...range, to } }
    }
  }
  return query
}

/** The rows of a time dimension beside others in one read grouped by bucket and value (readByBucket). */
async function bucketRows(ctx: Context, range: ResolvedRange, property: string, timeAt: number, labels: string[]) {
  const { metrics } = ctx.plan
  const query = { ...ctx.query, range, limit: ctx.bucketRows ?? ALL_ROWS }
  // the visits' facts only where asked for
  const engagement = metrics.some((m) => m === 'bounce_rate' || m === 'visit_duration')
  const byBucket: Read = { kind: 'breakdown', property, byBucket: true, ...(engagement ? {} : { withoutEngagement: true as const }) }
  const [read, series, base] = await Promise.all([
    (async () => {
      // the page's rows in the default order lie in the first buckets: the rest of the window is not read
      const asked = query.limit < ALL_ROWS ? await firstBucketsQuery(ctx.deps.clickhouse, query, byBucket) : query
      return runRead<Record<string, unknown>>(ctx.deps.clickhouse, asked, byBucket)
    })(),
    metrics.includes('percentage') ? ctx.reader.series(query) : undefined,
    metrics.includes('conversion_rate') ? ctx.conversionTotals() : undefined,
  ])
  const bucketAt = new Map(buckets(range).map((b, i) => [b.epoch, i]))
  const shaped = shapeBreakdown(property, read, engagement && hasEngagement(property))
  return read.flatMap((r, k): ResultRow[] => {
    const i = bucketAt.get(Number(r.bucket))
    if (i === undefined) return []
    const of: RowContext = { goalRows: false, allVisitors: series?.[i].visitors ?? 0, baseVisitors: base?.visitors ?? 0 }
    const row = shaped[k]
    return [
      { metrics: metrics.map((m) => rowMetric(m, row, of)), dimensions: rowDimensions(ctx.plan, row).toSpliced(timeAt, 0, labels[i]) },
    ]
  })
}

/**
 * total_rows of a query whose rows are one read's (counted in plausibleQuery): the rows the read
 * answers with no limit, counted by the engine; the same read as grouped's, or bucketRows' with a
 * time dimension.
 */
async function rowCount(ctx: Context, range: ResolvedRange): Promise<number> {
  const { metrics, property, time } = ctx.plan
  if (property === undefined) throw new Error('total_rows is counted for a dimension')
  if (time) {
    const engagement = metrics.some((m) => m === 'bounce_rate' || m === 'visit_duration')
    return countRows(
      ctx.deps.clickhouse,
      { ...ctx.query, range },
      { kind: 'breakdown', property, byBucket: true, ...(engagement ? {} : { withoutEngagement: true as const }) },
    )
  }
  const visitsOnly = metrics.every((m) => VISIT_METRICS.includes(m)) ? ({ visitsOnly: true } as const) : {}
  return countRows(ctx.deps.clickhouse, ctx.query, { kind: 'breakdown', property, ...visitsOnly })
}

/** Breakdown rows with the engagement reports of each page (scroll depth, engaged time) where asked. */
async function pageReports(ctx: Context, limit: number) {
  const rows = await runRead<Record<string, unknown>>(
    ctx.deps.clickhouse,
    { ...ctx.query, limit },
    { kind: 'breakdown', property: 'path', reports: true },
  )
  return new Map(
    rows.map((r) => [
      String(r.value),
      { reports: Number(r.reports ?? 0), scroll: Number(r.scroll_sum ?? 0), ms: Number(r.engaged_ms_sum ?? 0) },
    ]),
  )
}

/**
 * The dimensions a row's group_conversion_rate divides by: the row's dimensions but the goal, as a
 * property (TOTALS where the goal is the only one), and the row's values of them as a key.
 */
function conversionGroup(property: string) {
  const parts = combinedParts(property) ?? [property]
  const rest = parts.filter((p) => p !== GOAL)
  const valuesOf = (value: string, of: string[]): string[] => (of.length > 1 ? (JSON.parse(value) as string[]) : [value])
  return {
    property: rest.length === 0 ? TOTALS : rest.length === 1 ? rest[0] : combinedProperty(rest),
    /** A row's goal. */
    goalOf: (value: string) => valuesOf(value, parts)[parts.indexOf(GOAL)],
    /** A row's key: its values of the group's dimensions. */
    rowKey: (value: string) => JSON.stringify(valuesOf(value, parts).filter((_, i) => parts[i] !== GOAL)),
    /** A group's key: a row of the group's breakdown. */
    groupKey: (value: string) => JSON.stringify(valuesOf(value, rest)),
  }
}

/** What a breakdown row's metrics take besides the row, read beside the rows. */
interface RowContext {
  /** The rows are goals (their events are conversions). */
  goalRows: boolean
  /** The visitors percentage divides by. */
  allVisitors: number
  /** The visitors conversion_rate divides by. */
  baseVisitors: number
  /** The visitors group_conversion_rate divides a row's by. */
  groupVisitors?: (row: BreakdownRow) => number
  /** Each page's engagement reports (pageReports). */
  reports?: Awaited<ReturnType<typeof pageReports>>
}

/** A metric of a breakdown row. */
function rowMetric(metric: PlausibleMetric, row: BreakdownRow, of: RowContext): MetricValue {
  switch (metric) {
    case 'visitors':
      return row.visitors
    case 'visits':
      return row.visits ?? 0
    case 'pageviews':
      return row.pageviews ?? 0
    case 'views_per_visit':
      return row.visits ? round((row.pageviews ?? 0) / row.visits, 2) : 0
    case 'bounce_rate':
      return Math.round((row.bounceRate ?? 0) * 100)
    case 'visit_duration':
      return row.avgDuration ?? 0
    case 'events':
      // a goal row's events are its conversions
      return of.goalRows ? row.events : pageviewsAndCustomEvents(row.pageviews, row.events)
    case 'percentage':
      return percent(row.visitors, of.allVisitors, 1)
    case 'conversion_rate':
      return percent(row.visitors, of.baseVisitors, 2)
    case 'group_conversion_rate':
      return percent(row.visitors, of.groupVisitors?.(row) ?? 0, 2)
    case 'total_revenue':
      return row.revenue ? revenueValue(row.revenue.amount, row.revenue.currency) : null
    case 'average_revenue':
      return row.revenue && row.conversions ? revenueValue(row.revenue.amount / row.conversions, row.revenue.currency) : null
    case 'scroll_depth': {
      const r = of.reports?.get(row.value)
      return r?.reports ? Math.round(r.scroll / r.reports) : null
    }
    case 'time_on_page': {
      const r = of.reports?.get(row.value)
      return r?.reports ? Math.round(r.ms / r.reports / 1000) : null
    }
  }
}

/** A row's values of the query's non-time dimensions, as Plausible answers them. */
const rowDimensions = (plan: Plan, row: BreakdownRow): string[] =>
  (plan.combined ? (JSON.parse(row.value) as string[]) : [row.value]).map((v, i) => plausibleValue(plan.others[i], v))

async function grouped(ctx: Context, property: string, limit: number): Promise<ResultRow[]> {
  const { reader } = ctx
  const { metrics } = ctx.plan
  const goalRows = holdsGoal(property)
  // each row's visitors without the goal filters: the goal's other dimensions' group, or the row's own value under goal filters
  const group = goalRows ? conversionGroup(property) : { property, rowKey: (v: string) => v, groupKey: (v: string) => v, goalOf: () => '' }
  const groupRate = metrics.includes('group_conversion_rate')
  // the goal alone: its group is everything read, the whole window but in a time bucket
  const groupTotals =
    !groupRate || group.property !== TOTALS ? undefined : ctx.bucket ? reader.totals(ctx.withoutGoals()) : ctx.conversionTotals()
  const visitsOnly = metrics.every((m) => VISIT_METRICS.includes(m)) ? ({ visitsOnly: true } as const) : {}
  const [rows, totals, baseTotals, groupTotal, groups, reports] = await Promise.all([
    reader.breakdown({ ...ctx.query, limit }, property, visitsOnly),
    metrics.includes('percentage') ? reader.totals(ctx.query) : undefined,
    metrics.includes('conversion_rate') ? ctx.conversionTotals() : undefined,
    groupTotals,
    groupRate && group.property !== TOTALS
      ? reader.breakdown({ ...ctx.withoutGoals(), limit: ALL_ROWS }, group.property, { visitsOnly: true })
      : undefined,
    metrics.some((m) => PAGE_METRICS.includes(m)) ? pageReports(ctx, ALL_ROWS) : undefined,
  ])
  const groupVisitors = new Map(groups?.map((g) => [group.groupKey(g.value), g.visitors]))
  // under goal filters, the conversions of the goals they select (the converting visits may hold others)
  const goals = goalRows ? selectedGoals(ctx) : undefined
  const visitorsOfGroup = (row: BreakdownRow) =>
    group.property === TOTALS ? (groupTotal?.visitors ?? 0) : (groupVisitors.get(group.rowKey(row.value)) ?? 0)
  const of: RowContext = {
    goalRows,
    allVisitors: totals?.visitors ?? 0,
    baseVisitors: baseTotals?.visitors ?? 0,
    groupVisitors: visitorsOfGroup,
    reports,
  }
  return rows
    .filter((row) => !goals || goals.has(group.goalOf(row.value)))
    .map((row) => ({ metrics: metrics.map((m) => rowMetric(m, row, of)), dimensions: rowDimensions(ctx.plan, row) }))
}

/** The order_by entries, each a metric of the query or one of its dimensions; Plausible's default: the time dimension ascending, then the first metric descending. */
function orderOf(body: PlausibleQuery): [string, 'asc' | 'desc'][] {
  const time = body.dimensions.find(isTimeDimension)
  const first: [string, 'desc'] = [body.metrics[0], 'desc']
  const order = body.order_by ?? (time === undefined ? [first] : [[time, 'asc'], first])
  for (const [i, [field]] of order.entries())
    if (!(body.metrics as string[]).includes(field) && !body.dimensions.includes(field))
      throw new ApiError(400, `order_by[${i}]: ${field} is neither a metric nor a dimension of the query`)
  return order as [string, 'asc' | 'desc'][]
}

const comparable = (v: MetricValue | string): number | string => (v === null ? -1 : typeof v === 'object' ? v.value : v)

function sortRows(rows: ResultRow[], order: [string, 'asc' | 'desc'][], body: PlausibleQuery) {
  const at = (row: ResultRow, field: string) => {
    const m = (body.metrics as string[]).indexOf(field)
    return comparable(m >= 0 ? row.metrics[m] : row.dimensions[body.dimensions.indexOf(field)])
  }
  const compare = (a: number | string, b: number | string) => (a < b ? -1 : a > b ? 1 : 0)
  return rows.sort((a, b) => {
    for (const [field, direction] of order) {
      const c = compare(at(a, field), at(b, field))
      if (c) return direction === 'asc' ? c : -c
    }
    // ties as the pipeline's rows: by value, then by the next dimensions'
    for (const [i, v] of a.dimensions.entries()) {
      const c = compare(v, b.dimensions[i] ?? '')
      if (c) return c
    }
    return 0
  })
}

/** A comparison's change: percent change, bounce_rate the difference in points; null where the earlier value is zero or missing. */
function change(metric: PlausibleMetric, now: MetricValue, before: MetricValue | undefined): number | null {
  const [a, b] = [now, before ?? null].map((v) => (v === null ? null : typeof v === 'object' ? v.value : v))
  if (a === null || b === null) return null
  if (metric === 'bounce_rate' || metric.endsWith('conversion_rate')) return round(a - b, 2)
  return b === 0 ? (a === 0 ? 0 : 100) : Math.round(((a - b) / b) * 100)
}

const inclusiveEnd = (to: Temporal.ZonedDateTime) => to.subtract({ seconds: 1 })
const isoSecond = (z: Temporal.ZonedDateTime) => z.toString({ timeZoneName: 'never', smallestUnit: 'second' })

/** Plausible's sentence for a query its imported data cannot answer; what these imports lack follows it. */
const UNSUPPORTED_QUERY = 'Imported stats are not included in the results because query parameters are not supported.'

/** Why include.imports did not add imported data: Plausible's reason code, and its warning where something was left out. */
type ImportsSkipped = { reason: 'no_imported_data' | 'unsupported_query'; warning?: string }

/**
 * Why include.imports cannot add a site's imported data to its tracker's numbers for this query:
 * it has none, or the query is one a read of the imported data refuses (a dimension, filter or
 * metric the imports do not hold, a window that is not whole days); null when it can.
 */
function importsRefusal(body: PlausibleQuery, site: Site, goals: Goal[], exact: ExactWindow | undefined): ImportsSkipped | null {
  if (!hasImportedData(site)) return { reason: 'no_imported_data' }
  const unsupported = (why: string): ImportsSkipped => ({ reason: 'unsupported_query', warning: `${UNSUPPORTED_QUERY} ${why}` })
  if (exact && !(startsDay(exact.from) && startsDay(exact.to)))
    return unsupported('The imported data holds whole days, and date_range is not whole days in the site timezone.')
  try {
    planQuery(body, 'ga4', goals)
    return null
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 400) throw err
    return unsupported(`The imported data cannot answer it (${err.message}).`)
  }
}

const mentionsSegment = (filters: readonly Filter[]): boolean =>
  filters.some((f) => f.dimension === SEGMENT || f.groups?.some(mentionsSegment))

/**
 * Segment filters replaced by their segments' filters, at the top level (AND-ed with the rest) and
 * inside groups (AND-ed with the rest of their group), checked as parsing checks a segment's filters.
 */
function expandSegmentsWhereTheyStand(filters: readonly Filter[], segments: Segment[], source: Source, goals: Goal[]): Filter[] {
  const inner = filters.map((f) =>
    f.groups ? { ...f, groups: f.groups.map((group) => expandSegmentsWhereTheyStand(group, segments, source, goals)) } : f,
  )
  const expanded = expandSegments(inner, segments, source)
  for (const f of expanded) if (f.dimension === GOAL) validateGoalFilter(f, goals)
  return expanded
}

/** Answers a Stats API v2 query for `site` from the site's primary source, with its imported data where include.imports adds it. */
export async function plausibleQuery(deps: ReportDeps, site: Site, body: PlausibleQuery): Promise<PlausibleAnswer> {
  const source = site.primarySource
  const goals = await deps.repositories.goals.list(site.id)
  const plan = planQuery(body, source, goals)
  const order = orderOf(body)
  const now = deps.now()
  const resolved = rangeParams(body.date_range, site.timezone, now)
  const { exact } = resolved
  let { params } = resolved
  // include.imports: the imported data added to the tracker's, or why not (meta.imports_warning)
  const importsRefused = body.include.imports && source === 'standalone' ? importsRefusal(body, site, goals, exact) : undefined
  let reader: Reader = sourceReader(deps.clickhouse, source)
  if (importsRefused === null) {
    const [tracked, imported] = await Promise.all([firstEventAt(deps.clickhouse, site.id), firstImportedAt(deps.clickhouse, site, 'all')])
    const localDay = (at: Date) => Temporal.Instant.fromEpochMilliseconds(at.getTime()).toZonedDateTimeISO(site.timezone).startOfDay()
    reader = readerWithImports(deps.clickhouse, tracked ? localDay(tracked) : null)
    // `all` starts at the first imported day when the imports begin before the tracker
    if (body.date_range === 'all' && imported && (!tracked || imported < tracked)) {
      const today = Temporal.Instant.fromEpochMilliseconds(now.getTime()).toZonedDateTimeISO(site.timezone).toPlainDate()
      params = { range: 'custom', from: localDay(imported).toPlainDate().toString(), to: today.toString() }
    }
  }
  // the filters are translated and checked already; parsing resolves the window
  const reportParams: ReportParams = { site_id: site.id, ...params, source, filters: undefined, limit: undefined }
  const [prepared, segments] = await Promise.all([
    prepare(deps, site, reportParams, { series: plan.time !== undefined, now }),
    mentionsSegment(plan.filters) ? deps.repositories.segments.list(site.id) : [],
  ])
  const range = windowOf(prepared.query.range, exact, plan.time)
  const filters = expandSegmentsWhereTheyStand(plan.filters, segments, source, goals)
  const query: Query = { ...prepared.query, range, filters, goals }
  const withoutGoals = () => ({ ...query, filters: query.filters.filter((f) => f.dimension !== GOAL) })
  const revenue = revenueCurrency(plan, filters)
  const ctx: Context = {
    deps,
    site,
    plan,
    query,
    reader,
    withoutGoals,
    conversionTotals: once(() => reader.totals(withoutGoals())),
    revenue,
    trackerOnly: source === 'standalone' && importsRefused !== null,
  }

  const { limit, offset } = body.pagination
  const defaultOrder = order.length === 1 && order[0][0] === 'visitors' && order[0][1] === 'desc'
  // combined rows are ordered by their values one by one here, not as the pipeline orders their JSON, and goal rows are
  // kept to the goals of the goal filters: all of them
  const goalRows = plan.property !== undefined && holdsGoal(plan.property)
  // total_rows counted by the engine where the rows are one read's (the tracker's alone, no goal rows, not compared),
  // however many: the rows themselves are then read as without it
  const counted =
    body.include.total_rows &&
    !body.include.comparisons &&
    ctx.trackerOnly &&
    plan.property !== undefined &&
    !goalRows &&
    (!plan.time || readByBucket(ctx, range, plan.property))
  const allRows = body.include.total_rows && !counted
  // combined rows come as the first by visitors and every row tied with the last (breakdown.ts, orderedRows); compared, all of them
  const fetch = allRows || !defaultOrder || goalRows || (plan.combined && body.include.comparisons) ? ALL_ROWS : offset + limit
  // a time dimension beside others in Plausible's default order (the bucket, then visitors): the rows up to the page's last, with their ties
  const timeFirst = plan.time !== undefined && order.length === 2 && order[0][0] === plan.time && order[0][1] === 'asc'
  ctx.bucketRows = timeFirst && order[1][0] === 'visitors' && order[1][1] === 'desc' && !allRows ? offset + limit : ALL_ROWS

  const read = async (c: Context, r: ResolvedRange) =>
    plan.time && plan.property
      ? await timeBreakdown(c, r, plan.property, body.dimensions.findIndex(isTimeDimension))
      : plan.time
        ? await timeseries(c, r)
        : { rows: plan.property ? await grouped(c, plan.property, fetch) : await aggregate(c), labels: undefined }
  const current = await read(ctx, range)
  // "time" answered as the bucket it was read by, in the dimensions and the order echoed
  const resolvedName = (name: string) => (name === 'time' ? `time:${range.interval}` : name)
  const dimensions = body.dimensions.map(resolvedName)
  const applied = order.map(([field, direction]): [string, 'asc' | 'desc'] => [resolvedName(field), direction])
  const all = sortRows(current.rows, applied, { ...body, dimensions })
  const results: ResultRow[] = all.slice(offset, offset + limit)

  const meta: PlausibleAnswer['meta'] = {}
  const comparisonQuery: Partial<PlausibleAnswer['query']> = {}
  if (body.include.comparisons) {
    if (plan.time && plan.property)
      throw new ApiError(400, 'include.comparisons: not supported with a time dimension and another dimension together')
    const window = comparisonWindow(range, body.include.comparisons, now)
    const earlierQuery = { ...query, range: window }
    const earlierWithoutGoals = () => ({ ...withoutGoals(), range: window })
    const earlier = await read(
      {
        ...ctx,
        query: earlierQuery,
        withoutGoals: earlierWithoutGoals,
        conversionTotals: once(() => reader.totals(earlierWithoutGoals())),
      },
      window,
    )
    comparisonQuery.comparison_date_range = [isoSecond(window.from), isoSecond(inclusiveEnd(window.to))]
    // time rows are matched by their place in the window, others by their dimension values
    const key = (row: ResultRow) => (plan.time ? String(current.labels?.indexOf(row.dimensions[0])) : JSON.stringify(row.dimensions))
    const earlierKey = (row: ResultRow) => (plan.time ? String(earlier.labels?.indexOf(row.dimensions[0])) : JSON.stringify(row.dimensions))
    const byKey = new Map(earlier.rows.map((row) => [earlierKey(row), row]))
    for (const row of results) {
      const before = byKey.get(key(row))
      const dimensions = plan.time ? [earlier.labels?.[Number(key(row))] ?? ''] : row.dimensions
      const metrics = before?.metrics ?? plan.metrics.map((m) => (m.endsWith('revenue') ? null : 0))
      row.comparison = { dimensions, metrics, change: plan.metrics.map((m, i) => change(m, row.metrics[i], metrics[i])) }
    }
    if (body.include.time_labels && earlier.labels) meta.comparison_time_labels = earlier.labels
  }

  meta.imports_included = source === 'ga4' || importsRefused === null
  if (importsRefused) meta.imports_skip_reason = importsRefused.reason
  if (importsRefused?.warning) meta.imports_warning = importsRefused.warning
  if (body.include.time_labels) {
    if (!plan.time) throw new ApiError(400, 'include.time_labels: needs a time dimension')
    meta.time_labels = current.labels
  }
  if (body.include.total_rows) {
    if (!plan.property && !plan.time) throw new ApiError(400, 'include.total_rows: needs a dimension')
    meta.total_rows = counted ? await rowCount(ctx, range) : all.length
  }
  const warning = revenue.warning
  if (warning && plan.metrics.some((m) => m === 'total_revenue' || m === 'average_revenue'))
    meta.metric_warnings = Object.fromEntries(
      plan.metrics.filter((m) => m.endsWith('_revenue')).map((m) => [m, { code: warning, warning: REVENUE_WARNINGS[warning] }]),
    )

  return {
    results,
    meta,
    query: {
      site_id: body.site_id,
      metrics: body.metrics,
      date_range: [isoSecond(range.from), isoSecond(inclusiveEnd(range.to))],
      ...comparisonQuery,
      dimensions,
      filters: body.filters,
      order_by: applied,
      include: body.include,
      pagination: { limit, offset },
    },
  }
}
