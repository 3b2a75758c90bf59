import type { SourceServices } from '../integrations/source-services'
import { Temporal } from 'temporal-polyfill'
import { ApiError } from '../core/errors'
import { during } from '../reports/query/compile/scope'
import { bucket } from '../reports/query/compile/series'
import { bind, sql } from '../storage/clickhouse/sql'
import { type ResolvedRange, type WindowName, buckets, datesBetween, rangeView, resolveRange, startsDay } from '../reports/query/range'
import { type CompareInput, changes, resolveComparison } from '../reports/query/compare'
import type { Query } from '../reports/query/model'
import { execute } from '../storage/clickhouse/execute'
import { runImportedRead, runRead } from '../reports/query/run'
import { filteredQuery } from '../reports/query/filtered'
import type { Site } from '../sites/sites'
import type { StoredChange } from './changes'
import { changeById, latestSnapshots, siteChanges, snapshotDetail } from './changes'
import { type CATEGORIES, CHANGE_TYPES, type ChangeType, wordRuns } from './detect'
import { isNoindex } from './parse'

/** The pages read, the change feed and the word diff (docs/changes.md). */

/** A page is `new` for this many days after its launch date. */
export const NEW_PAGE_DAYS = 30

export const PAGE_FILTERS = ['all', 'active', 'removed', 'new'] as const
/** The sort keys of the pages read, each a field of the page row. */
export const PAGE_SORTS = [
  'pageviews',
  'visitors',
  'path',
  'title',
  'launchedAt',
  'lastCrawledAt',
  'scrollDepth',
  'timeOnPage',
  'wordCount',
  'httpStatus',
] as const
export type PageSort = (typeof PAGE_SORTS)[number]

export interface WindowParams {
  range: Exclude<WindowName, '5m' | '30m'>
  from?: string
  to?: string
}

export interface PagesParams extends WindowParams, CompareInput {
  /** The common filters (JSON), as every report takes them: a page's traffic is what they keep. */
  filters?: string
  filter: (typeof PAGE_FILTERS)[number]
  sort: PageSort
  dir?: 'asc' | 'desc'
  q?: string
  trends: boolean
  bots: boolean
  limit: number
  offset: number
}

type Row = Record<string, unknown>

function windowOf(site: Site, params: WindowParams, now: Date): ResolvedRange {
  if (params.range === 'realtime') throw new ApiError(400, 'range: realtime is not a window for this read')
  return resolveRange(params, site.timezone, now, { firstEventAt: new Date(site.createdAt) })
}

/** Most paths whose traffic the pages read looks up: the plan with the most pages tracked. */
const MAX_TRAFFIC_PATHS = 20_000

/**
 * Traffic per path in the window: visitors and pageviews as the path breakdown counts them, with
 * the page's leave-time engagement reports (scroll depth and engaged time), all from the one path
 * read (its finished days from the daily rollup). A site that reads only ga4 takes visitors and
 * pageviews from the imported GA4 pages (summed over its hostnames; visitors a sum of daily values),
 * which have no engagement reports.
 */
async function trafficByPath(services: SourceServices, site: Site, range: ResolvedRange, now: Date, filtered: Query | null = null) {
  const query: Query = filtered
    ? { ...filtered, range, limit: MAX_TRAFFIC_PATHS }
    : { siteId: site.id, range, filters: [], goals: [], limit: MAX_TRAFFIC_PATHS, now }
  if (!site.sources.includes('standalone')) {
    const { rows } = await runImportedRead(services.clickhouse, query, { kind: 'breakdown', property: 'path' })
    return new Map(
      rows.map((r) => [
        String(r.value),
        { visitors: Number(r.visitors), pageviews: Number(r.pageviews), reports: 0, scroll: 0, engaged: 0 },
      ]),
    )
  }
  const rows = await runRead(services.clickhouse, query, { kind: 'breakdown', property: 'path', reports: true })
  return new Map(
    rows.map((r) => {
      const reports = Number(r.reports)
      const average = (sum: unknown) => (reports ? Number(sum) / reports : 0)
      return [
        String(r.value),
        {
          visitors: Number(r.visitors),
          pageviews: Number(r.pageviews),
          reports,
          scroll: average(r.scroll_sum),
          engaged: average(r.engaged_ms_sum),
        },
      ]
    }),
  )
}

