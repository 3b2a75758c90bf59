import type { Context } from 'hono'
import type { Child } from 'hono/jsx'
import { ApiError } from '../../lib/core/errors'
import type { Services } from '../../lib/runtime/services'
import type { DashboardView } from './view'
import { RangePicker, SourcePicker } from './controls'
import { FilterChips, REPORT_KEYS, filtersParam, parseFilters } from './filters'
import { Page, SubmitOnChange } from './layout'
import { type Api, type AnswerOf, type PathOf, apiFor } from './api'
import type { SectionProps } from './sections/parts'
import { Anomalies } from './sections/anomalies'
import { Decay } from './sections/decay'
import { Clicks } from './sections/clicks'
import { Launches } from './sections/launches'
import { Search } from './sections/search'
import { PageDetail } from './sections/page-detail'
import { CHANGES_PAGE, Changes, INLINE_DIFFS } from './sections/changes'
import { Errors } from './sections/errors'
import { Flow } from './sections/flow'
import { Journeys } from './sections/journeys'
import { Pages } from './sections/pages'
import { Realtime } from './sections/realtime'
import { Spikes } from './sections/spikes'
import { Vitals } from './sections/vitals'

/**
 * The dashboard's sections, a page each: the reads of the API shown as they answer. Each page
 * passes the URL's parameters the read takes (range, filters, source and its own, such as
 * `path` for a page's detail), so the read checks them and a page equals `GET /api/v1/...`.
 */
const SECTION_READS = {
  realtime: { title: 'Realtime', reads: ['/api/v1/realtime', '/api/v1/activity'] },
  errors: { title: 'Errors', reads: ['/api/v1/errors'] },
  clicks: { title: 'Clicks', reads: ['/api/v1/clicks'] },
  vitals: { title: 'Web vitals', reads: ['/api/v1/vitals'] },
  flow: { title: 'Flow', reads: ['/api/v1/flow'] },
  journeys: { title: 'Journeys', reads: ['/api/v1/journeys'] },
  pages: { title: 'Pages', reads: ['/api/v1/pages'] },
  changes: { title: 'Changes', reads: ['/api/v1/changes'] },
  anomalies: { title: 'Anomalies', reads: ['/api/v1/anomalies', '/api/v1/timeseries'] },
  spikes: { title: 'Spikes', reads: ['/api/v1/spikes'] },
  decay: { title: 'Decay', reads: ['/api/v1/decay'] },
  launches: { title: 'Launches', reads: ['/api/v1/pages/launches'] },
  search: { title: 'Search', reads: ['/api/v1/search'] },
  // reached from a row of another section: a page's detail with its ranked causes, a change's word diff
  page: { title: 'Page detail', reads: ['/api/v1/pages/detail'] },
  diff: { title: 'Change', reads: ['/api/v1/changes/diff'] },
} as const
export type SectionName = keyof typeof SECTION_READS
export const SECTION_NAMES = Object.keys(SECTION_READS) as SectionName[]

/** The answers of a section's reads, in their order, each as its endpoint declares it. */
type Answers<R extends readonly string[]> = { -readonly [K in keyof R]: AnswerOf<'GET', R[K] & PathOf<'GET'>> }
type AnswersOf<N extends SectionName> = Answers<(typeof SECTION_READS)[N]['reads']>

/** The sections drawn for what a person asks of them; the others show their answer as tables. */
const DESIGNED: { [N in SectionName]?: (props: SectionProps<AnswersOf<N>>) => Child } = {
  realtime: Realtime,
  errors: Errors,
  vitals: Vitals,
  flow: Flow,
  journeys: Journeys,
  pages: Pages,
  spikes: Spikes,
  changes: Changes,
  anomalies: Anomalies,
  decay: Decay,
  launches: Launches,
  page: PageDetail,
  clicks: Clicks,
  search: Search,
}

/** A section whose read has another default range than the dashboard's: its picker shows that one. */
const DEFAULT_RANGE: Partial<Record<SectionName, string>> = { anomalies: '7d' }

