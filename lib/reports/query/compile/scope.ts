import type { PartialDay, Query } from '../model'
import { type DaySpan, type ResolvedRange, chTime } from '../range'
import { type Bound, type Fragment, bind, join, raw, sql } from '../../../storage/clickhouse/sql'

const time = (ms: number) => bind('DateTime64(3)', chTime(ms))
const NO_TIME = bind('DateTime64(3)', '1970-01-01 00:00:00.000')
const utcDay = (ms: number) => bind('Date', new Date(ms).toISOString().slice(0, 10))

/**
 * `column` (timestamp or session_start) in [from, to), as epoch milliseconds. Events, bot hits,
 * sessions and visit pages are ordered by the UTC day of that column first (toDate(column)), and
 * the engine does not derive that day from a condition on the time itself: without the days
 * stated too, a read of one day touches every granule of the site's month.
 */
export const during = (column: 'timestamp' | 'session_start', from: number, to: number): Fragment =>
  sql`(${raw(column)} >= ${time(from)} AND ${raw(column)} < ${time(to)} AND toDate(${raw(column)}) >= ${utcDay(from)} AND toDate(${raw(column)}) <= ${utcDay(to - 1)})`

export const siteIs = (siteId: string) => sql`site_id = ${bind('UUID', siteId)}`

/** The site and the events a report reads, and the visits those events belong to. */
export interface Scope {
  siteId: string
  /** The table holding the scope's events: events, or recent_events for a live window or the later visits of a partially rolled day alone. */
  table: 'events' | 'recent_events'
  /** The events in scope: the site and the window or days; filters narrow them further. */
  events: Fragment
  /** The events a visit-level scan reads: every event of the visits holding a selected one. */
  visitScan: Fragment
  /** The visits those events belong to began in this span (a condition on sessions.session_start), before `visitsTo`. */
  visitsBegan: Fragment
  visitsTo: Bound
  /** The window's start: a visit is in the window when its last event is at or after it. */
  windowFrom: Bound
  /** Visits this scope leaves out because the partial rollup holds them (rowsWithRollup adds its rows). */
  partial?: PartialDay
  /** n when the scope's events are read as a sample, `SAMPLE 1/n` (eventsFrom). */
  sample?: number
}

/**
 * The scope's events table as a FROM names it; with a sample, `SAMPLE 1/n`. The engine takes no
 * parameter there, so n is written into the text: a whole number the planner computed from counts
 * (sampling.ts), never input, checked here.
 */
export function eventsFrom(scope: Scope): Fragment {
  if (scope.sample === undefined) return raw(scope.table)
  if (!Number.isSafeInteger(scope.sample) || scope.sample < 2 || scope.table !== 'events')
    throw new Error(`no sample 1/${scope.sample} of ${scope.table}`)
  return raw(`${scope.table} SAMPLE 1/${scope.sample}`)
}

/** The live windows: the realtime view, the last 5 and 30 minutes. */
const LIVE_WINDOWS: ReadonlySet<string> = new Set(['realtime', '5m', '30m'])
/** recent_events keeps rows two days after they arrived (by the engine's clock); a window begun within a day of now is whole in it. */
const RECENT_MS = 86_400_000

/**
 * The table a window's events are read from, read at `now`. A live window begun within the last
 * day is one short range of recent_events, a copy of the last two days of events in (site, time)
 * order (migration 0011); in events, ordered by day, name and visitor, it is spread over every
 * granule of its day. Other windows read events, whose order serves lookups by event name and visitor.
 */
const windowTable = (range: Pick<ResolvedRange, 'from'> & { name?: string }, now: Date | undefined): Scope['table'] =>
  now !== undefined && range.name !== undefined && LIVE_WINDOWS.has(range.name) && range.from.epochMilliseconds >= now.getTime() - RECENT_MS
    ? 'recent_events'
    : 'events'

/**
 * The window's scope, read at `now` (without it, from events). A visit ends when the visitor id
 * rotates at the site-local midnight, so it began within a day of any of its events: the visit
 * scan is the window widened by 26 hours each way, and the visits began at most 26 hours before
 * the window and before its end.
 */
export function windowScope(siteId: string, range: Pick<ResolvedRange, 'from' | 'to'> & { name?: string }, now?: Date): Scope {
  const site = siteIs(siteId)
  const [from, to] = [range.from.epochMilliseconds, range.to.epochMilliseconds]
  const widening = 26 * 3_600_000
  return {
    siteId,
    table: windowTable(range, now),
    events: sql`${site} AND ${during('timestamp', from, to)}`,
    visitScan: sql`${site} AND ${during('timestamp', from - widening, to + widening)}`,
    visitsBegan: during('session_start', from - widening, to),
    visitsTo: time(to),
    windowFrom: time(from),
  }
}

/** The query's window as a scope, read at the query's now. */
export const queryWindow = (query: Pick<Query, 'siteId' | 'range' | 'now'>) => windowScope(query.siteId, query.range, query.now)

/**
 * A scope of whole site-local days (the days of a window the daily rollup does not cover, or the
 * days a rollup row is built from). A visit never crosses the site-local midnight, so the visit
 * scan needs no widening: both read the same spans, and the visits began within them.
 *
 * With a partial rollup (`partial`), its day is in the scope with only the visits begun since its
 * cutoff: their events are all at or after it, so they are one range of recent_events when no
 * other day is left to events (rowsWithRollup adds the rollup's rows for the earlier visits). With
 * `only`, the scope is the visits the partial rollup holds, the one it is built from; `spans` are
 * then ignored.
 */
export function daySpansScope(siteId: string, spans: readonly DaySpan[], partial?: { day: PartialDay; only?: boolean }): Scope {
  const site = siteIs(siteId)
  const ranges = partial?.only ? [] : spans.map((d) => ({ from: d.from.epochMilliseconds, to: d.to.epochMilliseconds }))
  const events = ranges.map((r) => during('timestamp', r.from, r.to))
  const began = ranges.map((r) => during('session_start', r.from, r.to))
  if (partial) {
    const ms = (t: string) => Date.parse(`${t.replace(' ', 'T')}Z`)
    const day = { from: ms(partial.day.from), to: ms(partial.day.to) }
    const cutoff = ms(partial.day.before)
    const visits = partial.only ? during('session_start', day.from, cutoff) : during('session_start', cutoff, day.to)
    events.push(
      partial.only
        ? sql`(${during('timestamp', day.from, day.to)} AND ${visits})`
        : sql`(${during('timestamp', cutoff, day.to)} AND ${visits})`,
    )
    began.push(visits)
    ranges.push(partial.only ? day : { from: cutoff, to: day.to })
  }
  const scope = sql`${site} AND (${events.length ? join(events, ' OR ') : raw('0')})`
  // no spans, no visits
  const from = ranges.length ? time(ranges[0].from) : NO_TIME
  const to = ranges.length ? time(ranges[ranges.length - 1].to) : NO_TIME
  return {
    siteId,
    table: partial && !partial.only && !spans.length ? 'recent_events' : 'events',
    events: scope,
    visitScan: scope,
    visitsBegan: began.length ? sql`(${join(began, ' OR ')})` : raw('0'),
    visitsTo: to,
    windowFrom: from,
    partial: partial && !partial.only ? partial.day : undefined,
  }
}
