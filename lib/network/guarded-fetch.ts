import ipaddr from 'ipaddr.js'

/**
 * The one guarded outbound fetch: http(s) only, no private, loopback or
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
  /**
   * Fetches one hop connecting only to `addresses`, the ones just checked, so that DNS cannot
   * answer differently between the check and the connection (Node: an undici dispatcher whose
   * lookup returns them). Without it the runtime's fetch resolves again (Workers, which never
   * reach private addresses).
   */
  pinnedFetch?: (url: URL, addresses: string[], init: RequestInit) => Promise<Response>
  fetchImpl?: typeof fetch
}

/**
 * Only globally routable unicast addresses are public. ipaddr.js knows the special ranges
 * (private, loopback, link-local, unique-local, CGNAT, multicast, reserved, ...) and reads an
 * IPv4-mapped IPv6 address in every spelling as the IPv4 address it carries; the ranges that
 * embed an IPv4 address in another way (IPv4-compatible ::/96, NAT64, 6to4, Teredo) are refused
 * as well, and so is every other form that is not global unicast (documentation, discard,
 * site-local, ORCHID, segment routing).
 */
export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '')
  if (!ipaddr.isValid(ip)) return true
  // ::/96, the deprecated IPv4-compatible range, in any spelling: ipaddr.js calls ::7f00:1 unicast
  // although it is ::127.0.0.1, and reads ::8.8.8.8 as the mapped ::ffff:8.8.8.8; some stacks
  // still route these to the IPv4 address they carry
  if (/^(::|(0{1,4}:){6})(\d{1,3}\.){3}\d{1,3}$/.test(ip)) return true
  const compatible =
    ipaddr.IPv6.isValid(ip) &&
    ipaddr.IPv6.parse(ip)
      .parts.slice(0, 6)
      .every((part) => part === 0)
  if (compatible) return true
  return ipaddr.process(ip).range() !== 'unicast'
}

const isIpLiteral = (host: string) => ipaddr.isValid(host.replace(/^\[|\]$/g, ''))

/** The address rules of the guard, shared by the fetch and by checks of a URL saved for later (a webhook). */
export type OutboundRules = Pick<OutboundOptions, 'allowPrivate' | 'resolve'>

/**
 * The addresses the URL's host stands for, every one of them checked; none when the runtime
 * resolves. Throws an OutboundError for a target the guard refuses.
 */
export async function checkOutboundUrl(url: URL, { allowPrivate = false, resolve }: OutboundRules = {}): Promise<string[]> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundError(`only http and https URLs are fetched, not ${url.protocol}`)
  const host = url.hostname
  const addresses = isIpLiteral(host) ? [host.replace(/^\[|\]$/g, '')] : resolve ? await resolve(host) : []
  if (allowPrivate) return addresses
  if (host === 'localhost' || host.endsWith('.localhost') || addresses.some(isPrivateAddress)) {
    throw new OutboundError(`${host} is a private, loopback or link-local address`)
  }
  return addresses
}

/** The guarded fetch, carrying its own address check so a URL can be held to it before it is stored. */
export type GuardedFetch = typeof fetch & { check(url: URL): Promise<string[]> }

/** The check of the guard `fetcher` is, or the strict default rules for any other fetch. */
export const outboundCheckOf = (fetcher: typeof fetch): GuardedFetch['check'] =>
  (fetcher as Partial<GuardedFetch>).check ?? ((url) => checkOutboundUrl(url))

export function guardedFetch(options: OutboundOptions = {}): GuardedFetch {
  const { timeoutMs = 10_000, maxBytes = 5 * 1024 * 1024, maxRedirects = 5, pinnedFetch } = options
  const fetchImpl = options.fetchImpl ?? fetch
  const check = (url: URL) => checkOutboundUrl(url, options)

  async function fetchHop(url: URL, addresses: string[], init: RequestInit) {
    if (pinnedFetch && addresses.length) return pinnedFetch(url, addresses, init)
    return fetchImpl(url, init)
  }

  const guarded = async (input: RequestInfo | URL, init?: RequestInit) => {
    let url = new URL(input instanceof Request ? input.url : String(input))
    // the guard's timeout always holds; a caller's own signal (a shorter timeout) may end it sooner
    const signal = init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs)
    for (let hop = 0; ; hop++) {
      const addresses = await check(url)
      const response = await fetchHop(url, addresses, { ...init, redirect: 'manual', signal })
      const location = response.headers.get('location')
      // redirect: 'manual' hands the redirect to the caller, who fetches the next hop through the guard again
      if (response.status >= 300 && response.status < 400 && location && init?.redirect !== 'manual') {
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
      const answer = new Response(response.status === 204 || response.status === 304 ? null : body, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      })
      // as the runtime's fetch does: the URL the answer came from, after the redirects followed
      Object.defineProperty(answer, 'url', { value: url.href })
      return answer
    }
  }
  return Object.assign(guarded as typeof fetch, { check })
}
