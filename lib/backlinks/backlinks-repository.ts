import type { Redis } from '@upstash/redis'
import { Lease } from '../storage/kv/lease'

/**
 * Each site's backlink bookkeeping in the key/value store: when its next discovery run is due,
 * the lease of the instance running it, the referring pages fetched on a UTC day (the plan's
 * budget), and the UTC day the provider was last asked.
 */
const backlinkKey = {
  /** siteId -> epoch ms at which the site's next discovery run is due. */
  due: 'backlinks:due',
  lease: (siteId: string) => `backlinks:lease:${siteId}`,
  budget: (siteId: string, day: string) => `backlinks:budget:${siteId}:${day}`,
  /** siteId -> the UTC day (YYYY-MM-DD) the provider was last asked. */
  provider: 'backlinks:provider',
}

export class BacklinksRepository {
  private readonly lease: Lease

  constructor(private readonly redis: Redis) {
    this.lease = new Lease(redis)
  }

  /** Makes the site due at `atMs` (at once for a new site). */
  async schedule(siteId: string, atMs: number) {
    await this.redis.hset(backlinkKey.due, { [siteId]: atMs })
  }

  /** Epoch ms the site is due at; null when it was never queued. */
  async dueAt(siteId: string): Promise<number | null> {
    const at = await this.redis.hget<number | string>(backlinkKey.due, siteId)
    return at === null || at === undefined ? null : Number(at)
  }

  /** True for the one caller (`holder`) that may discover the site's backlinks for the next `seconds`. */
  claim(siteId: string, holder: string, seconds: number): Promise<boolean> {
    return this.lease.take(backlinkKey.lease(siteId), holder, seconds)
  }

  async release(siteId: string, holder: string) {
    await this.lease.release(backlinkKey.lease(siteId), holder)
  }

  async budgetUsed(siteId: string, day: string): Promise<number> {
    return Number((await this.redis.get<number | string>(backlinkKey.budget(siteId, day))) ?? 0)
  }

  async spendBudget(siteId: string, day: string, pages: number) {
    if (pages <= 0) return
    await this.redis
      .pipeline()
      .incrby(backlinkKey.budget(siteId, day), pages)
      .expire(backlinkKey.budget(siteId, day), 2 * 86_400)
      .exec()
  }

  async providerDay(siteId: string): Promise<string | null> {
    const day = await this.redis.hget<string>(backlinkKey.provider, siteId)
    return day ? String(day) : null
  }

  async setProviderDay(siteId: string, day: string) {
    await this.redis.hset(backlinkKey.provider, { [siteId]: day })
  }

  async forget(siteId: string) {
    await this.redis.hdel(backlinkKey.due, siteId)
    await this.redis.hdel(backlinkKey.provider, siteId)
    await this.redis.del(backlinkKey.lease(siteId))
  }
}
