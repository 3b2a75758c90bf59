import { type ChartMarker, SeriesChart, bucketLabel } from './sections/parts'

/** Something pinned on the chart at a moment: an annotation, a page or site change, a spike, a search-engine update. */
export interface Marker {
  /** ISO 8601 (with an offset or Z); a date-time without one is read as UTC. */
  at: string
  kind: 'annotation' | 'page change' | 'site change' | 'spike' | 'search update'
  label: string
}

const epoch = (iso: string) => Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(iso) ? iso : `${iso}Z`)

const TONES: Record<Marker['kind'], ChartMarker['tone']> = {
  annotation: 'note',
  'page change': 'ni',
  'site change': 'poor',
  spike: 'good',
  'search update': 'note',
}

/**
 * Visitors and pageviews per bucket, drawn on the server (no chart script): a few labels on each
 * axis, each bucket's figures on hover and on keyboard focus, and the window's markers pinned on
 * it, listed under it in words.
 */
export function Chart({
  points,
  end,
  markers,
}: {
  points: { timestamp: string; visitors: number; pageviews: number }[]
  end: string
  markers: Marker[]
}) {
  const hourly = points.some((p) => !/T00:00:00/.test(p.timestamp))
  const buckets = points.map((p) => bucketLabel(p.timestamp, hourly ? 'hour' : 'day'))
  // a moment's place: the fraction of the way through its bucket, between that bucket's point and the next
  const starts = points.map((p) => epoch(p.timestamp))
  const last = epoch(end)
  const place = (at: string) => {
    const t = epoch(at)
    if (!points.length || Number.isNaN(t) || t < starts[0] || t >= last) return null
    let i = 0
    while (i + 1 < starts.length && starts[i + 1] <= t) i++
    const next = i + 1 < starts.length ? starts[i + 1] : last
    return Math.min(points.length - 1, i + (next > starts[i] ? (t - starts[i]) / (next - starts[i]) : 0))
  }
  const pinned: ChartMarker[] = markers
    .map((m) => ({ m, index: place(m.at) }))
    .filter((p): p is { m: Marker; index: number } => p.index !== null)
    .map(({ m, index }) => ({
      index,
      kind: m.kind,
      tone: TONES[m.kind],
      label: `${m.kind}: ${m.label}`,
    }))
    .sort((a, b) => a.index - b.index)
  const total = points.reduce((sum, p) => sum + p.visitors, 0)
  return (
    <div class="chart">
      <SeriesChart
        name="dashboard"
        label={`Visitors and pageviews per ${hourly ? 'hour' : 'day'}: ${total.toLocaleString('en')} visitor-buckets in all; ${pinned.length} markers`}
        buckets={buckets}
        series={[
          { name: 'Visitors', values: points.map((p) => p.visitors), tone: 'main' },
          { name: 'Pageviews', values: points.map((p) => p.pageviews), tone: 'soft' },
        ]}
        markers={pinned}
        foldMarkers
      />
    </div>
  )
}
