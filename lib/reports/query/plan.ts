import { PROPERTY_PREFIX, ROLLED_PROPERTIES, combinedParts, dimension, holdsGoal, isVisitAttribute } from '../dimensions'
import { ApiError } from '../../core/errors'
import type { Ga4DatasetName } from './ga4-datasets'
import { type Filter, type Query, type Read, type RolledDays, TOTALS, asRolledDays } from './model'
import { chTime, daySpans, wholeDays } from './range'

/**
 * The planner: for each read, which stored relation answers it. The one place that chooses
 * between the daily rollup, the sessions rollup, raw events and bot hits.
 *
 * - rollup: reads over whole site-local days of the window's totals, a day, week or month series, or a
 *   rolled property. The days whose daily rollup is current come from day_rollups, the rest from
 *   events; a window of whole days is the sum of its days, because visitor ids rotate and visits
 *   end at the site-local midnight. A filtered read's days are rolled up under its filters. An
 *   unfiltered goal breakdown takes this plan for the visitors its rate is over, which it reads as
 *   the totals read does; its conversions come from events (compile/goals.ts).
 * - sessions: totals, and breakdowns by a visit attribute, whose filters are all on visit
 *   attributes: visits come from the sessions rollup alone (views still from events).
 * - events: everything else. `visits` marks the reads that join the visits holding a selected
 *   event to their whole-visit facts from the sessions rollup (totals, and breakdowns by a visit
 *   attribute, entry or exit page), instead of scanning every event of those visits.
 * - bots: a read that counts bot hits (bot_events).
 *
 * An events plan takes the query's sample (sampling.ts) as `sample`, the n of `SAMPLE 1/n`: every
 * read of raw events but the goal conversions, which stay exact.
 *
 * Where the choice depends on which days are rolled up, the planner first names the lookup it
 * needs (planRead), run executes it, and the planner completes the plan from its rows
 * (completePlan): which days to read from the rollup, and which to roll up first.
 */
export type Plan =
  | { table: 'rollup'; rolled: RolledDays }
  | { table: 'sessions' }
  | { table: 'events'; visits: boolean; sample?: number }
  | { table: 'bots' }

/** The plans of reads that count humans. */
export type HumanPlan = Exclude<Plan, { table: 'bots' }>

/**
 * The lookup of a window's rolled days: each day's current signature and those of its built
 * rollup rows (compile/day-rollups.ts, signaturesAndBuilt), under the unfiltered rollup (key '')
 * or a filtered read's key; with `partial`, also the newest partial rollup of its last day.
 */
export interface RolledDaysLookup {
  key: string
  partial: boolean
}

/** The lookup's rows: rolled 0 a day's current signature, 1 a built day's, 2 the newest partial rollup's, 3 its visits' current one per quarter hour. */
export type SignatureRow = { rolled: number | string; d: string; n: string; s: string; b: string }

/** Days a filtered read rolls up under its key before it reads them. */
export interface RollupBuild {
  key: string
  property: string
  days: RolledDays
}

/**
 * A complete plan: the rollups to build first, then the relation the read takes, and the rollups
 * to build once it has answered (`after`: a filter's first read, see filteredPlan).
 */
export interface ReadPlan {
  builds: RollupBuild[]
  plan: Plan
  after?: RollupBuild[]
}

/** The planner's first answer: the complete plan, or the lookup it needs to finish it (completePlan). */
export type PlanStep = { plan: ReadPlan; lookup?: undefined } | { lookup: RolledDaysLookup }

/** Filters that narrow visits as well as events: visit attributes are stamped on every row of a visit. */
export const onVisitAttributes = (query: Pick<Query, 'filters'>) => query.filters.every((f) => isVisitAttribute(f.dimension))

/**
 * Whether a read counts bot hits (`bot_events`) instead of humans: a bot_kind filter, or a
 * breakdown by bot_kind. Bot hits and human events are never mixed in one read.
 */
export const readsBotHits = (query: Pick<Query, 'filters'>, read: Read) =>
  (read.kind === 'breakdown' && read.property === 'bot_kind') || query.filters.some((f) => f.dimension === 'bot_kind')

/**
 * Whether the read may use the daily rollup, before the rolled days are looked up: whole
 * site-local days, and totals, a series of day, week or month buckets (a rolled day is one bucket or
 * part of one), or a rolled property. A filtered read's days are rolled up per filter, on its
 * first read (see filteredRollupKey): a window of whole days is the sum of its days under any
 * filter too.
 */
