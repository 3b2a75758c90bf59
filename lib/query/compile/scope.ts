import type { Temporal } from 'temporal-polyfill'
import type { PartialDay } from '../model'
import { type DaySpan, type ResolvedRange, chTime } from '../range'
import { type Bound, type Fragment, bind, join, raw, sql } from './sql'

const time = (z: Pick<Temporal.Instant, 'epochMilliseconds'>) => bind('DateTime64(3)', chTime(z))
const NO_TIME = bind('DateTime64(3)', '1970-01-01 00:00:00.000')

export const siteIs = (siteId: string) => sql`site_id = ${bind('UUID', siteId)}`

/** The site and the events a report reads, and the visits those events belong to. */
export interface Scope {
  siteId: string
  /** The table holding the scope's events: events, or for the later visits of a partially rolled day alone, recent_events. */
  table: 'events' | 'recent_events'
  /** The events in scope: the site and the window or days; filters narrow them further. */
  events: Fragment
  /** The events a visit-level scan reads: every event of the visits holding a selected one. */
  visitScan: Fragment
  /** The visits of those events began at or after this and before `visitsTo` (sessions.session_start). */
  visitsFrom: Bound
  visitsTo: Bound
  /** The window's start: a visit is in the window when its last event is at or after it. */
  windowFrom: Bound
  /** A scope of whole days: the visits (sessions.session_start) it holds. */
  visitsBegan?: Fragment
  /** Visits this scope leaves out because the partial rollup holds them (rowsWithRollup adds its rows). */
  partial?: PartialDay
}

/**
 * The window's scope. A visit ends when the visitor id rotates at the site-local midnight, so
 * it began within a day of any of its events: the visit scan is the window widened by 26 hours
 * each way, and the visits began at most 26 hours before the window and before its end.
 */
export function windowScope(siteId: string, range: Pick<ResolvedRange, 'from' | 'to'>): Scope {
  const site = siteIs(siteId)
  const visitsFrom = time(range.from.subtract({ hours: 26 }))
  return {
    siteId,
    table: 'events',
    events: sql`${site} AND timestamp >= ${time(range.from)} AND timestamp < ${time(range.to)}`,
    visitScan: sql`${site} AND timestamp >= ${visitsFrom} AND timestamp < ${time(range.to.add({ hours: 26 }))}`,
    visitsFrom,
    visitsTo: time(range.to),
    windowFrom: time(range.from),
  }
}

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
  const within = (column: string, from: Bound, to: Bound) => sql`(${raw(column)} >= ${from} AND ${raw(column)} < ${to})`
  const ranges = partial?.only ? [] : spans.map((d) => ({ from: time(d.from), to: time(d.to) }))
  const events = ranges.map((r) => within('timestamp', r.from, r.to))
  const began = ranges.map((r) => within('session_start', r.from, r.to))
  if (partial) {
    const day = { from: bind('DateTime64(3)', partial.day.from), to: bind('DateTime64(3)', partial.day.to) }
    const cutoff = bind('DateTime64(3)', partial.day.before)
    const visits = partial.only ? within('session_start', day.from, cutoff) : within('session_start', cutoff, day.to)
    events.push(partial.only ? sql`(${within('timestamp', day.from, day.to)} AND ${visits})` : sql`(${within('timestamp', cutoff, day.to)} AND ${visits})`)
    began.push(visits)
    ranges.push(partial.only ? day : { from: cutoff, to: day.to })
  }
  const scope = sql`${site} AND (${events.length ? join(events, ' OR ') : raw('0')})`
  // no spans, no visits
  const from = ranges.length ? ranges[0].from : NO_TIME
  const to = ranges.length ? ranges[ranges.length - 1].to : NO_TIME
  return {
    siteId,
    table: partial && !partial.only && !spans.length ? 'recent_events' : 'events',
    events: scope,
    visitScan: scope,
    visitsFrom: from,
    visitsTo: to,
    windowFrom: from,
    visitsBegan: began.length ? sql`(${join(began, ' OR ')})` : raw('0'),
    partial: partial && !partial.only ? partial.day : undefined,
  }
}
