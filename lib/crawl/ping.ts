import type { SourceServices } from '../integrations/source-services'
import { ApiError } from '../core/errors'
import { pathMatches } from '../ingest/enrich'
import type { ApiKeyRecord } from '../accounts/keys'
import { planFor } from '../accounts/plans'
import { sitesOfKey } from '../sites/listing'
import type { Site } from '../sites/sites'

/** How long a deploy hook should wait before pinging again when the crawler cannot take a ping. */
export const PING_RETRY_AFTER_SECONDS = 60

/** The caller's site a URL belongs to: its domain, a subdomain of it, or its custom tracking domain; the most specific wins. */
function siteOfHost(sites: Site[], host: string): Site | undefined {
  const matches = sites.filter((s) => host === s.domain || host.endsWith(`.${s.domain}`) || host === s.tracking.customDomain)
  return matches.sort((a, b) => b.domain.length - a.domain.length)[0]
}

export interface PingAnswer {
  accepted: boolean
  path: string
  /** Why nothing will be fetched, when it will not. */
  reason?: string
  /** When the site's crawl budget renews (the next UTC midnight), when it is spent. */
  renewsAt?: string
}

/**
 * POST /ping: queues an immediate recrawl of one page. `accepted` is false, with the reason, when
 * the site's change detection is off, the path is excluded from it, or the site's pages of the day
 * are all fetched (then with when they renew); 503 when there is no crawler or the site's pings
 * waiting have reached the limit.
 */
export async function pingPage(services: SourceServices, key: ApiKeyRecord, rawUrl: string): Promise<PingAnswer> {
  let url: URL
  try {
    url = new URL(rawUrl)
  } catch {
    throw new ApiError(400, 'url: must be an absolute http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ApiError(400, 'url: must be an absolute http(s) URL')
  const sites = await sitesOfKey(services.repositories, key)
  const site = siteOfHost(sites, url.hostname.toLowerCase())
  if (!site)
    throw new ApiError(400, `url: ${url.hostname} is not the domain of a site of this key, a subdomain of one, or its custom domain`)
  const unavailable = (why: string) =>
    new ApiError(503, `the crawler cannot take pings now (${why}); retry later`, { 'Retry-After': String(PING_RETRY_AFTER_SECONDS) })
  const config = services.crawler
  if (!config) throw unavailable('it is turned off on this deployment')
  const path = url.pathname
  const queue = services.repositories.crawlQueue
  if ((await queue.pingCount(site.id)) >= config.maxQueuedPings)
    throw unavailable(`${config.maxQueuedPings} pings of this site are waiting`)
  if (!site.changeDetection.changeDetectionEnabled) return { accepted: false, path, reason: 'change detection is off for this site' }
  if (site.changeDetection.changeExcludedPaths.some((p) => pathMatches(p, path)))
    return { accepted: false, path, reason: 'the path is excluded from change detection (changeExcludedPaths)' }
  const now = services.now()
  // the crawl's budget is the plan's pages a site a UTC day (lib/crawl/crawl.ts): spent, a ping would wait for the next day
  const day = now.toISOString().slice(0, 10)
  const [org, used] = await Promise.all([services.repositories.orgs.get(site.orgId), queue.budgetUsed(site.id, day)])
  const { crawlPagesPerDay } = planFor(org, services.plan).limits
  if (used >= crawlPagesPerDay) {
    const renewsAt = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString()
    return {
      accepted: false,
      path,
      reason: `this site's crawl budget of ${crawlPagesPerDay} pages a day is spent for today (UTC): nothing is fetched until it renews`,
      renewsAt,
    }
  }
  await queue.addPing(site.id, path, now.getTime())
  await queue.schedule(site.id, now.getTime())
  config.wake?.()
  return { accepted: true, path }
}
