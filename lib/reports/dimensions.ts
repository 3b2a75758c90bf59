import { BOT_KINDS } from '../ingest/bot-kinds'
import type { Ga4DatasetName, ImportedColumn } from './query/ga4-datasets'
import type { Source } from '../sites/source'

/**
 * The static vocabulary of reports (docs/api.md, Ranges and Filters), and the one table of
 * dimensions: parsing, the planner, the SQL builders, the dimensions index, the bot reads and the
 * why-traffic-changed reads all read their facts from here. A leaf: it imports no report code.
 */
export const RANGES = [
  'realtime',
  'today',
  'yesterday',
  '7d',
  'week',
  'month',
  '30d',
  '90d',
  'year',
  'ytd',
  'last-year',
  '12mo',
  'all',
  'custom',
] as const
export type RangeName = (typeof RANGES)[number]

export const OPERATORS = ['is', 'is_not', 'contains', 'matches'] as const

export const PROPERTY_PREFIX = 'prop:'

/** How the first-party collector's data reads a dimension. Every SQL here is an allow-listed expression, never input. */
export interface StandaloneColumns {
  /** Its value on an event, as SQL over `events`; absent where a read derives it (goal, entry and exit pages). */
  events?: string
  /**
   * Its value as SQL over the sessions rollup, where it is a visit attribute stamped on every row of
   * a visit under the same column as on events: a filter on it narrows visits there too.
   */
  sessions?: string
  /** Whether the daily rollup (and the partial rollup of today) holds its rows, under its name. */
  daily?: true
  /** Its value as SQL over `bot_events`; absent: bot hits do not record it. */
  bots?: string
}

export interface Dimension {
  name: string
  /** visit: the same on every event of a visit, so a filter keeps whole visits; event: a filter keeps the matching events. */
  scope: 'visit' | 'event'
  /** Whether its breakdown rows carry visit engagement (bounceRate, avgDuration; docs/api.md, Metrics). */
  engagement: boolean
  /** Only some events carry it: a breakdown skips events without a value. */
  sparse?: true
  /** The sources whose reads take it: the collector records every dimension, a ga4 read takes the shared ones. */
  sources: readonly Source[]
  standalone: StandaloneColumns
  /** The imported GA4 dataset and column (lib/reports/query/ga4-datasets.ts) a ga4 read takes it from; absent: a ga4 read refuses it. */
  /**
   * The imported dataset holding the dimension with its own users, and the column; `alsoIn`: other
   * datasets that hold it beside their own dimension (a read that needs one of those takes it there).
   */
  ga4?: { dataset: Ga4DatasetName; column: ImportedColumn; alsoIn?: readonly Ga4DatasetName[] }
  /**
   * A spike's excess may be attributed to its values: the column over `events` read for that, and
   * its rank when naming one (1, the most specific, first).
   */
  spike?: { column: string; rank: number }
  /** The values it takes, where they are a closed list. */
  values?: readonly string[]
  /** Read through Plausible's Stats API v2 (lib/plausible) only: the /api/v1 reads, the index and exports do not take it. */
  v2Only?: true
}

const BOTH: readonly Source[] = ['standalone', 'ga4']
const FIRST_PARTY: readonly Source[] = ['standalone']
const DIRECT_SOURCE = "if(referrer_source = '', 'Direct / None', referrer_source)"
const DIRECT_REFERRER = "if(referrer = '', 'Direct / None', referrer)"

/** A visit attribute stamped on every event of a visit, carried by the sessions rollup under the same column. */
const visitAttribute = (name: string, sql: string, more: Partial<StandaloneColumns> = {}, extra: Partial<Dimension> = {}): Dimension => ({
  name,
  scope: 'visit',
  engagement: true,
  sources: extra.ga4 ? BOTH : FIRST_PARTY,
  standalone: { events: sql, sessions: sql, ...more },
  ...extra,
})

/** A first-party event dimension that only some events carry, without visit engagement. */
const sparseEvent = (name: string, sql: string): Dimension => ({
  name,
  scope: 'event',
  engagement: false,
  sparse: true,
  sources: FIRST_PARTY,
  standalone: { events: sql },
})

