import { ApiError } from '../core/errors'
import { FILTER_GROUPS, PROPERTY_PREFIX, SEGMENT, readableBy } from '../reports/dimensions'
import type { Filter } from '../reports/query/model'
import { MAX_FILTERS, MAX_FILTER_VALUES, MAX_FILTER_VALUE_LENGTH } from '../reports/query/parse'
import type { Goal } from '../sites/goals'
import type { Source } from '../sites/source'

/**
 * Plausible's dimension and filter vocabulary (Stats API v2) onto this service's: dimension names
 * of lib/reports/dimensions.ts and AND-ed filters of the report pipeline. Pure; what has no
 * equivalent here is a 400 naming it, never dropped.
 */

/** Plausible's name → this service's dimension. */
const DIMENSION_NAMES: Record<string, string> = {
  'event:page': 'path',
  'event:hostname': 'hostname',
  'event:name': 'event',
  'event:goal': 'goal',
  'visit:entry_page': 'entry_page',
  'visit:exit_page': 'exit_page',
  'visit:source': 'source',
  'visit:referrer': 'referrer',
  'visit:channel': 'channel',
  'visit:utm_source': 'utm_source',
  'visit:utm_medium': 'utm_medium',
  'visit:utm_campaign': 'utm_campaign',
  'visit:utm_term': 'utm_term',
  'visit:utm_content': 'utm_content',
  'visit:device': 'device',
  'visit:browser': 'browser',
  'visit:os': 'os',
  'visit:browser_version': 'browser_version',
  'visit:os_version': 'os_version',
  'visit:entry_page_hostname': 'entry_page_hostname',
  'visit:exit_page_hostname': 'exit_page_hostname',
  'visit:country': 'country',
  'visit:region': 'region',
  'visit:city': 'city',
  // the places are kept by name: the region and city fields hold the names Plausible's _name dimensions give
  'visit:region_name': 'region',
  'visit:city_name': 'city',
  // kept as ISO 3166-1 codes, answered and matched by their English names
  'visit:country_name': 'country',
}

export const TIME_DIMENSIONS = ['time', 'time:hour', 'time:day', 'time:week', 'time:month'] as const
export type TimeDimension = (typeof TIME_DIMENSIONS)[number]
export const isTimeDimension = (name: string): name is TimeDimension => (TIME_DIMENSIONS as readonly string[]).includes(name)

const EVENT_PROPS = 'event:props:'

/** This service's dimension for a Plausible one, or a 400 naming it (`where`: the field it came in). */
export function serviceDimension(name: string, where: string): string {
  const known = DIMENSION_NAMES[name]
  if (known) return known
  if (name.startsWith(EVENT_PROPS) && name.length > EVENT_PROPS.length) return `${PROPERTY_PREFIX}${name.slice(EVENT_PROPS.length)}`
  throw new ApiError(400, `${where}: invalid dimension "${name}"`)
}

/** A dimension the read's source cannot answer is a 400 naming it as the query did. */
export function checkReadable(plausibleName: string, name: string, source: Source, where: string) {
  if (!readableBy(name, source))
    throw new ApiError(
      400,
      `${where}: ${plausibleName} cannot be answered from the ${source} source (imported data has no such field); it is recorded only by the tracker`,
    )
}

const OPERATORS = ['is', 'is_not', 'contains', 'contains_not', 'matches', 'matches_not'] as const
type Operator = (typeof OPERATORS)[number]
type Behaviour = 'has_done' | 'has_not_done'

/** Each operator and its negation. */
const NEGATED: Record<Operator, Operator> = {
  is: 'is_not',
  is_not: 'is',
  contains: 'contains_not',
  contains_not: 'contains',
  matches: 'matches_not',
  matches_not: 'matches',
}

/** A regular expression matching `text` literally, in both RE2 (ClickHouse) and JavaScript syntax. */
export const literalPattern = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

interface SimpleFilter {
  operator: Operator
  dimension: string
  clauses: string[]
  caseSensitive: boolean
  /** Inside has_done or has_not_done: the visits with, or without, an event the filter matches. */
  behaviour?: Behaviour
  where: string
}

