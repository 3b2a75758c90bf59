import type { AnswerOf } from '../api'
import type { Child } from 'hono/jsx'
import { count, country, millis, percent } from '../format'
import { Empty, type SectionProps, Sparkline, Tiles, Unavailable } from './parts'

const METRICS = [
  ['LCP', 'Largest Contentful Paint', 'how long the main content takes to show'],
  ['INP', 'Interaction to Next Paint', 'how long the page takes to answer a tap or a click'],
  ['CLS', 'Cumulative Layout Shift', 'how much the page moves while it loads'],
  ['FCP', 'First Contentful Paint', 'how long until anything shows'],
  ['TTFB', 'Time to First Byte', 'how long the server takes to answer'],
] as const
type MetricKey = (typeof METRICS)[number][0]

/** Each metric's percentile, distribution and thresholds. */
type Metrics = AnswerOf<'GET', '/api/v1/vitals'>['metrics']
/** A row of a table by page, country, device or browser: its visitors and each metric's percentile. */
type TableRow = AnswerOf<'GET', '/api/v1/vitals'>['tables']['pages'][number]

/** A metric's value with its unit: CLS has none. */
const show = (key: MetricKey, v: number | null | undefined) =>
  v === null || v === undefined ? '–' : key === 'CLS' ? v.toFixed(2) : millis(v)

/** Where a value stands against a metric's thresholds: good up to the first, poor above the second. */
function rating(v: number | null | undefined, t: Metrics[MetricKey]['thresholds']) {
  if (v === null || v === undefined) return null
  return v <= t.good ? (['good', 'Good'] as const) : v <= t.poor ? (['ni', 'Needs improvement'] as const) : (['poor', 'Poor'] as const)
}

/** The web vitals section: each metric's percentile against its thresholds with its distribution and trend, and the tables by page, country, device and browser. */
export function Vitals({ answers }: SectionProps<[AnswerOf<'GET', '/api/v1/vitals'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Web vitals" />
  const metrics: Metrics = answer.metrics
  const p = `p${answer.percentile}`
  if (!answer.summary.samples)
    return (
      <section class="card" data-read="/api/v1/vitals">
        <Empty
          why="No web vitals measured in this range."
          next="The tracker measures them in browsers that report them (Chrome, Edge, and Firefox and Safari in part); try a longer range, or check that the snippet is installed."
        />
      </section>
    )
  return (
    <>
      <section class="card" aria-label="Summary" data-read="/api/v1/vitals">
        <Tiles
          tiles={[
            ['score', 'Performance score', answer.summary.score === null ? '–' : `${Math.round(answer.summary.score)} / 100`],
            ['samples', 'Measurements', count(answer.summary.samples)],
            ['visitors', 'Visitors measured', count(answer.summary.visitors)],
          ]}
        />
        <p class="muted small spaced">
          Each figure is the {answer.percentile}th percentile ({p}): {answer.percentile}% of page loads were as fast or faster.
          {answer.formFactor ? ` Only ${answer.formFactor} devices.` : ''}
        </p>
      </section>
      <div class="vitals">
        {METRICS.map(([key, name, about]) => {
          const m = metrics[key]
          const r = rating(m.value, m.thresholds)
          return (
            <section class="card vital" aria-labelledby={`v-${key}`} data-vital={key}>
              <h2 id={`v-${key}`}>
                {name} <span class="muted small">({key})</span>
              </h2>
              <p class="muted small">{about}</p>
              <p class="vital-value">
                <span class="value" data-value={String(m.value)}>
                  {show(key, m.value)}
                </span>{' '}
                {r ? <span class={`badge ${r[0]}`}>{r[1]}</span> : null}
              </p>
              <div
                class="stack"
                role="img"
                aria-label={`${percent(m.good)} good, ${percent(m.needsImprovement)} need improvement, ${percent(m.poor)} poor`}
              >
                <span class="good" style={`width:${percent(m.good, 1)}`} />
                <span class="ni" style={`width:${percent(m.needsImprovement, 1)}`} />
                <span class="poor" style={`width:${percent(m.poor, 1)}`} />
              </div>
              <p class="stack-key small">
                <span>
                  <i class="key-dot good" /> {percent(m.good)} good
                </span>
                <span>
                  <i class="key-dot ni" /> {percent(m.needsImprovement)}
                </span>
                <span>
                  <i class="key-dot poor" /> {percent(m.poor)} poor
                </span>
              </p>
              <p class="muted small">
                Good up to {show(key, m.thresholds.good)}, poor above {show(key, m.thresholds.poor)} · {count(m.samples)} measurements
              </p>
              <p class="muted small">
                By day <Sparkline values={answer.trend.map((d) => d[key] ?? 0)} label={`${key} by ${answer.range!.interval}`} />
              </p>
            </section>
          )
        })}
      </div>
      {(
        [
          ['pages', 'Page', (v: string) => v],
          ['countries', 'Country', country],
          ['devices', 'Device', (v: string) => v],
          ['browsers', 'Browser', (v: string) => v],
        ] as const
      ).map(([table, label, name]) => (
        <section class="card" aria-labelledby={`t-${table}`}>
          <h2 id={`t-${table}`}>By {label.toLowerCase()}</h2>
          <VitalsTable rows={answer.tables[table] ?? []} label={label} name={name} metrics={metrics} />
        </section>
      ))}
    </>
  )
}

function VitalsTable({ rows, label, name, metrics }: { rows: TableRow[]; label: string; name: (v: string) => Child; metrics: Metrics }) {
  if (!rows.length) return <p class="muted">No measurements.</p>
  const shown = ['LCP', 'INP', 'CLS'] as const
  return (
    <table class="vitals-table" data-vitals={label}>
      <thead>
        <tr>
          <th scope="col">{label}</th>
          <th scope="col" class="num opt">
            Visitors
          </th>
          {shown.map((k) => (
            <th scope="col" class="num">
              {k}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr data-value={r.value}>
            <td class="cell-wrap">{name(r.value)}</td>
            <td class="num opt">{count(r.visitors)}</td>
            {shown.map((k) => (
              <td class="num">
                <span class={`rated ${rating(r[k], metrics[k].thresholds)?.[0] ?? ''}`}>{show(k, r[k])}</span>
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  )
}