export function mayUseRollup(query: Query, read: Read): boolean {
  if (!wholeDays(query.range) || readsBotHits(query, read)) return false
  // rows rolled up under filters carry no engagement reports
  if (read.kind === 'breakdown' && read.reports && query.filters.length) return false
  if (read.kind === 'stats') return true
  const dayBuckets = query.range.interval === 'day' || query.range.interval === 'week' || query.range.interval === 'month'
  if (read.kind === 'series') return dayBuckets
  if (read.byBucket && !dayBuckets) return false
  return read.property === TOTALS || ROLLED_PROPERTIES.includes(read.property) || rolledOnDemand(read.property)
}

/**
 * Whether a property's days are rolled up on the first read that asks for them, unfiltered too,
 * rather than every day by the refresh: the dimensions the dashboard does not break down by every
 * day (a city, a browser version, a visit's entry hostname) and several dimensions together
 * (Stats API v2 queries: source and page, country and device). Read from events, their reads grow
 * with the window's events; from the rollup, with its values. Custom properties too (each key its
 * own property, `prop:<key>`). Not goals (their conversions are read from events, compile/goals.ts).
 */
export const rolledOnDemand = (property: string) =>
  !holdsGoal(property) &&
  !ROLLED_PROPERTIES.includes(property) &&
  (combinedParts(property) !== undefined || dimension(property) !== undefined || property.startsWith(PROPERTY_PREFIX))

/**
 * The key an unfiltered read of a property rolled up on demand (rolledOnDemand) stores its days
 * under: a filtered read's (filteredRollupKey) without filters, so that they expire as those do.
 */
export const unfilteredRollupKey = (property: string) => `filters:none:${property}`

/**
 * Whether an unfiltered read under the rollup plan takes the days not rolled up from events: a
 * series, or a breakdown by anything but a visit attribute. Only those gain from the partial
 * rollup of today; totals and visit attributes read those days from the sessions rollup, which
 * is cheap already, and skip looking it up.
 */
export const readsTodayFromEvents = (read: Read) =>
  read.kind === 'series' || (read.kind === 'breakdown' && !isVisitAttribute(read.property))

/**
 * Whether rolled days fit the read: a filtered read, or one of a property rolled up on demand, only
 * reads days rolled up under its own key (filters and property).
 */
const fitsRead = (query: Query, read: Read, rolled: RolledDays) =>
  query.filters.length || (read.kind === 'breakdown' && rolledOnDemand(read.property))
    ? rolled.filtersKey !== undefined
    : rolled.filtersKey === undefined

/** The relation of a read, given the rolled days of its window where it may use them. */
export function plan(query: Query, read: Read, rolled?: RolledDays): Plan {
  if (readsBotHits(query, read)) return { table: 'bots' }
  if ((rolled?.days.length || rolled?.partial) && mayUseRollup(query, read) && fitsRead(query, read, rolled))
    return { table: 'rollup', rolled }
  const events = (visits: boolean): Plan =>
    query.sample ? { table: 'events', visits, sample: query.sample.denominator } : { table: 'events', visits }
  if (read.kind === 'series') return events(false)
  if (read.kind === 'stats') return onVisitAttributes(query) ? { table: 'sessions' } : events(true)
  const { property } = read
  if (holdsGoal(property)) return { table: 'events', visits: false }
  if (isVisitAttribute(property) && onVisitAttributes(query)) return { table: 'sessions' }
  return events(isVisitAttribute(property) || property === 'entry_page' || property === 'exit_page')
}

/**
 * The rollup property a filtered read's rows are stored under: a hash of its filters (segments
 * already expanded) and of the site's goals they may name, so another filter, or a goal
 * redefined, is another key; then the property broken down (none for totals and series). Days
 * are rolled up per key on the first read that needs them.
 */
export async function filteredRollupKey(query: Pick<Query, 'filters' | 'goals'>, property: string): Promise<string> {
  // groups of filters (Stats API v2 queries) keyed with their filters; the others as they always were
  const canonicalFilter = (f: Filter): unknown[] =>
    f.groups ? [f.dimension, f.operator, f.value, f.groups.map((g) => g.map(canonicalFilter))] : [f.dimension, f.operator, f.value]
  const canonical = JSON.stringify([query.filters.map(canonicalFilter), query.goals.map((g) => [g.name, g.type, g.matchValue])])
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical)))
  const hash = Array.from(digest.subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('')
  return `filters:${hash}${property === TOTALS ? '' : `:${property}`}`
}

/** The property a read's rollup rows are of: the breakdown's, or the totals (for totals and series). */
const rolledProperty = (read: Read) => (read.kind === 'breakdown' ? read.property : TOTALS)

/**
 * Whether a read is an unfiltered goal breakdown over whole days: its conversions come from events,
 * and the window's visitors its rate is over from the rolled days (and the sessions rollup for the
 * rest), as the totals read counts them, rather than from every event of the window.
 */
