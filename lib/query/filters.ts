import { z } from 'zod'
import { FIRST_PARTY_DIMENSIONS, OPERATORS, PROPERTY_PREFIX, SHARED_DIMENSIONS } from '../dimensions'
import { ApiError } from '../errors'
import { type Goal, pageGoalPattern } from '../goals'

export const filterSchema = z.array(
  z.strictObject({
    dimension: z.string().min(1),
    operator: z.enum(OPERATORS),
    value: z.array(z.string().max(2000), { message: 'must be an array of strings' }).min(1).max(100),
  }),
)
export type Filter = z.infer<typeof filterSchema>[number]

/** Bad report input: a 400 naming the parameter. */
export class QueryInputError extends ApiError {
  constructor(message: string) {
    super(400, message)
  }
}

/** SQL over `events` for each dimension that is a column expression. Identifiers come only from here. */
export const DIMENSION_SQL: Record<string, string> = {
  path: 'pathname',
  source: "if(referrer_source = '', 'Direct / None', referrer_source)",
  channel: 'channel',
  referrer: "if(referrer = '', 'Direct / None', referrer)",
  utm_source: 'utm_source',
  utm_medium: 'utm_medium',
  utm_campaign: 'utm_campaign',
  utm_term: 'utm_term',
  utm_content: 'utm_content',
  country: 'country_code',
  region: 'region',
  city: 'city',
  browser: 'browser',
  os: 'os',
  device: 'device',
  screen_class: 'screen_class',
  hostname: 'hostname',
  event: 'name',
  link: "if(kind IN ('click', 'outbound', 'download', 'affiliate'), link_url, '')",
  outbound: "if(kind = 'outbound', link_url, '')",
  affiliate: "if(kind = 'affiliate', link_url, '')",
  button: "if(kind = 'click' AND element_tag = 'button', element_text, '')",
  dead_click: "if(dead_click = 1, selector, '')",
  form: "if(kind = 'form', selector, '')",
  collection_source: 'collection_source',
}

/** Dimensions that only some events carry: a breakdown skips events without a value. */
export const SPARSE_DIMENSIONS = new Set(['link', 'outbound', 'affiliate', 'button', 'dead_click', 'form', 'event'])

export function validateDimension(dimension: string, source: 'standalone' | 'ga4', what: 'filters' | 'property'): void {
  const known = (SHARED_DIMENSIONS as readonly string[]).includes(dimension) || (FIRST_PARTY_DIMENSIONS as readonly string[]).includes(dimension)
  const prop = dimension.startsWith(PROPERTY_PREFIX) && dimension.length > PROPERTY_PREFIX.length && dimension.length <= 200
  if (!known && !prop) throw new QueryInputError(`${what}: unknown dimension "${dimension}"`)
  if (source === 'ga4' && ((FIRST_PARTY_DIMENSIONS as readonly string[]).includes(dimension) || prop)) {
    throw new QueryInputError(`${what}: "${dimension}" is recorded only by the first-party collector; the ga4 source has no such field`)
  }
  if (dimension === 'bot_kind') throw new QueryInputError(`${what}: bot_kind applies to bot traffic, which these human-traffic reports do not read`)
}

/** Parses the `filters` parameter: URL-decoded JSON, an array of {dimension, operator, value}. */
export function parseFilters(raw: string | undefined, source: 'standalone' | 'ga4'): Filter[] {
  if (raw === undefined || raw === '') return []
  let json: unknown
  try {
    json = JSON.parse(raw)
  } catch {
    throw new QueryInputError('filters: not valid JSON')
  }
  const parsed = filterSchema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const [index, field] = issue.path
    const where = index === undefined ? 'filters' : `filters[${String(index)}]${field === undefined ? '' : `.${String(field)}`}`
    const message = issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue.message
    throw new QueryInputError(`${where}: ${message}`)
  }
  for (const f of parsed.data) validateDimension(f.dimension, source, 'filters')
  return parsed.data
}

export interface Compiled {
  sql: string
  params: Record<string, unknown>
}

/** Builds `{name:Type}` placeholders with unique names. */
export class Params {
  readonly values: Record<string, unknown> = {}
  private n = 0
  add(type: string, value: unknown): string {
    const name = `p${this.n++}`
    this.values[name] = value
    return `{${name}:${type}}`
  }
}

/** The operator applied to an expression, the values bound. */
export function operatorSql(expr: string, operator: Filter['operator'], values: string[], params: Params): string {
  const list = params.add('Array(String)', values)
  switch (operator) {
    case 'is':
      return `${expr} IN ${list}`
    case 'is_not':
      return `${expr} NOT IN ${list}`
    case 'contains':
      return `multiSearchAnyCaseInsensitiveUTF8(${expr}, ${list})`
    case 'matches':
      return `arrayExists(pattern -> match(${expr}, pattern), ${list})`
  }
}

export function dimensionSql(dimension: string, params: Params): string {
  if (dimension.startsWith(PROPERTY_PREFIX)) return `props[${params.add('String', dimension.slice(PROPERTY_PREFIX.length))}]`
  const sql = DIMENSION_SQL[dimension]
  if (!sql) throw new QueryInputError(`unknown dimension "${dimension}"`)
  return sql
}

/** The condition a goal sets on one event. */
export function goalConditionSql(goal: Goal, params: Params): string {
  if (goal.type === 'event') return `name = ${params.add('String', goal.matchValue)}`
  return `(kind = 'pageview' AND pathname LIKE ${params.add('String', pageGoalPattern(goal.matchValue))})`
}

/**
 * Filter conditions on `events`, inside the window `scope` (site and time). Column dimensions
 * filter rows directly: visit-scoped ones are the same on every event of a visit, so whole visits
 * are kept. entry_page, exit_page and goal keep the visits whose facts match.
 */
export function compileFilters(filters: Filter[], goals: Goal[], scope: string, params: Params): string[] {
  return filters.map((f) => {
    if (f.dimension === 'goal') {
      const matched = f.value.map((name) => {
        const goal = goals.find((g) => g.name === name)
        if (!goal) throw new QueryInputError(`filters: no goal named "${name}" on this site`)
        return goal
      })
      if (f.operator !== 'is' && f.operator !== 'is_not') throw new QueryInputError('filters: goal takes the is and is_not operators')
      const converted = `session_id IN (SELECT session_id FROM events WHERE ${scope} AND (${matched.map((g) => goalConditionSql(g, params)).join(' OR ')}))`
      return f.operator === 'is' ? converted : `NOT ${converted}`
    }
    if (f.dimension === 'entry_page' || f.dimension === 'exit_page') {
      const merge = f.dimension === 'entry_page' ? 'argMinMerge(entry_page)' : 'argMaxMerge(exit_page)'
      return `session_id IN (SELECT session_id FROM sessions WHERE site_id = {site:UUID} AND session_start >= {visitsFrom:DateTime64(3)} GROUP BY session_id HAVING ${operatorSql(merge, f.operator, f.value, params)})`
    }
    return operatorSql(dimensionSql(f.dimension, params), f.operator, f.value, params)
  })
}
