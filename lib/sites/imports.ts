import type { ImportRunsRepository } from './import-runs-repository'

/** What one import stored for one site so far. */
export interface SiteTally {
  rows: number
  rejected: number
  /** Epoch milliseconds of its first and last stored row. */
  from: number
  to: number
}

export function tally(bySite: Map<string, SiteTally>, siteId: string, at: Date | null) {
  let t = bySite.get(siteId)
  if (!t) bySite.set(siteId, (t = { rows: 0, rejected: 0, from: Infinity, to: -Infinity }))
  if (!at) return void t.rejected++
  t.rows++
  const ms = at.getTime()
  if (ms < t.from) t.from = ms
  if (ms > t.to) t.to = ms
}

/** Records one run per site the import reached, so the site's imports list it. */
export async function recordImportRuns(
  repositories: { importRuns: ImportRunsRepository },
  bySite: Map<string, SiteTally>,
  run: { startedAt: Date; finishedAt: Date; error: string | null; contentHash?: string | null },
) {
  await Promise.all(
    [...bySite].map(([siteId, t]) =>
      repositories.importRuns.save(siteId, {
        id: crypto.randomUUID(),
        kind: 'raw_hits',
        state: run.error ? 'failed' : 'completed',
        startedAt: run.startedAt.toISOString(),
        finishedAt: run.finishedAt.toISOString(),
        rows: t.rows,
        rejected: t.rejected,
        from: t.rows ? new Date(t.from).toISOString() : null,
        to: t.rows ? new Date(t.to).toISOString() : null,
        error: run.error,
        contentHash: run.contentHash ?? null,
      }),
    ),
  )
}
