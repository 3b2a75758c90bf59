import type { Redis } from '@upstash/redis'
import { Lease } from '../storage/kv/lease'

/**
 * The crawl queue and each site's crawl bookkeeping, in the key/value store so that they survive a
 * restart and are shared by every instance. Plain strings and hashes only, which every store here
 * speaks (Upstash, Redis, the embedded one).
 */
const crawlKey = {
  /** siteId -> epoch ms at which the site's next crawl run is due. */
  due: 'crawl:due',
  /** path -> epoch ms of the ping: pages to fetch at the site's next run, whatever their schedule. */
  pings: (siteId: string) => `crawl:pings:${siteId}`,
  /** Held by the instance crawling the site, so two never crawl one site at once. */
  lease: (siteId: string) => `crawl:lease:${siteId}`,
  /** Pages fetched for the site on a UTC day. */
  budget: (siteId: string, day: string) => `crawl:budget:${siteId}:${day}`,
  /** What the last run found out of site-wide state: robots.txt's hash, the sitemap's paths' hash. */
  site: (siteId: string) => `crawl:site:${siteId}`,
}

export interface SiteCrawlMemory {
  robotsHash: string | null
  sitemapHash: string | null
  sitemapCount: number
}

export class CrawlQueue {
  private readonly lease: Lease

  constructor(private readonly redis: Redis) {
    this.lease = new Lease(redis)
  }

  /** Makes the site due at `atMs`, or keeps an earlier due time unless `replace`. */
  async schedule(siteId: string, atMs: number, options: { replace?: boolean } = {}) {
    if (!options.replace) {
      const current = await this.redis.hget<number | string>(crawlKey.due, siteId)
      if (current !== null && current !== undefined && Number(current) <= atMs) return
    }
    await this.redis.hset(crawlKey.due, { [siteId]: atMs })
  }

  /** Sites due at `nowMs`, the longest waiting first. */
  async dueSites(nowMs: number): Promise<string[]> {
    const all = (await this.redis.hgetall<Record<string, number | string>>(crawlKey.due)) ?? {}
    return Object.entries(all)
      .map(([id, at]) => [id, Number(at)] as const)
      .filter(([, at]) => at <= nowMs)
      .sort((a, b) => a[1] - b[1])
      .map(([id]) => id)
  }

  async dueAt(siteId: string): Promise<number | null> {
    const at = await this.redis.hget<number | string>(crawlKey.due, siteId)
    return at === null || at === undefined ? null : Number(at)
  }

  async forget(siteId: string) {
    await this.redis.hdel(crawlKey.due, siteId)
    await this.redis.del(crawlKey.pings(siteId), crawlKey.site(siteId), crawlKey.lease(siteId))
  }

  async pingCount(siteId: string): Promise<number> {
    return this.redis.hlen(crawlKey.pings(siteId))
  }

  async addPing(siteId: string, path: string, atMs: number) {
    await this.redis.hset(crawlKey.pings(siteId), { [path]: atMs })
  }

  /** The pings waiting, the oldest first: each path with the epoch ms of its latest ping. */
  async pings(siteId: string): Promise<{ path: string; atMs: number }[]> {
    const all = (await this.redis.hgetall<Record<string, number | string>>(crawlKey.pings(siteId))) ?? {}
    return Object.entries(all)
      .map(([path, at]) => ({ path, atMs: Number(at) }))
      .sort((a, b) => a.atMs - b.atMs)
  }

  /**
   * Drops the pings a run has served, each only if it was not pinged again since the run read it,
   * and answers how many pings remain waiting (a ping again during the run stays for the next one).
   */
  async clearPings(siteId: string, served: { path: string; atMs: number }[]): Promise<number> {
    const pingedAgain = new Map((await this.pings(siteId)).map((p) => [p.path, p.atMs]))
    const gone = served.filter((p) => pingedAgain.get(p.path) === p.atMs).map((p) => p.path)
    if (gone.length) await this.redis.hdel(crawlKey.pings(siteId), ...gone)
    return pingedAgain.size - gone.length
  }

  /** True for the one caller (`holder`) that may crawl the site for the next `seconds`. */
  claim(siteId: string, holder: string, seconds: number): Promise<boolean> {
    return this.lease.take(crawlKey.lease(siteId), holder, seconds)
  }

  async release(siteId: string, holder: string) {
    await this.lease.release(crawlKey.lease(siteId), holder)
  }

  /** Pages already fetched for the site on the UTC day. */
  async budgetUsed(siteId: string, day: string): Promise<number> {
    return Number((await this.redis.get<number | string>(crawlKey.budget(siteId, day))) ?? 0)
  }

  async spendBudget(siteId: string, day: string, pages: number) {
    if (pages <= 0) return
    await this.redis
      .pipeline()
      .incrby(crawlKey.budget(siteId, day), pages)
      .expire(crawlKey.budget(siteId, day), 2 * 86_400)
      .exec()
  }

  async memory(siteId: string): Promise<SiteCrawlMemory | null> {
    const value = await this.redis.get<SiteCrawlMemory>(crawlKey.site(siteId))
    return value && typeof value === 'object' ? value : null
  }

  async remember(siteId: string, memory: SiteCrawlMemory) {
    await this.redis.set(crawlKey.site(siteId), JSON.stringify(memory))
  }
}
