export interface Geo {
  /** ISO 3166-1 alpha-2 */
  country: string
  region: string
  city: string
  latitude: number
  longitude: number
}

export type GeoLookup = (ip: string) => Promise<Geo | null>

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