/** Every dimension, once; the index lists them in this order. */
export const DIMENSIONS: readonly Dimension[] = [
  {
    name: 'path',
    scope: 'event',
    engagement: true,
    sources: BOTH,
    standalone: { events: 'pathname', daily: true, bots: 'pathname' },
    ga4: { dataset: 'pages', column: 'path' },
  },
  {
    name: 'entry_page',
    scope: 'visit',
    engagement: true,
    sources: BOTH,
    standalone: { daily: true },
    ga4: { dataset: 'entry_pages', column: 'entry_page' },
  },
  { name: 'exit_page', scope: 'visit', engagement: true, sources: FIRST_PARTY, standalone: { daily: true } },
  // the hostname of a visit's first and last pageview, derived from its events by the reads
  { name: 'entry_page_hostname', scope: 'visit', engagement: true, sources: FIRST_PARTY, standalone: {}, v2Only: true },
  { name: 'exit_page_hostname', scope: 'visit', engagement: true, sources: FIRST_PARTY, standalone: {}, v2Only: true },
  visitAttribute(
    'source',
    DIRECT_SOURCE,
    { daily: true },
    { spike: { column: 'referrer_source', rank: 2 }, ga4: { dataset: 'sources', column: 'source_name' } },
  ),
  visitAttribute(
    'channel',
    'channel',
    { daily: true },
    { spike: { column: 'channel', rank: 3 }, ga4: { dataset: 'sources', column: 'channel' } },
  ),
  visitAttribute('referrer', DIRECT_REFERRER, { daily: true, bots: DIRECT_REFERRER }, { ga4: { dataset: 'sources', column: 'referrer' } }),
  visitAttribute('utm_source', 'utm_source', { daily: true }, { ga4: { dataset: 'sources', column: 'utm_source' } }),
  visitAttribute('utm_medium', 'utm_medium', { daily: true }, { ga4: { dataset: 'sources', column: 'utm_medium' } }),
  visitAttribute(
    'utm_campaign',
    'utm_campaign',
    { daily: true },
    { spike: { column: 'utm_campaign', rank: 1 }, ga4: { dataset: 'sources', column: 'utm_campaign' } },
  ),
  visitAttribute('utm_term', 'utm_term', {}, { ga4: { dataset: 'sources', column: 'utm_term' } }),
  visitAttribute('utm_content', 'utm_content', {}, { ga4: { dataset: 'sources', column: 'utm_content' } }),
  visitAttribute('country', 'country_code', { daily: true, bots: 'country_code' }, { ga4: { dataset: 'locations', column: 'country' } }),
  visitAttribute('region', 'region', {}, { ga4: { dataset: 'locations', column: 'region' } }),
  visitAttribute('city', 'city', {}, { ga4: { dataset: 'locations', column: 'city' } }),
  visitAttribute('browser', 'browser', { daily: true }, { ga4: { dataset: 'browsers', column: 'browser' } }),
  visitAttribute('os', 'os', { daily: true }, { ga4: { dataset: 'systems', column: 'os' } }),
  visitAttribute('device', 'device', { daily: true }, { ga4: { dataset: 'devices', column: 'device' } }),
  visitAttribute('screen_class', 'screen_class', { daily: true }),
  // stamped on every event of a visit, but not carried by the sessions rollup: read from events
  {
    name: 'browser_version',
    scope: 'visit',
    engagement: true,
    sources: FIRST_PARTY,
    standalone: { events: 'browser_version' },
    v2Only: true,
  },
  { name: 'os_version', scope: 'visit', engagement: true, sources: FIRST_PARTY, standalone: { events: 'os_version' }, v2Only: true },
  {
    name: 'hostname',
    scope: 'event',
    engagement: true,
    sources: BOTH,
    standalone: { events: 'hostname', daily: true, bots: 'hostname' },
    ga4: { dataset: 'hostnames', column: 'hostname', alsoIn: ['pages'] },
  },
  {
    name: 'event',
    scope: 'event',
    engagement: false,
    sparse: true,
    sources: BOTH,
    standalone: { events: 'name' },
    ga4: { dataset: 'events', column: 'event' },
  },
  { name: 'goal', scope: 'visit', engagement: false, sources: FIRST_PARTY, standalone: {} },
  sparseEvent('link', "if(kind IN ('click', 'outbound', 'download', 'affiliate'), link_url, '')"),
  sparseEvent('outbound', "if(kind = 'outbound', link_url, '')"),
  sparseEvent('affiliate', "if(kind = 'affiliate', link_url, '')"),
  sparseEvent('button', "if(kind = 'click' AND element_tag = 'button', element_text, '')"),
  sparseEvent('dead_click', "if(dead_click = 1, selector, '')"),
  sparseEvent('form', "if(kind = 'form', selector, '')"),
  // bot hits have no visits: a read of them never carries engagement
  { name: 'bot_kind', scope: 'event', engagement: false, sources: FIRST_PARTY, standalone: { bots: 'bot_kind' }, values: BOT_KINDS },
  {
    name: 'collection_source',
    scope: 'event',
    engagement: true,
    sources: FIRST_PARTY,
    standalone: { events: 'collection_source', bots: 'collection_source' },
  },
]

const BY_NAME = new Map(DIMENSIONS.map((d) => [d.name, d]))

/** A dimension by name; undefined for a custom property (prop:<key>) or an unknown name. */
export const dimension = (name: string): Dimension | undefined => BY_NAME.get(name)