async function botsByPath(services: SourceServices, site: Site, range: ResolvedRange, paths: string[]) {
  const rows = await execute<Row>(
    services.clickhouse,
    sql`SELECT pathname, count() AS hits, countIf(startsWith(bot_kind, 'ai-')) AS ai
FROM bot_events WHERE site_id = ${bind('UUID', site.id)} AND ${during('timestamp', range.from.epochMilliseconds, range.to.epochMilliseconds)} AND pathname IN ${bind('Array(String)', paths)}
GROUP BY pathname`,
  )
  return new Map(rows.map((r) => [String(r.pathname), { hits: Number(r.hits), aiCrawlerHits: Number(r.ai) }]))
}

async function trendsByPath(services: SourceServices, site: Site, range: ResolvedRange, paths: string[]) {
  const rows = await execute<Row>(
    services.clickhouse,
    sql`SELECT pathname, sumMap(map(toUnixTimestamp(${bucket(range)}), toUInt64(1))) AS per_bucket
FROM events WHERE site_id = ${bind('UUID', site.id)} AND kind = 'pageview' AND ${during('timestamp', range.from.epochMilliseconds, range.to.epochMilliseconds)} AND pathname IN ${bind('Array(String)', paths)}
GROUP BY pathname`,
  )
  const windowBuckets = buckets(range)
  return new Map(
    rows.map((r) => [String(r.pathname), windowBuckets.map((b) => Number((r.per_bucket as Record<string, unknown>)[b.epoch] ?? 0))]),
  )
}

/** GET /pages: the crawled inventory with its traffic, filtered, searched, sorted and paged. */
export async function pages(services: SourceServices, site: Site, params: PagesParams) {
  const now = services.now()
  const range = windowOf(site, params, now)
  const compare = resolveComparison(range, params, now)
  // a site that reads only ga4 takes its pages' traffic from the imported pages, which hold no other dimension
  const filtered = await filteredQuery(services, site, params, site.sources.includes('standalone') ? 'standalone' : 'ga4', range)
  if (filtered && (params.trends || params.bots))
    throw new ApiError(
      400,
      `${params.trends ? 'trends' : 'bots'}: not taken with filters (pageviews per bucket and bot hits are counted unfiltered)`,
    )
  const [latest, traffic, compared] = await Promise.all([
    latestSnapshots(services.clickhouse, site.id),
    trafficByPath(services, site, range, now, filtered),
    compare ? trafficByPath(services, site, compare.window, now, filtered) : null,
  ])
  const newSince = now.getTime() - NEW_PAGE_DAYS * 86_400_000
  const all = [...latest.values()].map((s) => {
    const t = traffic.get(s.path)
    const launched = Date.parse(s.launchedAt)
    const reports = t?.reports ?? 0
    return {
      path: s.path,
      title: s.title,
      status: s.removed ? ('removed' as const) : launched >= newSince ? ('new' as const) : ('active' as const),
      httpStatus: s.status,
      finalUrl: s.finalUrl,
      contentType: s.contentType,
      noindex: isNoindex(s.robotsMeta),
      inSitemap: s.inSitemap,
      wordCount: s.wordCount,
      error: s.error || null,
      launchedAt: new Date(launched).toISOString(),
      lastCrawledAt: s.fetchedAt,
      visitors: t?.visitors ?? 0,
      pageviews: t?.pageviews ?? 0,
      scrollDepth: t && reports ? Math.round(t.scroll * 10) / 10 : null,
      timeOnPage: t && reports ? Math.round(t.engaged / 100) / 10 : null,
    }
  })
  const q = params.q?.toLowerCase()
  const searched = q ? all.filter((p) => p.path.toLowerCase().includes(q) || p.title.toLowerCase().includes(q)) : all
  const counts = { all: searched.length, active: 0, removed: 0, new: 0 }
  for (const p of searched) {
    if (p.status === 'removed') counts.removed++
    else counts.active++
    if (p.status === 'new') counts.new++
  }
  const kept = searched.filter(
    (p) => params.filter === 'all' || (params.filter === 'active' ? p.status !== 'removed' : p.status === params.filter),
  )
  const dir = params.dir ?? (['path', 'title'].includes(params.sort) ? 'asc' : 'desc')
  const sign = dir === 'asc' ? 1 : -1
  const key = params.sort
  kept.sort((a, b) => {
    const x = a[key]
    const y = b[key]
    // pages without a value (no engagement reports) sort last either way
    if (x === null || y === null) return x === y ? a.path.localeCompare(b.path) : x === null ? 1 : -1
    const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))
    return sign * order || a.path.localeCompare(b.path)
  })
  const page = kept.slice(params.offset, params.offset + params.limit)
  const paths = page.map((p) => p.path)
  const [trends, bots] = await Promise.all([
    params.trends && paths.length ? trendsByPath(services, site, range, paths) : null,
    params.bots && paths.length ? botsByPath(services, site, range, paths) : null,
  ])
  return {
    range: rangeView(range),
    ...(compare ? { comparison: { mode: compare.mode, range: rangeView(compare.window) } } : {}),
    total: kept.length,
    counts,
    offset: params.offset,
    pages: page.map((p) => ({
      ...p,
      ...(trends ? { trend: trends.get(p.path) ?? buckets(range).map(() => 0) } : {}),
      ...(bots ? { bots: bots.get(p.path) ?? { hits: 0, aiCrawlerHits: 0 } } : {}),
      ...(compared ? comparedPage(p, compared.get(p.path)) : {}),
    })),
  }
}

