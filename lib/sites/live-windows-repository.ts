import type { Redis } from '@upstash/redis'

/** How many uncached public-count windows a site was asked for in a minute (lib/operations/public-live.ts). */
const liveWindowsKey = (siteId: string, minute: number) => `live:${siteId}:${minute}`

export class LiveWindowsRepository {
  constructor(private readonly kv: Redis) {}

  /** Counts one more window asked of the site this minute; the new count. */
  async count(siteId: string, minute: number): Promise<number> {
    const [count] = await this.kv
      .pipeline()
      .incr(liveWindowsKey(siteId, minute))
      .expire(liveWindowsKey(siteId, minute), 120)
      .exec<[number, number]>()
    return count
  }
}
