import { z } from 'zod'
import { BOT_DIMENSIONS, OPERATORS, RANGES, SEGMENT, dimension, isCustomProperty, readableBy } from '../dimensions'
import { ApiError } from '../../core/errors'
import { AI_CHANNEL, FORMER_AI_CHANNEL_NAMES } from '../../ingest/ai-assistants'
import type { Goal } from '../../sites/goals'
import { type Site, siteRefSchema } from '../../sites/sites'
import { SOURCES, type Source } from '../../sites/source'
import type { Segment } from '../../sites/definition-records'
import type { Filter, Query } from './model'
import { type WindowName, resolveRange } from './range'

/**
 * A row count (docs/api.md, Limits): any integer is taken and clamped to 1..max, so the documents show the
 * bounds that matter rather than the whole integer range.
 */
export const limitParam = (max: number, fallback: number) =>
  z.coerce
    .number({ message: 'must be a number' })
    .int('must be an integer')
    .meta({ minimum: 1, maximum: max })
    .optional()
    .describe(`Rows for lists, clamped to 1-${max}, default ${fallback}`)

/** The common parameters of every report (docs/api.md, Reports). */
export const reportParams = z.object({
  site_id: siteRefSchema,
  range: z.enum(RANGES).default('30d').describe('Named range, resolved in the site timezone; custom needs from and to'),
  from: z.string().optional().describe('YYYY-MM-DD, with range=custom'),
  to: z.string().optional().describe('YYYY-MM-DD, with range=custom (included)'),
  filters: z.string().optional().describe('JSON array of {dimension, operator: is|is_not|contains|matches, value: [strings]}'),
  source: z.enum(SOURCES).optional().describe("standalone or ga4; default: the site's primary source"),
  limit: limitParam(1000, 100),
})
export type ReportParams = z.infer<typeof reportParams>

/** The bounds of a read's filters (docs/api.md, Filters), Plausible's queries' too (docs/plausible.md). */
export const MAX_FILTERS = 50
export const MAX_FILTER_VALUES = 100
export const MAX_FILTER_VALUE_LENGTH = 2000

export const filterSchema = z
  .array(
    z.strictObject({
      dimension: z.string().min(1).max(200),
      operator: z.enum(OPERATORS),
      value: z
        .array(z.string().max(MAX_FILTER_VALUE_LENGTH, `at most ${MAX_FILTER_VALUE_LENGTH} characters a value`), {
          message: 'must be an array of strings',
        })
        .min(1)
        .max(MAX_FILTER_VALUES, `at most ${MAX_FILTER_VALUES} values`),
    }),
  )
  .max(MAX_FILTERS, `at most ${MAX_FILTERS} filters`)

export function validateDimension(name: string, source: Source, what: 'filters' | 'property'): void {
  if (name === SEGMENT) {
    if (what === 'property') throw new ApiError(400, `property: ${name} is a filter, not a breakdown property`)
    return
  }
  if ((!dimension(name) || dimension(name)?.v2Only) && !isCustomProperty(name))
    throw new ApiError(400, `${what}: unknown dimension "${name}"`)
  if (!readableBy(name, source))
    throw new ApiError(400, `${what}: "${name}" is recorded only by the first-party collector; the ${source} source has no such field`)
}

/**
 * The `filters` parameter as written: URL-decoded JSON, an array of {dimension, operator, value};
 * a 400 naming the filter and field at fault. The one filter parser of the reads: each read then
 * checks the dimensions it takes (parseFilters: every report's; search: Search Console's).
 */
export function parseFilterJson(raw: string | undefined): z.infer<typeof filterSchema> {
  if (raw === undefined || raw === '') return []
  let json: unknown
  try {
    json = JSON.parse(raw)
  } catch {
    throw new ApiError(400, 'filters: not valid JSON')
  }
  const parsed = filterSchema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const [index, field] = issue.path
    const where = index === undefined ? 'filters' : `filters[${String(index)}]${field === undefined ? '' : `.${String(field)}`}`
    const message = issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue.message
    throw new ApiError(400, `${where}: ${message}`)
  }
  return parsed.data
}

