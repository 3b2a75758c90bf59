/** Randomness, hashing and comparison of secrets, on Node and Workers alike. */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

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

/**
 * Whether two secrets are equal, in a time that depends on their lengths alone, not on where they
 * first differ: a caller who times answers learns nothing of a secret's characters.
 */
export function secretsEqual(given: string, expected: string): boolean {
  let difference = given.length ^ expected.length
  for (let i = 0; i < expected.length; i++) difference |= (given.charCodeAt(i) || 0) ^ expected.charCodeAt(i)
  return difference === 0
}