/** Reads a section makes after its first ones, from their answers: the word diffs of the changes listed. */
const FOLLOW_UPS: { [N in SectionName]?: (answers: AnswersOf<N>, api: Api) => Promise<unknown[]> } = {
  changes: ([changes], api) =>
    Promise.all(
      changes.changes
        .filter((c) => c.diffable)
        .slice(0, INLINE_DIFFS)
        .map((c) => api('GET', '/api/v1/changes/diff', { params: { change_id: c.id } })),
    ),
}

/** The sections linked from the dashboard (the others open from a row). */
export const SECTIONS = SECTION_NAMES.filter((n) => n !== 'page' && n !== 'diff').map((n) => [n, SECTION_READS[n].title] as const)

/** One section page: its reads with the URL's parameters, each answer drawn as tables. */
export async function sectionPage<N extends SectionName>(c: Context, services: Services, view: DashboardView, name: N) {
  const section = SECTION_READS[name]
  const api = apiFor(c, services, view)
  const query = c.req.query()
  const defaultRange = DEFAULT_RANGE[name]
  if (defaultRange && !query.range) query.range = defaultRange
  // a name no read of this section takes is refused as the API refuses it
  const answers = (await Promise.all(
    section.reads.map((path: PathOf<'GET'>) => api('GET', path, { params: { ...PAGE_SIZES[path], ...paramsFor(path, query) } })),
  )) as AnswersOf<N>
  const follow = FOLLOW_UPS[name]
  // the follow-ups' answers come after the reads' (the changes view takes its word diffs there)
  if (follow) (answers as unknown[]).push(...(await follow(answers, api)))
  const keep = new URLSearchParams()
  // a section's links keep the dashboard's report parameters
  for (const k of REPORT_KEYS) if (query[k]) keep.set(k, query[k])
  const at = (section: string, extra: Record<string, string> = {}) => {
    const next = new URLSearchParams(keep)
    for (const [k, v] of Object.entries(extra)) next.set(k, v)
    return `${view.base}/${section}?${next}`
  }
  const links: Links = {
    path: (value) => (typeof value === 'string' && value.startsWith('/') ? at('page', { path: value }) : null),
    changeId: (value) => at('diff', { change_id: String(value) }),
    visitor: (value) => (name === 'journeys' ? at('journeys', { visitor: String(value) }) : null),
    fingerprint: (value) => (name === 'errors' ? at('errors', { fingerprint: String(value) }) : null),
  }
  // the change feed lists annotations beside changes: only a change the diff read takes has a word diff
  if (name === 'changes') links.id = (value, row) => (row?.kind === 'change' && row.diffable === true ? links.changeId(value) : null)
  const siteName = view.site.appearance.displayName ?? view.site.domain
  const Designed = DESIGNED[name]
  return (
    <Page title={`${section.title} · ${siteName}`} email={view.email}>
      <div class="dash-head">
        <h1>
          {section.title} <span class="muted">· {siteName}</span>
        </h1>
        <a href={`${view.base}?${keep}`}>Back to the dashboard</a>
      </div>
      <nav aria-label="Sections" class="card sections">
        {SECTIONS.map(([n, title]) => (
          <a href={at(n)} aria-current={n === name ? 'page' : undefined}>
            {title}
          </a>
        ))}
      </nav>
      <SectionControls view={view} name={name} query={query} />
      {name === 'diff' ? <WordDiff answer={answers[0] as AnswerOf<'GET', '/api/v1/changes/diff'>} /> : null}
      {Designed ? (
        <Designed
          answers={answers}
          timezone={view.site.timezone}
          now={services.now().getTime()}
          query={query}
          at={at}
          shared={view.shared}
        />
      ) : (
        answers.map((answer, i) => (
          <section class="card section-read" aria-label={section.reads[i]} data-read={section.reads[i]}>
            <p class="muted small">
              From <code>GET {section.reads[i]}</code>
            </p>
            <Value value={answer} links={links} depth={0} />
          </section>
        ))
      )}
      <SubmitOnChange />
    </Page>
  )
}

