import type { AnswerOf } from '../api'
import { count, day, percent } from '../format'
import { signed } from './anomalies'
import { EvidenceLine } from './changes'
import { Empty, type SectionProps, Tiles, Unavailable } from './parts'

/** A page past its best, with why it faded. */
type Fading = AnswerOf<'GET', '/api/v1/decay'>['pages'][number]

/** What each diagnosis says, for people. */
const DIAGNOSES: Record<string, [tone: string, label: string, why: string]> = {
  page_removed: ['poor', 'Removed', 'The crawler last found the page gone (404 or 410).'],
  content_changed: ['ni', 'Content changed', 'Its title, heading or text changed since its best weeks.'],
  lost_search: ['ni', 'Lost search', 'Most of the lost visits came from search engines.'],
  lost_referral: ['ni', 'Lost referrals', 'Most of the lost visits came from links on other sites.'],
  lost_social: ['ni', 'Lost social', 'Most of the lost visits came from social networks.'],
  lost_ai: ['ni', 'Lost AI', 'Most of the lost visits came from AI assistants.'],
  lost_email: ['ni', 'Lost e-mail', 'Most of the lost visits came from e-mail.'],
  lost_direct: ['ni', 'Lost direct', 'Most of the lost visits came without a referrer.'],
  lost_paid: ['ni', 'Lost paid', 'Most of the lost visits came from paid campaigns.'],
  lost_other: ['ni', 'Lost other', 'The lost visits came from several places.'],
  no_visits: ['poor', 'No visits', 'Nobody visits it any more.'],
}

/** The decay section: pages past their best, each drawn against its peak, with why it faded. */
export function Decay({ answers, at, timezone }: SectionProps<[AnswerOf<'GET', '/api/v1/decay'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Fading pages" />
  const pages: Fading[] = answer.pages
  const { rule, site, windows } = answer
  return (
    <>
      <section class="card" aria-labelledby="decay-title" data-read="/api/v1/decay">
        <h2 id="decay-title">The last {rule.windowDays} days against the best of the year</h2>
        <Tiles
          tiles={[
            [
              'current',
              `Site visits, last ${rule.windowDays} days`,
              count(site.current),
              `${day(windows.current.from)} to ${day(windows.current.to)}`,
            ],
            [
              'peak',
              'Its best 28 days',
              count(site.peak),
              site.peakFrom && site.peakTo ? `${day(site.peakFrom)} to ${day(site.peakTo)}` : 'no visits in the last year',
            ],
            ['change', 'Change', signed(site.change)],
            ['fading', 'Fading pages', count(pages.length)],
          ]}
        />
        <p class="muted small spaced">
          A page is listed when its best {rule.windowDays} days of the last year had at least {count(rule.minPeakVisits)} visits and the
          last {rule.windowDays} days are down by {percent(rule.minFall)} or more, and still by {percent(rule.minAdjustedFall)} once the
          whole site's change is taken out. Most visits lost first.
        </p>
      </section>
      <section class="card" aria-labelledby="fading-title">
        <h2 id="fading-title">Fading pages</h2>
        {pages.length ? (
          <ul class="cause-cards">
            {pages.map((p) => {
              const [tone, label, why] = DIAGNOSES[p.diagnosis.kind] ?? ['ni', p.diagnosis.kind, '']
              const share = p.peak ? Math.min(1, p.current / p.peak) : 0
              return (
                <li class="cause-card" data-path={p.path}>
                  <div class="row">
                    <a href={at('page', { path: p.path })} class="group-title">
                      {p.path}
                    </a>
                    <span class={`badge ${tone}`} title={`${percent(p.diagnosis.confidence)} confidence`}>
                      {label}
                    </span>
                  </div>
                  <p class="mover-figs">
                    <strong data-current={p.current}>{count(p.current)}</strong> visits in the last {rule.windowDays} days, against{' '}
                    <span data-peak={p.peak}>{count(p.peak)}</span> at its best ({day(p.peakFrom)} to {day(p.peakTo)}):{' '}
                    <strong>{count(p.lost)} lost</strong> ({signed(p.change)}; {signed(p.adjustedChange)} with the site's own change taken
                    out)
                  </p>
                  <span class="stack against-peak" role="img" aria-label={`${percent(share)} of its peak`}>
                    <span class="extra" style={`width:${(share * 100).toFixed(1)}%`} />
                  </span>
                  <p class="small muted">
                    {why} {p.refreshed ? 'Its text has been changed since its peak.' : ''}
                  </p>
                  {p.diagnosis.evidence.length ? (
                    <ul class="evidence">
                      {p.diagnosis.evidence.map((e) => (
                        <li>
                          {e.channel}: {count(e.peak)} → {count(e.current)} visits ({percent(e.share)} of the loss)
                        </li>
                      ))}
                      {p.contentChanges.map((c) => (
                        <li>
                          <EvidenceLine e={c} timezone={timezone} at={at} />
                        </li>
                      ))}
                    </ul>
                  ) : null}
                </li>
              )
            })}
          </ul>
        ) : (
          <Empty
            why="No page is fading: every page with enough visits holds at least 70% of its best 28 days."
            next="Decay looks back a year; a young site has little to compare with yet."
          />
        )}
      </section>
    </>
  )
}