/** A page's traffic in the comparison window, and the change (docs/api.md, Comparisons). */
function comparedPage(page: { visitors: number; pageviews: number }, was: { visitors: number; pageviews: number } | undefined) {
  const comparison = { visitors: was?.visitors ?? 0, pageviews: was?.pageviews ?? 0 }
  return { comparison, change: changes(page, comparison, ['visitors', 'pageviews']) }
}

export interface ChangesParams extends WindowParams {
  category?: (typeof CATEGORIES)[number] | 'annotation'
  type?: ChangeType | 'annotation'
  search?: string
  day?: string
  limit: number
  offset: number
}

const TYPE_LABELS: Record<ChangeType, string> = {
  new_page: 'New page',
  removed: 'Page removed',
  text: 'Main text changed',
  h1: 'H1 changed',
  title: 'Title changed',
  meta_description: 'Meta description changed',
  canonical: 'Canonical changed',
  noindex: 'Indexing changed (robots meta)',
  status: 'HTTP status changed',
  redirect: 'Redirect changed',
  robots_txt: 'robots.txt changed',
  sitemap: 'Sitemap changed',
}

function summaryOf(c: StoredChange): string {
  const label = TYPE_LABELS[c.type] ?? c.type
  if (c.scope === 'site') return c.pages > 1 && c.type !== 'sitemap' ? `${label} on ${c.pages} pages at once` : label
  return `${label}: ${c.path}`
}

