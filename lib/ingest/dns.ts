import type { DnsResolver } from './bots'

/**
 * DNS over HTTPS (the JSON API of RFC 8484 resolvers such as cloudflare-dns.com), for homes
 * without a system resolver: Workers. Goes through the guarded outbound fetch.
 */
export function dohResolver(fetcher: typeof fetch, endpoint = 'https://cloudflare-dns.com/dns-query'): DnsResolver {
  const query = async (name: string, type: 'PTR' | 'A' | 'AAAA' | 'CNAME') => {
    const url = new URL(endpoint)
    url.searchParams.set('name', name)
    url.searchParams.set('type', type)
    const response = await fetcher(url, { headers: { accept: 'application/dns-json' } })
    if (!response.ok) throw new Error(`DNS query failed: ${response.status}`)
    const body = (await response.json()) as { Answer?: { type: number; data: string }[] }
    const code = { PTR: 12, A: 1, AAAA: 28, CNAME: 5 }[type]
    return (body.Answer ?? []).filter((a) => a.type === code).map((a) => a.data.replace(/\.$/, ''))
  }
  return {
    reverse: (ip) => query(reverseName(ip), 'PTR'),
    lookup: async (host) => [...(await query(host, 'A')), ...(await query(host, 'AAAA'))],
    cname: (host) => query(host, 'CNAME'),
  }
}

/** 1.2.3.4 -> 4.3.2.1.in-addr.arpa; IPv6 by nibbles under ip6.arpa. */
export function reverseName(ip: string): string {
  if (!ip.includes(':')) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`
  const [head, tail = ''] = ip.split('::')
  const groups = (s: string) => (s ? s.split(':') : [])
  const missing = 8 - groups(head).length - groups(tail).length
  const full = [...groups(head), ...Array(Math.max(0, missing)).fill('0'), ...groups(tail)].map((g) => g.padStart(4, '0')).join('')
  return `${[...full].reverse().join('.')}.ip6.arpa`
}
