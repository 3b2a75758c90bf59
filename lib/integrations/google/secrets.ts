/**
 * The server secret's two uses, with WebCrypto (Node and Workers alike): AES-GCM encryption of
 * credentials kept at rest, and HMAC-SHA256 signatures of OAuth states. Each use derives its own
 * key from the secret with HKDF, so one never doubles as the other.
 */

const encoder = new TextEncoder()
const keys = new Map<string, Promise<CryptoKey>>()

function derivedKey(secret: string, purpose: 'encrypt' | 'sign'): Promise<CryptoKey> {
  const id = `${purpose}|${secret}`
  let key = keys.get(id)
  if (!key) {
    key = (async () => {
      const material = await crypto.subtle.importKey('raw', encoder.encode(secret), 'HKDF', false, ['deriveKey'])
      const params = { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: encoder.encode(`google-connection ${purpose}`) }
      return purpose === 'encrypt'
        ? crypto.subtle.deriveKey(params, material, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
        : crypto.subtle.deriveKey(params, material, { name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign', 'verify'])
    })()
    if (keys.size > 16) keys.clear()
    keys.set(id, key)
  }
  return key
}

const toBase64Url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')
export function fromBase64Url(text: string): Uint8Array {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'))
  return Uint8Array.from(binary, (c) => c.charCodeAt(0))
}

/** `v1.<iv>.<ciphertext>`: the text encrypted under the secret, with `context` (the site id) bound in as associated data. */
export async function encryptSecret(secret: string, plaintext: string, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: encoder.encode(context) },
    await derivedKey(secret, 'encrypt'),
    encoder.encode(plaintext),
  )
  return `v1.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(sealed))}`
}

/** The text sealed by encryptSecret, or null when it was sealed under another secret or context, or altered. */
export async function decryptSecret(secret: string, sealed: string, context: string): Promise<string | null> {
  const [version, iv, data] = sealed.split('.')
  if (version !== 'v1' || !iv || !data) return null
  try {
    const opened = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: fromBase64Url(iv) as BufferSource, additionalData: encoder.encode(context) },
      await derivedKey(secret, 'encrypt'),
      fromBase64Url(data) as BufferSource,
    )
    return new TextDecoder().decode(opened)
  } catch {
    return null
  }
}

/** `<payload>.<signature>`, the payload as base64url JSON. */
export async function signPayload(secret: string, payload: object): Promise<string> {
  const body = toBase64Url(encoder.encode(JSON.stringify(payload)))
  const signature = await crypto.subtle.sign('HMAC', await derivedKey(secret, 'sign'), encoder.encode(body))
  return `${body}.${toBase64Url(new Uint8Array(signature))}`
}

/** The payload of a signed text, or null when the signature does not hold. */
export async function verifyPayload<T>(secret: string, signed: string): Promise<T | null> {
  const [body, signature] = signed.split('.')
  if (!body || !signature || signed.split('.').length !== 2) return null
  try {
    const ok = await crypto.subtle.verify(
      'HMAC',
      await derivedKey(secret, 'sign'),
      fromBase64Url(signature) as BufferSource,
      encoder.encode(body),
    )
    return ok ? (JSON.parse(new TextDecoder().decode(fromBase64Url(body))) as T) : null
  } catch {
    return null
  }
}
