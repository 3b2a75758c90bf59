import type { SourceServices } from '../integrations/source-services'
import type { LiveCache } from './public-live'

/** What the verbs that span domains and sources (site lifecycle, public live count, ...) may use. */
export interface OperationServices extends SourceServices {
  /** Answers of the public live count, kept for their TTL. */
  liveCache: LiveCache
}
