import type { Redis } from '@upstash/redis'
import { asRecord } from '../../storage/kv/records'

/** What a site's Google connection is bound to for GA4: the property and the account holding it. */
export interface Ga4Binding {
  propertyId: string
  propertyName: string
  accountId: string
  accountName: string
  boundAt: string
}

/**
 * A site's connection to Google (one per site, shared by GA4 and, next, Search Console). Tokens
 * are kept sealed (lib/integrations/google/secrets.ts, the site id as associated data): the key
 * store never holds one in the clear.
 */
export interface GoogleConnection {
  siteId: string
  orgId: string
  status: 'connected' | 'needs_reconnect'
  /** Why the connection needs connecting again; null while it works. */
  reason: string | null
  refreshToken: string
  accessToken: string | null
  accessTokenExpiresAt: string | null
  scopes: string[]
  connectedAt: string
  ga4: Ga4Binding | null
  /** The Google account's e-mail address, as its ID token named it: whose quotas a call counts against. Absent on older connections. */
  account?: string | null
}

/** What a signed state's nonce stands for until the callback consumes it. */
export interface PendingConnect {
  orgId: string
  siteId: string
  /** The SHA-256 of the secret the starting browser holds in a cookie: the callback takes the state from that browser only. */
  binding: string
  /** The e-mail address of the owner or admin who started it, the only one who may confirm it. */
  by: string
}

/** Google's grant, held between the callback and its confirmation (tokens sealed as in a connection). */
export interface PendingGrant {
  orgId: string
  siteId: string
  by: string
  /** The Google account's e-mail address, as Google's ID token names it; null where it named none. */
  account: string | null
  scopes: string[]
  refreshToken: string
  accessToken: string
  accessTokenExpiresAt: string
}

const connectionKey = (siteId: string) => `google:site:${siteId}`
const stateKey = (nonce: string) => `google:state:${nonce}`
const grantKey = (binding: string) => `google:grant:${binding}`
const BOUND_SITES = 'google:ga4:bound'

export class GoogleConnectionsRepository {
  constructor(private readonly kv: Redis) {}

  async get(siteId: string): Promise<GoogleConnection | null> {
    return asRecord<GoogleConnection>(await this.kv.get(connectionKey(siteId)))
  }

  /** Saves the connection; a site bound to a GA4 property is listed for the import job, any other is not. */
  async save(connection: GoogleConnection) {
    await this.kv.set(connectionKey(connection.siteId), JSON.stringify(connection))
    if (connection.ga4) await this.kv.sadd(BOUND_SITES, connection.siteId)
    else await this.kv.srem(BOUND_SITES, connection.siteId)
  }

  async delete(siteId: string) {
    await this.kv.del(connectionKey(siteId))
    await this.kv.srem(BOUND_SITES, siteId)
  }

  /** The sites bound to a GA4 property, which the import job visits. */
  async boundSites(): Promise<string[]> {
    return (await this.kv.smembers(BOUND_SITES)).map(String)
  }

  /** Remembers a state's nonce for `seconds`. */
  async rememberState(nonce: string, pending: PendingConnect, seconds: number) {
    await this.kv.set(stateKey(nonce), JSON.stringify(pending), { ex: seconds })
  }

  /** What the nonce stood for, once: a second call (or one after it expired) finds nothing. */
  async consumeState(nonce: string): Promise<PendingConnect | null> {
    const key = stateKey(nonce)
    const pending = asRecord<PendingConnect>(await this.kv.get(key))
    // whoever deletes it consumed it: of two concurrent callbacks, one only
    if (!pending || (await this.kv.del(key)) !== 1) return null
    return pending
  }

  /** Holds a grant for `seconds` under the binding of the browser that will confirm it. */
  async holdGrant(binding: string, grant: PendingGrant, seconds: number) {
    await this.kv.set(grantKey(binding), JSON.stringify(grant), { ex: seconds })
  }

  async heldGrant(binding: string): Promise<PendingGrant | null> {
    return asRecord<PendingGrant>(await this.kv.get(grantKey(binding)))
  }

  /** The held grant, once: of two concurrent confirmations, one gets it. */
  async takeGrant(binding: string): Promise<PendingGrant | null> {
    const [value, deleted] = await this.kv.multi().get(grantKey(binding)).del(grantKey(binding)).exec<[unknown, number]>()
    return deleted === 1 ? asRecord<PendingGrant>(value) : null
  }
}