function simpleFilter(raw: unknown[], where: string): SimpleFilter {
  const [operator, dimension, clauses, modifiers, ...rest] = raw
  if (rest.length) throw new ApiError(400, `${where}: a filter is [operator, dimension, clauses, modifiers?]`)
  if (typeof operator !== 'string' || !(OPERATORS as readonly string[]).includes(operator))
    throw new ApiError(
      400,
      `${where}: invalid filter operator ${JSON.stringify(operator)} (${OPERATORS.join(', ')}, and, or, not, has_done, has_not_done)`,
    )
  if (typeof dimension !== 'string' || !dimension) throw new ApiError(400, `${where}: the dimension must be a string`)
  if (!Array.isArray(clauses) || clauses.length === 0 || clauses.length > MAX_FILTER_VALUES)
    throw new ApiError(400, `${where}: clauses must be a list of 1 to ${MAX_FILTER_VALUES} values`)
  const values = clauses.map((c) => {
    if (typeof c === 'string' && c.length <= MAX_FILTER_VALUE_LENGTH) return c
    // segment ids and numeric values may be given as numbers
    if (typeof c === 'number' && Number.isFinite(c)) return String(c)
    throw new ApiError(400, `${where}: clauses must be strings of at most ${MAX_FILTER_VALUE_LENGTH} characters`)
  })
  let caseSensitive = true
  if (modifiers !== undefined) {
    if (typeof modifiers !== 'object' || modifiers === null || Array.isArray(modifiers))
      throw new ApiError(400, `${where}: modifiers must be an object`)
    for (const [name, value] of Object.entries(modifiers)) {
      if (name !== 'case_sensitive') throw new ApiError(400, `${where}: unknown modifier "${name}" (case_sensitive)`)
      if (typeof value !== 'boolean') throw new ApiError(400, `${where}: case_sensitive must be true or false`)
      caseSensitive = value
    }
  }
  return { operator: operator as Operator, dimension, clauses: values, caseSensitive, where }
}

const sameKind = (a: SimpleFilter, b: SimpleFilter) =>
  a.operator === b.operator && a.dimension === b.dimension && a.caseSensitive === b.caseSensitive && a.behaviour === b.behaviour

/** Groups of AND-ed filters, OR-ed together, or (negated) none of them holding: an "or" across dimensions, a "not" around several filters. */
interface FilterGroup {
  negated: boolean
  groups: Item[][]
  where: string
}
type Item = SimpleFilter | FilterGroup
const isSimple = (item: Item): item is SimpleFilter => 'operator' in item

/**
 * How deep `and`, `or`, `not`, `has_done` and `has_not_done` may nest (docs/plausible.md): each
 * level nests the statement's conditions too, and the engine refuses them past its own depth.
 */
export const MAX_FILTER_DEPTH = 10

/** Where a filter sits in the tree: its `and`/`or`/`not` depth, and the filters met so far in the query. */
interface Placement {
  depth: number
  seen: { filters: number }
}

/**
 * Flattens the filter tree into AND-ed items: `and` anywhere; `or` of filters on one dimension with
 * one positive operator as one filter (their clauses OR-ed, as one filter's are), any other `or` as
 * a group; `not` of one filter (its operator negated), of a group (negated), of several filters (a
 * negated group); has_done and has_not_done of one filter.
 */
function flatten(raw: unknown, where: string, at: Placement): Item[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new ApiError(400, `${where}: a filter must be a non-empty list`)
  const [head] = raw
  const logical = head === 'and' || head === 'or' || head === 'not' || head === 'has_done' || head === 'has_not_done'
  if (logical && at.depth >= MAX_FILTER_DEPTH)
    throw new ApiError(400, `${where}: nested more than ${MAX_FILTER_DEPTH} deep (and, or, not, has_done, has_not_done)`)
  const inside = { ...at, depth: at.depth + 1 }
  if (head === 'and' || head === 'or') {
    const list = raw[1]
    if (raw.length !== 2 || !Array.isArray(list) || list.length === 0)
      throw new ApiError(400, `${where}: ${head} takes one non-empty list of filters`)
    const children = list.map((f, i) => flatten(f, `${where}[1][${i}]`, inside))
    if (head === 'and') return children.flat()
    // one filter each, all of one kind with a positive operator: one filter, their clauses OR-ed
    const singles = children.flatMap((c) => (c.length === 1 && isSimple(c[0]) ? [c[0]] : []))
    const [first] = singles
    // segments are not merged: a segment filter names one segment
    if (
      singles.length === children.length &&
      singles.every((p) => sameKind(p, first)) &&
      ['is', 'contains', 'matches'].includes(first.operator) &&
      first.dimension !== SEGMENT
    )
      return [{ ...first, clauses: singles.flatMap((p) => p.clauses), where }]
    return [{ negated: false, groups: children, where }]
  }
  if (head === 'not' || head === 'has_done' || head === 'has_not_done') {
    if (raw.length !== 2) throw new ApiError(400, `${where}: ${head} takes one filter`)
    const inner = flatten(raw[1], `${where}[1]`, inside)
    if (head === 'not' && inner.length === 1 && !isSimple(inner[0])) return [{ ...inner[0], negated: !inner[0].negated, where }]
    if (head === 'not' && inner.length !== 1) return [{ negated: true, groups: [inner], where }]
    const [f] = inner
    if (inner.length !== 1 || !isSimple(f)) throw new ApiError(400, `${where}: "${head}" is supported only around one filter`)
    // a segment has no negated operator: not of a segment is a negated group of it
    if (head === 'not' && f.dimension === SEGMENT) return [{ negated: true, groups: [inner], where }]
    if (head !== 'not') {
      if (f.behaviour) throw new ApiError(400, `${where}: ${head} cannot hold another behavioural filter`)
      return [{ ...f, behaviour: head, where }]
    }
    // not has_done is has_not_done; not of a filter, its operator negated
    if (f.behaviour) return [{ ...f, behaviour: f.behaviour === 'has_done' ? 'has_not_done' : 'has_done', where }]
    return [{ ...f, operator: NEGATED[f.operator], where }]
  }
  if (++at.seen.filters > MAX_FILTERS)
    throw new ApiError(400, `filters: more than ${MAX_FILTERS} filters in all, counting those inside and, or and not`)
  return [simpleFilter(raw, where)]
}