/** Parses the `filters` parameter of a report on `source`: each dimension is one the source records. */
export function parseFilters(raw: string | undefined, source: Source): z.infer<typeof filterSchema> {
  const filters = parseFilterJson(raw)
  for (const f of filters) validateDimension(f.dimension, source, 'filters')
  return source === 'standalone' ? filters.map(renamedChannels) : filters
}

/** A matches filter's patterns are valid regular expressions; a 400 otherwise. */
export function checkPatterns(filter: Filter) {
  if (filter.operator !== 'matches') return
  for (const pattern of filter.value) {
    try {
      new RegExp(pattern)
    } catch {
      throw new ApiError(400, 'filters: invalid regular expression in a matches filter')
    }
  }
}

/** A channel filter naming the AI channel by a former name (stored rows were renamed by migration 0018) reads it by its name. */
function renamedChannels<F extends Filter>(filter: F): F {
  if (filter.dimension !== 'channel' || (filter.operator !== 'is' && filter.operator !== 'is_not')) return filter
  return { ...filter, value: filter.value.map((v) => (FORMER_AI_CHANNEL_NAMES.includes(v) ? AI_CHANNEL : v)) }
}

/** A goal filter by name (is, is_not) names goals of the site; a matches filter is a valid pattern. */
export function validateGoalFilter(filter: Filter, goals: Goal[]) {
  if (filter.operator === 'is' || filter.operator === 'is_not') {
    for (const name of filter.value)
      if (!goals.some((g) => g.name === name)) throw new ApiError(400, `filters: no goal named "${name}" on this site`)
  }
  checkPatterns(filter)
}

export interface ParseOptions {
  /** The timeseries window, which differs for realtime (30 minutes, not 5). */
  series?: boolean
  /** A range that overrides the parameter (realtime reads). */
  range?: WindowName
  /** The property a breakdown groups by. */
  property?: string
  /** The read may count bot hits (stats, timeseries, breakdown): a bot_kind filter or property then selects them. */
  bots?: boolean
}

/**
 * Whether parsing will need the site's goals: a breakdown by goal, a goal filter, or a segment
 * filter (a segment may hold goal filters). Goals are read only when used.
 */
export const needsGoals = (filters: readonly Filter[], options: ParseOptions = {}) =>
  options.property === 'goal' || filters.some((f) => f.dimension === 'goal' || f.dimension === SEGMENT)

/** Whether parsing will need the site's segments: a segment filter. */
export const needsSegments = (filters: readonly Filter[]) => filters.some((f) => f.dimension === SEGMENT)

/**
 * Replaces each segment filter by the filters of its segment (AND-ed with the rest). Only `is`
 * with one segment id: negating or OR-ing whole segments is not expressible as AND-ed filters.
 * The segment's filters are checked against this read's source, as if written out.
 */
export function expandSegments(filters: Filter[], segments: Segment[], source: Source): Filter[] {
  return filters.flatMap((f): Filter[] => {
    if (f.dimension !== SEGMENT) return [f]
    if (f.operator !== 'is') throw new ApiError(400, `filters: a segment filter takes only the is operator (not ${f.operator})`)
    if (f.value.length !== 1) throw new ApiError(400, 'filters: a segment filter names exactly one segment id')
    const segment = segments.find((s) => s.id === f.value[0].toLowerCase())
    if (!segment) throw new ApiError(400, 'filters: not a segment id of this site')
    for (const inner of segment.filters) validateDimension(inner.dimension, source, 'filters')
    return source === 'standalone' ? segment.filters.map(renamedChannels) : segment.filters
  })
}

