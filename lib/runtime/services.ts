import { ga4LiveSource } from '../integrations/ga4/realtime'
import type { JobServices } from '../jobs/job-services'

/**
 * Whether this instance takes traffic: not while it applies its migrations, stores the journal an
 * earlier run left, or makes the demo on a first start.
 */
export interface Readiness {
  ready: boolean
  phase: 'migrating' | 'replaying' | 'demo' | 'ready'
}

/** What the app is built from. Each home (Node, Worker, tests) builds its own set. */
export interface Services extends JobServices {
  /** Files of the API reference page by name (Node reads them from swagger-ui-dist); without it, no page. */
  referenceAssets?: (file: string) => Promise<Uint8Array>
  /** Where an instance starts up before it serves (the Node server); absent, it is always ready. */
  readiness?: () => Readiness
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