/**
 * A goal filter as the names of the goals it selects (Plausible's goal clauses are goal names:
 * `Signup`, `Visit /blog*`), matched here: is or is_not those names.
 */
function goalFilter(f: SimpleFilter, goals: readonly Goal[]): Filter {
  const fold = (text: string) => (f.caseSensitive ? text : text.toLowerCase())
  const positive = f.operator.endsWith('_not') ? (NEGATED[f.operator] as 'is' | 'contains' | 'matches') : f.operator
  let patterns: RegExp[] = []
  if (positive === 'matches') {
    patterns = f.clauses.map((clause) => {
      try {
        return new RegExp(clause, f.caseSensitive ? '' : 'i')
      } catch {
        throw new ApiError(400, `${f.where}: invalid regular expression in a matches filter`)
      }
    })
  }
  if (positive === 'is')
    for (const clause of f.clauses)
      if (!goals.some((g) => fold(g.name) === fold(clause)))
        throw new ApiError(400, `${f.where}: the goal "${clause}" is not configured for this site`)
  const selected = goals.filter((g) =>
    positive === 'is'
      ? f.clauses.some((c) => fold(c) === fold(g.name))
      : positive === 'contains'
        ? f.clauses.some((c) => fold(g.name).includes(fold(c)))
        : patterns.some((p) => p.test(g.name)),
  )
  // has_not_done and the negated operators keep the visits that converted none of them
  const negated = f.operator.endsWith('_not') !== (f.behaviour === 'has_not_done')
  return { dimension: 'goal', operator: negated ? 'is_not' : 'is', value: selected.map((g) => g.name) }
}

/** A filter's operator and clauses for the pipeline: Plausible's are case-sensitive, the pipeline's contains ignores case. */
function operatorOf(f: SimpleFilter): Pick<Filter, 'operator' | 'value'> {
  const negated = f.operator.endsWith('_not')
  const positive = negated ? NEGATED[f.operator] : f.operator
  const ci = (p: string) => `(?i)${p}`
  const as = (operator: 'is' | 'contains' | 'matches', value: string[]): Pick<Filter, 'operator' | 'value'> => ({
    operator: negated ? (NEGATED[operator] as Filter['operator']) : operator,
    value,
  })
  if (positive === 'is')
    return f.caseSensitive
      ? as('is', f.clauses)
      : as(
          'matches',
          f.clauses.map((c) => ci(`^${literalPattern(c)}$`)),
        )
  if (positive === 'contains') return f.caseSensitive ? as('matches', f.clauses.map(literalPattern)) : as('contains', f.clauses)
  return as('matches', f.caseSensitive ? f.clauses : f.clauses.map(ci))
}

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' })
/** Every ISO 3166-1 alpha-2 code with its English name (not the replaced codes, such as DD for DE, that share a name). */
const COUNTRY_NAMES: ReadonlyMap<string, string> = (() => {
  const names = new Map<string, string>()
  const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
  for (const a of letters)
    for (const b of letters) {
      const code = a + b
      const name = regionNames.of(code)
      if (name && name !== code && new Intl.Locale(`und-${code}`).region === code) names.set(code, name)
    }
  return names
})()

/** A country's English name (visit:country_name), '' for an unknown country. */
export const countryName = (code: string) => COUNTRY_NAMES.get(code) ?? ''

const NOT_SET = '(not set)'
/**
 * How Plausible labels a visit without a value of these dimensions, in rows and in `is` and
 * `is_not` filters (visit:source and visit:referrer are labelled `Direct / None` by the reads).
 */
const EMPTY_LABELS: Record<string, string> = {
  'visit:utm_source': NOT_SET,
  'visit:utm_medium': NOT_SET,
  'visit:utm_campaign': NOT_SET,
  'visit:utm_term': NOT_SET,
  'visit:utm_content': NOT_SET,
  'visit:device': NOT_SET,
  'visit:browser': NOT_SET,
  'visit:browser_version': NOT_SET,
  'visit:os': NOT_SET,
  'visit:os_version': NOT_SET,
  'visit:channel': 'Direct',
}

