/** Something pinned on the chart at a moment: an annotation, a page or site change, a spike, a search-engine update. */
export interface Marker {
  /** ISO 8601 (with an offset or Z); a date-time without one is read as UTC. */
  at: string
  kind: 'annotation' | 'page change' | 'site change' | 'spike' | 'search update'
  label: string
}

const MARKER_COLORS: Record<Marker['kind'], string> = {
  annotation: '#8250df',
  'page change': '#bf8700',
  'site change': '#cf222e',
  spike: '#1a7f37',
  'search update': '#57606a',
}

const epoch = (iso: string) => Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso}Z`)

/** Visitors and pageviews per bucket as an SVG drawn on the server (no chart script), with the window's markers pinned on it. */
export function Chart({
  points,
  end,
  markers,
}: {
  points: { timestamp: string; visitors: number; pageviews: number }[]
  end: string
  markers: Marker[]
}) {
  const width = 900
  const height = 220
  const pad = 28
  const max = Math.max(1, ...points.map((p) => p.pageviews))
  const x = (i: number) => pad + (points.length > 1 ? (i / (points.length - 1)) * (width - 2 * pad) : 0)
  const y = (v: number) => height - pad - (v / max) * (height - 2 * pad)
  const line = (key: 'visitors' | 'pageviews') => points.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ')
  const total = points.reduce((sum, p) => sum + p.visitors, 0)
  const label = (p: { timestamp: string }) => p.timestamp.slice(0, p.timestamp.includes('T00:00:00') ? 10 : 16).replace('T', ' ')
  // a moment's place: the fraction of the way through its bucket, between that bucket's point and the next
  const starts = points.map((p) => epoch(p.timestamp))
  const last = epoch(end)
  const place = (at: string) => {
    const t = epoch(at)
    if (!points.length || Number.isNaN(t) || t < starts[0] || t >= last) return null
    let i = 0
    while (i + 1 < starts.length && starts[i + 1] <= t) i++
    const next = i + 1 < starts.length ? starts[i + 1] : last
    return x(i) + (next > starts[i] ? (t - starts[i]) / (next - starts[i]) : 0) * (x(Math.min(i + 1, points.length - 1)) - x(i))
  }
  const pinned = markers.map((m) => ({ ...m, x: place(m.at) })).filter((m): m is Marker & { x: number } => m.x !== null)
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`Visitors and pageviews per bucket: ${total.toLocaleString('en')} visitor-buckets in all, at most ${max.toLocaleString('en')} pageviews in one; ${pinned.length} markers`}
      >
        <line x1={pad} y1={height - pad} x2={width - pad} y2={height - pad} stroke="#d0d7de" />
        <text x={pad} y={14} class="axis">
          {max.toLocaleString('en')}
        </text>
        <polyline points={line('pageviews')} fill="none" stroke="#9ec5fe" stroke-width="2" />
        <polyline points={line('visitors')} fill="none" stroke="#0b57d0" stroke-width="2.5" />
        {pinned.map((m) => (
          <g class="marker" data-kind={m.kind}>
            <title>{`${m.kind}: ${m.label} (${m.at.slice(0, 16).replace('T', ' ')})`}</title>
            <line
              x1={m.x.toFixed(1)}
              x2={m.x.toFixed(1)}
              y1={pad}
              y2={height - pad}
              stroke={MARKER_COLORS[m.kind]}
              stroke-dasharray="3 3"
            />
            <circle cx={m.x.toFixed(1)} cy={pad} r="4" fill={MARKER_COLORS[m.kind]} />
          </g>
        ))}
        {points.length ? (
          <>
            <text x={pad} y={height - 8} class="axis">
              {label(points[0])}
            </text>
            <text x={width - pad} y={height - 8} class="axis" text-anchor="end">
              {label(points[points.length - 1])}
            </text>
          </>
        ) : null}
      </svg>
      <figcaption class="legend">
        <span class="key visitors" /> Visitors <span class="key pageviews" /> Pageviews
        {pinned.length ? (
          <details class="markers">
            <summary>
              {pinned.length} {pinned.length === 1 ? 'marker' : 'markers'}
            </summary>
            <ul class="plain">
              {pinned.map((m) => (
                <li data-kind={m.kind}>
                  <span class="pin" style={`background:${MARKER_COLORS[m.kind]}`} aria-hidden="true" />{' '}
                  {m.at.slice(0, 16).replace('T', ' ')} <strong>{m.kind}</strong>: {m.label}
                </li>
              ))}
            </ul>
          </details>
        ) : null}
      </figcaption>
    </figure>
  )
}
