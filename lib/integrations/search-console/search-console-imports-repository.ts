import type { Redis } from '@upstash/redis'
import { asRecord } from '../../storage/kv/records'

/** Where a site's Search Console import stands: what is left, the page under way, and when to ask Google again. */
export interface SearchConsoleImportState {
  siteUrl: string
  state: 'queued' | 'running' | 'waiting' | 'done' | 'failed'
  /** Days still to import (YYYY-MM-DD), in the order they are taken: the newest first. */
  days: string[]
  /** The day being imported: its part, the next row to ask for, and the version its rows are written with. */
  current: { day: string; part: 'rows' | 'totals'; startRow: number; version: number } | null
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
  constructor(private readonly kv: Redis) {}

  async get(siteId: string): Promise<SearchConsoleImportState | null> {
    return asRecord<SearchConsoleImportState>(await this.kv.get(importKey(siteId)))
  }

  async save(siteId: string, state: SearchConsoleImportState) {
    await this.kv.set(importKey(siteId), JSON.stringify(state))
  }

  async delete(siteId: string) {
    await this.kv.del(importKey(siteId), leaseKey(siteId))
  }

  /** Takes (or renews, with the same holder) the site's import lease; false while another holds it. */
  async lease(siteId: string, holder: string, seconds: number): Promise<boolean> {
    if ((await this.kv.set(leaseKey(siteId), holder, { nx: true, ex: seconds })) === 'OK') return true
    if ((await this.kv.get<string>(leaseKey(siteId))) !== holder) return false
    await this.kv.set(leaseKey(siteId), holder, { ex: seconds })
    return true
  }

  async release(siteId: string, holder: string) {
    if ((await this.kv.get<string>(leaseKey(siteId))) === holder) await this.kv.del(leaseKey(siteId))
  }
}
