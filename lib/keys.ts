/** API keys: random secrets with a recognisable prefix, stored only as their SHA-256. */
export const KEY_PREFIX = 'wak_'
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

export type Scope = 'read' | 'write'

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
// Node's synchronous hash is ~100x cheaper per call than WebCrypto's thread-pool round trip; Workers use WebCrypto.
const nodeCrypto = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined

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

const first8 = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0).toString()
const nodeHash64 = nodeCrypto?.hash
  ? (text: string) => BigInt(`0x${nodeCrypto.hash!('sha256', text, 'hex').slice(0, 16)}`).toString()
  : nodeCrypto && ((text: string) => first8(nodeCrypto.createHash('sha256').update(text).digest()))

/** The first 8 bytes of SHA-256, as the decimal string of a ClickHouse UInt64. */
export async function hash64(text: string): Promise<string> {
  if (nodeHash64) return nodeHash64(text)
  return first8(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))))
}

/** hash64 of each text, with one wait for them all (Node hashes synchronously). */
export async function hash64Many(texts: string[]): Promise<string[]> {
  if (nodeHash64) return texts.map(nodeHash64)
  return Promise.all(texts.map(hash64))
}

let pool = new Uint8Array(0)
let poolAt = 0
/** A random non-zero UInt64 as a decimal string, from a pool refilled 8 KiB at a time. */
export function random64(): string {
  if (poolAt + 8 > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(8192))
    poolAt = 0
  }
  const view = new DataView(pool.buffer, poolAt, 8)
  poolAt += 8
  const value = (BigInt(view.getUint32(0)) << 32n) | BigInt(view.getUint32(4))
  return (value || 1n).toString()
}
