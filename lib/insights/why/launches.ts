import { Temporal } from 'temporal-polyfill'
import { rangeView } from '../../reports/query/range'
import { execute } from '../../storage/clickhouse/execute'
import type { Site } from '../../sites/sites'
import { bind, sql } from '../../storage/clickhouse/sql'
import { filteredDayRowsSql, launchedPagesSql } from './compile'
import { filteredQuery } from '../../reports/query/filtered'
import type { ReportDeps } from '../../reports/query/reports'
import { dayRowsSql } from './path-days'
import { median, round4 } from './robust'
import { sum } from './shifts'
import { type WindowParams, isoLocal, windowOf, zoned } from '../../reports/query/window'
import { importedDayRowsSql, importedFirstViewsSql } from './imported-days'
import { parseSource } from '../../reports/query/parse'
import type { Source } from '../../sites/source'

/**
 * GET /pages/launches: pages that went live in the window, and how each does against the others
 * launched with it (docs/traffic-changes.md). A page goes live at the earlier of its first
 * pageview and its first crawl.
 */
export const LAUNCH_RULE = {
  /** measure=launch counts a page's first 30 site-local days, its launch day included. */
  days: 30,
  /** Within ±20% of the cohort's median is "at" it. */
  band: 0.2,
}

export type LaunchMeasure = 'launch' | '30d'
export interface LaunchParams extends WindowParams {
  source?: Source
  filters?: string
  measure?: LaunchMeasure
  limit?: number
}

const bandOf = (value: number, mid: number | null): 'over' | 'at' | 'under' | null => {
  if (mid === null) return null
  if (value > mid * (1 + LAUNCH_RULE.band)) return 'over'
  if (value < mid * (1 - LAUNCH_RULE.band)) return 'under'
  return 'at'
}