const ratesGoalsOverRollup = (query: Query, read: Read) =>
  read.kind === 'breakdown' && holdsGoal(read.property) && !query.filters.length && mayUseRollup(query, { kind: 'stats' })

/**
 * A read's plan, or the lookup of rolled days it needs first: an unfiltered read the window's
 * rolled days (with today's partial rollup where it reads today from events), a filtered read the
 * days rolled up under its filters.
 */
export async function planRead(query: Query, read: Read): Promise<PlanStep> {
  if (ratesGoalsOverRollup(query, read)) return { lookup: { key: '', partial: false } }
  if (!mayUseRollup(query, read)) return { plan: { builds: [], plan: plan(query, read) } }
  if (!query.filters.length)
    return read.kind === 'breakdown' && rolledOnDemand(read.property)
      ? { lookup: { key: unfilteredRollupKey(read.property), partial: false } }
      : { lookup: { key: '', partial: readsTodayFromEvents(read) } }
  return { lookup: { key: await filteredRollupKey(query, rolledProperty(read)), partial: false } }
}

const signature = (r: { d: string; n: string; s: string }) => `${r.d}|${r.n}|${r.s}`

/**
 * The days of the window whose rollup rows match the day's current signature, and (where the
 * lookup took it) the newest partial rollup of its last day when that day is not rolled up (today)
 * and its visits' signature matches.
 */
export function rolledDaysOf(query: Pick<Query, 'range'>, rows: readonly SignatureRow[]): RolledDays {
  const of = (rolled: number) => rows.filter((r) => Number(r.rolled) === rolled)
  const built = new Set(of(1).map(signature))
  const days = asRolledDays(
    of(0)
      .filter((r) => built.has(signature(r)))
      .sort((a, b) => a.d.localeCompare(b.d)),
  )
  const [partial] = of(2)
  if (partial && !days.days.includes(partial.d)) {
    // the visits begun on its day before its cutoff, now: their quarters' counts summed (the session-id sum wraps at 2^64, as the engine's does)
    const before = `${partial.b.replace(' ', 'T')}Z`
    const quarters = of(3).filter((r) => `${r.d.replace(' ', 'T')}Z` < before)
    const events = quarters.reduce((n, r) => n + BigInt(r.n), 0n)
    const sum = BigInt.asUintN(
      64,
      quarters.reduce((n, r) => n + BigInt(r.s), 0n),
    )
    if (String(events) === partial.n && String(sum) === partial.s) {
      const [span] = daySpans([partial.d], query.range.timezone)
      days.partial = {
        day: partial.d,
        from: chTime(span.from),
        to: chTime(span.to),
        before: `${partial.b}.000`,
        events: partial.n,
        sum: partial.s,
      }
    }
  }
  return days
}

/**
 * A filtered read's rolled days. Finished days of the window (all but its last, which is today
 * for the relative ranges) that are not yet rolled up under its key at their current signature
 * are rolled up first: the first read of a filter pays for its days once, later reads (until a
 * day's events change) read them from the rollup. The first read, when none of its days is rolled
 * up yet, answers from events instead (the same numbers: a window of whole days is the sum of its
 * days) and rolls them up after the answer: reading the window once costs less than rolling it up
 * and then reading the rollup. A sampled query builds first, so that its answer stays exact.
 */
function filteredPlan(query: Query, read: Read, key: string, rows: readonly SignatureRow[]): ReadPlan {
  const { missing, rolled, ready } = daysOnDemand(rows, lastDayOf(query.range))
  // a transient query builds nothing: the days a member's or a key's read rolled up, the rest from events
  if (query.transient) return { builds: [], plan: plan(query, read, { ...ready, filtersKey: key }) }
  const builds = missing.length ? [{ key, property: rolledProperty(read), days: asRolledDays(missing) }] : []
  if (builds.length && missing.length === rolled.days.length && !query.sample) return { builds: [], plan: plan(query, read), after: builds }
  return { builds, plan: plan(query, read, { ...rolled, filtersKey: key }) }
}

/** The last site-local day of a window (today, for the relative ranges), which is read from events. */
export const lastDayOf = (range: Pick<Query['range'], 'to'>) => range.to.subtract({ days: 1 }).toPlainDate().toString()

/**
 * The days of a rollup built on the first read that needs them (a filter's, a funnel's, the spike
 * rule's), from the rows of its lookup (compile/day-rollups.ts, signaturesAndBuilt): `missing` are
 * the days before `lastDay` whose rows are absent or were built from other events (their
 * signature differs), to build now, in day order; `rolled` are the days the read then takes from
 * the rollup, every day before `lastDay` with events; `ready` those of them built already, all a
 * read that builds nothing (a transient query's) takes from it.
 */
