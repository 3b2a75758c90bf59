import type { CollectorHealth } from './ingest/recover'
import type { Redis } from '@upstash/redis'
import type { CrawlerConfig } from './crawl/config'
import type { CruxConfig } from './integrations/crux'
import type { BacklinkProvider } from './backlinks/provider'
import type { SearchConsoleConnector } from './integrations/search-console/import'
import type { GoogleConfig } from './integrations/google/config'
import type { Mailer } from './network/mail'
import type { DnsResolver } from './ingest/bots'
import type { Ingestor } from './ingest/pipeline'
import type { ClickHouse } from './storage/clickhouse/types'
import type { LiveCache } from './operations/public-live'
import type { RateLimiter } from './accounts/ratelimit'
import type { PlanName } from './accounts/plans'
import type { SiteDirectory } from './sites/site-directory'
import type { Repositories } from './repositories'
import type { LiveSource } from './reports/query/ga4-live'
import { ga4LiveSource } from './integrations/ga4/realtime'

/**
 * Whether this instance takes traffic: not while it applies its migrations, stores the journal an
 * earlier run left, or makes the demo on a first start.
 */
export interface Readiness {
  ready: boolean
  phase: 'migrating' | 'replaying' | 'demo' | 'ready'
}

/**
 * Operations metrics (the Node home: lib/runtime/metrics-node.ts, Prometheus text by prom-client),
 * present only where they are switched on (METRICS_TOKEN). Everything else records through it.
 */
export interface Metrics {
  /** Whether a request may read the metrics: it carries the token as a Bearer credential. */
  admits(request: Request): Promise<boolean>
  /** Every metric as Prometheus text, and its content type. */
  render(): Promise<{ contentType: string; body: string }>
  /** An answered request: its declared route (or `unmatched`), method, status and duration. */
  request(route: string, method: string, status: number, seconds: number): void
  /** The outcome of each hit taken in: stored, or dropped (by its reason) or rejected. */
  hits(outcomes: readonly { status: string; code?: string }[]): void
  /** A scheduled job's run: ok, or it failed. */
  job(name: string, ok: boolean, seconds: number): void
}

/** What the app is built from. Each home (Node, Worker, tests) builds its own set. */
export interface Services {
  clickhouse: ClickHouse
  /** The key/value client the repositories share; verbs go through the repositories. */
  kv: Redis
  /** The key/value store's repositories, built once over `kv` (lib/repositories.ts); for verbs in lib/, never for handlers. */
  repositories: Repositories
  /** Sites by UUID or snippet id, cached; settings are saved through it. */
  sites: SiteDirectory
  limiter: RateLimiter
  now: () => Date
  /** The one guarded outbound fetch. */
  fetch: typeof fetch
  /** The one ingestion path for browser hits and imports. */
  ingestor: Ingestor
  /** The client's address as this home knows it (socket, trusted proxy header, or CF-Connecting-IP); `env` is the home's per-request environment. */
  clientAddress(request: Request, env: unknown): string
  /** Requests share one long-lived process (Node): concurrent identical work may be coalesced in memory. */
  sharedProcess?: boolean
  /**
   * Never set by a home: set on the services of one call made for someone who is neither a
   * signed-in member nor a key (a shared or public dashboard, functions/web/reads.ts). Its report
   * queries are transient (lib/reports/query/model.ts): anyone could otherwise store a rollup per filter.
   */
  anonymousReads?: true
  /** Answers of the public live count, kept for their TTL. */
  liveCache: LiveCache
  /** Reverse and forward DNS, to verify crawlers. */
  dns?: DnsResolver
  /** Files of the API reference page by name (Node reads them from swagger-ui-dist); without it, no page. */
  referenceAssets?: (file: string) => Promise<Uint8Array>
  /**
   * The plan every organization is on (a self-hosted deployment: \`PLAN\`, by default unlimited);
   * absent, each organization's own plan applies (the hosted service's billing).
   */
  plan?: PlanName
  /**
   * The origin of links that leave the server (lib/network/origin.ts): PUBLIC_URL, or on the Node
   * server without it the address it listens on, set once it listens; absent on Workers without PUBLIC_URL.
   */
  publicUrl?: string
  /** Operations metrics for GET /metrics; absent where they are off (no METRICS_TOKEN) and on Workers. */
  metrics?: Metrics
  /** Where an instance starts up before it serves (the Node server); absent, it is always ready. */
  readiness?: () => Readiness
  /** Whether acknowledged hits are being stored (the Node server's journaled sink); absent where hits are stored before the answer. */
  collector?: () => CollectorHealth
  /** Signs session cookies (SERVER_SECRET); absent, one is made once and kept in the key/value store (lib/accounts/signin.ts). */
  serverSecret?: string
  /** Sends reports and invitations; absent where no mail can be sent (Workers). */
  mailer?: Mailer
  /**
   * Runs the scheduled jobs of this name at `atMs` (an import due again when Google said): the Node
   * scheduler's timer. Absent on Workers, where the job's one-minute cron finds what is due.
   */
  wakeJob?: (job: string, atMs: number) => void
  /** The crawler (lib/crawl); absent where it is turned off: pings answer 503 and nothing is crawled. */
  crawler?: CrawlerConfig
  /** The Chrome UX Report API (lib/integrations/crux.ts); absent without an API key: `crux=1` then says so. */
  crux?: CruxConfig
  /** The backlink data provider (lib/backlinks/provider.ts); absent without BACKLINKS_API_KEY: authority is then not available. */
  backlinkProvider?: BacklinkProvider
  /** Search Console through the site's Google connection (lib/integrations/search-console); absent, nothing is imported from it. */
  searchConsole?: SearchConsoleConnector
  /** The Google connection (lib/integrations/google): GA4 and Search Console; absent without GOOGLE_CLIENT_ID, where the ga4 read says so. */
  google?: GoogleConfig
  /** GA4's Realtime API as the reports read it (lib/integrations/ga4/realtime.ts), set by `withPorts`. */
  ga4Live?: LiveSource
}

/** The services with the ports that lower floors read through, built over the services themselves. */
export function withPorts(services: Services): Services {
  return Object.assign(services, { ga4Live: ga4LiveSource(services) })
}

/**
 * Drops what this process keeps in memory of the key/value store (API keys, sites), so that a
 * change made outside it (the admin CLI, `wrangler dev`) applies at once.
 */
export function forgetKeptRecords(services: Pick<Services, 'repositories' | 'sites'>) {
  services.repositories.keys.forget()
  services.sites.forget()
}
