import type { Redis } from '@upstash/redis'
import { asRecord, asString } from '../storage/kv/records'

/** A pending sign-in link, stored under the SHA-256 of its token until used or expired. */
export interface SignInLinkRecord {
  email: string
  createdAt: string
}

/** A browser session of the web application. */
export interface SessionRecord {
  id: string
  email: string
  createdAt: string
  expiresAt: string
  userAgent: string
}

const sessionsKey = {
  link: (tokenHash: string) => `signin-link:${tokenHash}`,
  /** The address's one e-mailed link not used yet: `{token hash}:{made at, epoch ms}`. */
  heldLink: (email: string) => `signin-held:${email}`,
  session: (id: string) => `session:${id}`,
  /** The ids of one address's sessions (some may have expired since). */
  ofEmail: (email: string) => `sessions-of:${email}`,
  /** The server secret made on a first start without SERVER_SECRET. */
  serverSecret: 'server-secret',
}

/**
 * Holds the address for a new link unless it holds one made less than the link's lifetime ago.
 * The age is read from the value against the caller's clock, the one the link's own expiry is
 * checked against; the key's TTL only clears it away.
 */
const HOLD = `local held = redis.call('GET', KEYS[1])
if held then
  local at = tonumber(string.match(held, ':(%d+)$'))
  if at and tonumber(ARGV[2]) - at < tonumber(ARGV[3]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1`

/** Lets the address go if it is still held for that link (and not for a newer one). */
const RELEASE = `local held = redis.call('GET', KEYS[1])
if held and string.sub(held, 1, string.len(ARGV[1]) + 1) == ARGV[1] .. ':' then return redis.call('DEL', KEYS[1]) end
return 0`

/** Sign-in links, browser sessions and the generated server secret. */
export class SessionsRepository {
  private holdScript?: ReturnType<Redis['createScript']>
  private releaseScript?: ReturnType<Redis['createScript']>

  constructor(private readonly kv: Redis) {}

  /**
   * Holds `email` for the link of `tokenHash`, made at `now`: false when the address already holds
   * a link made less than `ttlMs` before, so that at most one e-mailed link per address is unused.
   */
  async holdLink(email: string, tokenHash: string, now: Date, ttlMs: number): Promise<boolean> {
    this.holdScript ??= this.kv.createScript(HOLD)
    const held = await this.holdScript.exec(
      [sessionsKey.heldLink(email)],
      [`${tokenHash}:${now.getTime()}`, String(now.getTime()), String(ttlMs)],
    )
    return Number(held) === 1
  }

  /** Ends the hold of `email` if it is the link of `tokenHash`'s (used, or never sent). */
  async releaseLink(email: string, tokenHash: string) {
    this.releaseScript ??= this.kv.createScript(RELEASE)
    await this.releaseScript.exec([sessionsKey.heldLink(email)], [tokenHash])
  }

  async saveLink(tokenHash: string, link: SignInLinkRecord, ttlSeconds: number) {
    await this.kv.set(sessionsKey.link(tokenHash), JSON.stringify(link), { ex: ttlSeconds })
  }

  async peekLink(tokenHash: string) {
    return asRecord<SignInLinkRecord>(await this.kv.get(sessionsKey.link(tokenHash)))
  }

  /** Reads and deletes the link in one transaction: of two concurrent uses, one gets it. */
  async takeLink(tokenHash: string) {
    const [value, deleted] = await this.kv
      .multi()
      .get(sessionsKey.link(tokenHash))
      .del(sessionsKey.link(tokenHash))
      .exec<[unknown, number]>()
    return deleted === 1 ? asRecord<SignInLinkRecord>(value) : null
  }

  async saveSession(session: SessionRecord, ttlSeconds: number) {
    await this.kv
      .multi()
      .set(sessionsKey.session(session.id), JSON.stringify(session), { ex: ttlSeconds })
      .sadd(sessionsKey.ofEmail(session.email), session.id)
      .exec()
  }

  async session(id: string) {
    return asRecord<SessionRecord>(await this.kv.get(sessionsKey.session(id)))
  }

  /** The address's live sessions; ids of expired ones are forgotten on the way. */
  async sessionsOf(email: string): Promise<SessionRecord[]> {
    const ids = await this.kv.smembers(sessionsKey.ofEmail(email))
    if (!ids.length) return []
    const records = await this.kv.mget<unknown[]>(...ids.map(sessionsKey.session))
    const gone = ids.filter((_, i) => !asRecord(records[i]))
    if (gone.length) await this.kv.srem(sessionsKey.ofEmail(email), ...gone)
    return records.map((r) => asRecord<SessionRecord>(r)).filter((r): r is SessionRecord => r !== null)
  }

  async deleteSession(session: Pick<SessionRecord, 'id' | 'email'>) {
    await this.kv.multi().del(sessionsKey.session(session.id)).srem(sessionsKey.ofEmail(session.email), session.id).exec()
  }

  /** The stored server secret, or `candidate` stored as it when there is none yet (the first start). */
  async serverSecret(candidate: string): Promise<string> {
    await this.kv.set(sessionsKey.serverSecret, candidate, { nx: true })
    const stored = asString(await this.kv.get(sessionsKey.serverSecret))
    if (!stored) throw new Error('the server secret could not be kept in the key/value store')
    return stored
  }
}
