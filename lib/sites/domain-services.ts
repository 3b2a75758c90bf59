import type { Redis } from '@upstash/redis'
import type { KeysRepository } from '../accounts/keys-repository'
import type { OrgsRepository } from '../accounts/orgs-repository'
import type { PlanName } from '../accounts/plans'
import type { RateLimiter } from '../accounts/ratelimit'
import type { SessionsRepository } from '../accounts/sessions-repository'
import type { TeamRepository } from '../accounts/team-repository'
import type { UsageRepository } from '../accounts/usage-repository'
import type { DnsResolver } from '../ingest/bots'
import type { Ingestor } from '../ingest/pipeline'
import type { CollectorHealth } from '../ingest/recover'
import type { SaltsRepository } from '../ingest/salts-repository'
import type { VisitsRepository } from '../ingest/visits-repository'
import type { Mailer } from '../network/mail'
import type { ClickHouse } from '../storage/clickhouse/types'
import type { AnnotationsRepository } from './annotations-repository'
import type { Funnel, Goal, Segment } from './definition-records'
import type { ImportRunsRepository } from './import-runs-repository'
import type { LiveWindowsRepository } from './live-windows-repository'
import type { NamedRecordsRepository } from './named-records-repository'
import type { SiteChecksRepository } from './site-checks-repository'
import type { SiteDirectory } from './site-directory'
import type { SitesRepository } from './sites-repository'

/**
 * What the verbs of the domains (accounts, sites, ingest) and the reports may use: the first floor
 * of the app's services. Each floor above adds what its own folders bring (SourceServices in
 * lib/integrations/source-services.ts, OperationServices, JobServices), and the homes build the
 * whole (Services, lib/runtime/services.ts). A verb takes the floor it sits on, or a Pick of it.
 */

/** The key/value store's repositories of the domains: one per aggregate, over one client. */
export interface DomainRepositories {
  orgs: OrgsRepository
  keys: KeysRepository
  team: TeamRepository
  usage: UsageRepository
  sessions: SessionsRepository
  sites: SitesRepository
  goals: NamedRecordsRepository<Goal>
  funnels: NamedRecordsRepository<Funnel>
  segments: NamedRecordsRepository<Segment>
  annotations: AnnotationsRepository
  siteChecks: SiteChecksRepository
  importRuns: ImportRunsRepository
  liveWindows: LiveWindowsRepository
  salts: SaltsRepository
  visits: VisitsRepository
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

export interface DomainServices {
  clickhouse: ClickHouse
  /** The key/value client the repositories share; verbs go through the repositories. */
  kv: Redis
  /** The key/value store's repositories, built once over `kv` (lib/runtime/repositories.ts); for verbs in lib/, never for handlers. */
  repositories: DomainRepositories
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
  /** Reverse and forward DNS, to verify crawlers. */
  dns?: DnsResolver
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
}
