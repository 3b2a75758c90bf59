import type { Child } from 'hono/jsx'
import { count } from '../format'

/** What a designed section is given: its reads' answers, the site's timezone, the time of the answer, and links within the sections. */
export interface SectionProps<A extends unknown[] = unknown[]> {
  /** The answers of the section's reads, in their order, each typed as its endpoint declares it. */
  answers: A
  timezone: string
  now: number
  query: Record<string, string>
  /** A section's URL keeping the page's range, filters and source, with some parameters of its own. */
  at: (section: string, extra?: Record<string, string>) => string
  /** A shared dashboard's section: no links to the member pages (heatmaps, settings). */
  shared?: boolean
}

/** A series as a small line, drawn to SVG; the last value is named for screen readers. */
export function Sparkline({ values, label }: { values: number[]; label: string }) {
  const w = 120
  const h = 28
  const max = Math.max(1, ...values)
  const step = values.length > 1 ? w / (values.length - 1) : 0
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(h - 2 - (v / max) * (h - 4)).toFixed(1)}`).join(' ')
  return (
    <svg class="spark" viewBox={`0 0 ${w} ${h}`} width={w} height={h} role="img" aria-label={label}>
      <polyline points={points} fill="none" stroke="currentColor" stroke-width="1.5" />
    </svg>
  )
}

/** Rows of a value and its figure with a bar behind, longest first as given. */
export function BarList({
  rows,
  label,
  unit,
  name = (v) => v || '(none)',
  link,
}: {
  rows: { value: string; n: number }[]
  label: string
  unit: string
  name?: (value: string) => Child
  link?: (value: string) => string | null
}) {
  const max = Math.max(1, ...rows.map((r) => r.n))
  return (
    <table class="bars" data-list={label}>
      <thead>
        <tr>
          <th scope="col">{label}</th>
          <th scope="col" class="num">
            {unit}
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => {
          const href = link?.(r.value)
          return (
            <tr style={`--share:${((r.n / max) * 100).toFixed(1)}%`}>
              <td class="bar">{href ? <a href={href}>{name(r.value)}</a> : name(r.value)}</td>
              <td class="num">{count(r.n)}</td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}

/** A figure with its label, large. */
export function Tiles({ tiles }: { tiles: [key: string, label: string, value: Child, note?: Child][] }) {
  return (
    <dl class="facts stats">
      {tiles.map(([key, label, value, note]) => (
        <div data-metric={key}>
          <dt>{label}</dt>
          <dd>
            <span class="value">{value}</span>
            {note ? <span class="change">{note}</span> : null}
          </dd>
        </div>
      ))}
    </dl>
  )
}

/** What an empty section says: why there is nothing, and what to do. */
export function Empty({ why, next }: { why: string; next?: Child }) {
  return (
    <div class="empty">
      <p>
        <strong>{why}</strong>
      </p>
      {next ? <p class="muted">{next}</p> : null}
    </div>
  )
}

/** A read a source cannot answer (`available: false`), said plainly. */
export function Unavailable({ what }: { what: string }) {
  return (
    <Empty
      why={`${what} are not available for this data source.`}
      next="They are recorded by the first-party collector: switch the data source to First-party."
    />
  )
}

/** One line of a chart: its name, its values per bucket (null for none), and its look. */
export interface ChartSeries {
  name: string
  values: (number | null)[]
  tone: 'main' | 'soft' | 'grey' | 'warm'
  /** How a value reads in the hover text: 12 visitors, 3.4. */
  format?: (v: number) => string
  /** A scale of its own, labelled on the right (a second measure); `invert` puts the smallest at the top (a search position). */
  axis?: 'left' | 'right'
  invert?: boolean
}

/** Something that happened at a bucket: drawn as a numbered line on the chart and listed under it. */
export interface ChartMarker {
  /** The bucket, or a place between two (2.5: half way from the third to the fourth). */
  index: number
  label: Child
  tone?: 'good' | 'ni' | 'poor' | 'note'
  /** What it is (a spike, an annotation), on the drawn line. */
  kind?: string
}

const nice = (max: number) => {
  if (max <= 0) return 1
  const step = 10 ** Math.floor(Math.log10(max))
  return [1, 2, 2.5, 5, 10].map((m) => m * step).find((n) => n >= max) ?? max
}
const axisNumber = (v: number) => (v >= 10_000 ? `${Math.round(v / 1000)}k` : Number.isInteger(v) ? count(v) : v.toFixed(1))

/**
 * A series chart drawn to SVG on the server: lines over buckets, a few labels on each axis (in
 * HTML, so they stay legible at any width), the markers numbered, and each bucket's values on
 * hover and on keyboard focus.
 */
export function SeriesChart({
  label,
  buckets,
  series,
  markers = [],
  name = 'chart',
  foldMarkers = false,
}: {
  label: string
  /** Each bucket's label, in words (7 Dec). */
  buckets: string[]
  series: ChartSeries[]
  markers?: ChartMarker[]
  name?: string
  /** The list of markers folded under a summary that counts them. */
  foldMarkers?: boolean
}) {
  const W = 1000
  const H = 200
  const n = buckets.length
  const x = (i: number) => (n > 1 ? (i / (n - 1)) * W : W / 2)
  const scale = (axis: 'left' | 'right') => {
    const on = series.filter((s) => (s.axis ?? 'left') === axis)
    const values = on.flatMap((s) => s.values.filter((v): v is number => v !== null))
    const invert = on.some((s) => s.invert)
    if (invert) {
      const lo = Math.max(1, Math.floor(Math.min(...values, 1)))
      const hi = Math.max(lo + 1, Math.ceil(Math.max(...values, lo + 1)))
      return { top: lo, bottom: hi, y: (v: number) => ((v - lo) / (hi - lo)) * (H - 8) + 4, on }
    }
    const top = nice(Math.max(0, ...values))
    return { top, bottom: 0, y: (v: number) => H - 2 - (v / top) * (H - 8), on }
  }
  const left = scale('left')
  const right = series.some((s) => s.axis === 'right') ? scale('right') : null
  const line = (s: ChartSeries) => {
    const y = s.axis === 'right' && right ? right.y : left.y
    return s.values
      .map((v, i) => (v === null ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`))
      .filter(Boolean)
      .join(' ')
  }
  const mid = (a: number, b: number) => a + (b - a) / 2
  // markers of one bucket share a pin, which names their numbers
  const pins: [index: number, numbers: number[], tone: string][] = []
  markers.forEach((m, k) => {
    const pin = pins.find(([index]) => Math.abs(x(index) - x(m.index)) < 12)
    if (pin) pin[1].push(k + 1)
    else pins.push([m.index, [k + 1], m.tone ?? 'note'])
  })
  const ticks = n > 2 ? [0, Math.floor((n - 1) / 2), n - 1] : n === 2 ? [0, 1] : n ? [0] : []
  const hover = (i: number) =>
    `${buckets[i]}: ${series
      .map((s) =>
        `${s.values[i] === null ? '–' : (s.format ?? count)(s.values[i] as number)} ${s.format ? '' : s.name.toLowerCase()}`.trim(),
      )
      .join(', ')}`
  return (
    <figure class="series-chart" data-chart={name}>
      <div class={`plot${right ? ' two-axes' : ''}`}>
        <span class="ylab top" aria-hidden="true">
          {axisNumber(left.top)}
        </span>
        <span class="ylab mid" aria-hidden="true">
          {axisNumber(mid(left.top, left.bottom))}
        </span>
        <span class="ylab bottom" aria-hidden="true">
          {axisNumber(left.bottom)}
        </span>
        {right ? (
          <>
            <span class="ylab right top" aria-hidden="true">
              {axisNumber(right.top)}
            </span>
            <span class="ylab right bottom" aria-hidden="true">
              {axisNumber(right.bottom)}
            </span>
          </>
        ) : null}
        <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={label}>
          <line x1="0" x2={W} y1={H / 2} y2={H / 2} class="grid" />
          <line x1="0" x2={W} y1={H - 1} y2={H - 1} class="base-line" />
          {markers.map((m) => (
            <line x1={x(m.index)} x2={x(m.index)} y1="0" y2={H} class={`mark-line marker ${m.tone ?? 'note'}`} data-kind={m.kind} />
          ))}
          {series.map((s) => (
            <polyline points={line(s)} class={`line ${s.tone}`} />
          ))}
        </svg>
        {pins.map(([index, numbers, tone]) => {
          const at = x(index) / W
          // a pin at an edge grows inwards, so that it stays within the chart
          const edge = at > 0.92 ? ' end' : at < 0.08 ? ' start' : ''
          return (
            <span class={`pin-num ${tone}${edge}`} style={`left:${(at * 100).toFixed(2)}%`} aria-hidden="true">
              {numbers.length > 2 ? `${numbers[0]}–${numbers.at(-1)}` : numbers.join(',')}
            </span>
          )
        })}
        <div class="hits" style={`grid-template-columns:repeat(${Math.max(1, n)},1fr)`}>
          {buckets.map((_, i) => (
            <span class={`hit${i > n / 2 ? ' flip' : ''}`} tabindex={0} role="img" data-tip={hover(i)} aria-label={hover(i)} />
          ))}
        </div>
      </div>
      <div class={`axis-row small muted${right ? ' two-axes' : ''}`} aria-hidden="true">
        {ticks.map((i) => (
          <span>{buckets[i]}</span>
        ))}
      </div>
      <figcaption class="legend">
        {series.map((s) => (
          <span class="legend-item">
            <span class={`key-line ${s.tone}`} /> {s.name}
            {s.axis === 'right' ? ' (right scale)' : ''}
            {s.invert ? ' (1 is the top)' : ''}
          </span>
        ))}
      </figcaption>
      {markers.length ? (
        foldMarkers ? (
          <details class="markers">
            <summary>
              {markers.length} {markers.length === 1 ? 'marker' : 'markers'}
            </summary>
            <MarkerList markers={markers} buckets={buckets} />
          </details>
        ) : (
          <MarkerList markers={markers} buckets={buckets} />
        )
      ) : null}
    </figure>
  )
}

