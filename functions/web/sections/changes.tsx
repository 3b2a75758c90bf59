import type { AnswerOf } from '../api'
import { CHANGE_CATEGORIES } from '../../../lib/crawl/detect'
import { ago, count, dateTime } from '../format'
import { Empty, type SectionProps, SeriesChart, bucketLabel } from './parts'

/** A change or a note of the change feed. */
export type ChangeItem = AnswerOf<'GET', '/api/v1/changes'>['changes'][number]

/** A change's word diff. */
export type DiffAnswer = AnswerOf<'GET', '/api/v1/changes/diff'>

/** What each kind of change is called, for people. */
export const CHANGE_NAMES: Record<string, string> = {
  new_page: 'New page',
  removed: 'Page removed',
  text: 'Text',
  h1: 'Heading',
  title: 'Title',
  meta_description: 'Meta description',
  canonical: 'Canonical',
  noindex: 'No-index',
  status: 'HTTP status',
  redirect: 'Redirect',
  robots_txt: 'robots.txt',
  sitemap: 'Sitemap',
  annotation: 'Note',
}
const CATEGORY_NAMES: Record<string, string> = { content: 'Content', seo: 'SEO', technical: 'Technical', annotation: 'Notes' }
const CATEGORY_TONES: Record<string, string> = { content: 'kind-pageview', seo: 'kind-click', technical: 'kind-error', annotation: '' }

/** How many changes of a page come with their word diff read along (the rest open it on its own page). */
export const INLINE_DIFFS = 10
/** The changes a page lists at once; `offset` pages on. */
export const CHANGES_PAGE = 25

/** A change's word diff as it reads inline: equal runs as they are, added ones marked, removed ones struck. */
export function DiffRuns({ runs }: { runs: DiffAnswer['runs'] }) {
  return (
    <p class="diff">
      {runs.map((r) =>
        r.op === 'added' ? (
          <ins>
            <span class="sr-only">added: </span>
            {r.text}
          </ins>
        ) : r.op === 'removed' ? (
          <del>
            <span class="sr-only">removed: </span>
            {r.text}
          </del>
        ) : (
          r.text
        ),
      )}
    </p>
  )
}

/** The changes section: a strip of changes by day, the category tabs with their counts, and the feed with each change's word diff inline. */
export function Changes({
  answers,
  timezone,
  now,
  at,
  query,
}: SectionProps<[AnswerOf<'GET', '/api/v1/changes'>, ...AnswerOf<'GET', '/api/v1/changes/diff'>[]]>) {
  const [answer, ...rest] = answers
  const diffs: DiffAnswer[] = rest
  const items: ChangeItem[] = answer.changes
  const diffOf = new Map(diffs.map((d) => [d.id, d]))
  const byCategory: Record<string, number> = {}
  for (const [type, n] of Object.entries(answer.totals as Record<string, number>)) {
    const category = type === 'annotation' ? 'annotation' : CHANGE_CATEGORIES[type as keyof typeof CHANGE_CATEGORIES]
    if (category) byCategory[category] = (byCategory[category] ?? 0) + n
  }
  const current = query.category ?? ''
  const activity = answer.activity
  const offset = Number(answer.offset ?? 0)
  const limit = Number(query.limit ?? CHANGES_PAGE)
  return (
    <>
      <section class="card" aria-labelledby="changes-title" data-read="/api/v1/changes">
        <h2 id="changes-title">
          {count(answer.total)} {answer.total === 1 ? 'change' : 'changes'} and notes in this range
        </h2>
        {activity.length > 1 ? (
          <SeriesChart
            name="changes"
            label={`Changes by day: ${count(activity.reduce((s, a) => s + a.changes, 0))} in all`}
            buckets={activity.map((a) => bucketLabel(a.date, 'day'))}
            series={[{ name: 'Changes', values: activity.map((a) => a.changes), tone: 'main' }]}
          />
        ) : null}
        <nav class="tabs spaced" aria-label="Changes by kind">
          <a href={at('changes')} aria-current={current === '' ? 'page' : undefined}>
            All ({count(Object.values(byCategory).reduce((s, n) => s + n, 0))})
          </a>
          {Object.entries(CATEGORY_NAMES).map(([value, label]) => (
            <a href={at('changes', { category: value })} aria-current={value === current ? 'page' : undefined} data-category={value}>
              {label} ({count(byCategory[value] ?? 0)})
            </a>
          ))}
        </nav>
      </section>
      <section class="card" aria-label="The changes, newest first">
        {items.length ? (
          <ol class="change-feed">
            {items.map((c) => {
              const diff = diffOf.get(c.id)
              return (
                <li data-change={c.id} data-type={c.type}>
                  <div class="change-head">
                    <span class={`kind ${CATEGORY_TONES[c.category] ?? ''}`}>{CHANGE_NAMES[c.type] ?? c.type}</span>
                    <time datetime={c.at} title={dateTime(c.at, timezone)}>
                      {dateTime(c.at, timezone)} · {ago(c.at, now)}
                    </time>
                  </div>
                  <p class="change-summary">
                    {c.kind === 'annotation' ? (
                      <strong>{c.summary}</strong>
                    ) : c.path ? (
                      <>
                        <strong>{(CHANGE_NAMES[c.type] ?? c.type).replace(/^Page removed$/, 'Removed')}</strong> on{' '}
                        <a href={at('page', { path: c.path })}>{c.path}</a>
                      </>
                    ) : (
                      <strong>{c.summary}</strong>
                    )}
                  </p>
                  {diff ? (
                    <DiffRuns runs={diff.runs} />
                  ) : c.kind === 'change' && (c.before || c.after) && c.type !== 'text' ? (
                    <p class="diff">
                      {c.before ? (
                        <del>
                          <span class="sr-only">before: </span>
                          {c.before}
                        </del>
                      ) : null}
                      {c.before && c.after ? ' → ' : ''}
                      {c.after ? (
                        <ins>
                          <span class="sr-only">after: </span>
                          {c.after}
                        </ins>
                      ) : null}
                    </p>
                  ) : null}
                  <p class="muted small">
                    {c.type === 'text' ? `${count(c.wordsAdded)} words added, ${count(c.wordsRemoved)} removed. ` : ''}
                    {c.scope === 'site' && c.samplePaths.length
                      ? `${count(c.pages)} ${c.pages === 1 ? 'page' : 'pages'}, among them ${c.samplePaths.join(', ')}. `
                      : ''}
                    {c.diffable ? <a href={at('diff', { change_id: c.id })}>Whole word diff</a> : null}
                  </p>
                </li>
              )
            })}
          </ol>
        ) : (
          <Empty
            why={current || query.search ? 'No changes of this kind in this range.' : 'No changes detected and no notes in this range.'}
            next="The crawler reads the site's pages once a day when change detection is on (in the site's settings); notes are added from the dashboard's chart or the API. Try a longer range."
          />
        )}
        {answer.total > offset + items.length || offset > 0 ? (
          <nav class="pager" aria-label="More changes">
            {offset > 0 ? <a href={at('changes', { ...keepOwn(query), offset: String(Math.max(0, offset - limit)) })}>Newer</a> : <span />}
            <span class="muted small">
              {count(offset + 1)}–{count(offset + items.length)} of {count(answer.total)}
            </span>
            {answer.total > offset + items.length ? (
              <a href={at('changes', { ...keepOwn(query), offset: String(offset + items.length) })}>Older</a>
            ) : (
              <span />
            )}
          </nav>
        ) : null}
      </section>
    </>
  )
}

