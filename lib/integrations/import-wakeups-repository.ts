import type { Redis } from '@upstash/redis'

/** The imports from outside that resume at a time of their own: Google's GA4 Data API and Search Console. */
export type WakingImport = 'ga4' | 'search_console'

/** The job that runs the imports due (lib/integrations/due-imports.ts); a Node home's timer wakes it at the earliest one. */
export const IMPORTS_DUE_JOB = 'imports due'

const dueKey = 'imports:due'

/**
 * How long an import a request started (a bind) works before it hands the rest to the job of due
 * imports: Workers end a request's background work 30 s after its answer.
 */
const REQUEST_IMPORT_MS = 20_000

/** The `shouldStop` of an import a request starts: true once it has worked REQUEST_IMPORT_MS. */
export function handOverLater(): () => boolean {
  const end = Date.now() + REQUEST_IMPORT_MS
  return () => Date.now() > end
}

/**
 * When each site's import is next due (a retry Google asked for, a run just queued or cut short):
 * one hash of `<kind>:<siteId>` to epoch milliseconds, so that finding nothing due is one read.
 * The imports' own records stay the truth: an entry only says when to look.
 */
export class ImportWakeupsRepository {
  constructor(private readonly kv: Redis) {}

  async set(kind: WakingImport, siteId: string, atMs: number) {
    await this.kv.hset(dueKey, { [`${kind}:${siteId}`]: atMs })
  }

  /** Every entry, the earliest first. */
  async list(): Promise<{ kind: WakingImport; siteId: string; atMs: number }[]> {
    const all = (await this.kv.hgetall<Record<string, number | string>>(dueKey)) ?? {}
    return Object.entries(all)
      .map(([field, at]) => {
        const [kind, siteId] = field.split(':') as [WakingImport, string]
        return { kind, siteId, atMs: Number(at) }
      })
      .sort((a, b) => a.atMs - b.atMs)
  }

  /** Removes the entry unless it was moved since it was read at `atMs`. */
  async clear(kind: WakingImport, siteId: string, atMs: number) {
    const field = `${kind}:${siteId}`
    const current = await this.kv.hget<number | string>(dueKey, field)
    if (current !== null && current !== undefined && Number(current) === atMs) await this.kv.hdel(dueKey, field)
  }
}

/**
 * Says when a site's import is next due: recorded for every home (a Workers cron finds it), and on
 * a home with timers (Node) the job that runs it is woken then.
 */
export async function wakeImportAt(
  deps: { repositories: { importWakeups: ImportWakeupsRepository }; wakeJob?: (job: string, atMs: number) => void },
  kind: WakingImport,
  siteId: string,
  atMs: number,
) {
  await deps.repositories.importWakeups.set(kind, siteId, atMs)
  deps.wakeJob?.(IMPORTS_DUE_JOB, atMs)
}
