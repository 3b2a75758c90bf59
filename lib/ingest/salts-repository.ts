import type { Redis } from '@upstash/redis'

const saltKey = (siteId: string, day: string) => `salt:${siteId}:${day}`

/** The daily salts of visitor ids, shared by every instance. */
export class SaltsRepository {
  constructor(private readonly kv: Redis) {}

  /** The site's salt for a site-local day: `candidate` unless one exists, shared by every instance, gone after 48 hours. */
  async daily(siteId: string, day: string, candidate: string): Promise<string> {
    const [, salt] = await this.kv
      .pipeline()
      .set(saltKey(siteId, day), candidate, { nx: true, ex: 48 * 3600 })
      .get<string>(saltKey(siteId, day))
      .exec<[unknown, string]>()
    return String(salt)
  }
}