/** Whether the window needs the site's first event: `all` starts on its day. */
export const needsFirstEvent = (params: Pick<ReportParams, 'range'>, options: ParseOptions = {}) =>
  (options.range ?? params.range) === 'all'

/**
 * A bot_kind filter or property makes a read count bot hits only, which record fewer dimensions
 * than human events; reads that count humans only reject bot_kind rather than ignore it.
 */
function validateBotRead(filters: Filter[], property: string | undefined, allowed: boolean) {
  const byProperty = property === 'bot_kind'
  if (!byProperty && !filters.some((f) => f.dimension === 'bot_kind')) return
  const what = byProperty ? 'property' : 'filters'
  if (!allowed)
    throw new ApiError(
      400,
      `${what}: bot_kind selects bot traffic, which only stats, timeseries and breakdown read; this read counts humans only`,
    )
  const known = `bot hits record ${BOT_DIMENSIONS.join(', ')}`
  for (const f of filters) {
    if (!BOT_DIMENSIONS.includes(f.dimension))
      throw new ApiError(400, `filters: ${f.dimension} is not recorded for bot hits, which a bot_kind filter or property reads (${known})`)
    const values = dimension(f.dimension)?.values
    if (values && (f.operator === 'is' || f.operator === 'is_not')) {
      const unknown = f.value.find((v) => !values.includes(v))
      if (unknown !== undefined) throw new ApiError(400, `filters: "${unknown}" is not a bot kind (${values.join(', ')})`)
    }
  }
  if (property !== undefined && !BOT_DIMENSIONS.includes(property))
    throw new ApiError(400, `property: ${property} is not recorded for bot hits, which a bot_kind filter reads (${known})`)
}

/** The read's source: the parameter, or else the site's primary source; one the site has. */
export function parseSource(params: Pick<ReportParams, 'source'>, site: Site): Source {
  const source = params.source ?? site.primarySource
  if (!site.sources.includes(source))
    throw new ApiError(400, `source: this site has no ${source} source (${site.domain} has ${site.sources.join(', ')})`)
  return source
}

/**
 * The source a collector-only read answers for: the one asked for (a 400 naming it when the site
 * does not have it), else the standalone source where the site has it, else ga4. Only the standalone
 * source holds what these reads count; for ga4 they answer `available: false`.
 */
export function collectorSource(params: Pick<ReportParams, 'source'>, site: Site): Source {
  if (params.source !== undefined) return parseSource(params, site)
  return site.sources.includes('standalone') ? 'standalone' : 'ga4'
}

export interface ParseInput {
  params: ReportParams
  site: Site
  /** The read's source (parseSource) and its filters as written (parseFilters), parsed once before what parsing reads. */
  source: Source
  filters: Filter[]
  goals: Goal[]
  /** The site's segments, when a filter names one. */
  segments?: Segment[]
  firstEventAt: Date | null
  now: Date
}

export interface ParsedReport {
  source: Source
  query: Query
}

/** Validates the common parameters against the site: the query model, or a 400 naming the parameter. */
export function parseQuery(
  { params, site, source, filters: written, goals, segments = [], firstEventAt, now }: ParseInput,
  options: ParseOptions = {},
): ParsedReport {
  const filters = expandSegments(written, segments, source)
  for (const f of filters) if (f.dimension === 'goal') validateGoalFilter(f, goals)
  const range = resolveRange({ range: options.range ?? params.range, from: params.from, to: params.to }, site.timezone, now, {
    series: options.series,
    firstEventAt,
  })
  const property = options.property
  if (property === 'goal' && source === 'ga4') throw new ApiError(400, 'property: goal is recorded only by the first-party collector')
  if (property !== undefined && property !== 'goal') validateDimension(property, source, 'property')
  validateBotRead(filters, property, options.bots ?? false)
  const limit = Math.min(1000, Math.max(1, params.limit ?? 100))
  return { source, query: { siteId: site.id, range, filters, goals, limit, now } }
}
