import type { ClickHouse } from '../storage/clickhouse/types'
import { clickhouseTime } from '../storage/clickhouse/time'
import { type Fragment, bind, raw, sql } from '../storage/clickhouse/sql'
import { execute } from '../storage/clickhouse/execute'
import type { ChangeCategory, ChangeType, DetectedChange } from './detect'

/**
 * The read side of the crawler: snapshots and detected changes as stored in ClickHouse
 * (clickhouse/0005_crawl.sql). The crawl job, the pages and changes reads, and later reads of why
 * traffic changed all read them through here.
 */

export const NO_SNAPSHOT = '00000000-0000-0000-0000-000000000000'

export interface StoredSnapshot {
  id: string
  siteId: string
  path: string
  /** ISO 8601 UTC. */
  fetchedAt: string
  /** 0 when the fetch failed (see error). */
  status: number
  finalUrl: string
  contentType: string
  bytes: number
  title: string
  metaDescription: string
  canonical: string
  robotsMeta: string
  h1: string
  wordCount: number
  contentHash: string
  inSitemap: boolean
  removed: boolean
  error: string
  /** The page's launch date: the earlier of its first fetch and its first pageview, ISO 8601 UTC. */
  launchedAt: string
}

/** A detected change as stored: with its id, site and when it was detected (ISO 8601 UTC). */
export interface StoredChange extends DetectedChange {
  id: string
  siteId: string
  detectedAt: string
}

type Row = Record<string, unknown>
const iso = (ms: unknown) => new Date(Number(ms)).toISOString()
const snapshotRef = (id: unknown) => (String(id) === NO_SNAPSHOT ? null : String(id))

const SNAPSHOT_COLUMNS = raw(
  'toString(id) AS snapshot_id, toString(site_id) AS site, path, toUnixTimestamp64Milli(fetched_at) AS fetched_ms, status, final_url, content_type, bytes, title, meta_description, canonical, robots_meta, h1, word_count, content_hash, in_sitemap, removed, error, toUnixTimestamp64Milli(launched_at) AS launched_ms',
)

function snapshotOf(r: Row): StoredSnapshot {
  return {
    id: String(r.snapshot_id),
    siteId: String(r.site),
    path: String(r.path),
    fetchedAt: iso(r.fetched_ms),
    status: Number(r.status),
    finalUrl: String(r.final_url),
    contentType: String(r.content_type),
    bytes: Number(r.bytes),
    title: String(r.title),
    metaDescription: String(r.meta_description),
    canonical: String(r.canonical),
    robotsMeta: String(r.robots_meta),
    h1: String(r.h1),
    wordCount: Number(r.word_count),
    contentHash: String(r.content_hash),
    inSitemap: Number(r.in_sitemap) === 1,
    removed: Number(r.removed) === 1,
    error: String(r.error),
    launchedAt: iso(r.launched_ms),
  }
}

const CHANGE_COLUMNS = raw(
  'toString(id) AS change_id, toString(site_id) AS site, toUnixTimestamp64Milli(detected_at) AS detected_ms, scope, path, type, category, before, after, words_added, words_removed, diffable, pages, sample_paths, toString(before_snapshot) AS before_ref, toString(after_snapshot) AS after_ref',
)

function changeOf(r: Row): StoredChange {
  return {
    id: String(r.change_id),
    siteId: String(r.site),
    detectedAt: iso(r.detected_ms),
    scope: r.scope === 'site' ? 'site' : 'page',
    path: String(r.path),
    type: String(r.type) as ChangeType,
    category: String(r.category) as ChangeCategory,
    before: String(r.before),
    after: String(r.after),
    wordsAdded: Number(r.words_added),
    wordsRemoved: Number(r.words_removed),
    diffable: Number(r.diffable) === 1,
    pages: Number(r.pages),
    samplePaths: (r.sample_paths as string[]) ?? [],
    beforeSnapshot: snapshotRef(r.before_ref),
    afterSnapshot: snapshotRef(r.after_ref),
  }
}

const site = (siteId: string) => sql`site_id = ${bind('UUID', siteId)}`
const time = (at: Date) => bind('DateTime64(3)', clickhouseTime(at))

