import type { Site } from '../sites/sites'
import type { Geo } from './geo'
import type { EventKind, Hit } from './hit'
import type { BotInfo } from './bots'
import type { ReferrerInfo, parseUserAgent } from './enrich'

/** What a hit's user agent and referrer say, which depends on the hit alone: the bot it is, if any, its browser, and its source. */
export interface HitEnrichment {
  bot: BotInfo | null
  agent: ReturnType<typeof parseUserAgent>
  referrer: ReferrerInfo
}

/** A hit on its way in, with what its receiver knows: the site, the client, the time. */
export interface IngestItem {
  hit: Hit
  /** The site of `hit.site`, looked up by whoever received the hit; null when there is none. */
  site: Site | null
  ip: string
  userAgent: string
  /** When the hit arrived; the import uses the hit's own timestamp instead. */
  receivedAt: Date
  /** Geo known from the edge (request.cf); otherwise looked up from the IP. */
  geo?: Geo | null
  /** What the user agent and referrer say, worked out ahead (the import's worker threads); otherwise worked out here. */
  enriched?: HitEnrichment
  /** Where it came from: the browser tracker, the raw-hit import. */
  source: 'browser' | 'import'
  /**
   * Sent in Plausible's payload: its names other than pageview and engagement are custom events,
   * its engagement time is the time since the tracker's last report, and `h: 1` asks for the hash route.
   * `pageOfListedSite`: its comma list of domains names a site the page is on, so every site the list
   * names keeps it (a rollup site, as in Plausible), whatever its own hostnames.
   */
  plausible?: { hashRouting: boolean; pageOfListedSite?: boolean }
}

/** Why a hit was accepted and not stored: the collector's X-Dropped header. */
export type DropCode =
  | 'not-collecting'
  | 'localhost'
  | 'unknown-hostname'
  | 'excluded-ip'
  | 'excluded-path'
  | 'bot'
  | 'kind-off'
  | 'unknown-domain'

export type IngestOutcome =
  | { status: 'stored' }
  | { status: 'dropped'; code: DropCode; reason: string }
  | { status: 'rejected'; error: string }

/**
 * A human's hit that passed its site's checks, with its visitor and its place: what the journal
 * keeps of it until the batch that stores it makes its row (the visit, the user agent, the
 * referrer). The client's address is not in it: the visitor id and the place are what came of it.
 */
export interface RowHit {
  readonly siteId: string
  /** The site's capturedQueryParams when the hit came */
  readonly capturedQueryParams: string[]
  /** When it happened, epoch milliseconds */
  readonly at: number
  readonly visitorId: string
  readonly kind: EventKind
  /** The path, with the hash route when the site uses hash routing */
  readonly pathname: string
  /** As sent, without an address */
  readonly hit: Hit
  readonly userAgent: string
  readonly source: 'browser' | 'import'
  readonly geo: Geo | null
  /** What its user agent and referrer say, when worked out ahead (the import's worker threads) */
  readonly enriched?: HitEnrichment
}
