/**
 * The one guarded outbound fetch (DESIGN.md section 10): http(s) only, no private, loopback or
 * link-local targets unless allowed, a timeout, a size cap, and every redirect re-checked.
 */
export class OutboundError extends Error {}

export interface OutboundOptions {
  allowPrivate?: boolean
  timeoutMs?: number
  maxBytes?: number
  maxRedirects?: number
  /** Resolves a hostname to addresses (Node: dns.lookup). Without it only literal addresses are checked. */
  resolve?: (hostname: string) => Promise<string[]>
  fetchImpl?: typeof fetch
}

function ipv4Private(ip: string): boolean {
  const [a, b] = ip.split('.').map(Number)
  return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 198 && (b === 18 || b === 19)) || a >= 224
}

export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '').toLowerCase()
  if (/^\d+\.\d+\.\d+\.\d+$/.test(ip)) return ipv4Private(ip)
  if (!ip.includes(':')) return false
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(ip)
  if (mapped) return ipv4Private(mapped[1])
  return ip === '::' || ip === '::1' || /^f[cd]/.test(ip) || /^fe[89ab]/.test(ip) || ip.startsWith('ff')
}

export function guardedFetch(options: OutboundOptions = {}): typeof fetch {
  const { allowPrivate = false, timeoutMs = 10_000, maxBytes = 5 * 1024 * 1024, maxRedirects = 5, resolve } = options
  const fetchImpl = options.fetchImpl ?? fetch

  async function check(url: URL) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundError(`only http and https URLs are fetched, not ${url.protocol}`)
    if (allowPrivate) return
    const host = url.hostname
    const addresses = /^[\d.]+$|:/.test(host) ? [host] : resolve ? await resolve(host) : []
    if (host === 'localhost' || host.endsWith('.localhost') || addresses.some(isPrivateAddress)) {
      throw new OutboundError(`${host} is a private, loopback or link-local address`)
    }
  }

  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    let url = new URL(input instanceof Request ? input.url : String(input))
    const signal = AbortSignal.timeout(timeoutMs)
    for (let hop = 0; ; hop++) {
      await check(url)
      const response = await fetchImpl(url, { ...init, redirect: 'manual', signal })
      const location = response.headers.get('location')
      if (response.status >= 300 && response.status < 400 && location) {
        if (hop >= maxRedirects) throw new OutboundError(`more than ${maxRedirects} redirects`)
        url = new URL(location, url)
        continue
      }
      const reader = response.body?.getReader()
      const chunks: Uint8Array[] = []
      let size = 0
      while (reader) {
        const { done, value } = await reader.read()
        if (done) break
        size += value.byteLength
        if (size > maxBytes) {
          await reader.cancel()
          throw new OutboundError(`response larger than ${maxBytes} bytes`)
        }
        chunks.push(value)
      }
      const body = new Uint8Array(size)
      let offset = 0
      for (const chunk of chunks) {
        body.set(chunk, offset)
        offset += chunk.byteLength
      }
      return new Response(response.status === 204 || response.status === 304 ? null : body, { status: response.status, statusText: response.statusText, headers: response.headers })
    }
  }) as typeof fetch
}
