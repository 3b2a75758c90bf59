import type { Redis } from '@upstash/redis'

/**
 * A site's named records of one kind (goals, funnels, segments): one hash per site, by id,
 * listed oldest first. `kind` names the hash: `site:<siteId>:<kind>`.
 */
export class NamedRecordsRepository<T extends { id: string; createdAt: string; name: string }> {
  constructor(
    private readonly kv: Redis,
    private readonly kind: 'goals' | 'funnels' | 'segments',
  ) {}

  private key(siteId: string) {
    return `site:${siteId}:${this.kind}`
  }

  async list(siteId: string): Promise<T[]> {
    const all = await this.kv.hgetall<Record<string, T>>(this.key(siteId))
    return Object.values(all ?? {}).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name))
  }

  async save(siteId: string, record: T) {
    await this.kv.hset(this.key(siteId), { [record.id]: JSON.stringify(record) })
  }

  /** False when the site has no record of that id. */
  async delete(siteId: string, id: string): Promise<boolean> {
    return (await this.kv.hdel(this.key(siteId), id)) === 1
  }

  /** Every record of a deleted site. */
  async deleteAll(siteId: string) {
    await this.kv.del(this.key(siteId))
  }
}
