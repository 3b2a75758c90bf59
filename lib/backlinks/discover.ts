import type { SourceServices } from '../integrations/source-services'
import { planFor } from '../accounts/plans'
import { CRAWLER_NAME, type CrawlerConfig } from '../crawl/config'
import { decode, fetchPolitely } from '../crawl/crawl'
import { type Robots, readRobots, readSitemap } from '../crawl/discover'
import { listAllSites } from '../sites/listing'
import type { Site } from '../sites/sites'
import { execute } from '../storage/clickhouse/execute'
import { bind, sql } from '../storage/clickhouse/sql'
import { clickhouseTime } from '../storage/clickhouse/time'
import { isOriginOnly, linkUrl, linksOnPage, sameOrigin, urlDomain } from './links'
import { type Referrer, takeSnapshot } from './snapshots'

/**
 * Backlink discovery (docs/backlinks.md): every external referrer of the site's pageviews is a
 * candidate link. The crawler's polite fetch (robots.txt for our agent, one request a second per
 * host, the guarded fetch) reads the referring page and confirms or refutes a link to the site.
 * A referrer trimmed to its origin names a referring domain with traffic: its homepage and the
 * pages its sitemap lists are read for a link. Each page is checked again on a schedule (daily
 * while it sends visits, weekly otherwise), within the plan's daily budget of checks. Then the
 * provider is asked once a day when one is configured, and the day's snapshot is taken.
 */

const DAY_MS = 86_400_000
export const BACKLINK_RULE = {
  /** Referrers of the pageviews of these last days are candidates. */
  referrerDays: 30,
  /** A page that sent visits in these last days is checked again daily (an hour's slack), others weekly. */
  recentTrafficDays: 7,
  recheckRecentMs: DAY_MS - 3_600_000,
  recheckMs: 7 * DAY_MS - 3_600_000,
  /** A check that failed (no answer, 5xx, robots.txt unreadable) is tried again after this. */
  retryMs: 6 * 3_600_000,
  /** Pages of a referring origin's sitemap read for links, per origin. */
  sitemapPages: 20,
  /** Links asked of the provider per site. */
  providerCap: 20_000,
  /** Referrers read per run, the most visits first. */
  maxReferrers: 5_000,
}
/** The next run after a run that left checks for later; otherwise an hour. */
const CONTINUE_AFTER_MS = 10 * 60_000
const NEXT_RUN_MS = 60 * 60_000
/** Referrer media that are not links from a page (a search engine, an assistant). */
const NOT_LINKS = ['search', 'ai']

/** The external referrers of the site's pageviews since `since`, by referrer URL (fragment cut). */
export async function referrersSince(services: Pick<SourceServices, 'clickhouse'>, siteId: string, since: Date): Promise<Referrer[]> {
  const rows = await execute<{ url: string; visits: number | string; last_ms: number | string }>(
    services.clickhouse,
    sql`SELECT cutFragment(referrer) AS url, uniqExact(session_id) AS visits, toUnixTimestamp64Milli(max(timestamp)) AS last_ms
        FROM events
        WHERE site_id = ${bind('UUID', siteId)} AND toDate(timestamp) >= toDate(${bind('DateTime64(3)', clickhouseTime(since))})
          AND timestamp >= ${bind('DateTime64(3)', clickhouseTime(since))} AND kind = 'pageview' AND referrer != ''
          AND NOT has(${bind('Array(String)', NOT_LINKS)}, referrer_medium)
        GROUP BY url ORDER BY visits DESC, url LIMIT ${bind('UInt32', BACKLINK_RULE.maxReferrers)}`,
  )
  return rows.map((r) => ({ url: r.url, visits: Number(r.visits), lastMs: Number(r.last_ms) }))
}

interface LastCheck {
  at: number
  outcome: string
}

async function lastChecks(services: SourceServices, siteId: string): Promise<Map<string, LastCheck>> {
  const rows = await execute<{ source_url: string; at: number | string; last_outcome: string }>(
    services.clickhouse,
    sql`SELECT source_url, toUnixTimestamp64Milli(max(checked_at)) AS at, argMax(outcome, checked_at) AS last_outcome
        FROM backlink_checks WHERE site_id = ${bind('UUID', siteId)} GROUP BY source_url`,
  )
  return new Map(rows.map((r) => [r.source_url, { at: Number(r.at), outcome: r.last_outcome }]))
}

interface CheckRow {
  site_id: string
  source_url: string
  checked_at: string
  outcome: 'linked' | 'unlinked' | 'gone' | 'failed' | 'blocked'
  target_url: string
  anchor: string
  rel: string
  image: number
  title: string
  via: string
  error: string
}

export interface BacklinkRun {
  siteId: string
  checked: number
  confirmed: number
  left: number
  provider: 'asked' | 'failed' | 'none' | 'done today'
  links: number
}

