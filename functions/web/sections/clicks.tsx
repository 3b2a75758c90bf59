import type { AnswerOf } from '../api'
import { count, percent } from '../format'
import { Empty, type SectionProps, Tiles, Unavailable } from './parts'

/** An element clicked, with its clicks, visitors and dead clicks. */
type ClickGroup = AnswerOf<'GET', '/api/v1/clicks'>['clicks'][number]

const TAGS: Record<string, string> = { a: 'Link', button: 'Button', input: 'Field', select: 'Menu', img: 'Image', summary: 'Toggle' }

/** The clicks section: what visitors click, each element with its clicks, visitors and dead clicks marked, opening its page's heatmap. */
export function Clicks({ answers, at, shared }: SectionProps<[AnswerOf<'GET', '/api/v1/clicks'>]>) {
  const [answer] = answers
  if (!answer.available) return <Unavailable what="Clicks" />
  const groups: ClickGroup[] = answer.clicks
  const { summary } = answer
  return (
    <>
      <section class="card" aria-label="Clicks in this range" data-read="/api/v1/clicks">
        <Tiles
          tiles={[
            ['clicks', 'Clicks', count(summary.clicks)],
            ['visitors', 'Visitors who clicked', count(summary.visitors)],
            [
              'deadClicks',
              'Dead clicks',
              count(summary.deadClicks),
              summary.clicks ? `${percent(summary.deadClicks / summary.clicks)} of clicks changed nothing` : undefined,
            ],
          ]}
        />
      </section>
      <section class="card" aria-labelledby="click-groups">
        <h2 id="click-groups">Most clicked</h2>
        {groups.length ? (
          <ul class="groups clicks">
            {groups.map((g) => (
              <li data-selector={g.selector}>
                <div class="group-main">
                  <span class="group-title">
                    <span class="kind">{TAGS[g.tag] ?? g.tag}</span> {g.text || <code>{g.selector}</code>}
                  </span>
                  <span class="muted small cell-wrap">
                    {g.text ? <code>{g.selector}</code> : null}
                    {g.url ? ` → ${g.url}` : ''} · mostly on{' '}
                    {shared ? (
                      g.topPath
                    ) : (
                      <a href={at('heatmap', { path: g.topPath })} title={`The heatmap of ${g.topPath}`}>
                        {g.topPath}
                      </a>
                    )}
                    {g.paths > 1 ? `, on ${count(g.paths)} pages` : ''}
                  </span>
                  {g.deadClicks ? (
                    <span>
                      <span class="badge poor" data-dead={g.deadClicks}>
                        {count(g.deadClicks)} dead ({percent(g.deadClicks / g.count)})
                      </span>{' '}
                      <span class="muted small">clicks that changed nothing on the page</span>
                    </span>
                  ) : null}
                  {!g.interactive ? <span class="badge ni">Not clickable: visitors expect it to be</span> : null}
                </div>
                <span class="group-fig" data-count={g.count}>
                  <strong>{count(g.count)}</strong> <span class="muted small">clicks</span>
                </span>
                <span class="group-fig" data-visitors={g.visitors}>
                  <strong>{count(g.visitors)}</strong> <span class="muted small">{g.visitors === 1 ? 'visitor' : 'visitors'}</span>
                </span>
                <span class="group-fig">{shared ? null : <a href={at('heatmap', { path: g.topPath })}>Heatmap</a>}</span>
              </li>
            ))}
          </ul>
        ) : (
          <Empty
            why="No clicks recorded in this range."
            next="The tracker records clicks on links and buttons on its own; try a longer range, or check that the snippet is installed."
          />
        )}
      </section>
    </>
  )
}
