import type { SourceServices } from './source-services'
import { importSite } from './ga4/import'
import { IMPORTS_DUE_JOB } from './import-wakeups-repository'
import { importSearchConsole } from './search-console/import'

/**
 * The job of due imports: every import whose time came (a wait Google asked for that is over, a
 * run cut short) goes on now, site by site; one site's failure is logged and never stops the
 * others. With nothing due it is one read of the key/value store. On Node it ends by setting the
 * timer for the next one due; on Workers its one-minute cron finds it.
 */
export async function runDueImports(services: SourceServices, context: { log: (line: string) => void; shouldStop: () => boolean }) {
  const wakeups = services.repositories.importWakeups
  const now = services.now().getTime()
  for (const { kind, siteId, atMs } of await wakeups.list()) {
    if (atMs > now || context.shouldStop()) break
    // cleared before the work: a run that must wait again says when, anew
    await wakeups.clear(kind, siteId, atMs)
    try {
      if (kind === 'ga4') {
        if (services.google) await importSite({ ...services, google: services.google }, siteId, { shouldStop: context.shouldStop })
      } else {
        const site = await services.repositories.sites.get(siteId)
        const connection = site && (await services.searchConsole?.connectionFor(site))
        if (site && connection)
          await importSearchConsole({ ...services, connection }, site, services.now(), { log: context.log, shouldStop: context.shouldStop })
      }
    } catch (err) {
      context.log(`${kind} import of site ${siteId} failed: ${(err as Error).message}`)
    }
  }
  const [next] = await wakeups.list()
  if (next) services.wakeJob?.(IMPORTS_DUE_JOB, next.atMs)
}
