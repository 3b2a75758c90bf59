import type { AnswerOf } from '../api'
import { count, dateTime, duration, percent } from '../format'
import { Empty, type SectionProps, Sparkline } from './parts'

/** A page of the site, crawled or visited, with its status, visitors and trend. */
type PageRow = AnswerOf<'GET', '/api/v1/pages'>['pages'][number]

const STATUS: Record<string, [string, string]> = {
  active: ['good', 'Live'],
  new: ['ni', 'New'],
  removed: ['poor', 'Removed'],
}
const FILTERS = [
  ['all', 'All'],
  ['active', 'Live'],
  ['new', 'New'],
  ['removed', 'Removed'],
] as const

/** The pages section: the site's crawled pages with their status, visitors and trend; a page opens its detail. */
export function Pages({ answers, timezone, at, query }: SectionProps<[AnswerOf<'GET', '/api/v1/pages'>]>) {
  const [answer] = answers
  const pages: PageRow[] = answer.pages
  const current = query.filter ?? 'all'
  return (
    <section class="card" aria-labelledby="pages-title" data-read="/api/v1/pages">
      <h2 id="pages-title">
        {count(answer.total)} {answer.total === 1 ? 'page' : 'pages'}
      </h2>
      <nav class="tabs" aria-label="Pages by status">
        {FILTERS.map(([value, label]) => (
          <a href={at('pages', { filter: value })} aria-current={value === current ? 'page' : undefined}>
            {label} ({count(answer.counts[value] ?? 0)})
          </a>
        ))}
      </nav>
      {pages.length ? (
        <table class="pages-table">
          <thead>
            <tr>
              <th scope="col">Page</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Visitors
              </th>
              <th scope="col" class="opt">
                By day
              </th>
              <th scope="col" class="num opt">
                Scrolled
              </th>
              <th scope="col" class="num opt">
                Time on page
              </th>
            </tr>
          </thead>
          <tbody>
            {pages.map((p) => {
              const [tone, label] = STATUS[p.status] ?? ['', p.status]
              return (
                <tr data-path={p.path}>
                  <td class="cell-wrap">
                    <a href={at('page', { path: p.path })}>{p.path}</a>
                    {p.title ? <span class="muted small page-title">{p.title}</span> : null}
                  </td>
                  <td>
                    <span
                      class={`badge ${tone}`}
                      title={[
                        p.httpStatus ? `HTTP ${p.httpStatus}` : '',
                        p.error ?? '',
                        p.launchedAt ? `first seen ${dateTime(p.launchedAt, timezone)}` : '',
                      ]
                        .filter(Boolean)
                        .join(' · ')}
                    >
                      {label}
                    </span>
                  </td>
                  <td class="num" data-visitors={p.visitors}>
                    {count(p.visitors)}
                  </td>
                  <td class="opt">{p.trend ? <Sparkline values={p.trend} label={`Visitors by ${answer.range.interval}`} /> : null}</td>
                  <td class="num opt">{p.scrollDepth === null ? '–' : percent(p.scrollDepth / 100)}</td>
                  <td class="num opt">{p.timeOnPage === null ? '–' : duration(p.timeOnPage)}</td>
                </tr>
              )
            })}
          </tbody>
        </table>
      ) : (
        <Empty
          why={current === 'all' ? 'No pages found yet.' : 'No pages with this status.'}
          next="Pages are found by crawling the site (its sitemap and links) and from the pages visitors view; turn on change detection in the site's settings."
        />
      )}
    </section>
  )
}
