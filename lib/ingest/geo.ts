export interface Geo {
  /** ISO 3166-1 alpha-2 */
  country: string
  region: string
  city: string
  latitude: number
  longitude: number
}

export type GeoLookup = (ip: string) => Promise<Geo | null>

/** A lookup that asks once per address (within a bound): a visitor's hits share one. */
export function cachedGeoLookup(lookup: GeoLookup): GeoLookup {
  const cache = new Map<string, Promise<Geo | null>>()
  return (ip) => {
    let geo = cache.get(ip)
    if (!geo) {
      if (cache.size > 20_000) cache.clear()
      geo = lookup(ip).catch(() => null)
      cache.set(ip, geo)
    }
    return geo
  }
}

/** Cloudflare's `request.cf` geo fields, when the worker has them. */
export function geoFromCf(cf: Record<string, unknown> | undefined): Geo | null {
  if (!cf || typeof cf.country !== 'string' || cf.country === 'T1' || cf.country === 'XX') return null
  return {
    country: cf.country,
    region: typeof cf.region === 'string' ? cf.region : '',
    city: typeof cf.city === 'string' ? cf.city : '',
    latitude: Number(cf.latitude) || 0,
    longitude: Number(cf.longitude) || 0,
  }
}
