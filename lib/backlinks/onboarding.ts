import type { SourceServices } from '../integrations/source-services'
import type { Site } from '../sites/sites'

/** Queues a new site's first backlink discovery, due at once (its imported referrers, the provider), as its first crawl is. */
export async function queueFirstBacklinks(services: SourceServices, site: Site) {
  await services.repositories.backlinks.schedule(site.id, services.now().getTime())
}
