import type { Child } from 'hono/jsx'
import { count } from '../format'

/** What a designed section is given: its reads' answers, the site's timezone, the time of the answer, and links within the sections. */
export interface SectionProps {
  // biome-ignore lint/suspicious/noExplicitAny: each view reads its endpoint's declared answer
  answers: any[]
  timezone: string
  now: number
  query: Record<string, string>
  /** A section's URL keeping the page's range, filters and source, with some parameters of its own. */
  at: (section: string, extra?: Record<string, string>) => string
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
