import type { Site } from '../sites/sites'
import type { Geo } from './geo'
import type { Hit } from './hit'
import type { HitEnrichment } from './rows'

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
   */
  plausible?: { hashRouting: boolean }
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
