import type { Redis } from '@upstash/redis'
import { KeysRepository } from '../accounts/keys-repository'
import { OrgsRepository } from '../accounts/orgs-repository'
import { SessionsRepository } from '../accounts/sessions-repository'
import { TeamRepository } from '../accounts/team-repository'
import { UsageRepository } from '../accounts/usage-repository'
import { BacklinksRepository } from '../backlinks/backlinks-repository'
import { CrawlQueue } from '../crawl/crawl-queue-repository'
import { SaltsRepository } from '../ingest/salts-repository'
import { VisitsRepository } from '../ingest/visits-repository'
import { CruxAnswersRepository } from '../integrations/crux-answers-repository'
import { SearchConsoleImportsRepository } from '../integrations/search-console/search-console-imports-repository'
import { Ga4ImportsRepository } from '../integrations/ga4/ga4-imports-repository'
import { ImportWakeupsRepository } from '../integrations/import-wakeups-repository'
import { GoogleConnectionsRepository } from '../integrations/google/google-connections-repository'
import { DeliveriesRepository } from '../jobs/deliveries-repository'
import { AnnotationsRepository } from '../sites/annotations-repository'
import type { Funnel, Goal, Segment } from '../sites/definition-records'
import type { JobRepositories } from '../jobs/job-services'
import { ImportRunsRepository } from '../sites/import-runs-repository'
import { LiveWindowsRepository } from '../sites/live-windows-repository'
import { NamedRecordsRepository } from '../sites/named-records-repository'
import { SiteChecksRepository } from '../sites/site-checks-repository'
import { SitesRepository } from '../sites/sites-repository'

/**
 * The key/value store in the domain's terms: one repository per aggregate, each owning its
 * record type, its key names and its verbs, all over one `@upstash/redis` client (Upstash REST
 * on the edge, TCP Redis on Node, or the embedded engine). Only verbs in lib/ use them; each floor
 * declares the ones it may use (DomainRepositories, SourceRepositories, JobRepositories).
 */
export type Repositories = JobRepositories

/** Every repository over one client, built once per home. */
export function openRepositories(kv: Redis): Repositories {
  return {
    orgs: new OrgsRepository(kv),
    keys: new KeysRepository(kv),
    team: new TeamRepository(kv),
    usage: new UsageRepository(kv),
    sessions: new SessionsRepository(kv),
    sites: new SitesRepository(kv),
    goals: new NamedRecordsRepository<Goal>(kv, 'goals'),
    funnels: new NamedRecordsRepository<Funnel>(kv, 'funnels'),
    segments: new NamedRecordsRepository<Segment>(kv, 'segments'),
    annotations: new AnnotationsRepository(kv),
    siteChecks: new SiteChecksRepository(kv),
    importRuns: new ImportRunsRepository(kv),
    liveWindows: new LiveWindowsRepository(kv),
    salts: new SaltsRepository(kv),
    visits: new VisitsRepository(kv),
    deliveries: new DeliveriesRepository(kv),
    crux: new CruxAnswersRepository(kv),
    searchConsoleImports: new SearchConsoleImportsRepository(kv),
    google: new GoogleConnectionsRepository(kv),
    ga4Imports: new Ga4ImportsRepository(kv),
    importWakeups: new ImportWakeupsRepository(kv),
    crawlQueue: new CrawlQueue(kv),
    backlinks: new BacklinksRepository(kv),
  }
}
