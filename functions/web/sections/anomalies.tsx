import type { AnswerOf } from '../api'
import { count, percent } from '../format'
import { type Evidence, EvidenceLine } from './changes'
import { type ChartMarker, Empty, type SectionProps, SeriesChart, Tiles, Unavailable, bucketLabel } from './parts'

/** A page that moved, its candidates read as evidence lines (either kind's fields, each optional). */
type Mover = Omit<AnswerOf<'GET', '/api/v1/anomalies'>['pages'][number], 'candidates'> & { candidates: Evidence[] }

export const MOVES: Record<Mover['status'], [tone: string, label: string]> = {
  rose: ['good', 'Rose'],
  fell: ['poor', 'Fell'],
  appeared: ['good', 'New traffic'],
  went_quiet: ['poor', 'Went quiet'],
}

/** A signed change in words: +12%, −40%. */
export const signed = (share: number | null) =>
  share === null ? 'new' : `${share > 0 ? '+' : share < 0 ? '−' : ''}${percent(Math.abs(share))}`

const SEARCH_DIAGNOSES: Record<string, string> = {
  lost_queries: 'queries that brought it clicks no longer show it',
  rank_drop: 'it ranks lower in Google',
  ctr_drop: 'fewer searchers click it at the same position',
  demand_drop: 'fewer people search for it',
  fell: 'its Google clicks fell, with no single reason',
}

/** The anomalies section: the site's visits against the period before, the moves marked where the changes behind them happened, and each page that moved with its likely causes. */
export function Anomalies({
  answers,
  timezone,
  at,
}: SectionProps<[AnswerOf<'GET', '/api/v1/anomalies'>, AnswerOf<'GET', '/api/v1/timeseries'>]>) {
  const [answer, series] = answers
  if (!answer.available) return <Unavailable what="Anomalies" />
  const movers: Mover[] = answer.pages
  const points = series.series
  const interval = answer.range.interval
  const buckets = points.map((p) => bucketLabel(p.timestamp, interval))
  // each change behind a move, once, at the bucket it happened in; changes of one bucket share a marker
  const dayOf = (iso: string) => points.findLastIndex((p) => Date.parse(p.timestamp) <= Date.parse(iso))
  const found = new Map<string, { e: Evidence; index: number; paths: string[]; fell: boolean }>()
  for (const m of movers)
    for (const c of m.candidates) {
      const key = c.changeId ?? `${c.kind}:${c.domain}:${c.day}`
      const when = c.detectedAt ?? (c.day ? `${c.day}T12:00:00Z` : '')
      const index = when && Date.parse(when) < Date.parse(answer.range.to) ? dayOf(when) : -1
      if (index < 0) continue
      const known = found.get(key)
      if (known) known.paths.push(m.path)
      else found.set(key, { e: c, index, paths: [m.path], fell: m.status === 'fell' || m.status === 'went_quiet' })
    }
  const byBucket = new Map<number, { e: Evidence; paths: string[]; fell: boolean }[]>()
  for (const f of found.values()) byBucket.set(f.index, [...(byBucket.get(f.index) ?? []), f])
  const markers: ChartMarker[] = [...byBucket.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, list]) => ({
      index,
      tone: list.every((f) => f.fell) ? 'poor' : list.some((f) => f.fell) ? 'ni' : 'good',
      label: (
        <ul class="evidence">
          {list.map((f) => (
            <li>
              <EvidenceLine e={f.e} timezone={timezone} at={at} /> <span class="muted">(behind {f.paths.join(', ')})</span>
            </li>
          ))}
        </ul>
      ),
    }))
  const site = answer.site
  return (
    <>
      <section class="card" aria-labelledby="anomalies-title" data-read="/api/v1/anomalies">
        <h2 id="anomalies-title">Visits against the period before</h2>
        <Tiles
          tiles={[
            ['current', 'Visits', count(site.current), `${signed(site.relativeChange)} on the period before`],
            ['previous', 'The period before', count(site.previous)],
            ['movers', 'Pages that moved', count(movers.length)],
          ]}
        />
        <SeriesChart
          name="anomalies"
          label={`Visits by ${interval}, ${count(site.current)} in all against ${count(site.previous)} the period before; ${markers.length} changes marked`}
          buckets={buckets}
          series={[
            { name: 'Visits', values: points.map((p) => p.visits), tone: 'main' },
            { name: 'The period before', values: points.map((p) => p.comparison?.visits ?? null), tone: 'grey' },
          ]}
          markers={markers}
        />
      </section>
      <section class="card" aria-labelledby="movers-title">
        <h2 id="movers-title">Pages that moved</h2>
        <p class="muted small">
          A page is listed when it had at least {answer.rule.minVisits} visits in one of the two periods and moved by at least{' '}
          {answer.rule.minChange} visits and {percent(answer.rule.minRelativeChange)}. Largest move first.
        </p>
        {movers.length ? (
          <ul class="cause-cards">
            {movers.map((m) => {
              const [tone, label] = MOVES[m.status]
              return (
                <li class="cause-card" data-path={m.path}>
                  <div class="row">
                    <a href={at('page', { path: m.path })} class="group-title">
                      {m.path}
                    </a>
                    <span class={`badge ${tone}`}>{label}</span>
                  </div>
                  <p class="mover-figs">
                    <strong data-current={m.current}>{count(m.current)}</strong> visits, against {count(m.previous)} before (
                    {signed(m.relativeChange)}); {m.change >= 0 ? 'added' : 'took'} {percent(Math.abs(m.impact ?? 0), 1)}{' '}
                    {m.change >= 0 ? 'to' : 'from'} the site's visits
                  </p>
                  {m.search ? (
                    <p class="small">
                      Google: {SEARCH_DIAGNOSES[m.search.diagnosis] ?? m.search.diagnosis} ({m.search.change.clicks > 0 ? '+' : ''}
                      {count(m.search.change.clicks)} clicks)
                    </p>
                  ) : null}
                  {m.candidates.length ? (
                    <>
                      <p class="small muted">What changed around then:</p>
                      <ul class="evidence">
                        {m.candidates.slice(0, 4).map((c) => (
                          <li>
                            <EvidenceLine e={c} timezone={timezone} at={at} />
                          </li>
                        ))}
                      </ul>
                    </>
                  ) : (
                    <p class="small muted">No change on the page or the site was detected around then.</p>
                  )}
                </li>
              )
            })}
          </ul>
        ) : (
          <Empty
            why="No page moved much against the period before."
            next="Pages are listed when their visits rise or fall by a quarter or more; try a longer range."
          />
        )}
      </section>
    </>
  )
}
