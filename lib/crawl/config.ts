import type { Site } from '../sites/sites'

/**
 * How the crawler behaves in a home: each home builds one (lib/runtime, tests, the benchmark). A
 * home without one has no crawler: pings answer 503 and nothing is crawled.
 */
export interface CrawlerConfig {
  /** The guarded fetch the crawler sends every request through, with the crawler's size cap and timeout. */
  fetch: typeof fetch
  /** The User-Agent sent, and the agent robots.txt rules are read for. */
  userAgent: string
  /** Least time between two requests to one host (politeness); 0 only by configuration (tests, benchmark). */
  hostIntervalMs: number
  /** Pings a site may have waiting before a ping answers 503. */
  maxQueuedPings: number
  /** How long one run of the job may spend on one site before it leaves the rest for the next run. */
  siteRunMs: number
  /** Where a site's pages are fetched from; default https://<domain>. Tests point it at a local server. */
  siteOrigin?: (site: Site) => string
  /** Called when a site becomes due at once (added, pinged): the Node server starts a run then instead of at its next tick. */
  wake?: () => void
}

/** The crawler's product name in its User-Agent and for robots.txt groups. */
export const CRAWLER_NAME = 'SvcAnalyticsBot'
export const DEFAULT_USER_AGENT = `Mozilla/5.0 (compatible; ${CRAWLER_NAME}/1.0; change detection)`

/** The largest response body the crawler reads; a larger page is recorded as an error. */
export const CRAWL_MAX_BYTES = 2 * 1024 * 1024
/** A fetch that takes longer is abandoned and recorded as an error. */
export const CRAWL_TIMEOUT_MS = 15_000
export const DEFAULT_HOST_INTERVAL_MS = 1000

export const siteOrigin = (config: CrawlerConfig, site: Site) =>
  (config.siteOrigin ? config.siteOrigin(site) : `https://${site.domain}`).replace(/\/$/, '')

/** The crawler of a home: its guarded fetch built from the home's address rules with the crawler's cap and timeout. */
export function crawlerConfig(options: {
  guarded: (limits: { maxBytes: number; timeoutMs: number }) => typeof fetch
  hostIntervalMs?: number
  siteRunMs?: number
  maxQueuedPings?: number
  /** Fetch every site from this origin instead of https://<domain> (CRAWL_ORIGIN: a local copy of a site, tests). */
  origin?: string
}): CrawlerConfig {
  return {
    ...(options.origin ? { siteOrigin: () => options.origin! } : {}),
    fetch: options.guarded({ maxBytes: CRAWL_MAX_BYTES, timeoutMs: CRAWL_TIMEOUT_MS }),
    userAgent: DEFAULT_USER_AGENT,
    hostIntervalMs: options.hostIntervalMs ?? DEFAULT_HOST_INTERVAL_MS,
    maxQueuedPings: options.maxQueuedPings ?? 1000,
    siteRunMs: options.siteRunMs ?? 10 * 60_000,
  }
}
