import type { BacklinksRepository } from '../backlinks/backlinks-repository'
import type { BacklinkProvider } from '../backlinks/provider'
import type { CrawlerConfig } from '../crawl/config'
import type { CrawlQueue } from '../crawl/crawl-queue-repository'
import type { LiveSource } from '../reports/query/ga4-live'
import type { DomainRepositories, DomainServices } from '../sites/domain-services'
import type { CruxConfig } from './crux'
import type { CruxAnswersRepository } from './crux-answers-repository'
import type { Ga4ImportsRepository } from './ga4/ga4-imports-repository'
import type { GoogleConfig } from './google/config'
import type { GoogleConnectionsRepository } from './google/google-connections-repository'
import type { ImportWakeupsRepository } from './import-wakeups-repository'
import type { SearchConsoleConnector } from './search-console/import'
import type { SearchConsoleImportsRepository } from './search-console/search-console-imports-repository'

/** The repositories of the outside sources (crawl, backlinks, Google, CrUX), beside the domains'. */
export interface SourceRepositories extends DomainRepositories {
  crux: CruxAnswersRepository
  searchConsoleImports: SearchConsoleImportsRepository
  google: GoogleConnectionsRepository
  ga4Imports: Ga4ImportsRepository
  importWakeups: ImportWakeupsRepository
  crawlQueue: CrawlQueue
  backlinks: BacklinksRepository
}

/** What the verbs of the outside sources may use: the domains' services and the sources' own clients. */
export interface SourceServices extends DomainServices {
  repositories: SourceRepositories
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
