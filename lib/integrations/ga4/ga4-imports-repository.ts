import type { Redis } from '@upstash/redis'
import { Lease } from '../../storage/kv/lease'

/** Why a run was started: the history on bind, or the job's hourly and daily re-imports. */
export type Ga4ImportTrigger = 'bind' | 'hourly' | 'daily'
export type Ga4ImportState = 'queued' | 'running' | 'done' | 'failed'

/**
 * One GA4 import of a site: a range of property days, fetched dataset by dataset in chunks of
 * days, page by page. `cursor` is the next page to fetch; a restart continues there.
 */
export interface Ga4ImportRun {
  id: string
  siteId: string
  propertyId: string
  trigger: Ga4ImportTrigger
  state: Ga4ImportState
  /** Why it failed, or what it waits for (a quota, Google's failure) while it is still queued or running. */
  reason: string | null
  /** The first day (YYYY-MM-DD); null until a history import has asked the property for its first day with data. */
  from: string | null
  to: string
  /** The version its rows are written with: newer than every earlier run's. */
  version: number
  createdAt: string
  startedAt: string | null
  finishedAt: string | null
  /** Not before this instant (a backoff after a 429 or a 5xx, or a quota used up). */
  retryAt: string | null
  attempts: number
  rows: number
  cursor: { task: number; offset: number }
  /** How many dataset-and-days tasks the run has; null until its days are known. */
  tasks: number | null
}

const runsKey = (siteId: string) => `ga4:site:${siteId}:runs`
const leaseKey = (siteId: string) => `ga4:site:${siteId}:lease`

/** The GA4 import runs of each site, and the lease one worker holds while it imports a site. */
export class Ga4ImportsRepository {
  private readonly siteLease: Lease

  constructor(private readonly kv: Redis) {
    this.siteLease = new Lease(kv)
  }

  async list(siteId: string): Promise<Ga4ImportRun[]> {
    const runs = Object.values((await this.kv.hgetall<Record<string, Ga4ImportRun>>(runsKey(siteId))) ?? {})
    return runs.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.version - b.version)
  }

  async save(run: Ga4ImportRun) {
    await this.kv.hset(runsKey(run.siteId), { [run.id]: JSON.stringify(run) })
  }

  async remove(siteId: string, ids: string[]) {
    if (ids.length) await this.kv.hdel(runsKey(siteId), ...ids)
  }

  async deleteAll(siteId: string) {
    await this.kv.del(runsKey(siteId), leaseKey(siteId))
  }

  /** Takes (or renews, with the same holder) the site's import lease; false while another holds it. */
  lease(siteId: string, holder: string, seconds: number): Promise<boolean> {
    return this.siteLease.take(leaseKey(siteId), holder, seconds)
  }

  async release(siteId: string, holder: string) {
    await this.siteLease.release(leaseKey(siteId), holder)
  }
}