/** The URL's parameters a read declares (its site is the page's own). */
function paramsFor(path: string, query: Record<string, string>) {
  const wanted = READ_PARAMS[path] ?? []
  return Object.fromEntries(Object.entries(query).filter(([k]) => wanted.includes(k)))
}

/** A page's own defaults (fewer journeys than the read's 100, the pages' trends): the link keeps it, so the page equals the read with it. */
const PAGE_SIZES: Record<string, Record<string, string>> = {
  '/api/v1/journeys': { limit: '25' },
  '/api/v1/pages': { trends: '1' },
  '/api/v1/changes': { limit: String(CHANGES_PAGE) },
  // the anomalies' chart: the site's visits with the period before, the window the anomalies compare with
  '/api/v1/timeseries': { compare: 'previous_period' },
}

const REPORT = ['range', 'from', 'to', 'filters', 'source', 'limit']
const WINDOW = ['range', 'from', 'to']
const READ_PARAMS: Record<string, string[]> = {
  '/api/v1/realtime': ['filters', 'source', 'limit'],
  '/api/v1/activity': ['filters', 'source', 'limit', 'window'],
  '/api/v1/errors': [...REPORT, 'fingerprint', 'pages', 'offset'],
  '/api/v1/clicks': REPORT,
  '/api/v1/vitals': [...REPORT, 'percentile', 'form_factor', 'attribution', 'crux'],
  '/api/v1/flow': [...REPORT, 'start_path', 'focus_path', 'depth'],
  '/api/v1/journeys': [...REPORT, 'visitor', 'offset'],
  '/api/v1/pages': [...WINDOW, 'limit', 'offset', 'filter', 'sort', 'dir', 'q', 'trends', 'bots'],
  '/api/v1/changes': [...WINDOW, 'limit', 'offset', 'category', 'type', 'search', 'day'],
  '/api/v1/changes/diff': ['change_id'],
  '/api/v1/anomalies': [...REPORT, 'vitals'],
  '/api/v1/timeseries': REPORT,
  '/api/v1/spikes': [...WINDOW, 'interval', 'limit'],
  '/api/v1/decay': ['limit'],
  '/api/v1/pages/launches': [...WINDOW, 'measure', 'limit'],
  '/api/v1/pages/detail': [...WINDOW, 'path', 'page_id'],
  '/api/v1/search': [...REPORT.filter((k) => k !== 'source'), 'dimension', 'value'],
}

/** Where a value of a named field links to: a page's detail, a change's diff, a visitor's journey. */
type Links = Record<string, (value: unknown, row?: Record<string, unknown>) => string | null>

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const humanize = (key: string) => key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/_/g, ' ')

function Scalar({ value, field, links, row }: { value: unknown; field: string; links: Links; row?: Record<string, unknown> }): Child {
  if (value === null || value === undefined) return <span class="muted">–</span>
  const text =
    typeof value === 'number'
      ? Number.isInteger(value)
        ? value.toLocaleString('en')
        : value.toLocaleString('en', { maximumFractionDigits: 3 })
      : typeof value === 'boolean'
        ? value
          ? 'yes'
          : 'no'
        : String(value)
  const href = links[field]?.(value, row)
  return href ? <a href={href}>{text}</a> : text
}

