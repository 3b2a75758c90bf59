import type { AnswerOf } from '../api'
import { count, percent } from '../format'
import { Empty, type SectionProps, SeriesChart, Tiles, bucketLabel } from './parts'

/** Search Console's figures: the totals, a day's, a query's or a page's. */
type Metrics = NonNullable<AnswerOf<'GET', '/api/v1/search'>['totals']>
/** A query's figures with their change against the period before (a page's have the same, with its path). */
type Row = Omit<NonNullable<AnswerOf<'GET', '/api/v1/search'>['queries']>[number], 'query'>

const position = (p: number | null) => (p === null ? '–' : p.toFixed(1))
const ctr = (c: number | null) => (c === null ? '–' : percent(c, 1))

/** A change in words: more clicks is up; a higher position number is worse. */
function change(key: keyof Metrics, c: Row['change'] | undefined) {
  const v = c?.[key]
  if (v === null || v === undefined) return null
  if (v === 0) return 'as before'
  const arrow = v > 0 ? '↑' : '↓'
  if (key === 'ctr') return `${arrow} ${(Math.abs(v) * 100).toFixed(1)} points`
  if (key === 'position') return `${v > 0 ? 'down' : 'up'} ${Math.abs(v).toFixed(1)} places`
  return `${arrow} ${count(Math.abs(v))}`
}

const SORTS = ['clicks', 'impressions', 'ctr', 'position'] as const
type Sort = (typeof SORTS)[number]
const SORT_NAMES: Record<Sort, string> = { clicks: 'Clicks', impressions: 'Impressions', ctr: 'Click rate', position: 'Position' }

/** The search section: Search Console's totals with their changes, clicks and impressions by day, the position over time, and the queries and landing pages, sortable. */
export function Search({ answers, at, query, shared }: SectionProps<[AnswerOf<'GET', '/api/v1/search'>]>) {
  const [answer] = answers
  if (!answer.connected)
    return (
      <section class="card" data-read="/api/v1/search">
        <Empty
          why="This site is not connected to Google Search Console."
          next={
            shared ? (
              'Its owners can connect it in the site settings.'
            ) : (
              <>
                Connect a Google account and choose the Search Console property in the{' '}
                <a href={at('settings/integrations')}>site's integrations</a> (owners and admins); the last 16 months are imported, then
                every day.
              </>
            )
          }
        />
      </section>
    )
  // a connected site's answer has its totals
  const totals = answer.totals!
  const delta = answer.change
  const series = answer.series ?? []
  const sort: Sort = (SORTS as readonly string[]).includes(query.sort) ? (query.sort as Sort) : 'clicks'
  const sorted = <T extends Metrics>(rows: T[]) =>
    [...rows].sort((a, b) =>
      sort === 'position'
        ? (a.position ?? Number.POSITIVE_INFINITY) - (b.position ?? Number.POSITIVE_INFINITY)
        : (b[sort] ?? 0) - (a[sort] ?? 0),
    )
  const table = (label: string, rows: (Row & { name: string; href?: string })[]) => (
    <section class="card" aria-label={label} data-table={label}>
      <h2>{label}</h2>
      {rows.length ? (
        <table class="pages-table">
          <thead>
            <tr>
              <th scope="col">{label === 'Queries' ? 'Query' : 'Landing page'}</th>
              {SORTS.map((k) => (
                <th
                  scope="col"
                  class={`num${k === 'ctr' || k === 'impressions' ? ' opt' : ''}`}
                  aria-sort={k === sort ? (k === 'position' ? 'ascending' : 'descending') : undefined}
                >
                  <a href={at('search', { sort: k })}>{SORT_NAMES[k]}</a>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {sorted(rows).map((r) => (
              <tr data-name={r.name}>
                <td class="cell-wrap">{r.href ? <a href={r.href}>{r.name}</a> : r.name}</td>
                <td class="num" data-clicks={r.clicks}>
                  {count(r.clicks)}
                  <span class="change">{change('clicks', r.change)}</span>
                </td>
                <td class="num opt">{count(r.impressions)}</td>
                <td class="num opt">{ctr(r.ctr)}</td>
                <td class="num">{position(r.position)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <Empty why="None in this range." next="Search Console reports a day two or three days later; try a longer range." />
      )}
    </section>
  )
  const buckets = series.map((s) => bucketLabel(s.date, 'day'))
  return (
    <>
      <section class="card" aria-label="Search Console" data-read="/api/v1/search">
        <p class="muted small">From Google Search Console, {answer.siteUrl}. Changes are against the period before.</p>
        <Tiles
          tiles={[
            ['clicks', 'Clicks', count(totals.clicks), change('clicks', delta)],
            ['impressions', 'Impressions', count(totals.impressions), change('impressions', delta)],
            ['ctr', 'Click rate', ctr(totals.ctr), change('ctr', delta)],
            ['position', 'Average position', position(totals.position), change('position', delta)],
          ]}
        />
        {series.length ? (
          <>
            <SeriesChart
              name="search"
              label={`Clicks and impressions by day: ${count(totals.clicks)} clicks, ${count(totals.impressions)} impressions`}
              buckets={buckets}
              series={[
                { name: 'Clicks', values: series.map((s) => s.clicks), tone: 'main' },
                { name: 'Impressions', values: series.map((s) => s.impressions), tone: 'soft', axis: 'right' },
              ]}
            />
            <h3 class="spaced">Position over time</h3>
            <SeriesChart
              name="position"
              label={`Average position by day, ${position(totals.position)} over the range`}
              buckets={buckets}
              series={[
                {
                  name: 'Average position',
                  values: series.map((s) => s.position),
                  tone: 'main',
                  invert: true,
                  format: (v) => `position ${v.toFixed(1)}`,
                },
              ]}
            />
          </>
        ) : null}
      </section>
      {table(
        'Queries',
        (answer.queries ?? []).map((q) => ({ ...q, name: q.query })),
      )}
      {table(
        'Pages',
        (answer.pages ?? []).map((p) => ({ ...p, name: p.path, href: at('page', { path: p.path }) })),
      )}
    </>
  )
}
