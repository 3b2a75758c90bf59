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
  session: (id: string) => `session:${id}`,
  /** The ids of one address's sessions (some may have expired since). */
  ofEmail: (email: string) => `sessions-of:${email}`,
  /** The server secret made on a first start without SERVER_SECRET. */
  serverSecret: 'server-secret',
}

/** Sign-in links, browser sessions and the generated server secret. */
export class SessionsRepository {
  constructor(private readonly kv: Redis) {}

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
