import type { SourceServices } from '../integrations/source-services'
import { ApiError } from '../core/errors'
import { pathMatches } from '../ingest/enrich'
import { clickhouseTime } from '../storage/clickhouse/time'
import { planFor } from '../accounts/plans'
import { bind, sql } from '../storage/clickhouse/sql'
import { execute } from '../storage/clickhouse/execute'
import type { Site } from '../sites/sites'
import { NO_SNAPSHOT, type StoredSnapshot, latestSnapshots, snapshotTexts } from './changes'
import { CRAWLER_NAME, type CrawlerConfig, siteOrigin } from './config'
import { type ComparedSnapshot, type DetectedChange, comparePage, foldSiteWide, isHtml, siteChange } from './detect'
import { readRobots, sitemapPaths } from './discover'
import { contentHash, parsePage } from './parse'

/**
 * The crawl job: for each site that is due, discover its pages (robots.txt, sitemaps, links,
 * pageview paths), fetch those due politely through the guarded fetch, store a snapshot of each,
 * and record what changed since the previous snapshot (docs/changes.md).
 */

const DAY_MS = 86_400_000
/** The homepage and the sitemap's pages are fetched again after a day, others after a week (an hour's slack keeps daily runs from drifting). */
export const DAILY_RECRAWL_MS = DAY_MS - 3_600_000
export const WEEKLY_RECRAWL_MS = 7 * DAY_MS - 3_600_000
/** When a run left pages for later and the day's budget is not spent, the site is due again after this. */
const CONTINUE_AFTER_MS = 10 * 60_000
/** A failed run is retried after this. */
const RETRY_AFTER_MS = 60 * 60_000
/** Days of pageviews whose paths are crawled. */
const PAGEVIEW_DAYS = 30
/** Errors the site read lists from the last run. */
const LISTED_ERRORS = 20

/** At most one request a second per host (or the configured interval), across every site of the process. */
class HostPacer {
  private readonly next = new Map<string, number>()
  constructor(private readonly intervalMs: number) {}

  /**
   * Resolves when a request to `host` may be sent: the interval after the last one let go, however
   * late a timer fired. Timed on the monotonic clock, in fractions of a millisecond: the wall clock
   * moves in whole milliseconds, and a correction of it would send early or stall.
   */
  async wait(host: string) {
    if (this.intervalMs <= 0) return
    for (;;) {
      const now = performance.now()
      const next = this.next.get(host) ?? 0
      if (now >= next) {
        if (this.next.size > 10_000) this.next.clear()
        this.next.set(host, now + this.intervalMs)
        return
      }
      await new Promise((resolve) => setTimeout(resolve, next - now))
    }
  }
}
const pacers = new WeakMap<CrawlerConfig, HostPacer>()
const pacerOf = (config: CrawlerConfig) => {
  let pacer = pacers.get(config)
  if (!pacer) pacers.set(config, (pacer = new HostPacer(config.hostIntervalMs)))
  return pacer
}

interface Fetched {
  status: number
  finalUrl: string
  contentType: string
  body: Uint8Array<ArrayBuffer>
  error: string
}

/** Redirects the crawler follows from one URL. */
const MAX_REDIRECTS = 5

/**
 * One polite request through the guarded fetch, following redirects hop by hop so each hop waits
 * its turn for the host and is checked by the guard again; a refused, failed, oversized or
 * timed-out fetch is status 0 with the reason.
 */