const keepOwn = (query: Record<string, string>) =>
  Object.fromEntries(Object.entries(query).filter(([k]) => k === 'category' || k === 'type' || k === 'search'))

/** What may lie behind a move, as the anomalies read lists it: a crawler change or a link lost or found. */
type Candidate = AnswerOf<'GET', '/api/v1/anomalies'>['pages'][number]['candidates'][number]
type ChangeEvidence = Extract<Candidate, { kind: 'page_change' | 'site_change' }>
type LinkEvidence = Exclude<Candidate, ChangeEvidence>
/**
 * A crawler change or a link found, as evidence beside a page that moved (anomalies, decay, a page's causes):
 * the kind, and the fields of either kind of candidate, each optional, so that one line reads them both.
 */
export type Evidence = { kind: Candidate['kind'] } & Partial<Omit<ChangeEvidence, 'kind'> & Omit<LinkEvidence, 'kind'>>

/** One piece of evidence in words: "Title changed on 7 Dec: A → B", "Link from example.com lost on 3 Dec". */
export function EvidenceLine({ e, timezone, at }: { e: Evidence; timezone: string; at: SectionProps['at'] }) {
  if (e.kind === 'backlink_lost' || e.kind === 'backlink_gained')
    return (
      <span>
        Link from <strong>{e.domain}</strong> {e.kind === 'backlink_lost' ? 'lost' : e.event === 'regained' ? 'back' : 'found'} on{' '}
        {day(e.day ?? '')}
        {e.anchor ? ` (“${e.anchor}”)` : ''}
        {e.visits ? `, it sent ${count(e.visits)} visits in the 30 days before` : ''}
      </span>
    )
  const name = CHANGE_NAMES[e.type ?? ''] ?? e.type
  const when = e.detectedAt ? dateTime(e.detectedAt, timezone).split(',')[0] : ''
  return (
    <span>
      <strong>{name}</strong> {e.kind === 'site_change' ? `(site-wide, ${count(e.pages ?? 0)} pages)` : 'changed'} on {when}
      {e.type === 'text' ? (
        `: ${count(e.wordsAdded ?? 0)} words added, ${count(e.wordsRemoved ?? 0)} removed`
      ) : e.before || e.after ? (
        <>
          : <del>{e.before}</del> → <ins>{e.after}</ins>
        </>
      ) : null}
      {e.changeId && e.kind === 'page_change' && ['text', 'title', 'h1', 'meta_description'].includes(e.type ?? '') ? (
        <>
          {' '}
          <a href={at('diff', { change_id: e.changeId })}>word diff</a>
        </>
      ) : null}
    </span>
  )
}

const day = (d: string) => (d ? dateTime(`${d.slice(0, 10)}T12:00:00Z`, 'UTC').split(',')[0] : '')
