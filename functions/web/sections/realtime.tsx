import type { AnswerOf } from '../api'
import { ago, clock, count, country } from '../format'
import { pageNonce } from '../security'
import { FeedEntry } from './feed'
import { BarList, Empty, type SectionProps, Tiles } from './parts'

/** The realtime section: the live figures, the last 30 minutes as minute bars, the active pages and sources, and the activity feed. */
export function Realtime({
  answers,
  timezone,
  now,
  at,
}: SectionProps<[AnswerOf<'GET', '/api/v1/realtime'>, AnswerOf<'GET', '/api/v1/activity'>]>) {
  const [live, activity] = answers
  const series = live.series
  const max = Math.max(1, ...series.map((s) => s.visitors))
  const actions = activity.available ? activity.actions : []
  return (
    <>
      <div id="realtime">
        <section class="card" aria-label="Live visitors" data-read="/api/v1/realtime">
          <Tiles
            tiles={[
              ['now', 'Visitors in the last 5 minutes', count(live.now)],
              ['halfHour', 'Visitors in the last 30 minutes', count(live.halfHour)],
            ]}
          />
          <figure class="minutes-fig">
            <div class="minutes" role="img" aria-label={`Visitors per minute over the last 30 minutes, at most ${max} in a minute`}>
              {series.map((s) => (
                <span
                  class="minute"
                  data-visitors={s.visitors}
                  title={`${clock(s.timestamp, timezone)}: ${s.visitors} ${s.visitors === 1 ? 'visitor' : 'visitors'}`}
                  style={`height:${s.visitors ? Math.max(4, (s.visitors / max) * 100).toFixed(1) : 0}%`}
                />
              ))}
            </div>
            <figcaption class="axis-row muted small">
              <span>30 min ago</span>
              <span>Visitors per minute (most: {max})</span>
              <span>now</span>
            </figcaption>
          </figure>
        </section>
        <div class="panels">
          <section class="card panel" aria-labelledby="rt-pages">
            <h2 id="rt-pages">Active pages</h2>
            {live.pages.length ? (
              <BarList
                label="Page"
                unit="Visitors"
                rows={live.pages.map((p) => ({ value: p.value, n: p.visitors }))}
                link={(path) => (path.startsWith('/') ? at('page', { path }) : null)}
              />
            ) : (
              <Empty why="No pages viewed in the last 30 minutes." />
            )}
          </section>
          <section class="card panel" aria-labelledby="rt-sources">
            <h2 id="rt-sources">Sources</h2>
            {live.sources.length ? (
              <BarList label="Source" unit="Visitors" rows={live.sources.map((p) => ({ value: p.value, n: p.visitors }))} />
            ) : (
              <Empty why="No visits in the last 30 minutes." />
            )}
          </section>
        </div>
        <section class="card" aria-labelledby="rt-feed" data-read="/api/v1/activity">
          <h2 id="rt-feed">What visitors are doing</h2>
          {!activity.available ? (
            <Empty
              why="This data source records no single actions."
              next="The feed shows the first-party collector's page loads, clicks and errors."
            />
          ) : actions.length ? (
            <ol class="feed">
              {actions.slice(0, FEED).map((a) => (
                <FeedEntry
                  a={a}
                  time={ago(a.timestamp, now)}
                  title={clock(a.timestamp, timezone)}
                  who={[a.source ? `from ${a.source}` : 'direct', country(a.country), [a.device, a.browser].filter(Boolean).join(', ')]}
                />
              ))}
              {actions.length > FEED ? (
                <li class="muted small">{`and ${count(actions.length - FEED)} earlier actions in the last 30 minutes`}</li>
              ) : null}
            </ol>
          ) : (
            <Empty
              why="Nobody has been on the site in the last 30 minutes."
              next="Page loads, clicks and errors show here as they happen; this page refreshes every 30 seconds."
            />
          )}
        </section>
      </div>
      <script nonce={pageNonce()} dangerouslySetInnerHTML={{ __html: REFRESH }} />
    </>
  )
}

/** The newest actions the feed shows; the rest are counted. */
const FEED = 40

/** Refreshes the section in place every 30 seconds while the tab is visible. */
const REFRESH =
  "(function(){setInterval(function(){if(document.hidden)return;fetch(location.href).then(function(r){return r.ok?r.text():null}).then(function(h){if(!h)return;var d=new DOMParser().parseFromString(h,'text/html').getElementById('realtime'),el=document.getElementById('realtime');if(d&&el)el.replaceWith(d)})},30000)})()"
