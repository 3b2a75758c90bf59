import type { AnswerOf } from '../api'
import { ago, count, dateTime, duration, millis, percent } from '../format'
import { signed } from './anomalies'
import { CHANGE_NAMES, type Evidence, EvidenceLine } from './changes'
import { BarList, type ChartMarker, Empty, type SectionProps, SeriesChart, Sparkline, Tiles, Unavailable, bucketLabel } from './parts'

/** A likely cause of the page's last shift, with its evidence. */
type Cause = AnswerOf<'GET', '/api/v1/pages/detail'>['causes'][number]

const CAUSES: Record<string, string> = {
  page_change: 'The page changed',
  site_change: 'The site changed',
  source_shift: 'A source moved',
  search_rank_drop: 'It ranks lower in Google',
  search_demand_drop: 'Fewer people search for it',
  vitals_regression: 'It got slower',
  error_spike: 'More errors',
  backlink_lost: 'A link to it was lost',
  backlink_gained: 'A new link to it',
}

/** A moment's calendar day in the site's timezone, as the series names its days: 2026-12-07. */
const localDay = (iso: string, timeZone: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(Date.parse(iso))

const round = (n: unknown, digits = 1) => (typeof n === 'number' ? n.toLocaleString('en', { maximumFractionDigits: digits }) : '–')
const vital = (metric: unknown, v: unknown) => (typeof v !== 'number' ? '–' : metric === 'CLS' ? v.toFixed(2) : millis(v))

/** A cause's evidence in words, by its kind; a change or a link reads as the evidence lines elsewhere. */
function CauseEvidence({ cause, timezone, at }: { cause: Cause; timezone: string; at: SectionProps['at'] }) {
  const e = cause.evidence
  switch (cause.kind) {
    case 'source_shift':
      return (
        <p>
          Visits a day from <strong>{(e.source as string) || 'direct (no referrer)'}</strong>: {round(e.before)} before, {round(e.after)}{' '}
          after; {percent(Number(e.shareOfChange ?? 0))} of the move, {percent(Number(e.shareOfTraffic ?? 0))} of the page's visits.
        </p>
      )
    case 'error_spike':
      return (
        <p>
          JavaScript errors a day: {round(e.before)} before, {round(e.after)} after ({count(Number(e.errors ?? 0))} in all).{' '}
          <a href={at('errors')}>See the errors</a>
        </p>
      )
    case 'vitals_regression': {
      const base = e.baseline as { value: number; samples: number } | undefined
      const now = e.current as { value: number; samples: number } | undefined
      return (
        <p>
          {String(e.metric)} at the 75th percentile: {vital(e.metric, base?.value)} before, {vital(e.metric, now?.value)} after (
          {count(base?.samples ?? 0)} and {count(now?.samples ?? 0)} measurements). <a href={at('vitals')}>See web vitals</a>
        </p>
      )
    }
    case 'page_change':
    case 'site_change':
    case 'backlink_lost':
    case 'backlink_gained':
      return (
        <p>
          <EvidenceLine e={{ kind: cause.kind, ...(e as object) } as Evidence} timezone={timezone} at={at} />
        </p>
      )
    default:
      return <p>{cause.summary}</p>
  }
}

/** A page's detail: its visits by day with the changes and the shift marked, why it last moved (the causes ranked, with their evidence), where its visits come from, its engagement, errors, vitals and first 30 days. */
export function PageDetail({ answers, timezone, now, at, shared }: SectionProps<[AnswerOf<'GET', '/api/v1/pages/detail'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Page details" />
  const { page, totals, shift, engagement, first30 } = answer
  const series = answer.series
  const causes: Cause[] = answer.causes
  const changes = answer.changes
  const index = (date: string) => series.findIndex((s) => s.date === date.slice(0, 10))
  const markers: ChartMarker[] = []
  if (shift && index(shift.day) >= 0)
    markers.push({
      index: index(shift.day),
      tone: shift.direction === 'up' ? 'good' : 'poor',
      label: `visits ${shift.direction === 'up' ? 'rose' : 'fell'} from ${round(shift.before)} to ${round(shift.after)} a day (${signed(shift.change)})`,
    })
  for (const c of changes) {
    const i = c.detectedAt ? index(localDay(c.detectedAt, timezone)) : -1
    if (i >= 0) markers.push({ index: i, tone: 'note', label: <EvidenceLine e={c} timezone={timezone} at={at} /> })
  }
  markers.sort((a, b) => a.index - b.index)
  const sources = answer.drivers.sources
  const channels = answer.drivers.channels
  return (
    <>
      <section class="card" aria-labelledby="page-title" data-read="/api/v1/pages/detail">
        <h2 id="page-title" class="cell-wrap">
          {page.path}
        </h2>
        <p class="muted small">
          {page.launchedAt ? `Live since ${dateTime(page.launchedAt, timezone).split(',')[0]} (${ago(page.launchedAt, now)}). ` : ''}
          {shared ? null : <a href={at('heatmap', { path: page.path })}>Click heatmap</a>}
        </p>
        <Tiles
          tiles={[
            ['visits', 'Visits', count(totals.visits)],
            ['visitors', 'Visitors', count(totals.visitors)],
            ['pageviews', 'Pageviews', count(totals.pageviews)],
            ['scroll', 'Scrolled', engagement.scrollDepth === null ? '–' : percent(engagement.scrollDepth / 100)],
            ['time', 'Time on page', engagement.timeOnPage === null ? '–' : duration(engagement.timeOnPage)],
          ]}
        />
        <SeriesChart
          name="page"
          label={`Visits by day: ${count(totals.visits)} in all; ${markers.length} marked`}
          buckets={series.map((s) => bucketLabel(s.date, 'day'))}
          series={[
            { name: 'Visits', values: series.map((s) => s.visits), tone: 'main' },
            { name: 'Errors', values: series.map((s) => s.errors), tone: 'warm' },
          ]}
          markers={markers}
        />
      </section>
      <section class="card" aria-labelledby="causes-title">
        <h2 id="causes-title">
          {shift
            ? `Why its visits ${shift.direction === 'up' ? 'rose' : 'fell'} on ${bucketLabel(shift.day, 'day')}`
            : 'Why its visits moved'}
        </h2>
        {shift ? (
          causes.length ? (
            <ol class="cause-cards">
              {causes.map((c, i) => (
                <li class="cause-card" data-cause={c.kind}>
                  <div class="row">
                    <strong>
                      {i + 1}. {CAUSES[c.kind] ?? c.kind}
                    </strong>
                    <span class="badge" title="How confident this explanation is">
                      {percent(c.confidence)} sure
                    </span>
                  </div>
                  <span class="stack" role="img" aria-label={`${percent(c.confidence)} confidence`}>
                    <span class="extra" style={`width:${(c.confidence * 100).toFixed(1)}%`} />
                  </span>
                  <CauseEvidence cause={c} timezone={timezone} at={at} />
                </li>
              ))}
            </ol>
          ) : (
            <Empty
              why="Nothing that was measured explains this move."
              next="Causes come from the crawler's changes (turn on change detection), the sources of visits, web vitals, errors and Search Console."
            />
          )
        ) : (
          <Empty
            why="Its visits did not shift much in this range."
            next="A shift is a move of 30% and at least 10 visits between the 7 days before a day and the days after it; try a longer range."
          />
        )}
      </section>
      <div class="panels">
        <section class="card panel" aria-label="Sources">
          {sources.length ? (
            <BarList label="Source" unit="Visits" rows={sources.map((s) => ({ value: s.value || 'Direct', n: s.visits }))} />
          ) : (
            <Empty why="No visits in this range." />
          )}
        </section>
        <section class="card panel" aria-label="Channels">
          {channels.length ? (
            <BarList label="Channel" unit="Visits" rows={channels.map((s) => ({ value: s.value, n: s.visits }))} />
          ) : (
            <Empty why="No visits in this range." />
          )}
        </section>
        <section class="card panel" aria-labelledby="first30-title">
          <h2 id="first30-title">Its first {first30?.days ?? 30} days</h2>
          {first30 ? (
            <>
              <p>
                <strong>{count(first30.visits)}</strong> visits{first30.complete ? '' : ' so far'}
              </p>
              <Sparkline values={first30.byDay.map((d) => d.visits)} label="Visits on each of its first days" />
            </>
          ) : (
            <Empty why="Not known: it has no first visit yet." />
          )}
        </section>
        <section class="card panel" aria-labelledby="page-errors-title">
          <h2 id="page-errors-title">Errors on this page</h2>
          {answer.errors.summary.errors ? (
            <ul class="plain">
              {answer.errors.groups.slice(0, 5).map((g) => (
                <li>
                  <a href={at('errors', { fingerprint: g.fingerprint })} class="cell-wrap">
                    {g.errorName ? `${g.errorName}: ` : ''}
                    {g.message}
                  </a>{' '}
                  <span class="muted small">{count(g.count)} times</span>
                </li>
              ))}
            </ul>
          ) : (
            <Empty why="No JavaScript errors on this page in this range." />
          )}
        </section>
      </div>
      <section class="card" aria-labelledby="page-changes-title">
        <h2 id="page-changes-title">What the crawler saw</h2>
        {answer.snapshots.length ? (
          <ul class="plain">
            {answer.snapshots.slice(0, 10).map((s) => (
              <li class="cell-wrap">
                <span class={`badge ${s.removed || s.error ? 'poor' : 'good'}`}>
                  {s.removed ? 'Gone' : s.error ? 'Failed' : `HTTP ${s.status}`}
                </span>{' '}
                {dateTime(s.fetchedAt, timezone)}: {s.title ? `“${s.title}”, ` : ''}
                {count(s.wordCount)} words{s.error ? ` (${s.error})` : ''}
              </li>
            ))}
          </ul>
        ) : (
          <Empty why="The crawler has not read this page." next="Turn on change detection in the site's settings to keep its snapshots." />
        )}
        {changes.length ? (
          <p class="muted small spaced">
            {changes.length} changes: {changes.map((c) => CHANGE_NAMES[c.type ?? ''] ?? c.type).join(', ')}.
          </p>
        ) : null}
      </section>
    </>
  )
}