/** The columns of a page's latest snapshot, each taken at its greatest fetched_at. */
const LATEST_COLUMNS = raw(
  [
    'toString(id) AS snapshot_id',
    'status',
    'final_url',
    'content_type',
    'bytes',
    'title',
    'meta_description',
    'canonical',
    'robots_meta',
    'h1',
    'word_count',
    'content_hash',
    'in_sitemap',
    'removed',
    'error',
    'toUnixTimestamp64Milli(launched_at) AS launched_ms',
  ]
    .map((column) => {
      const [expression, alias = expression] = column.split(' AS ')
      return `argMax(${expression}, fetched_at) AS ${alias}`
    })
    .join(', '),
)

/**
 * Each page's latest snapshot, by path. `successful` keeps only fetches that got an answer
 * (status above 0): what the next snapshot is compared with.
 */
export async function latestSnapshots(
  clickhouse: ClickHouse,
  siteId: string,
  options: { successful?: boolean } = {},
): Promise<Map<string, StoredSnapshot>> {
  const answered = options.successful ? sql` AND status > 0` : raw('')
  // the WHERE clause reads the stored columns, not the latest values named alike
  const rows = await execute<Row>(
    clickhouse,
    sql`SELECT path, ${LATEST_COLUMNS}, toString(any(site_id)) AS site, toUnixTimestamp64Milli(max(fetched_at)) AS fetched_ms
FROM crawl_snapshots WHERE ${site(siteId)}${answered} GROUP BY path SETTINGS prefer_column_name_to_alias = 1`,
  )
  return new Map(rows.map((r) => [String(r.path), snapshotOf(r)]))
}

/** A page's snapshots, newest first, at most `limit`. */
export async function pageSnapshots(clickhouse: ClickHouse, siteId: string, path: string, limit = 100): Promise<StoredSnapshot[]> {
  const rows = await execute<Row>(
    clickhouse,
    sql`SELECT ${SNAPSHOT_COLUMNS} FROM crawl_snapshots WHERE ${site(siteId)} AND path = ${bind('String', path)} ORDER BY fetched_at DESC LIMIT ${bind('UInt32', limit)}`,
  )
  return rows.map(snapshotOf)
}

/** The main text of snapshots of a site, by snapshot id. */
export async function snapshotTexts(clickhouse: ClickHouse, siteId: string, ids: string[]): Promise<Map<string, string>> {
  if (!ids.length) return new Map()
  const rows = await execute<Row>(
    clickhouse,
    sql`SELECT toString(id) AS snapshot_id, main_text FROM crawl_snapshots WHERE ${site(siteId)} AND id IN ${bind('Array(UUID)', ids)}`,
  )
  return new Map(rows.map((r) => [String(r.snapshot_id), String(r.main_text)]))
}

/** One snapshot with its main text and links, or null. */
export async function snapshotDetail(
  clickhouse: ClickHouse,
  siteId: string,
  id: string,
): Promise<(StoredSnapshot & { mainText: string; links: string[] }) | null> {
  const rows = await execute<Row>(
    clickhouse,
    sql`SELECT ${SNAPSHOT_COLUMNS}, main_text, links FROM crawl_snapshots WHERE ${site(siteId)} AND id = ${bind('UUID', id)} LIMIT 1`,
  )
  return rows[0] ? { ...snapshotOf(rows[0]), mainText: String(rows[0].main_text), links: (rows[0].links as string[]) ?? [] } : null
}

/**
 * A site's page and site changes detected in [from, to), newest first; with `path`, that page's
 * changes and the site changes (which concern every page).
 */
export async function siteChanges(
  clickhouse: ClickHouse,
  siteId: string,
  from: Date,
  to: Date,
  options: { path?: string } = {},
): Promise<StoredChange[]> {
  const onPath: Fragment = options.path === undefined ? raw('') : sql` AND (scope = 'site' OR path = ${bind('String', options.path)})`
  const rows = await execute<Row>(
    clickhouse,
    sql`SELECT ${CHANGE_COLUMNS} FROM crawl_changes WHERE ${site(siteId)} AND detected_at >= ${time(from)} AND detected_at < ${time(to)}${onPath} ORDER BY detected_at DESC, scope, path, type`,
  )
  return rows.map(changeOf)
}

/** One change by id, of whichever site; the caller checks the site belongs to the asker. */
export async function changeById(clickhouse: ClickHouse, id: string): Promise<StoredChange | null> {
  const rows = await execute<Row>(clickhouse, sql`SELECT ${CHANGE_COLUMNS} FROM crawl_changes WHERE id = ${bind('UUID', id)} LIMIT 1`)
  return rows[0] ? changeOf(rows[0]) : null
}
