import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { guardedFetch, isPrivateAddress } from '../../lib/network/guarded-fetch'
import { pinnedNodeFetch } from '../../lib/network/guarded-fetch-node'

describe('guarded outbound fetch', () => {
  let base = ''
  const server = createServer((req, res) => {
    if (req.url === '/redirect-private') return res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' }).end()
    if (req.url === '/redirect-loop') return res.writeHead(302, { location: '/redirect-loop' }).end()
    if (req.url === '/redirect-ok') return res.writeHead(301, { location: '/ok' }).end()
    if (req.url === '/big') return res.end('x'.repeat(2048))
    res.end('fine')
  })
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => void server.close())

  it('classifies private, loopback and link-local addresses', () => {
    for (const ip of [
      '10.1.2.3',
      '127.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fd00::1',
      'fe80::1',
      '::ffff:10.0.0.1',
      '[::1]',
    ]) {
      expect(isPrivateAddress(ip), ip).toBe(true)
    }
    // IPv4-mapped IPv6 in every spelling, NAT64 and 6to4 carry an IPv4 address: read as that address, or refused
    for (const ip of [
      '::ffff:127.0.0.1',
      '[::ffff:7f00:1]',
      '0:0:0:0:0:ffff:127.0.0.1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a00:1',
      '2002:7f00:1::1',
      '::',
      'garbage',
      // IPv4-compatible (::/96) in every spelling, and the other forms that are not global unicast
      '::7f00:1',
      '[::7f00:1]',
      '::127.0.0.1',
      '::a00:1',
      '::8.8.8.8',
      '0:0:0:0:0:0:a9fe:a9fe',
      '64:ff9b:1::1',
      '2001:db8::1',
      'fec0::1',
      '2001::1',
      '100::1',
      '2001:10::1',
      '2001:20::1',
      '5f00::1',
    ]) {
      expect(isPrivateAddress(ip), ip).toBe(true)
    }
    for (const ip of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700::1111', '::ffff:8.8.8.8']) expect(isPrivateAddress(ip), ip).toBe(false)
  })

  it('refuses loopback reached through IPv4-mapped IPv6 literals', async () => {
    const guarded = guardedFetch()
    const port = new URL(base).port
    for (const host of [
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[0:0:0:0:0:ffff:127.0.0.1]',
      '[::ffff:a9fe:a9fe]',
      '[::7f00:1]',
      '[::127.0.0.1]',
    ]) {
      await expect(guarded(`http://${host}:${port}/ok`), host).rejects.toThrow(/private/)
    }
  })

  it('connects to the address it checked, never looking the name up again', async () => {
    let lookups = 0
    const pinned = guardedFetch({
      allowPrivate: true,
      resolve: async () => (lookups++, ['127.0.0.1']),
      pinnedFetch: pinnedNodeFetch(),
    })
    // the name exists nowhere but in the checked answer: the connection can only have used that
    const res = await pinned(`http://rebind.invalid:${new URL(base).port}/ok`)
    expect(await res.text()).toBe('fine')
    expect(lookups).toBe(1)
    // a resolver that answers a private address is refused before any connection
    const rebinding = guardedFetch({ resolve: async () => ['93.184.216.34', '10.0.0.1'], pinnedFetch: pinnedNodeFetch() })
    await expect(rebinding('http://two-faced.invalid/')).rejects.toThrow(/private/)
  })

  it('refuses loopback targets, non-http schemes and hostnames that resolve privately', async () => {
    const guarded = guardedFetch()
    await expect(guarded(`${base}/ok`)).rejects.toThrow(/private/)
    await expect(guarded('file:///etc/passwd')).rejects.toThrow(/http/)
    await expect(guarded('http://localhost/')).rejects.toThrow(/private/)
    const resolving = guardedFetch({ resolve: async () => ['10.0.0.5'] })
    await expect(resolving('http://internal.example.com/')).rejects.toThrow(/private/)
  })

  it('follows redirects, re-checking each hop, and caps size', async () => {
    // the test server is on loopback; allow it but block the metadata address by a resolver-free check
    const allowLoopbackOnly = guardedFetch({ allowPrivate: true, maxBytes: 1024 })
    const ok = await allowLoopbackOnly(`${base}/redirect-ok`)
    expect(await ok.text()).toBe('fine')
    await expect(allowLoopbackOnly(`${base}/redirect-loop`)).rejects.toThrow(/redirects/)
    await expect(allowLoopbackOnly(`${base}/big`)).rejects.toThrow(/larger than 1024/)
    // private targets blocked: a redirect hop into link-local is refused before it is fetched
    const seen: string[] = []
    const recording = guardedFetch({
      resolve: async () => ['93.184.216.34'],
      fetchImpl: async (url) => {
        seen.push(String(url))
        return fetch(String(url).replace('http://public.example.com', base), { redirect: 'manual' })
      },
    })
    await expect(recording('http://public.example.com/redirect-private')).rejects.toThrow(/169\.254\.169\.254/)
    expect(seen).toEqual(['http://public.example.com/redirect-private'])
  })
})
