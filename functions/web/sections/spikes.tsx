import type { AnswerOf } from '../api'
import { count, dateTime } from '../format'
import { Empty, type SectionProps, Unavailable } from './parts'

/** A burst of visitors, with the source that brought it. */
type Spike = AnswerOf<'GET', '/api/v1/spikes'>['spikes'][number]

/** The spikes section: each burst of visitors well above the usual for its hour or day, with what brought it. */
export function Spikes({ answers, timezone }: SectionProps<[AnswerOf<'GET', '/api/v1/spikes'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Spikes" />
  const spikes: Spike[] = answer.spikes
  const rule = answer.rule
  return (
    <section class="card" aria-labelledby="spikes-title" data-read="/api/v1/spikes">
      <h2 id="spikes-title">
        {count(spikes.length)} {spikes.length === 1 ? 'spike' : 'spikes'}
      </h2>
      <p class="muted small">
        An {rule.interval} counts as a spike when its visitors are far above the same {rule.interval}s of the {rule.baselineWeeks} weeks
        before, with at least {rule.minExcess} more visitors than expected.
      </p>
      {spikes.length ? (
        <ul class="groups spikes">
          {spikes.map((s) => (
            <li data-spike={s.id}>
              <div class="group-main">
                <strong>
                  {dateTime(s.start, timezone)} to {dateTime(s.end, timezone).split(', ').at(-1)}
                </strong>
                <span class="muted small">
                  {s.source ? (
                    <>
                      Mostly from{' '}
                      {s.source.referrerUrl ? (
                        <a href={s.source.referrerUrl} rel="noreferrer">
                          {s.source.value}
                        </a>
                      ) : (
                        s.source.value
                      )}{' '}
                      ({count(s.source.visitors)} visitors)
                    </>
                  ) : (
                    'No single source stands out'
                  )}
                </span>
              </div>
              <span class="group-fig" data-visitors={s.visitors}>
                <strong>{count(s.visitors)}</strong> <span class="muted small">visitors</span>
              </span>
              <span class="group-fig">
                <span class="muted small">expected</span> {count(s.expected)}
              </span>
              <span class="stack" role="img" aria-label={`${count(s.visitors)} visitors against ${count(s.expected)} expected`}>
                <span class="base" style={`width:${((s.expected / Math.max(1, s.visitors)) * 100).toFixed(1)}%`} />
                <span class="extra" style={`width:${((1 - s.expected / Math.max(1, s.visitors)) * 100).toFixed(1)}%`} />
              </span>
            </li>
          ))}
        </ul>
      ) : (
        <Empty
          why="No spikes in this range: traffic stayed within its usual band."
          next="Try a longer range; spike alerts can be set in the site's alert settings."
        />
      )}
    </section>
  )
}
