import type { LookupAddress, LookupOptions } from 'node:dns'
import { Agent, fetch as undiciFetch } from 'undici'

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * The guarded fetch's connection on Node: one undici agent whose DNS lookup answers only with the
 * addresses the guard checked for that hostname, so a second lookup (DNS rebinding) can never send
 * the connection elsewhere. TLS still verifies the certificate against the hostname.
 */
export function pinnedNodeFetch() {
  const checked = new Map<string, string[]>()
  const agent = new Agent({
    connect: {
      lookup(hostname: string, options: LookupOptions, callback: LookupCallback) {
        const addresses = checked.get(hostname)
        if (!addresses?.length)
          return callback(Object.assign(new Error(`${hostname} was not checked by the guarded fetch`), { code: 'ENOTFOUND' }), '')
        const entries = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
        if (options.all) return callback(null, entries)
        callback(null, entries[0].address, entries[0].family)
      },
    },
  })
  return async (url: URL, addresses: string[], init: RequestInit): Promise<Response> => {
    if (checked.size > 10_000) checked.clear()
    checked.set(url.hostname.replace(/^\[|\]$/g, ''), addresses)
    return (await undiciFetch(url, { ...(init as object), dispatcher: agent })) as unknown as Response
  }
}
