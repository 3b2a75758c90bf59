import { geoEqualEarth, geoPath } from 'd3-geo'
import { feature } from 'topojson-client'
import type { GeometryCollection, Topology } from 'topojson-specification'
import world from 'world-atlas/countries-110m.json'

const WIDTH = 900
const HEIGHT = 440

/** The world's countries as SVG paths, projected once per process (Equal Earth, fitted to the map's box). */
let drawn: { projection: ReturnType<typeof geoEqualEarth>; countries: string[] } | null = null
function worldMap() {
  if (drawn) return drawn
  const topology = world as unknown as Topology<{ countries: GeometryCollection }>
  const countries = feature(topology, topology.objects.countries)
  const projection = geoEqualEarth().fitSize([WIDTH, HEIGHT], countries)
  const path = geoPath(projection)
  drawn = { projection, countries: countries.features.map((f) => path(f) ?? '').filter(Boolean) }
  return drawn
}

interface Place {
  country: string
  region: string
  city?: string
  latitude: number | null
  longitude: number | null
  visitors: number
}

/** The places of GET /api/v1/geo on a world map drawn on the server: a circle per place, its area by visitors. */
export function LocationsMap({ places }: { places: Place[] }) {
  const { projection, countries } = worldMap()
  const located = places.filter((p) => p.latitude !== null && p.longitude !== null && p.visitors > 0)
  const max = Math.max(1, ...located.map((p) => p.visitors))
  const name = (p: Place) => [p.city, p.region, p.country].filter(Boolean).join(', ') || 'Unknown place'
  return (
    <svg
      class="map"
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={`World map of visitors: ${located.length} ${located.length === 1 ? 'place' : 'places'}${located.length ? `, the most ${name(located[0])} with ${located[0].visitors.toLocaleString('en')}` : ''}`}
    >
      <g fill="#e6ebf0" stroke="#ffffff" stroke-width="0.5">
        {countries.map((d) => (
          <path d={d} />
        ))}
      </g>
      <g fill="#0b57d0" fill-opacity="0.55" stroke="#0b57d0">
        {located.map((p) => {
          const xy = projection([p.longitude!, p.latitude!])
          if (!xy) return null
          return (
            <circle cx={xy[0].toFixed(1)} cy={xy[1].toFixed(1)} r={(2 + Math.sqrt(p.visitors / max) * 14).toFixed(1)}>
              <title>{`${name(p)}: ${p.visitors.toLocaleString('en')} visitors`}</title>
            </circle>
          )
        })}
      </g>
    </svg>
  )
}
