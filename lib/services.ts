import type { Olap } from './olap/types'
import type { RateLimiter } from './ratelimit'
import type { Store } from './store'

/** What the app is built from. Each home (Node, Worker, tests) builds its own set. */
export interface Services {
  olap: Olap
  store: Store
  limiter: RateLimiter
  now: () => Date
  /** The one guarded outbound fetch (DESIGN.md section 10). */
  fetch: typeof fetch
  /** Public origin used in snippets; defaults to the request's origin. */
  publicUrl?: string
}
