import type { SourceRepositories } from '../integrations/source-services'
import { readFile, stat } from 'node:fs/promises'
import { UserError } from '../core/errors'
import { SiteDirectory } from '../sites/site-directory'
import type { ClickHouse } from '../storage/clickhouse/types'
import { MAX_ZIP_BYTES, checkPlausibleExport, importPlausibleExport } from './csv-import'

/**
 * `npm run import -- --plausible export.zip --site <id>`, in two steps: the zip file read and
 * checked whole, before the stores are opened (a bad file is refused at once); then imported into
 * the site named by its id or snippet id.
 */
export async function readPlausibleFile(file: string): Promise<Uint8Array> {
  if ((await stat(file)).size > MAX_ZIP_BYTES)
    throw new UserError(`${file} is larger than ${MAX_ZIP_BYTES / 2 ** 20} MB, more than an import takes`)
  const zip = new Uint8Array(await readFile(file))
  await checkPlausibleExport(zip)
  return zip
}

export async function importPlausibleZip(
  stores: { clickhouse: ClickHouse; repositories: SourceRepositories; now?: () => Date },
  zip: Uint8Array,
  siteRef: string,
) {
  const sites = new SiteDirectory(stores.repositories.sites, { cacheMs: 0 })
  const site = await sites.findFresh(siteRef)
  if (!site) throw new UserError(`there is no site ${siteRef}: name it by its id or snippet id (GET /api/v1/sites lists them)`)
  return importPlausibleExport({ ...stores, sites, now: stores.now ?? (() => new Date()) }, site, zip)
}
