import type { AnswerOf } from '../api'
import { ago, count, country, dateTime } from '../format'
import { BarList, Empty, type SectionProps, Sparkline, Tiles, Unavailable } from './parts'

/** An error group, as the list and a group's own answer have it. */
type Group = NonNullable<AnswerOf<'GET', '/api/v1/errors'>['groups']>[number]
/** A group's occurrences by one dimension: page, browser, operating system, device or country. */
type Breakdown = NonNullable<AnswerOf<'GET', '/api/v1/errors'>['breakdowns']>['pages']

/** A figure against the previous window's, in words. */
function versus(now: number, before: number | undefined) {
  if (before === undefined) return null
  if (before === 0) return now ? 'none before' : 'as before'
  const change = Math.round(((now - before) / before) * 100)
  return change === 0 ? 'as before' : `${change > 0 ? '↑' : '↓'} ${Math.abs(change)}% on the period before`
}

const title = (g: Group) => (g.errorName ? `${g.errorName}: ${g.message}` : g.message || '(no message)')

/** The errors section: the window's groups with their counts and trend; with `fingerprint`, one group in full. */
export function Errors({ answers, timezone, now, at, query }: SectionProps<[AnswerOf<'GET', '/api/v1/errors'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="JavaScript errors" />
  if (answer.group) return <ErrorGroup answer={answer} timezone={timezone} now={now} at={at} query={query} />
  // an available answer has its groups, summary and range; the schema marks them optional for the unavailable one
  const groups: Group[] = answer.groups!
  const summary = answer.summary!
  const interval = answer.range!.interval
  return (
    <>
      <section class="card" aria-label="Errors in this range" data-read="/api/v1/errors">
        <Tiles
          tiles={[
            ['errors', 'Errors', count(summary.errors), versus(summary.errors, answer.previous?.errors)],
            ['groups', 'Distinct errors', count(summary.groups), versus(summary.groups, answer.previous?.groups)],
            ['visitors', 'Visitors affected', count(summary.visitors), versus(summary.visitors, answer.previous?.visitors)],
          ]}
        />
      </section>
      <section class="card" aria-labelledby="error-groups">
        <h2 id="error-groups">Errors by message</h2>
        {groups.length ? (
          <ul class="groups">
            {groups.map((g) => (
              <li data-fingerprint={g.fingerprint}>
                <div class="group-main">
                  <a href={at('errors', { fingerprint: g.fingerprint })} class="group-title">
                    {title(g)}
                  </a>
                  <span class="muted small">
                    Mostly on {g.topPath} in {g.topBrowser}
                    {g.paths > 1 ? ` · on ${count(g.paths)} pages` : ''} · first seen {ago(g.firstSeen, now)}, last seen{' '}
                    {ago(g.lastSeen, now)}
                  </span>
                </div>
                <span class="group-fig" data-count={g.count}>
                  <strong>{count(g.count)}</strong> <span class="muted small">times</span>
                </span>
                <span class="group-fig" data-visitors={g.visitors}>
                  <strong>{count(g.visitors)}</strong> <span class="muted small">{g.visitors === 1 ? 'visitor' : 'visitors'}</span>
                </span>
                <Sparkline values={g.sparkline} label={`Occurrences per ${interval}`} />
              </li>
            ))}
          </ul>
        ) : (
          <Empty
            why="No JavaScript errors in this range."
            next="The tracker reports uncaught errors and rejected promises on its own; try a longer range if you expected some."
          />
        )}
      </section>
    </>
  )
}

/** One error group: its message, when it was seen, its trend, where it happens, and its latest occurrences. */
function ErrorGroup({
  answer,
  timezone,
  now,
  at,
}: {
  answer: AnswerOf<'GET', '/api/v1/errors'>
  timezone: string
  now: number
  at: SectionProps['at']
  query: Record<string, string>
}) {
  // a group's answer has its breakdowns, range and latest occurrences
  const g: Group = answer.group!
  const b = answer.breakdowns!
  const interval = answer.range!.interval
  const rows = (list: Breakdown) => list.map((r) => ({ value: r.value, n: r.count }))
  return (
    <>
      <p>
        <a href={at('errors')}>All errors</a>
      </p>
      <section class="card" aria-label="Error" data-read="/api/v1/errors">
        <h2>{g.errorName || 'Error'}</h2>
        <pre class="code error-message">{g.message || '(no message)'}</pre>
        <Tiles
          tiles={[
            ['count', 'Times seen', count(g.count)],
            ['visitors', 'Visitors affected', count(g.visitors)],
            ['paths', 'Pages', count(g.paths)],
            ['firstSeen', 'First seen', ago(g.firstSeen, now), dateTime(g.firstSeen, timezone)],
            ['lastSeen', 'Last seen', ago(g.lastSeen, now), dateTime(g.lastSeen, timezone)],
          ]}
        />
        <p class="muted small spaced">
          Occurrences per {interval} <Sparkline values={g.sparkline} label={`Occurrences per ${interval}`} />
        </p>
      </section>
      <div class="panels">
        {(
          [
            ['pages', 'Page', (v: string) => v],
            ['browsers', 'Browser', (v: string) => v],
            ['os', 'Operating system', (v: string) => v],
            ['devices', 'Device', (v: string) => v],
            ['countries', 'Country', country],
          ] as const
        ).map(([key, label, name]) =>
          b[key]?.length ? (
            <section class="card panel" aria-label={`By ${label.toLowerCase()}`}>
              <BarList label={label} unit="Times" rows={rows(b[key])} name={name} />
            </section>
          ) : null,
        )}
      </div>
      <section class="card" aria-labelledby="recent">
        <h2 id="recent">Latest occurrences</h2>
        <ol class="feed">
          {answer.recent!.map((r) => (
            <li>
              <time datetime={r.timestamp} title={dateTime(r.timestamp, timezone)}>
                {ago(r.timestamp, now)}
              </time>
              <span class="kind kind-error">error</span>
              <span class="what">
                on <strong>{r.path}</strong>
              </span>
              <span class="who muted small">{[country(r.country), r.device, r.browser, r.os].filter(Boolean).join(' · ')}</span>
            </li>
          ))}
        </ol>
      </section>
    </>
  )
}