export async function launches(deps: ReportDeps, site: Site, params: LaunchParams) {
  const source = parseSource(params, site)
  const measure = params.measure ?? 'launch'
  const now = deps.now()
  const range = await windowOf(deps, site, params, now, source)
  const today = zoned(now.getTime(), site.timezone).toPlainDate()
  const shared = { from: today.subtract({ days: LAUNCH_RULE.days - 1 }), to: today }
  const base = {
    source,
    range: rangeView(range),
    measure,
    rule: LAUNCH_RULE,
    sharedWindow: measure === '30d' ? { from: shared.from.toString(), to: shared.to.toString() } : null,
  }
  const empty = { pages: 0, median: null, shape: [] as { day: number; medianVisits: number; pages: number }[] }
  const scanFrom = Temporal.PlainDate.compare(range.from.toPlainDate(), shared.from) < 0 ? range.from.toPlainDate() : shared.from
  const scan = {
    ...range,
    from: scanFrom.toZonedDateTime({ timeZone: site.timezone }),
    to: today.add({ days: 1 }).toZonedDateTime({ timeZone: site.timezone }),
  }
  // under filters (a goal: the visits that converted) each launched page's visits are those the filters keep
  const filtered = await filteredQuery(deps, site, params, source, scan)
  // the ga4 source: a page's first view is the first day GA4 reported one
  const launched = await execute<{ pathname: string; first: number | string }>(
    deps.clickhouse,
    launchedPagesSql(site.id, range.from, range.to, source === 'ga4' ? importedFirstViewsSql(site.id, site.timezone, range.to) : undefined),
  )
  if (!launched.length) return { available: true, ...base, cohort: empty, pages: [] }
  const pages = launched.map((r) => {
    const first = zoned(Number(r.first), site.timezone)
    // days begun since launch, today included, at most 30
    const age = first.toPlainDate().until(today, { largestUnit: 'days' }).days + 1
    return {
      path: r.pathname,
      launchedAt: first,
      launchDay: first.toPlainDate(),
      measuredDays: Math.min(LAUNCH_RULE.days, age),
      complete: age > LAUNCH_RULE.days,
    }
  })
  const { paths: pathDays } = filtered
    ? filteredDayRowsSql(filtered)
    : source === 'ga4'
      ? importedDayRowsSql(site.id, scanFrom, today.add({ days: 1 }))
      : await dayRowsSql(
          deps.clickhouse,
          site.id,
          site.timezone,
          scanFrom.toZonedDateTime({ timeZone: site.timezone }),
          today.add({ days: 1 }).toZonedDateTime({ timeZone: site.timezone }),
        )
  const rows = await execute<{ pathname: string; day: string; visits: number | string }>(
    deps.clickhouse,
    sql`SELECT value AS pathname, toString(day) AS day, visits FROM (${pathDays}) WHERE value IN ${bind(
      'Array(String)',
      pages.map((p) => p.path),
    )}`,
  )
  const visits = new Map(rows.map((r) => [`${r.pathname}|${r.day}`, Number(r.visits)]))
  // the days from the scan's start to today once, as text, so a page's days are an index away
  const days: string[] = []
  for (let d = scanFrom; Temporal.PlainDate.compare(d, today) <= 0; d = d.add({ days: 1 })) days.push(d.toString())
  const indexOf = new Map(days.map((d, i) => [d, i]))
  /** A page's visits on each of its measured days since launch (day 0 is the launch day). */
  const daily = new Map(
    pages.map((p) => {
      const first = indexOf.get(p.launchDay.toString())!
      return [p.path, Array.from({ length: p.measuredDays }, (_, d) => visits.get(`${p.path}|${days[first + d]}`) ?? 0)]
    }),
  )
  const firstDays = (path: string, n: number) => sum(daily.get(path)!.slice(0, n))
  const shape = Array.from({ length: LAUNCH_RULE.days }, (_, d) => {
    const old = pages.filter((p) => p.measuredDays > d)
    return { day: d, medianVisits: median(old.map((p) => daily.get(p.path)![d])), pages: old.length }
  }).filter((s) => s.pages > 0)

  let measured: { path: string; visits: number; mid: number | null }[]
  let cohortMedian: number | null
  if (measure === 'launch') {
    // each page against the cohort's pages at least as old, over the same number of first days
    const medians = new Map<number, number>()
    const medianAt = (n: number) => {
      if (!medians.has(n)) medians.set(n, median(pages.filter((p) => p.measuredDays >= n).map((p) => firstDays(p.path, n))))
      return medians.get(n)!
    }
    measured = pages.map((p) => ({ path: p.path, visits: firstDays(p.path, p.measuredDays), mid: medianAt(p.measuredDays) }))
    cohortMedian = pages.some((p) => p.measuredDays === LAUNCH_RULE.days) ? medianAt(LAUNCH_RULE.days) : null
  } else {
    const sharedDays = days.slice(indexOf.get(shared.from.toString())!)
    const inShared = (path: string) => sum(sharedDays.map((d) => visits.get(`${path}|${d}`) ?? 0))
    const values = pages.map((p) => ({ path: p.path, visits: inShared(p.path) }))
    cohortMedian = median(values.map((v) => v.visits))
    measured = values.map((v) => ({ ...v, mid: cohortMedian }))
  }
  const byPath = new Map(measured.map((m) => [m.path, m]))
  const answer = pages
    .map((p) => {
      const m = byPath.get(p.path)!
      return {
        path: p.path,
        launchedAt: isoLocal(p.launchedAt),
        measuredDays: p.measuredDays,
        complete: p.complete,
        visits: m.visits,
        cohortMedian: m.mid,
        band: bandOf(m.visits, m.mid),
        vsMedian: m.mid ? round4(m.visits / m.mid) : null,
      }
    })
    .sort((a, b) => b.visits - a.visits || (a.path < b.path ? -1 : 1))
    .slice(0, Math.min(1000, Math.max(1, params.limit ?? 100)))
  return { available: true, ...base, cohort: { pages: pages.length, median: cohortMedian, shape }, pages: answer }
}
