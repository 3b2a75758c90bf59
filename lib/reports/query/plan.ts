import { type Query, type Read, type RolledDays, TOTALS } from './model'
import { wholeDays } from './range'

/**
 * The planner: for each read, which stored relation answers it. The one place that chooses
 * between the daily rollup, the sessions rollup and raw events.
 *
 * - rollup: unfiltered reads over whole site-local days of the window's totals, a day or month
 *   series, or a rolled property. The days whose daily rollup is current come from day_rollups,
 *   the rest from events; a window of whole days is the sum of its days, because visitor ids
 *   rotate and visits end at the site-local midnight.
 * - sessions: totals, and breakdowns by a visit attribute, whose filters are all on visit
 *   attributes: visits come from the sessions rollup alone (views still from events).
 * - events: everything else. `visits` marks the reads that join the visits holding a selected
 *   event to their whole-visit facts from the sessions rollup (totals, and breakdowns by a visit
 *   attribute, entry or exit page), instead of scanning every event of those visits.
 */
export type Plan = { table: 'rollup'; rolled: RolledDays } | { table: 'sessions' } | { table: 'events'; visits: boolean }

/** The properties rolled up daily: the day's totals and the dashboard's unfiltered breakdowns. */
export const ROLLED_PROPERTIES = [
  'path', 'entry_page', 'exit_page', 'hostname', 'source', 'channel', 'referrer', 'utm_source', 'utm_medium', 'utm_campaign',
  'country', 'browser', 'os', 'device', 'screen_class',
] as const

/** Visit attributes the sessions table carries under the same column names as events. */
export const SESSION_DIMENSIONS = new Set([
  'source', 'channel', 'referrer', 'utm_source', 'utm_medium', 'utm_campaign', 'utm_term', 'utm_content',
  'country', 'region', 'city', 'browser', 'os', 'device', 'screen_class',
])

/** Filters that narrow visits as well as events: visit attributes are stamped on every row of a visit. */
export const onVisitAttributes = (query: Pick<Query, 'filters'>) => query.filters.every((f) => SESSION_DIMENSIONS.has(f.dimension))

/**
 * Whether the read may use the daily rollup, before the rolled days are looked up: whole
 * site-local days, and totals, a series of day or month buckets (a rolled day is one bucket or
 * part of one), or a rolled property. A filtered read's days are rolled up per filter, on its
 * first read (see filteredRollupKey): a window of whole days is the sum of its days under any
 * filter too.
 */
export function mayUseRollup(query: Query, read: Read): boolean {
  if (!wholeDays(query.range) || readsBotHits(query, read)) return false
  // rows rolled up under filters carry no engagement reports
  if (read.kind === 'breakdown' && read.reports && query.filters.length) return false
  if (read.kind === 'stats') return true
  if (read.kind === 'series') return query.range.interval === 'day' || query.range.interval === 'month'
  return read.property === TOTALS || (ROLLED_PROPERTIES as readonly string[]).includes(read.property)
}

/**
 * Whether an unfiltered read under the rollup plan takes the days not rolled up from events: a
 * series, or a breakdown by anything but a visit attribute. Only those gain from the partial
 * rollup of today; totals and visit attributes read those days from the sessions rollup, which
 * is cheap already, and skip looking it up.
 */
export const readsTodayFromEvents = (read: Read) => read.kind === 'series' || (read.kind === 'breakdown' && !SESSION_DIMENSIONS.has(read.property))

/** Whether rolled days fit the read: a filtered read only reads days rolled up under its own filters (and property). */
const fitsRead = (query: Query, rolled: RolledDays) => (query.filters.length ? rolled.filtersKey !== undefined : rolled.filtersKey === undefined)

/**
 * Whether a read counts bot hits (`bot_events`) instead of humans: a bot_kind filter, or a
 * breakdown by bot_kind. Bot hits and human events are never mixed in one read.
 */
export const readsBotHits = (query: Pick<Query, 'filters'>, read: Read) =>
  (read.kind === 'breakdown' && read.property === 'bot_kind') || query.filters.some((f) => f.dimension === 'bot_kind')

/** The plan of a read, given the rolled days of its window where it may use them. */
export function plan(query: Query, read: Read, rolled?: RolledDays): Plan {
  if ((rolled?.days.length || rolled?.partial) && mayUseRollup(query, read) && fitsRead(query, rolled)) return { table: 'rollup', rolled }
  if (read.kind === 'series') return { table: 'events', visits: false }
  if (read.kind === 'stats') return onVisitAttributes(query) ? { table: 'sessions' } : { table: 'events', visits: true }
  const { property } = read
  if (property === 'goal') return { table: 'events', visits: false }
  if (SESSION_DIMENSIONS.has(property) && onVisitAttributes(query)) return { table: 'sessions' }
  return { table: 'events', visits: SESSION_DIMENSIONS.has(property) || property === 'entry_page' || property === 'exit_page' }
}