function MarkerList({ markers, buckets }: { markers: ChartMarker[]; buckets: string[] }) {
  return (
    <ol class="marker-list">
      {markers.map((m, k) => (
        <li data-kind={m.kind}>
          <span class={`pin-num static ${m.tone ?? 'note'}`} aria-hidden="true">
            {k + 1}
          </span>
          {buckets[Math.floor(m.index)]}: {m.label}
        </li>
      ))}
    </ol>
  )
}

/** A bucket's label in words: 7 Dec (a day), 7 Dec 14:00 (an hour), Dec 2026 (a month). */
export function bucketLabel(iso: string, interval: string) {
  const t = Date.parse(iso.includes('T') ? (/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`) : `${iso}T00:00:00Z`)
  const options: Intl.DateTimeFormatOptions =
    interval === 'month'
      ? { month: 'short', year: 'numeric' }
      : interval === 'hour' || interval === 'minute'
        ? { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' }
        : { day: 'numeric', month: 'short' }
  // the API's bucket times carry the site's offset already: read them as written
  const offset = /([+-]\d\d):?(\d\d)$/.exec(iso)
  const shift = offset ? (Number(offset[1]) * 60 + Math.sign(Number(offset[1]) || 1) * Number(offset[2])) * 60_000 : 0
  return new Intl.DateTimeFormat('en-GB', { ...options, timeZone: 'UTC' }).format(t + shift)
}
