import { expect } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { client, getOk, orgWithSites, testServices } from '../helpers'
import { NOW, type RawHit, fixture } from './report-reference'

/**
 * The set-up of the rollup tests: fresh services at the reference clock, an organization with one
 * site in `tz` and a read key, and the reference fixture of `seed` (with `extra` hits) imported
 * into it, every line accepted. `get` reads a path of the site with the key and expects a 200.
 */
export async function referenceSite(org: string, domain: string, tz: string, seed: number, extra: RawHit[] = []) {
  const services = await testServices({ now: () => NOW })
  const call = client(services)
  const {
    key,
    sites: [site],
  } = await orgWithSites(services, org, [{ domain, timezone: tz }], NOW)
  const ref = fixture(site.snippetId, site.domain, tz, seed, extra)
  expect((await importHits(ref.lines, services.ingestor)).rejected).toBe(0)
  const get = (path: string) => getOk(call, `${path}&site_id=${site.id}`, key)
  return { services, call, key, site, ref, get }
}