export function daysOnDemand(
  rows: readonly SignatureRow[],
  lastDay: string,
): { missing: SignatureRow[]; rolled: RolledDays; ready: RolledDays } {
  const built = new Set(rows.filter((r) => Number(r.rolled) === 1).map(signature))
  const current = rows.filter((r) => Number(r.rolled) === 0).sort((a, b) => a.d.localeCompare(b.d))
  const ready = asRolledDays(current.filter((r) => built.has(signature(r))))
  const missing = current.filter((r) => !built.has(signature(r)) && r.d < lastDay)
  for (const r of missing) built.add(signature(r))
  return { missing, rolled: asRolledDays(current.filter((r) => built.has(signature(r)))), ready }
}

/** The plan of a read from the rows of the lookup planRead named. */
export function completePlan(query: Query, read: Read, lookup: RolledDaysLookup, rows: readonly SignatureRow[]): ReadPlan {
  if (lookup.key) return filteredPlan(query, read, lookup.key, rows)
  if (ratesGoalsOverRollup(query, read)) {
    const rolled = rolledDaysOf(query, rows)
    return { builds: [], plan: rolled.days.length ? { table: 'rollup', rolled } : plan(query, read) }
  }
  return { builds: [], plan: plan(query, read, rolledDaysOf(query, rows)) }
}

/**
 * The plan of a read of the ga4 source: the one imported dataset (lib/reports/query/ga4-datasets.ts)
 * that holds every dimension the read names (its filters, its breakdown property, hour buckets),
 * and where its custom `events` come from: the events dataset itself (`same`), the events dataset
 * read beside an unfiltered read of the daily totals (`separate`), or nowhere (`none`: only the
 * events dataset tells GA4's automatic events apart, so a read of another dataset under filters, or
 * a breakdown by anything but event, has no custom-event count and answers null).
 */
export interface ImportedPlan {
  dataset: Ga4DatasetName
  events: 'same' | 'separate' | 'none'
  /** Whose imports it reads: GA4's (a ga4 read; absent), or every product's, a day counted once (include.imports; compile/imported.ts). */
  origins?: ImportOrigins
}

/** Whose imported aggregates a read takes: GA4's alone, or GA4's and Plausible's together. */
export type ImportOrigins = 'ga4' | 'all'

/** The imported dataset of a read, or a 400 naming what no single dataset holds together. */
export function planImported(query: Pick<Query, 'filters' | 'range'>, read: Read, origins: ImportOrigins = 'ga4'): ImportedPlan {
  if (!wholeDays(query.range))
    throw new ApiError(
      400,
      `range: ${query.range.name} is a window of minutes; the ga4 source holds the days and hours GA4 reported (the realtime read and the live count read GA4's last minutes)`,
    )
  // each need: the datasets that hold it, its own first
  const needs: { what: string; datasets: readonly Ga4DatasetName[] }[] = []
  const mapped = (name: string, what: string) => {
    const ga4 = dimension(name)?.ga4
    if (!ga4) throw new ApiError(400, `${what}: ${name} has no field in the imported GA4 data`)
    // Plausible's imports hold hostnames only beside their pages: a read of every import takes them there
    const datasets = origins === 'all' && ga4.alsoIn ? ga4.alsoIn : [ga4.dataset, ...(ga4.alsoIn ?? [])]
    needs.push({ what: `${what} ${name} (GA4 dataset ${datasets[0]})`, datasets })
  }
  for (const f of query.filters) mapped(f.dimension, 'filters')
  if (read.kind === 'breakdown') mapped(read.property, 'property')
  if (read.kind === 'series' && query.range.interval === 'hour')
    needs.push({ what: 'hour buckets (GA4 dataset visitors_hourly, which has no dimension)', datasets: ['visitors_hourly'] })
  // the first dataset, in the order the needs name them, that holds every need
  const candidates = needs.flatMap((n) => n.datasets)
  const chosen = candidates.find((d) => needs.every((n) => n.datasets.includes(d)))
  if (needs.length && !chosen) {
    const other = needs.find((n) => !n.datasets.some((d) => needs[0].datasets.includes(d))) ?? needs[1]
    throw new ApiError(
      400,
      `${needs[0].what} and ${other.what}: no imported GA4 dataset holds both, so this ga4 read cannot be answered${
        other.datasets.includes('visitors_hourly') ? ' (ask for day buckets: a range of more than one day)' : ''
      }`,
    )
  }
  const dataset = chosen ?? 'visitors'
  const events =
    dataset === 'events' && read.kind !== 'series' ? 'same' : dataset === 'visitors' && read.kind === 'stats' ? 'separate' : 'none'
  return { dataset, events }
}
