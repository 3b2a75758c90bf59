/** API keys: random secrets with a recognisable prefix, stored only as their SHA-256. */
export const KEY_PREFIX = 'wak_'
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

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

export function randomString(length: number, alphabet = ALPHABET): string {
  // 62 * 4 = 248 < 256: reject the top bytes so every character is equally likely
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length]
    }
  }
  return out
}

type NodeCrypto = {
  createHash(algorithm: string): { update(text: string): { digest(encoding: 'hex'): string; digest(): Uint8Array } }
  /** One-shot, cheaper than createHash (Node 20.12+). */
  hash?(algorithm: string, data: string, encoding: 'hex'): string
}
/** Node's crypto, when there: its synchronous hash is ~100x cheaper per call than WebCrypto's thread-pool round trip; Workers use WebCrypto. */
export const nodeCrypto = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.(
  'node:crypto',
) as NodeCrypto | undefined

export async function sha256Hex(text: string): Promise<string> {
  if (nodeCrypto) return nodeCrypto.createHash('sha256').update(text).digest('hex')
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
}

/** A new secret (43 random base62 characters, about 256 bits) and the prefix listed in its place. */
export function newKeySecret(): { secret: string; prefix: string } {
  const secret = KEY_PREFIX + randomString(43)
  return { secret, prefix: secret.slice(0, KEY_PREFIX.length + 6) }
}

/**
 * Whether two secrets are equal, in a time that depends on their lengths alone, not on where they
 * first differ: a caller who times answers learns nothing of a secret's characters.
 */
export function secretsEqual(given: string, expected: string): boolean {
  let difference = given.length ^ expected.length
  for (let i = 0; i < expected.length; i++) difference |= (given.charCodeAt(i) || 0) ^ expected.charCodeAt(i)
  return difference === 0
}