/** One run over one site: check the due referring pages, ask the provider, take the day's snapshot. */
export async function discoverSite(
  services: SourceServices,
  site: Site,
  options: { log?: (line: string) => void; shouldStop?: () => boolean } = {},
): Promise<BacklinkRun> {
  const now = services.now()
  const day = now.toISOString().slice(0, 10)
  const repo = services.repositories.backlinks
  const org = await services.repositories.orgs.get(site.orgId)
  const budget = Math.max(0, planFor(org, services.plan).limits.backlinkChecksPerDay - (await repo.budgetUsed(site.id, day)))
  const [referrers, checks] = await Promise.all([
    referrersSince(services, site.id, new Date(now.getTime() - BACKLINK_RULE.referrerDays * DAY_MS)),
    lastChecks(services, site.id),
  ])
  const recentFrom = now.getTime() - BACKLINK_RULE.recentTrafficDays * DAY_MS
  const sentRecently = new Map<string, boolean>()
  for (const r of referrers) {
    const url = linkUrl(r.url)
    if (url) sentRecently.set(url, (sentRecently.get(url) ?? false) || r.lastMs >= recentFrom)
  }
  const isDue = (url: string) => {
    const last = checks.get(url)
    if (!last) return true
    const every =
      last.outcome === 'failed' ? BACKLINK_RULE.retryMs : sentRecently.get(url) ? BACKLINK_RULE.recheckRecentMs : BACKLINK_RULE.recheckMs
    return now.getTime() - last.at >= every
  }

  // candidates: referring pages, then pages known to link (checked again whether or not they send visits), then referring origins
  const pages = new Map<string, string>()
  const origins = new Set<string>()
  for (const r of referrers) {
    const url = linkUrl(r.url)
    if (!url || urlDomain(url) === null || urlDomain(url) === urlDomain(`https://${site.domain}`)) continue
    if (isOriginOnly(url)) origins.add(new URL(url).origin)
    else pages.set(url, 'referrer')
  }
  for (const [url, last] of checks) if (last.outcome === 'linked' && !pages.has(url)) pages.set(url, 'recheck')

  const rows: CheckRow[] = []
  let checked = 0
  let left = 0
  const config = services.crawler
  if (config) {
    const robotsOf = robotsCache(config)
    const check = async (url: string, via: string) => {
      if (checked >= budget || options.shouldStop?.()) {
        left++
        return
      }
      rows.push(...(await checkPage(config, robotsOf, site, url, via, services.now())))
      checked++
    }
    for (const [url, via] of pages) if (isDue(url)) await check(url, via)
    // a referring origin: its homepage, and the pages its sitemap lists and those already known from it
    for (const origin of origins) {
      const home = `${origin}/`
      if (!isDue(home)) continue
      await check(home, 'origin')
      const robots = await robotsOf(origin)
      if (!robots) continue
      const listed = await originPages(config, robots, origin)
      const known = [...checks.keys()].filter((u) => sameOrigin(u, origin) && u !== home)
      for (const url of new Set([...known, ...listed])) if (!pages.has(url) && isDue(url)) await check(url, 'sitemap')
    }
  }
  if (rows.length) await services.clickhouse.insert('backlink_checks', rows)
  await repo.spendBudget(site.id, day, checked)

  // the provider, once a UTC day
  let provider: BacklinkRun['provider'] = 'none'
  if (services.backlinkProvider) {
    if ((await repo.providerDay(site.id)) === day) provider = 'done today'
    else {
      try {
        const answer = await services.backlinkProvider.fetch(site.domain, BACKLINK_RULE.providerCap)
        const fetchedAt = clickhouseTime(now)
        const linkRows = answer.links.map((l) => ({
          site_id: site.id,
          fetched_at: fetchedAt,
          source_url: l.sourceUrl,
          target_url: l.targetUrl,
          anchor: l.anchor,
          rel: l.rel,
          image: l.image ? 1 : 0,
          title: l.title,
          domain_authority: l.domainAuthority,
          first_seen: l.firstSeen === null ? null : clickhouseTime(l.firstSeen),
        }))
        // the site's own authority rides on a marker row with no link, so that a fetch with no links is still a fetch
        linkRows.push({
          site_id: site.id,
          fetched_at: fetchedAt,
          source_url: '',
          target_url: '',
          anchor: '',
          rel: 'dofollow',
          image: 0,
          title: '',
          domain_authority: answer.authority,
          first_seen: null,
        })
        await services.clickhouse.insert('backlink_provider_links', linkRows)
        await repo.setProviderDay(site.id, day)
        provider = 'asked'
      } catch (err) {
        provider = 'failed'
        options.log?.(`backlink provider for site ${site.id} failed: ${(err as Error).message}`)
      }
    }
  }
  const snapshot = await takeSnapshot(services, site, now, referrers)
  await repo.schedule(site.id, now.getTime() + (left && checked < budget ? CONTINUE_AFTER_MS : NEXT_RUN_MS))
  return {
    siteId: site.id,
    checked,
    confirmed: new Set(rows.filter((r) => r.outcome === 'linked').map((r) => r.source_url)).size,
    left,
    provider,
    links: snapshot.links,
  }
}