/** A row's value of a Plausible dimension as Plausible answers it: a country's name, or the label of no value. */
export function plausibleValue(name: string, value: string): string {
  if (name === 'visit:country_name') return countryName(value)
  return value === '' ? (EMPTY_LABELS[name] ?? value) : value
}

/** An `is` clause as the stored value it names: `(not set)` (and `Direct / None` of a campaign field) the empty value. */
function storedValue(name: string, clause: string): string {
  if (name === 'visit:channel' || !(name in EMPTY_LABELS)) return clause
  return clause === NOT_SET || (name.startsWith('visit:utm_') && clause === 'Direct / None') ? '' : clause
}

/** A filter on country names as one on the codes of the countries it selects. */
function countryNameFilter(f: SimpleFilter): Filter {
  const negated = f.operator.endsWith('_not')
  const positive = negated ? NEGATED[f.operator] : f.operator
  const fold = (text: string) => (f.caseSensitive ? text : text.toLowerCase())
  let selects: (name: string) => boolean
  if (positive === 'is') selects = (name) => f.clauses.some((c) => fold(c) === fold(name))
  else if (positive === 'contains') selects = (name) => f.clauses.some((c) => fold(name).includes(fold(c)))
  else {
    const patterns = f.clauses.map((clause) => {
      try {
        return new RegExp(clause, f.caseSensitive ? '' : 'i')
      } catch {
        throw new ApiError(400, `${f.where}: invalid regular expression in a matches filter`)
      }
    })
    selects = (name) => patterns.some((p) => p.test(name))
  }
  const codes = [...COUNTRY_NAMES].filter(([, name]) => selects(name)).map(([code]) => code)
  return { dimension: 'country', operator: negated ? 'is_not' : 'is', value: codes }
}

/** One simple filter as the pipeline's filter. */
function serviceFilter(f: SimpleFilter, source: Source, goals: readonly Goal[]): Filter {
  if (f.dimension === SEGMENT) {
    if (f.operator !== 'is' || f.behaviour || f.clauses.length !== 1)
      throw new ApiError(400, `${f.where}: a segment filter is ["is", "segment", [id]]`)
    return { dimension: SEGMENT, operator: 'is', value: f.clauses }
  }
  if (isTimeDimension(f.dimension)) throw new ApiError(400, `${f.where}: filtering by ${f.dimension} is not supported; use date_range`)
  const dimension = serviceDimension(f.dimension, f.where)
  checkReadable(f.dimension, dimension, source, f.where)
  // a goal filter keeps the visits that converted: has_done of a goal is the goal filter itself
  if (dimension === 'goal') return goalFilter(f, goals)
  if (f.dimension === 'visit:country_name' && !f.behaviour) return countryNameFilter(f)
  if (!f.behaviour) {
    const exact = f.operator === 'is' || f.operator === 'is_not'
    return { dimension, ...operatorOf(exact ? { ...f, clauses: f.clauses.map((c) => storedValue(f.dimension, c)) } : f) }
  }
  if (source !== 'standalone') throw new ApiError(400, `${f.where}: ${f.behaviour} needs the tracker source`)
  if (!f.dimension.startsWith('event:'))
    throw new ApiError(
      400,
      `${f.where}: ${f.behaviour} takes a filter on an event dimension (event:name, event:page, event:props:<key>, ...)`,
    )
  const { operator, value } = operatorOf(f)
  return { dimension: f.behaviour, operator, value: [dimension, ...value] }
}

/**
 * An item as the pipeline's filter. Goal and segment filters may sit in groups too: a goal holds on
 * every event of a visit that converted, as at the top level; a segment is expanded into its
 * filters where it stands (lib/plausible/query.ts).
 */
function serviceItem(item: Item, source: Source, goals: readonly Goal[]): Filter {
  if (isSimple(item)) return serviceFilter(item, source, goals)
  if (source !== 'standalone')
    throw new ApiError(
      400,
      `${item.where}: an "or" across dimensions or a "not" around several filters needs the tracker source (imported data is filtered by AND-ed filters)`,
    )
  return {
    dimension: FILTER_GROUPS,
    operator: item.negated ? 'is_not' : 'is',
    value: [],
    groups: item.groups.map((group) => group.map((inner) => serviceItem(inner, source, goals))),
  }
}

/** The query's filters as the pipeline's AND-ed filters, each checked against the read's source. */
export function translateFilters(filters: readonly unknown[], source: Source, goals: readonly Goal[]): Filter[] {
  const top: Placement = { depth: 0, seen: { filters: 0 } }
  return filters.flatMap((f, i) => flatten(f, `filters[${i}]`, top)).map((f) => serviceItem(f, source, goals))
}
