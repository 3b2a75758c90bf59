/** API keys: random secrets with a recognisable prefix, stored only as their SHA-256. */
import { randomString } from '../core/crypto'

export const KEY_PREFIX = 'wak_'

export type Scope = 'read' | 'write'

/** The member who made a key in the web application (or with a key of theirs). */
export interface KeyMaker {
  memberId: string
  email: string
}

/** What the auth path needs, stored under the key's hash. */
export interface ApiKeyRecord {
  id: string
  orgId: string
  name: string
  prefix: string
  scope: Scope
  /** Set for a site-bound ingest key. */
  siteId: string | null
  createdAt: string
  /**
   * Who made it: removing them revokes it, and a plain member's key sees only its maker's keys.
   * null for a key no member made (the admin CLI, the first start's demo keys); absent on keys
   * made before makers were recorded.
   */
  madeBy?: KeyMaker | null
}

export interface ApiKeyMeta extends ApiKeyRecord {
  hash: string
  revokedAt: string | null
}

/** A new secret (43 random base62 characters, about 256 bits) and the prefix listed in its place. */
export function newKeySecret(): { secret: string; prefix: string } {
  const secret = KEY_PREFIX + randomString(43)
  return { secret, prefix: secret.slice(0, KEY_PREFIX.length + 6) }
}