/** Any answer as a person reads it: objects as lists of facts, lists of records as tables. */
function Value({ value, links, depth, field = '' }: { value: unknown; links: Links; depth: number; field?: string }): Child {
  if (Array.isArray(value)) {
    if (!value.length) return <span class="muted">none</span>
    if (value.every((v) => !isRecord(v) && !Array.isArray(v)))
      return (
        <span>
          {value.map((v, i) => (
            <>
              {i ? ', ' : ''}
              <Scalar value={v} field={field} links={links} />
            </>
          ))}
        </span>
      )
    const rows = value.filter(isRecord).slice(0, 100)
    const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))]
    return (
      // a table wider than the screen scrolls: it takes the focus, so a keyboard scrolls it too
      <section class="table-wrap" tabindex={0} aria-label={humanize(field) || 'table'}>
        <table>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col">{humanize(c)}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                {columns.map((c) => (
                  <td class={typeof r[c] === 'number' ? 'num' : undefined}>
                    {isRecord(r[c]) || Array.isArray(r[c]) ? (
                      depth < 2 ? (
                        <Value value={r[c]} links={links} depth={depth + 1} field={c} />
                      ) : (
                        <code>{JSON.stringify(r[c])}</code>
                      )
                    ) : (
                      <Scalar value={r[c]} field={c} links={links} row={r} />
                    )}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
        {value.length > rows.length ? <p class="muted">{`${value.length - rows.length} more not shown`}</p> : null}
      </section>
    )
  }
  if (isRecord(value)) {
    const entries = Object.entries(value)
    if (!entries.length) return <span class="muted">none</span>
    const Heading = depth === 0 ? 'h2' : 'h3'
    const simple = entries.filter(([, v]) => !isRecord(v) && !Array.isArray(v))
    const nested = entries.filter(([, v]) => isRecord(v) || Array.isArray(v))
    return (
      <div class="read-value">
        {simple.length ? (
          <dl class="facts">
            {simple.map(([k, v]) => (
              <div>
                <dt>{humanize(k)}</dt>
                <dd>
                  <Scalar value={v} field={k} links={links} />
                </dd>
              </div>
            ))}
          </dl>
        ) : null}
        {nested.map(([k, v]) =>
          depth < 3 ? (
            <div class="nested">
              <Heading>{humanize(k)}</Heading>
              <Value value={v} links={links} depth={depth + 1} field={k} />
            </div>
          ) : (
            <p>
              {humanize(k)}: <code>{JSON.stringify(v)}</code>
            </p>
          ),
        )}
      </div>
    )
  }
  return <Scalar value={value} field={field} links={links} />
}

/** A change's word diff: equal runs as they are, added ones marked inserted, removed ones struck. */
function WordDiff({ answer }: { answer: AnswerOf<'GET', '/api/v1/changes/diff'> }) {
  return (
    <section class="card" aria-label="Word diff">
      <h2>{answer.path}</h2>
      <p class="diff">
        {answer.runs.map((r) => (r.op === 'added' ? <ins>{r.text}</ins> : r.op === 'removed' ? <del>{r.text}</del> : r.text))}
      </p>
    </section>
  )
}

/** A section's page name, or a 404 for none. */
export function sectionName(name: string): SectionName {
  if (!(SECTION_NAMES as string[]).includes(name)) throw new ApiError(404, 'There is no such page.')
  return name as SectionName
}

/**
 * The dashboard's controls on a section: the range picker (on a section whose read takes a range),
 * the data source switch (a site with two), and the filters as chips, a click removing one.
 */
function SectionControls({ view, name, query }: { view: DashboardView; name: SectionName; query: Record<string, string> }) {
  // a malformed filter is the read's to refuse, with its message
  const filters = parseFilters(query.filters)
  const sources = view.site.sources
  const ranged = name !== 'realtime' && name !== 'decay' && name !== 'diff'
  if (!ranged && !filters.length && sources.length < 2) return null
  const action = `${view.base}/${name}`
  const without = (i: number) => {
    const next = new URLSearchParams(query)
    const rest = filtersParam(filters.filter((_, j) => j !== i))
    if (rest) next.set('filters', rest)
    else next.delete('filters')
    return `${action}?${next}`
  }
  return (
    <div class="controls">
      {ranged ? (
        <RangePicker action={action} range={query.range ?? '30d'} from={query.from} to={query.to} params={query} realtime={false} />
      ) : null}
      {sources.length > 1 ? (
        <SourcePicker action={action} sources={sources} source={query.source ?? view.site.primarySource} params={query} />
      ) : null}
      <FilterChips filters={filters} without={without} />
    </div>
  )
}
