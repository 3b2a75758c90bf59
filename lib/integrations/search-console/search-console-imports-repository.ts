import type { Redis } from '@upstash/redis'
import { Lease } from '../../storage/kv/lease'
import { asRecord } from '../../storage/kv/records'

/** Where the import of one day stands: the part asked (its rows, then its totals), the next row, and the version its rows are written with. */
export interface DayCursor {
  day: string
  part: 'rows' | 'totals'
  startRow: number
  version: number
}

/** Where a site's Search Console import stands: what is left, the page under way, and when to ask Google again. */
export interface SearchConsoleImportState {
  siteUrl: string
  state: 'queued' | 'running' | 'waiting' | 'done' | 'failed'
  /** Days still to import (YYYY-MM-DD), those under way included, in the order they are taken: the newest first. */
  days: string[]
  /** The days being imported (several at once): each one's part, the next row to ask for, and the version its rows are written with. */
  underway: DayCursor[]
  /** Days stored whole, with their version, whose earlier imports' rows are still to be deleted. */
  unreplaced: { day: string; version: number }[]
  /** The first and last day the import covers. */
  from: string
  to: string
  daysTotal: number
  daysDone: number
  rows: number
  /** Quota or server failures in a row; the wait before the next try grows with them. */
  failures: number
  retryAt: string | null
  error: string | null
  /** The UTC day the last three days were last queued again. */
  recentQueuedOn: string | null
  startedAt: string
  updatedAt: string
}

const importKey = (siteId: string) => `site:${siteId}:search-console-import`
const leaseKey = (siteId: string) => `site:${siteId}:search-console-import-lease`

/** Each site's Search Console import cursor: a restart continues from the last stored page. */
export class SearchConsoleImportsRepository {
  private readonly siteLease: Lease

  constructor(private readonly kv: Redis) {
    this.siteLease = new Lease(kv)
  }

  async get(siteId: string): Promise<SearchConsoleImportState | null> {
    const stored = asRecord<SearchConsoleImportState & { current?: DayCursor | null }>(await this.kv.get(importKey(siteId)))
    if (!stored) return null
    // a cursor saved before days were imported several at once had one day under way, as `current`
    const { current, ...state } = stored
    return { ...state, underway: state.underway ?? (current ? [current] : []), unreplaced: state.unreplaced ?? [] }
  }

  async save(siteId: string, state: SearchConsoleImportState) {
    await this.kv.set(importKey(siteId), JSON.stringify(state))
  }

  async delete(siteId: string) {
    await this.kv.del(importKey(siteId), leaseKey(siteId))
  }

  /** Takes (or renews, with the same holder) the site's import lease; false while another holds it. */
  lease(siteId: string, holder: string, seconds: number): Promise<boolean> {
    return this.siteLease.take(leaseKey(siteId), holder, seconds)
  }

  async release(siteId: string, holder: string) {
    await this.siteLease.release(leaseKey(siteId), holder)
  }
}
