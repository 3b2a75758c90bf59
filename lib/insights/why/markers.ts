import type { SourceRepositories } from '../../integrations/source-services'
import { siteChanges } from '../../crawl/changes'
import { previousWindow, rangeView } from '../../reports/query/range'
import type { Site } from '../../sites/sites'
import updates from './search-engine-updates.json'
import { candidateOf } from './candidates'
import { vitalsRegressions } from './vitals-regressions'
import { backlinkDays } from '../../backlinks/reads'
import { type WhyDeps, type WindowParams, readsEvents, windowOf } from '../../reports/query/window'

/**
 * GET /markers: what is flagged on the traffic chart in the window, grouped by kind. Not
 * source-scoped: the site's annotations, the ranking updates search engines announced (a dated
 * list kept in search-engine-updates.json, each entry with the page that announced it), the
 * crawler's page and site changes, and vitals regressions against the window before.
 */

export interface AlgorithmUpdate {
  engine: string
  name: string
  kind: string
  /** First day of the rollout, YYYY-MM-DD (UTC, as announced). */
  start: string
  /** Last day of the rollout as announced complete, or null while it rolls out. */
  end: string | null
  source: string
}

export const ALGORITHM_UPDATES: readonly AlgorithmUpdate[] = updates

const DAY_MS = 86_400_000

/** Updates whose rollout overlaps [fromMs, toMs), oldest first. */
export function updatesWithin(fromMs: number, toMs: number, now: number): AlgorithmUpdate[] {
  return ALGORITHM_UPDATES.filter((u) => {
    const start = Date.parse(`${u.start}T00:00:00Z`)
    const end = u.end ? Date.parse(`${u.end}T00:00:00Z`) + DAY_MS : now
    return start < toMs && end > fromMs
  }).sort((a, b) => a.start.localeCompare(b.start) || a.name.localeCompare(b.name))
}

export async function markers(deps: WhyDeps & { repositories: Pick<SourceRepositories, 'annotations'> }, site: Site, params: WindowParams) {
  const range = await windowOf(deps, site, params)
  const from = range.from.epochMilliseconds
  const to = range.to.epochMilliseconds
  const annotations = (await deps.repositories.annotations.list(site.id))
    .filter((a) => Date.parse(a.at) >= from && Date.parse(a.at) < to)
    .sort((a, b) => a.at.localeCompare(b.at) || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
    .slice(0, 500)
    .map((a) => ({ id: a.id, at: a.at, kind: a.kind, title: a.title, body: a.body, url: a.url }))
  const algorithmUpdates = updatesWithin(from, to, deps.now().getTime())
  const previous = previousWindow(range)
  // backlink movement per UTC day of the snapshots the window spans
  const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  const [changes, regressions, backlinks] = await Promise.all([
    siteChanges(deps.clickhouse, site.id, new Date(from), new Date(to)),
    readsEvents(site)
      ? vitalsRegressions(deps.clickhouse, site.id, { baselineFrom: previous.from, currentFrom: range.from, to: range.to })
      : [],
    backlinkDays(deps.clickhouse, site.id, utcDay(from), utcDay(to - 1)),
  ])
  // oldest first, as the chart reads them
  const pageChanges = changes
    .filter((c) => c.scope === 'page')
    .reverse()
    .slice(0, 500)
    .map(candidateOf)
  const siteWide = changes
    .filter((c) => c.scope === 'site')
    .reverse()
    .slice(0, 500)
    .map(candidateOf)
  const vitals = regressions.map((r) => ({
    path: r.path,
    metric: r.metric,
    baseline: r.baseline.value,
    current: r.current.value,
    change: r.change,
    band: r.band,
    contributor: r.contributors[0] ? { kind: r.contributors[0].kind, target: r.contributors[0].target } : null,
  }))
  return {
    range: rangeView(range),
    counts: {
      annotations: annotations.length,
      algorithmUpdates: algorithmUpdates.length,
      pageChanges: pageChanges.length,
      siteChanges: siteWide.length,
      vitalsRegressions: vitals.length,
      backlinks: backlinks.length,
    },
    markers: { annotations, algorithmUpdates, pageChanges, siteChanges: siteWide, vitalsRegressions: vitals, backlinks },
  }
}