/** GET /changes: page changes, site changes and annotations, newest first, with totals by type and a daily strip. */
export async function changeFeed(services: SourceServices, site: Site, params: ChangesParams) {
  const range = windowOf(site, params, services.now())
  const from = new Date(range.from.epochMilliseconds)
  const to = new Date(range.to.epochMilliseconds)
  if (params.day !== undefined) {
    try {
      Temporal.PlainDate.from(params.day, { overflow: 'reject' })
    } catch {
      throw new ApiError(400, `day: ${params.day} is not a calendar date`)
    }
  }
  const [changes, annotations] = await Promise.all([
    siteChanges(services.clickhouse, site.id, from, to),
    services.repositories.annotations.list(site.id),
  ])
  const localDay = (iso: string) => Temporal.Instant.from(iso).toZonedDateTimeISO(site.timezone).toPlainDate().toString()
  const items = [
    ...changes.map((c) => ({
      id: c.id,
      kind: 'change' as const,
      at: c.detectedAt,
      scope: c.scope,
      path: c.path,
      type: c.type as string,
      category: c.category as string,
      summary: summaryOf(c),
      before: c.before,
      after: c.after,
      wordsAdded: c.wordsAdded,
      wordsRemoved: c.wordsRemoved,
      diffable: c.diffable,
      pages: c.pages,
      samplePaths: c.samplePaths,
    })),
    ...annotations
      .filter((a) => Date.parse(a.at) >= from.getTime() && Date.parse(a.at) < to.getTime())
      .map((a) => ({
        id: a.id,
        kind: 'annotation' as const,
        at: new Date(a.at).toISOString(),
        scope: 'site' as const,
        path: '',
        type: 'annotation',
        category: 'annotation',
        summary: a.title,
        before: '',
        after: a.body ?? '',
        wordsAdded: 0,
        wordsRemoved: 0,
        diffable: false,
        pages: 0,
        samplePaths: [] as string[],
      })),
  ].sort((a, b) => b.at.localeCompare(a.at) || a.path.localeCompare(b.path) || a.type.localeCompare(b.type))
  const search = params.search?.toLowerCase()
  const matching = items.filter(
    (i) =>
      (!params.category || i.category === params.category) &&
      (!search || [i.path, i.summary, i.before, i.after].some((text) => text.toLowerCase().includes(search))),
  )
  const totals: Record<string, number> = Object.fromEntries([...CHANGE_TYPES, 'annotation'].map((t) => [t, 0]))
  for (const i of matching) totals[i.type]++
  const typed = matching.filter((i) => !params.type || i.type === params.type)
  const perDay = new Map<string, number>()
  for (const i of typed) {
    const day = localDay(i.at)
    perDay.set(day, (perDay.get(day) ?? 0) + 1)
  }
  // every day the window touches, a part of one included
  const lastDay = startsDay(range.to) ? range.to.toPlainDate() : range.to.toPlainDate().add({ days: 1 })
  const activity = datesBetween(range.from.toPlainDate(), lastDay).map((date) => ({ date, changes: perDay.get(date) ?? 0 }))
  const listed = params.day === undefined ? typed : typed.filter((i) => localDay(i.at) === params.day)
  return {
    range: rangeView(range),
    total: listed.length,
    totals,
    activity,
    offset: params.offset,
    changes: listed.slice(params.offset, params.offset + params.limit),
  }
}

/** The field of a snapshot a change of each diffable type compares. */
const DIFFED_FIELD = { title: 'title', meta_description: 'metaDescription', h1: 'h1', text: 'mainText' } as const

/** GET /changes/diff: the change's site (for the caller's access check) and its word-level runs. */
export async function changeDiff(services: SourceServices, changeId: string, siteOf: (siteId: string) => Promise<Site>, siteRef?: string) {
  // a site named (as UUID or snippet id) is checked first: one the key cannot see is its own 404
  const named = siteRef === undefined ? undefined : await siteOf(siteRef)
  const change = await changeById(services.clickhouse, changeId)
  const noSuchChange = new ApiError(404, named ? 'change_id: no such change of this site' : 'change_id: no such change')
  if (!change || (named && change.siteId !== named.id)) throw noSuchChange
  // another organization's change is answered exactly as one that does not exist
  const site = await siteOf(change.siteId).catch((err: unknown) => {
    throw err instanceof ApiError && err.status === 404 ? noSuchChange : err
  })
  if (!change.diffable || !(change.type in DIFFED_FIELD) || !change.beforeSnapshot || !change.afterSnapshot) {
    throw new ApiError(
      422,
      `change_id: this ${change.type} change is not diffable (only title, meta description, h1 and main-text changes of HTML pages up to the size limit are)`,
    )
  }
  const [before, after] = await Promise.all([
    snapshotDetail(services.clickhouse, site.id, change.beforeSnapshot),
    snapshotDetail(services.clickhouse, site.id, change.afterSnapshot),
  ])
  if (!before || !after) throw new ApiError(422, 'change_id: the snapshots of this change are no longer kept')
  const field = DIFFED_FIELD[change.type as keyof typeof DIFFED_FIELD]
  return {
    id: change.id,
    siteId: site.id,
    path: change.path,
    type: change.type,
    detectedAt: change.detectedAt,
    before: { snapshotId: before.id, fetchedAt: before.fetchedAt, text: before[field] },
    after: { snapshotId: after.id, fetchedAt: after.fetchedAt, text: after[field] },
    wordsAdded: change.wordsAdded,
    wordsRemoved: change.wordsRemoved,
    runs: wordRuns(before[field], after[field]),
  }
}