export async function fetchPolitely(config: CrawlerConfig, url: string, accept: string): Promise<Fetched> {
  let current = url
  try {
    for (let hop = 0; ; hop++) {
      await pacerOf(config).wait(new URL(current).host)
      const res = await config.fetch(current, { headers: { 'user-agent': config.userAgent, accept }, redirect: 'manual' })
      const location = res.headers.get('location')
      if (res.status >= 300 && res.status < 400 && location) {
        if (hop >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`)
        current = new URL(location, current).href
        continue
      }
      return {
        status: res.status,
        finalUrl: current,
        contentType: (res.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase(),
        body: new Uint8Array(await res.arrayBuffer()),
        error: '',
      }
    }
  } catch (err) {
    const reason =
      err instanceof Error ? (err.name === 'TimeoutError' || err.name === 'AbortError' ? 'timed out' : err.message) : String(err)
    return { status: 0, finalUrl: current, contentType: '', body: new Uint8Array(), error: reason.slice(0, 300) }
  }
}

export const decode = (body: Uint8Array) => new TextDecoder('utf-8', { fatal: false }).decode(body)

export interface SnapshotRow extends ComparedSnapshot {
  fetchedAt: Date
  /** The earlier of the page's first fetch and its first pageview. */
  launchedAt: Date
  bytes: number
  links: string[]
  inSitemap: boolean
  error: string
}

/** Fetches and reads one page into a snapshot. */
async function snapshotPage(
  config: CrawlerConfig,
  origin: string,
  path: string,
  fetchedAt: Date,
  inSitemap: boolean,
  previous: StoredSnapshot | undefined,
  sitemapRead: boolean,
): Promise<Omit<SnapshotRow, 'launchedAt'>> {
  const url = `${origin}${path}`
  const got = await fetchPolitely(config, url, 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5')
  const finalUrl = got.finalUrl
  const base = {
    id: crypto.randomUUID(),
    path,
    fetchedAt,
    status: got.status,
    finalUrl,
    contentType: got.contentType,
    bytes: got.body.byteLength,
    inSitemap,
    error: got.error,
  }
  const empty = { title: '', metaDescription: '', canonical: '', robotsMeta: '', h1: '', mainText: '', wordCount: 0, links: [] as string[] }
  // once listed, a page that leaves the sitemap stays removed until it is listed again
  const leftSitemap =
    sitemapRead && !inSitemap && !!previous && (previous.inSitemap || (previous.removed && previous.status > 0 && previous.status < 400))
  const removed = got.status === 404 || got.status === 410 || (got.status > 0 && leftSitemap)
  if (got.status === 0) return { ...base, ...empty, contentHash: '', removed: false }
  if (isHtml(got.contentType) && got.status < 300) {
    const page = parsePage(decode(got.body), new URL(finalUrl), origin)
    return { ...base, ...page, contentHash: await contentHash(page.mainText), removed }
  }
  return { ...base, ...empty, contentHash: await contentHash(got.body), removed }
}

const asCompared = (s: StoredSnapshot, mainText: string): ComparedSnapshot => ({ ...s, mainText })

export interface CrawlRun {
  siteId: string
  fetched: number
  changes: number
  errors: { path: string; error: string }[]
  /** Pages left for a later run (the day's budget or the run's time was spent). */
  left: number
  pagesKnown: number
  /** Why the run fetched nothing (robots.txt could not be read): the job logs it with the site. */
  failed?: string
}

/**
 * The paths the site's pageviews show: those of the last days, most viewed first, at most `cap`,
 * and every path's first pageview ever (epoch ms), which a page's launch date may be.
 */
async function pageviewPaths(
  services: SourceServices,
  siteId: string,
  now: Date,
  cap: number,
): Promise<{ recent: string[]; firstViews: Map<string, number> }> {
  const rows = await execute<{ pathname: string; first_ms: string | number; recent: string | number }>(
    services.clickhouse,
    sql`SELECT pathname, toUnixTimestamp64Milli(min(timestamp)) AS first_ms, countIf(timestamp >= ${bind('DateTime64(3)', clickhouseTime(now.getTime() - PAGEVIEW_DAYS * DAY_MS))}) AS recent
        FROM events WHERE site_id = ${bind('UUID', siteId)} AND kind = 'pageview' GROUP BY pathname`,
  )
  const paths = rows.filter((r) => r.pathname.startsWith('/'))
  const recent = paths
    .filter((r) => Number(r.recent) > 0)
    .sort((a, b) => Number(b.recent) - Number(a.recent) || a.pathname.localeCompare(b.pathname))
    .slice(0, cap)
    .map((r) => r.pathname)
  return { recent, firstViews: new Map(paths.map((r) => [r.pathname, Number(r.first_ms)])) }
}

/** One run over one site. Throws only when the site could not be crawled at all (its stores failing). */
export async function crawlSite(
  services: SourceServices,
  config: CrawlerConfig,
  site: Site,
  shouldStop: () => boolean = () => false,
): Promise<CrawlRun> {
  const started = Date.now()
  const now = services.now()
  const day = now.toISOString().slice(0, 10)
  const queue = services.repositories.crawlQueue
  const org = await services.repositories.orgs.get(site.orgId)
  const limits = planFor(org, services.plan).limits
  const origin = siteOrigin(config, site)
  const excluded = (path: string) => site.changeDetection.changeExcludedPaths.some((pattern) => pathMatches(pattern, path))

  const [latest, memory, used, pings] = await Promise.all([
    latestSnapshots(services.clickhouse, site.id, { successful: true }),
    queue.memory(site.id),
    queue.budgetUsed(site.id, day),
    queue.pings(site.id),
  ])
  const known = await latestSnapshots(services.clickhouse, site.id)
  const firstCrawl = known.size === 0

  // discovery: robots.txt, the sitemaps, pageviews
  const robotsAnswer = await fetchPolitely(config, `${origin}/robots.txt`, 'text/plain')
  // as RFC 9309 asks: robots.txt missing (4xx) allows everything; unreachable (no answer, 5xx) allows nothing, so the run waits
  if (robotsAnswer.status === 0 || robotsAnswer.status >= 500) {
    const error = `robots.txt could not be read (${robotsAnswer.error || `HTTP ${robotsAnswer.status}`}): nothing is fetched until it can`
    await queue.schedule(site.id, now.getTime() + RETRY_AFTER_MS, { replace: true })
    await recordCrawlState(services, site.id, {
      crawlStatus: 'failed',
      lastCrawlAt: now.toISOString(),
      pagesKnown: known.size,
      crawlErrors: [{ path: '/robots.txt', error }],
    })
    return {
      siteId: site.id,
      fetched: 0,
      changes: 0,
      errors: [{ path: '/robots.txt', error }],
      left: 0,
      pagesKnown: known.size,
      failed: error,
    }
  }
  const robotsText = robotsAnswer.status === 200 ? decode(robotsAnswer.body) : ''
  const robots = readRobots(origin, robotsText, CRAWLER_NAME)
  const crawlable = (path: string) => !excluded(path) && robots.allows(path)
  const sitemapStart = robots.sitemaps.filter((u) => u.startsWith(`${origin}/`))
  const listed = await sitemapPaths(
    origin,
    sitemapStart.length ? sitemapStart : [`${origin}/sitemap.xml`],
    limits.crawlPagesPerSite,
    async (url) => {
      const got = await fetchPolitely(config, url, 'application/xml,text/xml;q=0.9,*/*;q=0.5')
      return got.status === 200 ? decode(got.body) : null
    },
  )
  // what the sitemap lists for us: the paths robots.txt and the exclusions leave
  const sitemap = { found: listed.found, paths: new Set([...listed.paths].filter(crawlable)) }
  const viewed = await pageviewPaths(services, site.id, now, limits.crawlPagesPerSite)

  // the pages tracked: what was seen before, then pinged, the homepage, the sitemap, pageviews, up to the cap
  // a pinged page is tracked even past the cap: the ping was accepted
  const pinged = new Set(pings.map((p) => p.path).filter(crawlable))
  const tracked = new Set<string>([...known.keys()].filter(crawlable).concat(...pinged))
  for (const path of ['/', ...sitemap.paths, ...viewed.recent]) {
    if (tracked.size >= limits.crawlPagesPerSite) break
    if (crawlable(path)) tracked.add(path)
  }
  const dueFor = (path: string) => {
    const last = known.get(path)
    if (!last || pinged.has(path)) return true
    if (last.inSitemap && sitemap.found && !sitemap.paths.has(path)) return true
    const age = now.getTime() - Date.parse(last.fetchedAt)
    return age >= (path === '/' || sitemap.paths.has(path) ? DAILY_RECRAWL_MS : WEEKLY_RECRAWL_MS)
  }
  const rank = (path: string) => (pinged.has(path) ? 0 : path === '/' ? 1 : !known.has(path) ? 2 : 3)
  // pinged pages are fetched in the order they were pinged
  const pingOrder = new Map(pings.map((p, i) => [p.path, i]))
  const frontier = [...tracked]
    .filter(dueFor)
    .sort(
      (a, b) =>
        rank(a) - rank(b) ||
        (pingOrder.get(a) ?? 0) - (pingOrder.get(b) ?? 0) ||
        Date.parse(known.get(a)?.fetchedAt ?? '1970-01-01') - Date.parse(known.get(b)?.fetchedAt ?? '1970-01-01') ||
        a.localeCompare(b),
    )

  const budget = Math.max(0, limits.crawlPagesPerDay - used)
  const snapshots: SnapshotRow[] = []
  const errors: CrawlRun['errors'] = []
  const done = new Set<string>()
  while (frontier.length && snapshots.length < budget && Date.now() - started < config.siteRunMs && !shouldStop()) {
    const path = frontier.shift()!
    if (done.has(path)) continue
    done.add(path)
    const snapshot = await snapshotPage(
      config,
      origin,
      path,
      new Date(services.now().getTime()),
      sitemap.paths.has(path),
      known.get(path),
      sitemap.found,
    )
    const previousLaunch = known.has(path) ? Date.parse(known.get(path)!.launchedAt) : snapshot.fetchedAt.getTime()
    snapshots.push({ ...snapshot, launchedAt: new Date(Math.min(previousLaunch, viewed.firstViews.get(path) ?? Number.POSITIVE_INFINITY)) })
    if (snapshot.error) errors.push({ path, error: snapshot.error })
    for (const link of snapshot.links) {
      if (tracked.has(link) || tracked.size >= limits.crawlPagesPerSite || !crawlable(link)) continue
      tracked.add(link)
      frontier.push(link)
    }
  }

  // change detection against each page's previous successful snapshot
  const changes: DetectedChange[] = []
  if (!firstCrawl) {
    const answered = snapshots.filter((s) => s.status > 0)
    // the previous main text is read only where it changed: for the word diff
    const textChanged = answered
      .map((s) => [s, latest.get(s.path)] as const)
      .filter(([s, p]) => p && isHtml(p.contentType) && p.contentHash !== s.contentHash)
    const texts = await snapshotTexts(
      services.clickhouse,
      site.id,
      textChanged.map(([, p]) => p!.id),
    )
    const pageChanges = answered.flatMap((s) => {
      const previous = latest.get(s.path)
      return comparePage(previous ? asCompared(previous, texts.get(previous.id) ?? '') : null, s)
    })
    changes.push(...foldSiteWide(pageChanges, answered.filter((s) => latest.has(s.path)).length))
  }
  const robotsHash = await contentHash(robotsText)
  const sitemapList = [...sitemap.paths].sort()
  const sitemapHash = await contentHash(sitemapList.join('\n'))
  if (memory && !firstCrawl) {
    if (memory.robotsHash !== robotsHash)
      changes.push(siteChange('robots_txt', memory.robotsHash ? 'changed' : 'none', robotsText ? 'changed' : 'none'))
    if (memory.sitemapHash !== sitemapHash) {
      const before = new Set([...known.values()].filter((s) => s.inSitemap).map((s) => s.path))
      const added = sitemapList.filter((p) => !before.has(p))
      const gone = [...before].filter((p) => !sitemap.paths.has(p))
      changes.push(
        siteChange(
          'sitemap',
          `${memory.sitemapCount} pages`,
          `${sitemap.paths.size} pages (${added.length} added, ${gone.length} gone)`,
          [...added, ...gone],
          added.length + gone.length,
        ),
      )
    }
  }

  await store(services, site.id, snapshots, changes, now)
  await queue.spendBudget(site.id, day, snapshots.length)
  await queue.remember(site.id, { robotsHash, sitemapHash, sitemapCount: sitemap.paths.size })
  const pingsWaiting = await queue.clearPings(
    site.id,
    pings.filter((p) => done.has(p.path) || !crawlable(p.path)),
  )
  const left = frontier.filter((p) => !done.has(p)).length
  const budgetSpent = snapshots.length >= budget
  const nextDay = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)
  // a ping that came during the run (or that the run's time left) is served by the next run, at once: it was accepted
  const nextRun = budgetSpent
    ? left || pingsWaiting
      ? nextDay
      : now.getTime() + DAY_MS
    : pingsWaiting
      ? services.now().getTime()
      : left
        ? now.getTime() + CONTINUE_AFTER_MS
        : now.getTime() + DAY_MS
  await queue.schedule(site.id, nextRun, { replace: true })
  const pagesKnown = new Set([...known.keys(), ...snapshots.map((s) => s.path)]).size
  await recordCrawlState(services, site.id, {
    crawlStatus: 'ok',
    lastCrawlAt: now.toISOString(),
    pagesKnown,
    crawlErrors: errors.slice(0, LISTED_ERRORS),
  })
  return { siteId: site.id, fetched: snapshots.length, changes: changes.length, errors, left, pagesKnown }
}

async function store(services: SourceServices, siteId: string, snapshots: SnapshotRow[], changes: DetectedChange[], now: Date) {
  if (snapshots.length) {
    await services.clickhouse.insert(
      'crawl_snapshots',
      snapshots.map((s) => ({
        site_id: siteId,
        path: s.path,
        fetched_at: clickhouseTime(s.fetchedAt),
        id: s.id,
        status: s.status,
        final_url: s.finalUrl,
        content_type: s.contentType,
        bytes: s.bytes,
        title: s.title,
        meta_description: s.metaDescription,
        canonical: s.canonical,
        robots_meta: s.robotsMeta,
        h1: s.h1,
        main_text: s.mainText,
        word_count: s.wordCount,
        content_hash: s.contentHash,
        links: s.links,
        in_sitemap: s.inSitemap ? 1 : 0,
        removed: s.removed ? 1 : 0,
        error: s.error,
        launched_at: clickhouseTime(s.launchedAt),
      })),
    )
  }
  if (changes.length) {
    await services.clickhouse.insert(
      'crawl_changes',
      changes.map((c) => ({
        site_id: siteId,
        detected_at: clickhouseTime(now),
        id: crypto.randomUUID(),
        scope: c.scope,
        path: c.path,
        type: c.type,
        category: c.category,
        before: c.before,
        after: c.after,
        words_added: c.wordsAdded,
        words_removed: c.wordsRemoved,
        diffable: c.diffable ? 1 : 0,
        pages: c.pages,
        sample_paths: c.samplePaths,
        before_snapshot: c.beforeSnapshot ?? NO_SNAPSHOT,
        after_snapshot: c.afterSnapshot ?? NO_SNAPSHOT,
      })),
    )
  }
}

/** The crawl's state on the site record, changed as one compare-and-set so a settings write in between is kept. */
async function recordCrawlState(services: SourceServices, siteId: string, state: Partial<Site['changeDetection']>) {
  await services.sites
    .update(siteId, (current) => ({ ...current, changeDetection: { ...current.changeDetection, ...state } }))
    // a site deleted while it was crawled has no record left to show the crawl on
    .catch((err: unknown) => {
      if (!(err instanceof ApiError && err.status === 404)) throw err
    })
}

/** Queues a site's first crawl, due at once (adding a site). */
export async function queueFirstCrawl(services: SourceServices, site: Site) {
  await services.repositories.crawlQueue.schedule(site.id, services.now().getTime())
  services.crawler?.wake?.()
}

/** Drops a deleted site from the queue and its crawl bookkeeping. */
export async function forgetCrawls(services: SourceServices, siteId: string) {
  await services.repositories.crawlQueue.forget(siteId)
}

export interface CrawlJobOptions {
  log?: (line: string) => void
  /** Sites crawled at the same time. */
  concurrency?: number
  /** True when the run must end soon (the server stopping, a cron run's deadline): sites not begun wait, a site begun stores what it has. */
  shouldStop?: () => boolean
}

/**
 * One run of the job: every due site, a few at a time. A site that fails is logged with its id,
 * marked failed and retried after an hour; the others go on.
 */
export async function runCrawls(services: SourceServices, config: CrawlerConfig, options: CrawlJobOptions = {}): Promise<CrawlRun[]> {
  const queue = services.repositories.crawlQueue
  const due = await queue.dueSites(services.now().getTime())
  const runs: CrawlRun[] = []
  const leaseSeconds = Math.ceil(config.siteRunMs / 1000) + 300
  // this run's name on the leases it takes: only it renews or frees them
  const holder = crypto.randomUUID()
  const crawlOne = async (siteId: string) => {
    let claimed = false
    try {
      const site = await services.repositories.sites.get(siteId)
      if (!site) return await queue.forget(siteId)
      if (!site.changeDetection.changeDetectionEnabled)
        return await queue.schedule(siteId, services.now().getTime() + DAY_MS, { replace: true })
      if (!(claimed = await queue.claim(siteId, holder, leaseSeconds))) return
      const run = await crawlSite(services, config, site, options.shouldStop)
      if (run.failed) options.log?.(`crawl of site ${siteId} failed: ${run.failed}`)
      runs.push(run)
    } catch (err) {
      options.log?.(`crawl of site ${siteId} failed: ${(err as Error).message}`)
      await queue.schedule(siteId, services.now().getTime() + RETRY_AFTER_MS, { replace: true }).catch(() => {})
      await recordCrawlState(services, siteId, {
        crawlStatus: 'failed',
        lastCrawlAt: services.now().toISOString(),
        crawlErrors: [{ path: '', error: String((err as Error).message).slice(0, 300) }],
      }).catch(() => {})
    } finally {
      if (claimed) await queue.release(siteId, holder).catch(() => {})
    }
  }
  const waiting = [...due]
  const worker = async () => {
    for (let id = waiting.shift(); id !== undefined && !options.shouldStop?.(); id = waiting.shift()) await crawlOne(id)
  }
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, worker))
  return runs
}
