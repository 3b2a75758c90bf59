import type { Temporal } from 'temporal-polyfill'
import { type DaySpan, type ResolvedRange, chTime } from '../range'
import { type Bound, type Fragment, bind, join, raw, sql } from './sql'

const time = (z: Pick<Temporal.Instant, 'epochMilliseconds'>) => bind('DateTime64(3)', chTime(z))
const NO_TIME = bind('DateTime64(3)', '1970-01-01 00:00:00.000')

export const siteIs = (siteId: string) => sql`site_id = ${bind('UUID', siteId)}`

/** The site and the events a report reads, and the visits those events belong to. */
export interface Scope {
  siteId: string
  /** The events in scope: the site and the window or days; filters narrow them further. */
  events: Fragment
  /** The events a visit-level scan reads: every event of the visits holding a selected one. */
  visitScan: Fragment
  /** The visits of those events began at or after this and before `visitsTo` (sessions.session_start). */
  visitsFrom: Bound
  visitsTo: Bound
  /** The window's start: a visit is in the window when its last event is at or after it. */
  windowFrom: Bound
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
    events: sql`${site} AND timestamp >= ${time(range.from)} AND timestamp < ${time(range.to)}`,
    visitScan: sql`${site} AND timestamp >= ${visitsFrom} AND timestamp < ${time(range.to.add({ hours: 26 }))}`,
    visitsFrom,
    visitsTo: time(range.to),
    windowFrom: time(range.from),
  }
}

/** Visits (sessions.session_start) begun in one of the spans. */
export function visitsBeganIn(spans: readonly DaySpan[]): Fragment {
  const each = spans.map((d) => sql`(session_start >= ${time(d.from)} AND session_start < ${time(d.to)})`)
  return spans.length ? sql`(${join(each, ' OR ')})` : raw('0')
}

/**
 * A scope of whole site-local days (the days of a window the daily rollup does not cover, or the
 * days a rollup row is built from). A visit never crosses the site-local midnight, so the visit
 * scan needs no widening: both read the same spans, and the visits began within them.
 */
export function daySpansScope(siteId: string, spans: readonly DaySpan[]): Scope {
  const each = spans.map((d) => sql`(timestamp >= ${time(d.from)} AND timestamp < ${time(d.to)})`)
  const scope = sql`${siteIs(siteId)} AND (${spans.length ? join(each, ' OR ') : raw('0')})`
  // no spans, no visits
  const from = spans.length ? time(spans[0].from) : NO_TIME
  const to = spans.length ? time(spans[spans.length - 1].to) : NO_TIME
  return { siteId, events: scope, visitScan: scope, visitsFrom: from, visitsTo: to, windowFrom: from }
}
