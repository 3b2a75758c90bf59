import type { AnswerOf } from '../api'
import { ago, count, dateTime, day, percent } from '../format'
import { Empty, type SectionProps, SeriesChart, Tiles, Unavailable } from './parts'

/** A page launched in the range, against the median of its cohort. */
type Launch = AnswerOf<'GET', '/api/v1/pages/launches'>['pages'][number]

const BANDS: Record<string, [tone: string, label: string]> = {
  over: ['good', 'Above'],
  at: ['', 'At'],
  under: ['poor', 'Below'],
}

/** The launches section: pages launched in the range, each against the median of its cohort, and the cohort's first days as a chart. */
export function Launches({ answers, at, timezone, now, query }: SectionProps<[AnswerOf<'GET', '/api/v1/pages/launches'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Launches" />
  const pages: Launch[] = answer.pages
  const { cohort, rule } = answer
  const launch = answer.measure === 'launch'
  const most = Math.max(1, ...pages.map((p) => p.vsMedian ?? 0))
  return (
    <>
      <section class="card" aria-labelledby="launches-title" data-read="/api/v1/pages/launches">
        <h2 id="launches-title">
          {count(pages.length)} {pages.length === 1 ? 'page' : 'pages'} launched in this range
        </h2>
        <nav class="tabs" aria-label="How pages are counted">
          <a href={at('launches', { measure: 'launch' })} aria-current={launch ? 'page' : undefined}>
            Their first {rule.days} days
          </a>
          <a href={at('launches', { measure: '30d' })} aria-current={!launch ? 'page' : undefined}>
            The last 30 days
          </a>
        </nav>
        <Tiles
          tiles={[
            ['cohort', 'Pages in the cohort', count(cohort.pages)],
            [
              'median',
              launch ? `Median visits, first ${rule.days} days` : 'Median visits, last 30 days',
              cohort.median === null ? '–' : count(cohort.median),
              cohort.median === null && launch ? `no page is ${rule.days} days old yet` : undefined,
            ],
          ]}
        />
        {cohort.shape.length > 1 ? (
          <SeriesChart
            name="cohort"
            label={`Median visits on each day since launch, over ${count(cohort.pages)} pages`}
            buckets={cohort.shape.map((d) => (d.day === 0 ? 'Launch day' : `Day ${d.day}`))}
            series={[
              {
                name: 'Median visits of the cohort',
                values: cohort.shape.map((d) => d.medianVisits),
                tone: 'main',
                format: (v) => `${v.toLocaleString('en')} visits`,
              },
            ]}
          />
        ) : null}
        <p class="muted small spaced">
          A page goes live at its first pageview or first crawl, whichever came first. It is at the median within ±{percent(rule.band)} of
          it.{answer.sharedWindow ? ` Counted from ${day(answer.sharedWindow.from)} to ${day(answer.sharedWindow.to)}.` : ''}
        </p>
      </section>
      <section class="card" aria-labelledby="launched-title">
        <h2 id="launched-title">Launched pages</h2>
        {pages.length ? (
          <table class="pages-table launches-table">
            <thead>
              <tr>
                <th scope="col">Page</th>
                <th scope="col">Against the cohort</th>
                <th scope="col" class="num">
                  Visits
                </th>
                <th scope="col" class="opt">
                  Against the median
                </th>
                <th scope="col" class="opt">
                  Launched
                </th>
              </tr>
            </thead>
            <tbody>
              {pages.map((p) => {
                const [tone, label] = p.band ? BANDS[p.band] : ['', 'Too young to tell']
                return (
                  <tr data-path={p.path}>
                    <td class="cell-wrap">
                      <a href={at('page', { path: p.path })}>{p.path}</a>
                      {launch && !p.complete ? <span class="muted small page-title">{`first ${p.measuredDays} days so far`}</span> : null}
                    </td>
                    <td>
                      <span class={`badge ${tone}`}>
                        {label}
                        {p.band ? <span class="opt"> the median</span> : null}
                      </span>
                    </td>
                    <td class="num" data-visits={p.visits}>
                      {count(p.visits)}
                    </td>
                    <td class="opt">
                      {p.vsMedian === null ? (
                        <span class="muted">–</span>
                      ) : (
                        <span class="vs-median" role="img" aria-label={`${p.vsMedian.toFixed(1)} times the median`}>
                          <span class="stack">
                            <span
                              class={p.band === 'under' ? 'poor' : p.band === 'over' ? 'good' : 'base'}
                              style={`width:${((p.vsMedian / most) * 100).toFixed(1)}%`}
                            />
                          </span>
                          <span class="small">{`${p.vsMedian.toFixed(1)}×`}</span>
                        </span>
                      )}
                    </td>
                    <td class="opt">
                      <time datetime={p.launchedAt} title={dateTime(p.launchedAt, timezone)}>
                        {ago(p.launchedAt, now)}
                      </time>
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        ) : (
          <Empty
            why="No page was launched in this range."
            next={`${query.range === 'all' ? '' : 'Try a longer range, such as the last 90 days. '}A page counts as launched at its first pageview or first crawl.`}
          />
        )}
      </section>
    </>
  )
}