/** robots.txt of each origin, read once per run; null where it could not be read (nothing is fetched there then). */
function robotsCache(config: CrawlerConfig) {
  const cache = new Map<string, Promise<Robots | null>>()
  return (origin: string) => {
    let robots = cache.get(origin)
    if (!robots) {
      robots = fetchPolitely(config, `${origin}/robots.txt`, 'text/plain').then((got) =>
        // RFC 9309: missing (4xx) allows everything, unreachable (no answer, 5xx) allows nothing
        got.status === 0 || got.status >= 500 ? null : readRobots(origin, got.status === 200 ? decode(got.body) : '', CRAWLER_NAME),
      )
      cache.set(origin, robots)
    }
    return robots
  }
}

/** The pages a referring origin's sitemaps list (robots.txt's, or /sitemap.xml; one level of index), at most BACKLINK_RULE.sitemapPages. */
async function originPages(config: CrawlerConfig, robots: Robots, origin: string): Promise<string[]> {
  const start = robots.sitemaps.filter((u) => sameOrigin(u, origin))
  const queue = start.length ? start.slice(0, 5) : [`${origin}/sitemap.xml`]
  const pages: string[] = []
  for (let i = 0; i < queue.length && i < 10 && pages.length < BACKLINK_RULE.sitemapPages; i++) {
    const got = await fetchPolitely(config, queue[i], 'application/xml,text/xml;q=0.9,*/*;q=0.5')
    if (got.status !== 200) continue
    const read = readSitemap(decode(got.body))
    for (const page of read.pages) {
      const url = linkUrl(page)
      if (url && sameOrigin(url, origin) && robots.allows(new URL(url).pathname) && pages.length < BACKLINK_RULE.sitemapPages)
        pages.push(url)
    }
    for (const nested of read.sitemaps) if (sameOrigin(nested, origin) && !queue.includes(nested)) queue.push(nested)
  }
  return pages
}

/** Reads one referring page and answers its check rows. */
async function checkPage(
  config: CrawlerConfig,
  robotsOf: (origin: string) => Promise<Robots | null>,
  site: Site,
  url: string,
  via: string,
  at: Date,
): Promise<CheckRow[]> {
  const base = {
    site_id: site.id,
    source_url: url,
    checked_at: clickhouseTime(at),
    target_url: '',
    anchor: '',
    rel: '',
    image: 0,
    title: '',
    via,
  }
  const u = new URL(url)
  const robots = await robotsOf(u.origin)
  if (!robots) return [{ ...base, outcome: 'failed', error: 'robots.txt could not be read' }]
  if (!robots.allows(u.pathname + u.search)) return [{ ...base, outcome: 'blocked', error: 'robots.txt disallows our agent' }]
  const got = await fetchPolitely(config, url, 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5')
  if (got.status === 404 || got.status === 410) return [{ ...base, outcome: 'gone', error: `HTTP ${got.status}` }]
  if (got.status === 0 || got.status >= 400) return [{ ...base, outcome: 'failed', error: got.error || `HTTP ${got.status}` }]
  if (!/html/.test(got.contentType)) return [{ ...base, outcome: 'unlinked', error: '' }]
  const page = linksOnPage(decode(got.body), got.finalUrl, site.domain)
  if (!page.links.length) return [{ ...base, outcome: 'unlinked', title: page.title, error: '' }]
  return page.links.map((l) => ({
    ...base,
    outcome: 'linked' as const,
    target_url: l.targetUrl,
    anchor: l.anchor,
    rel: l.rel,
    image: l.image ? 1 : 0,
    title: page.title,
    error: '',
  }))
}

/**
 * One run of the job: every site that is due (new ones at once, then hourly), one at a time; a
 * site that fails is logged with its id and tried again at its next run.
 */
export async function runBacklinks(
  services: SourceServices,
  options: { log?: (line: string) => void; shouldStop?: () => boolean } = {},
): Promise<BacklinkRun[]> {
  const runs: BacklinkRun[] = []
  const repo = services.repositories.backlinks
  // this run's name on the leases it takes: only it renews or frees them
  const holder = crypto.randomUUID()
  for (const site of await listAllSites(services.repositories)) {
    if (options.shouldStop?.()) break
    let claimed = false
    try {
      const due = await repo.dueAt(site.id)
      if (due !== null && due > services.now().getTime()) continue
      if (!(claimed = await repo.claim(site.id, holder, 30 * 60))) continue
      runs.push(await discoverSite(services, site, options))
    } catch (err) {
      options.log?.(`backlinks of site ${site.id} failed: ${(err as Error).message}`)
      await repo.schedule(site.id, services.now().getTime() + NEXT_RUN_MS).catch(() => {})
    } finally {
      if (claimed) await repo.release(site.id, holder).catch(() => {})
    }
  }
  return runs
}
