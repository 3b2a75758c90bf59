import type { SourceRepositories } from '../integrations/source-services'
import type { Ga4ImportRun } from '../integrations/ga4/ga4-imports-repository'
import { runProgress } from '../integrations/ga4/import'
import type { SearchConsoleImportState } from '../integrations/search-console/search-console-imports-repository'
import type { ImportRun } from '../sites/import-runs-repository'
import type { Site } from '../sites/sites'

/** Every import of a site, newest first: raw-hit runs, the GA4 import runs and the Search Console import, with their state and progress. */
export async function siteImports(
  repositories: Pick<SourceRepositories, 'importRuns' | 'ga4Imports' | 'searchConsoleImports'>,
  site: Site,
) {
  // the content hash is bookkeeping of the import command, not part of the answer
  const runs = (await repositories.importRuns.list(site.id)).map(({ contentHash: _, ...r }) => ({
    ...r,
    state: r.state as ImportRun['state'] | Ga4ImportRun['state'] | SearchConsoleImportState['state'],
    finishedAt: r.finishedAt as string | null,
    trigger: null as Ga4ImportRun['trigger'] | null,
    progress: null as ReturnType<typeof runProgress> | null,
    retryAt: null as string | null,
  }))
  const ga4 = (await repositories.ga4Imports.list(site.id)).map((r) => ({
    id: r.id,
    kind: 'ga4' as const,
    state: r.state,
    trigger: r.trigger,
    // a queued run has not started: it is listed at the time it was queued
    startedAt: r.startedAt ?? r.createdAt,
    finishedAt: r.finishedAt,
    rows: r.rows,
    rejected: 0,
    from: r.from,
    to: r.to,
    error: r.reason,
    progress: runProgress(r),
    retryAt: r.retryAt,
  }))
  const searchConsole = await repositories.searchConsoleImports.get(site.id)
  const searchConsoleRun = searchConsole
    ? [
        {
          id: null,
          kind: 'search_console' as const,
          state: searchConsole.state,
          trigger: null,
          startedAt: searchConsole.startedAt,
          finishedAt: searchConsole.state === 'done' || searchConsole.state === 'failed' ? searchConsole.updatedAt : null,
          rows: searchConsole.rows,
          rejected: 0,
          from: searchConsole.from,
          to: searchConsole.to,
          error: searchConsole.error,
          progress: {
            tasksDone: searchConsole.daysDone,
            tasksTotal: searchConsole.daysTotal,
            fraction: searchConsole.daysTotal ? Math.min(1, searchConsole.daysDone / searchConsole.daysTotal) : 1,
          },
          retryAt: searchConsole.retryAt,
        },
      ]
    : []
  return [...runs, ...ga4, ...searchConsoleRun].sort((a, b) => b.startedAt.localeCompare(a.startedAt))
}

/** The completed import of one of these sites (by snippet id) that loaded the same content, if there is one. */
export async function previousImport(
  repositories: Pick<SourceRepositories, 'importRuns' | 'sites'>,
  snippetIds: Iterable<string>,
  contentHash: string,
): Promise<{ domain: string; run: ImportRun } | null> {
  for (const snippetId of new Set(snippetIds)) {
    const siteId = await repositories.sites.idBySnippet(snippetId)
    const site = siteId ? await repositories.sites.get(siteId) : null
    if (!site) continue
    const run = (await repositories.importRuns.list(site.id)).find((r) => r.contentHash === contentHash && r.state === 'completed')
    if (run) return { domain: site.domain, run }
  }
  return null
}