/** The dimensions the /api/v1 reads take (not those of the Stats API v2 only), in the index's order. */
export const V1_DIMENSIONS = DIMENSIONS.filter((d) => !d.v2Only)

/** A custom property's dimension name: prop:<key>, the key at most 200 characters with the prefix. */
export const isCustomProperty = (name: string) =>
  name.startsWith(PROPERTY_PREFIX) && name.length > PROPERTY_PREFIX.length && name.length <= 200 && !name.includes(COMBINED)

/**
 * Several dimensions broken down together (Plausible's Stats API v2 queries): one property whose
 * rows are the combinations of their values, each row's value a JSON array of them in order.
 */
const COMBINED = '\u001f'
export const combinedProperty = (names: readonly string[]) => names.join(COMBINED)
/** The dimensions of a combined property; undefined for one dimension. */
export const combinedParts = (property: string): string[] | undefined =>
  property.includes(COMBINED) ? property.split(COMBINED) : undefined
/** The dimensions a combined property may hold: those with a value on each event or visit (not goal). */
export const combinable = (name: string) => name !== GOAL && (name.startsWith(PROPERTY_PREFIX) || dimension(name) !== undefined)

/** The goal dimension: a row per goal, counting its conversions rather than the events of the value. */
export const GOAL = 'goal'
/**
 * Whether a property's rows are goals: the goal alone, or a combination holding it beside
 * combinable dimensions (Stats API v2 queries), each row a goal and the values of its conversions.
 */
export const holdsGoal = (property: string) => property === GOAL || (combinedParts(property)?.includes(GOAL) ?? false)

/**
 * A filter that is not a dimension: `segment` names a saved segment of the site and stands for its
 * filters, checked against the read's source when it is expanded. Breakdowns do not take it.
 */
export const SEGMENT = 'segment'

/**
 * Behavioural filters (Plausible's Stats API v2 queries): the visits with (has_done) or without
 * (has_not_done) an event whose dimension, the filter's first value, matches the other values
 * under the filter's operator. Like segment, not a dimension; the filters parameter does not take them.
 */
export const BEHAVIOURAL = ['has_done', 'has_not_done'] as const
export const isBehavioural = (name: string) => (BEHAVIOURAL as readonly string[]).includes(name)

/**
 * A filter over other filters (Plausible's Stats API v2 queries): an "or" across dimensions, or a
 * "not" around several filters (model.ts, Filter.groups). Like segment, not a dimension.
 */
export const FILTER_GROUPS = 'filter_groups'

/** Whether a source's reads take the dimension (custom properties are the collector's alone). */
export const readableBy = (name: string, source: Source) => (dimension(name)?.sources ?? FIRST_PARTY).includes(source)

/**
 * Visit attributes stamped on every event and carried by the sessions rollup: filters on them narrow
 * visits there too. A combination of visit attributes (Stats API v2 queries) is one as well: its
 * value, theirs together, is the same on every row of a visit.
 */
export const isVisitAttribute = (name: string): boolean =>
  combinedParts(name)?.every(isVisitAttribute) ?? dimension(name)?.standalone.sessions !== undefined

/** Whether breakdown rows of the property carry visit engagement; custom properties do not. */
export const hasEngagement = (property: string): boolean =>
  combinedParts(property)?.every(hasEngagement) ?? dimension(property)?.engagement ?? !property.startsWith(PROPERTY_PREFIX)

/** The properties rolled up daily: the dashboard's unfiltered breakdowns (the day's totals besides). */
export const ROLLED_PROPERTIES = DIMENSIONS.filter((d) => d.standalone.daily).map((d) => d.name)

/** The dimensions bot hits record: what a bot read filters and breaks down by, bot_kind (which selects them) first. */
export const BOT_DIMENSIONS = DIMENSIONS.filter((d) => d.standalone.bots !== undefined)
  .map((d) => d.name)
  .sort((a, b) => Number(b === 'bot_kind') - Number(a === 'bot_kind'))

/** The dimensions a spike's excess may be attributed to, most specific first. */
export const SPIKE_DIMENSIONS = DIMENSIONS.filter((d) => d.spike)
  .sort((a, b) => (a.spike?.rank ?? 0) - (b.spike?.rank ?? 0))
  .map((d) => ({ name: d.name, column: d.spike?.column ?? '' }))

export const METRICS = {
  visitors: 'distinct visitors (integer)',
  visits: 'distinct visits (integer)',
  pageviews: 'pageview events (integer)',
  bounceRate: 'fraction of visits with at most one pageview and no interactive custom event, 0 to 1',
  avgDuration: 'mean visit duration in seconds',
  viewsPerVisit: 'pageviews divided by visits',
  events: 'custom events (not pageviews, clicks, errors, vitals or engagement reports)',
} as const
