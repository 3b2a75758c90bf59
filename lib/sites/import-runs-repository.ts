import type { Redis } from '@upstash/redis'

/** One run of a data import into a site: what it loaded and the period its rows cover. */
export interface ImportRun {
  id: string
  /** Raw hits (NDJSON), or a Plausible export (lib/plausible/csv-import.ts). */
  kind: 'raw_hits' | 'plausible'
  state: 'completed' | 'failed'
  startedAt: string
  finishedAt: string
  rows: number
  rejected: number
  /** The first and last timestamp of the rows it stored (a Plausible export: its first and last day); null when it stored none. */
  from: string | null
  to: string | null
  error: string | null
  /** SHA-256 of the imported lines (each with its newline), so the same file is not imported twice unasked; absent on older runs. */
  contentHash?: string | null
}

const importsKey = (siteId: string) => `site:${siteId}:imports`

/** The import runs of each site, by id. */
export class ImportRunsRepository {
  constructor(private readonly kv: Redis) {}

  async list(siteId: string): Promise<ImportRun[]> {
    return Object.values((await this.kv.hgetall<Record<string, ImportRun>>(importsKey(siteId))) ?? {})
  }

  async save(siteId: string, run: ImportRun) {
    await this.kv.hset(importsKey(siteId), { [run.id]: JSON.stringify(run) })
  }

  /** Every run of a deleted site. */
  async deleteAll(siteId: string) {
    await this.kv.del(importsKey(siteId))
  }
}
