import type { AnswerOf } from '../api'
import { ago, clock, count, country, dateTime, duration } from '../format'
import { type Action, FeedEntry } from './feed'
import { Empty, type SectionProps, Unavailable } from './parts'

/** A visitor's day on the site, as the list and a visitor's timeline have it. */
type Journey = NonNullable<AnswerOf<'GET', '/api/v1/journeys'>['journeys']>[number]

const where = (j: Journey) =>
  [j.source ? `from ${j.source}` : 'direct', country(j.country), [j.device, j.browser].filter(Boolean).join(', ')]
    .filter(Boolean)
    .join(' · ')

/** The journeys section: the range's visitors, newest first, each with landing and exit page and time spent; with `visitor`, that visitor's timeline. */
export function Journeys({ answers, timezone, now, at, query }: SectionProps<[AnswerOf<'GET', '/api/v1/journeys'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Journeys" />
  if (answer.journey) {
    const j: Journey = answer.journey
    const events: Action[] = answer.events!
    return (
      <>
        <p>
          <a href={at('journeys')}>All journeys</a>
        </p>
        <section class="card" aria-labelledby="journey" data-read="/api/v1/journeys">
          <h2 id="journey">
            {dateTime(j.firstSeen, timezone)}: {duration(j.duration)} on the site
          </h2>
          <p class="muted">
            {count(j.pageviews)} {j.pageviews === 1 ? 'page' : 'pages'} in {count(j.visits)} {j.visits === 1 ? 'visit' : 'visits'} ·{' '}
            {where(j)}
          </p>
          <ol class="feed timeline">
            {events.map((e) => (
              <FeedEntry a={e} time={clock(e.timestamp, timezone)} title={dateTime(e.timestamp, timezone)} />
            ))}
          </ol>
          <p class="muted small spaced">{answer.note}</p>
        </section>
      </>
    )
  }
  // a list's answer has its journeys, total and offset
  const journeys: Journey[] = answer.journeys!
  const total = answer.total!
  const offset = answer.offset!
  return (
    <section class="card" aria-labelledby="journeys" data-read="/api/v1/journeys">
      <h2 id="journeys">
        {count(total)} {total === 1 ? 'visitor' : 'visitors'}, the latest first
      </h2>
      {journeys.length ? (
        <>
          <ul class="journeys">
            {journeys.map((j) => (
              <li data-visitor={j.visitor}>
                <a href={at('journeys', { visitor: j.visitor })} class="journey-path">
                  <span>{j.landingPage}</span>
                  {j.exitPage !== j.landingPage || j.pageviews > 1 ? (
                    <>
                      {' '}
                      <span aria-hidden="true">→</span> <span>{j.exitPage}</span>
                    </>
                  ) : null}
                </a>
                <span class="journey-facts">
                  <strong data-duration={j.duration}>{duration(j.duration)}</strong> · {count(j.pageviews)}{' '}
                  {j.pageviews === 1 ? 'page' : 'pages'}
                </span>
                <span class="muted small">
                  <time datetime={j.lastSeen} title={dateTime(j.lastSeen, timezone)}>
                    {ago(j.lastSeen, now)}
                  </time>{' '}
                  · {where(j)}
                </span>
              </li>
            ))}
          </ul>
          <nav class="pager" aria-label="More journeys">
            {offset > 0 ? (
              <a href={at('journeys', { ...offsetOf(query), offset: String(Math.max(0, offset - journeys.length)) })}>Newer</a>
            ) : (
              <span />
            )}
            <span class="muted small">
              {count(offset + 1)}–{count(offset + journeys.length)} of {count(total)}
            </span>
            {answer.nextOffset !== null && answer.nextOffset !== undefined ? (
              <a href={at('journeys', { ...offsetOf(query), offset: String(answer.nextOffset) })}>Older</a>
            ) : (
              <span />
            )}
          </nav>
          <p class="muted small">{answer.note}</p>
        </>
      ) : (
        <Empty why="No visitors in this range." next="Pick a longer range, or remove a filter." />
      )}
    </section>
  )
}

/** The journeys' own parameters kept across pages (the range and filters are kept by every link). */
const offsetOf = (query: Record<string, string>): Record<string, string> => ({ limit: query.limit ?? '25' })
