import { readFile, stat } from 'node:fs/promises'
import { UserError } from '../runtime/env'
import type { Repositories } from '../repositories'
import { SiteDirectory } from '../sites/site-directory'
import type { ClickHouse } from '../storage/clickhouse/types'
import { MAX_ZIP_BYTES, importPlausibleExport } from './csv-import'

/** `npm run import -- --plausible export.zip --site <id>`: the zip file read, into the site named by its id or snippet id. */
export async function importPlausibleFile(
  stores: { clickhouse: ClickHouse; repositories: Repositories; now?: () => Date },
  file: string,
  siteRef: string,
) {
  if ((await stat(file)).size > MAX_ZIP_BYTES)
    throw new UserError(`${file} is larger than ${MAX_ZIP_BYTES / 2 ** 20} MB, more than an import takes`)
  const sites = new SiteDirectory(stores.repositories.sites, { cacheMs: 0 })
  const site = await sites.findFresh(siteRef)
  if (!site) throw new UserError(`there is no site ${siteRef}: name it by its id or snippet id (GET /api/v1/sites lists them)`)
  const now = stores.now ?? (() => new Date())
  return importPlausibleExport({ ...stores, sites, now }, site, new Uint8Array(await readFile(file)))
}
