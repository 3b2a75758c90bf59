import type { Redis } from '@upstash/redis'

/** Takes the lease when it is free, or renews it for its owner; 1 when held by the caller after. */
const TAKE = `local held = redis.call('GET', KEYS[1])
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
if held == ARGV[1] then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`

/** Frees the lease if the caller owns it; 1 when it did. */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`

/**
 * A lease on one key of the key/value store: one owner at a time holds it, until it expires or its
 * owner releases it. The owner taking it again renews it; no one else can renew or release it.
 * Each step is one script, so it is atomic on Redis, Upstash and the embedded store alike: two
 * workers never both hold a lease, and a worker whose lease expired and passed on never frees
 * its successor's. The one lease of the code (crawls, backlinks, Google imports, deliveries).
 */
export class Lease {
  private takeScript?: ReturnType<Redis['createScript']>
  private releaseScript?: ReturnType<Redis['createScript']>

  constructor(private readonly kv: Redis) {}

  /** Takes or renews the lease on `key` for `owner`, for `seconds`; false while another owner holds it. */
  async take(key: string, owner: string, seconds: number): Promise<boolean> {
    if (!owner) throw new Error('a lease needs an owner')
    this.takeScript ??= this.kv.createScript(TAKE)
    return Number(await this.takeScript.exec([key], [owner, String(Math.max(1, Math.ceil(seconds)))])) === 1
  }

  /** Frees the lease on `key` if `owner` holds it; false when it had expired or passed to another. */
  async release(key: string, owner: string): Promise<boolean> {
    this.releaseScript ??= this.kv.createScript(RELEASE)
    return Number(await this.releaseScript.exec([key], [owner])) === 1
  }
}
