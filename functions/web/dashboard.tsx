import type { DashboardView } from './view'
import { StatementTimeLimitError } from '../../lib/storage/clickhouse/execute'
import type { Context, Hono } from 'hono'
import { invitationsFor } from '../../lib/accounts/members'
import { sitesOfMember } from '../../lib/sites/listing'
import { setCookie } from 'hono/cookie'
import { ApiError } from '../../lib/core/errors'
import { PROPERTY_PREFIX } from '../../lib/reports/dimensions'
import { clock, country as countryName, day } from './format'
import type { Services } from '../../lib/runtime/services'
import { Chart, type Marker } from './chart'
import { RangePicker, SourcePicker } from './controls'
import { type Filter, FilterChips, REPORT_KEYS, filtersParam, parseFilters } from './filters'
import { Page, SubmitOnChange } from './layout'
import { LocationsMap } from './map'
import { type Api, apiFor } from './api'
import { memberOf, siteMembership } from './membership'
import { SECTIONS, SECTION_NAMES, sectionPage } from './sections'
import { pageNonce } from './security'
import { type WebEnv, isHttps } from './session'

/** The panels with tabs: each tab a breakdown property (the locations map reads /geo as well). */
const TABBED = {
  sources: {
    title: 'Sources',
    tabs: [
      ['channel', 'Channels'],
      ['source', 'Sources'],
      ['utm_source', 'UTM sources'],
      ['utm_medium', 'UTM mediums'],
      ['utm_campaign', 'UTM campaigns'],
    ],
  },
  pages: {
    title: 'Pages',
    tabs: [
      ['path', 'Top pages'],
      ['entry_page', 'Entry pages'],
      ['exit_page', 'Exit pages'],
    ],
  },
  locations: {
    title: 'Locations',
    tabs: [
      ['map', 'Map'],
      ['country', 'Countries'],
      ['region', 'Regions'],
      ['city', 'Cities'],
    ],
  },
  devices: {
    title: 'Devices',
    tabs: [
      ['browser', 'Browsers'],
      ['os', 'Operating systems'],
      ['device', 'Devices'],
      ['screen_class', 'Screen sizes'],
    ],
  },
} as const
type TabbedName = keyof typeof TABBED

/** Every panel, in page order; each loads after the page (below the fold) from its own URL. */
const PANELS = ['sources', 'pages', 'locations', 'devices', 'goals', 'funnels', 'properties'] as const
type PanelName = (typeof PANELS)[number]
const PANEL_TITLES: Record<PanelName, string> = {
  sources: 'Sources',
  pages: 'Pages',
  locations: 'Locations',
  devices: 'Devices',
  goals: 'Goals',
  funnels: 'Funnels',
  properties: 'Properties',
}

/** The page's own state besides the report parameters (REPORT_KEYS): the tab of each tabbed panel, the funnel and the property shown. */
const VIEW_KEYS = ['sources', 'pages', 'locations', 'devices', 'funnel', 'property'] as const
type StateKey = (typeof REPORT_KEYS)[number] | (typeof VIEW_KEYS)[number]
type State = Partial<Record<StateKey, string>>

/** The dashboard's state from the URL: the report parameters (checked by the read) and the view's own keys. */
function stateOf(c: Context): State {
  const query = c.req.query()
  const state: State = {}
  for (const key of [...REPORT_KEYS, ...VIEW_KEYS]) if (query[key] !== undefined && query[key] !== '') state[key] = query[key]
  state.range ??= '30d'
  for (const [name, panel] of Object.entries(TABBED)) {
    const tab = state[name as TabbedName]
    if (tab !== undefined && !panel.tabs.some(([value]) => value === tab))
      throw new ApiError(400, `${name}: must be one of ${panel.tabs.map(([v]) => v).join(', ')}`)
  }
  return state
}

const reportParamsOf = (state: State) => ({
  range: state.range,
  from: state.from,
  to: state.to,
  filters: state.filters,
  source: state.source,
})

/** A URL of this dashboard with some of its state changed (undefined removes a key). */
function linkTo(view: DashboardView, state: State, change: State & { filterList?: Filter[] }, path = '') {
  const next = new URLSearchParams()
  const merged: State = { ...state }
  for (const [k, v] of Object.entries(change)) if (k !== 'filterList') merged[k as StateKey] = v as string | undefined
  if (change.range && change.range !== 'custom') {
    merged.from = undefined
    merged.to = undefined
  }
  if (change.filterList) merged.filters = filtersParam(change.filterList)
  for (const key of [...REPORT_KEYS, ...VIEW_KEYS]) if (merged[key] !== undefined) next.set(key, merged[key]!)
  return `${view.base}${path}?${next}`
}

/** The state's link with one more filter, replacing any filter of the same dimension. */
const filterLink = (view: DashboardView, state: State, dimension: string, value: string) =>
  linkTo(view, state, {
    filterList: [...parseFilters(state.filters).filter((f) => f.dimension !== dimension), { dimension, operator: 'is', value: [value] }],
  })

/**
 * A panel or comparison the read refuses for this site and view (a 400: a dimension the site's
 * source has no field for, a filter no dataset holds with it) is shown as not available; every
 * other failure is the page's failure, never an empty panel.
 */
function refused(err: unknown): { refused: string } {
  if (err instanceof ApiError && err.status === 400) return { refused: err.message }
  if (err instanceof StatementTimeLimitError)
    return {
      refused: `this took longer than the ${err.limitMs / 1000} s one read may run, and was stopped: try a shorter range or fewer filters`,
    }
  throw err
}

/**
 * Visitors of the last 5 minutes, unfiltered: GET /api/v1/stats?range=realtime (the `now` of GET
 * /api/v1/realtime, in one query). A ga4 site whose Google connection cannot answer (not
 * connected, Google unavailable) has no live figure: null, and the page says so.
 */
export async function liveVisitors(api: Api): Promise<number | null> {
  try {
    return (await api('GET', '/api/v1/stats', { params: { range: 'realtime' } })).totals.visitors
  } catch (err) {
    if (err instanceof ApiError && (err.status === 409 || err.status === 503)) return null
    throw err
  }
}

/**
 * Whether the totals carry their change: against the API's previous period (compare.ts: the window
 * just before; today against yesterday up to the same time of day); none for all time or the last minutes.
 */
const comparesTotals = (state: State) => state.range !== 'all' && state.range !== 'realtime'

/** The dashboard page: totals with their change, the chart with its markers, the live figure; panels follow from their own URLs. */
export async function dashboardPage(c: Context, services: Services, view: DashboardView) {
  const { site } = view
  const state = stateOf(c)
  const api = apiFor(c, services, view)
  const params = reportParamsOf(state)
  const nothing = Promise.resolve(null)
  // every read at once: the engine serves them side by side
  const [current, chart, live, markers, segments] = await Promise.all([
    // a comparison the read refuses (a 400, a read stopped at its time limit) leaves the totals without their change
    comparesTotals(state)
      ? api('GET', '/api/v1/stats', { params: { ...params, compare: 'previous_period' } }).catch(
          (err) => (refused(err), api('GET', '/api/v1/stats', { params })),
        )
      : api('GET', '/api/v1/stats', { params }),
    api('GET', '/api/v1/timeseries', { params }),
    liveVisitors(api),
    chartMarkers(api, state),
    view.shared ? nothing : api('GET', '/api/v1/segments'),
  ])
  const filters = parseFilters(state.filters)
  const t = current.totals
  const p = 'comparison' in current ? current.comparison?.totals : undefined
  const stats: [string, string, number | null, number | null | undefined, 'count' | 'share' | 'seconds' | 'ratio'][] = [
    ['visitors', 'Visitors', t.visitors, p?.visitors, 'count'],
    ['visits', 'Visits', t.visits, p?.visits, 'count'],
    ['pageviews', 'Pageviews', t.pageviews, p?.pageviews, 'count'],
    // a window without visits has no bounce rate to compare with
    ['bounceRate', 'Bounce rate', t.bounceRate, p?.visits ? p.bounceRate : undefined, 'share'],
    ['avgDuration', 'Visit duration', t.avgDuration, p?.avgDuration, 'seconds'],
    ['viewsPerVisit', 'Views per visit', t.viewsPerVisit, p?.viewsPerVisit, 'ratio'],
  ]
  const segmentList: { id: string; name: string }[] = segments?.segments ?? []
  const activeSegment = filters.find((f) => f.dimension === 'segment')?.value[0]
  const siteName = site.appearance.displayName ?? site.domain
  return (
    <Page title={`${siteName} dashboard`} email={view.email}>
      <div class="dash-head">
        <h1>{siteName}</h1>
        <p class="live" role="status">
          <span class="dot" aria-hidden="true" />
          <span id="live" data-live={`${view.base}/live`}>
            {live ?? 'No live count'}
          </span>
          {live === null ? '' : live === 1 ? ' visitor now' : ' visitors now'}
        </p>
        {view.shared ? (
          <span class="muted">Shared dashboard, read-only</span>
        ) : (
          <nav aria-label="Site" class="links">
            <a href={`/app/sites/${site.id}/share`}>Share</a>
            <a href={`/app/sites/${site.id}/settings`}>Settings</a>
          </nav>
        )}
      </div>
      <div class="controls">
        <RangePicker action={view.base} range={state.range!} from={state.from} to={state.to} params={state} />
        {site.sources.length > 1 ? (
          <SourcePicker action={view.base} sources={site.sources} source={state.source ?? site.primarySource} params={state} />
        ) : null}
        {segmentList.length ? (
          <nav aria-label="Segments" class="control">
            <span class="label">Segments</span>
            <ul class="chips">
              {segmentList.map((s) => (
                <li>
                  <a
                    href={filterLink(view, state, 'segment', s.id)}
                    aria-current={s.id === activeSegment ? 'true' : undefined}
                    class={s.id === activeSegment ? 'on' : undefined}
                  >
                    {s.name}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        ) : null}
      </div>
      <FilterChips
        filters={filters}
        segments={segmentList}
        without={(i) => linkTo(view, state, { filterList: filters.filter((_, j) => j !== i) })}
      />
      <section class="card" aria-label="Totals">
        <dl class="facts stats">
          {stats.map(([key, label, value, was, kind]) => (
            <div data-metric={key}>
              <dt>{label}</dt>
              <dd>
                <span class="value">{format(value, kind)}</span>
                <Change now={value} before={was} lowerIsBetter={key === 'bounceRate'} kind={kind} />
              </dd>
            </div>
          ))}
        </dl>
        {'comparison' in current && current.comparison ? (
          <p class="muted compared" data-compared>
            Changes against {comparedWindow(current.comparison.range, site.timezone, state.range)}.
          </p>
        ) : null}
        <Chart points={chart.series} end={chart.range.to} markers={markers} />
      </section>
      {view.sections ? (
        <nav aria-label="Sections" class="card sections">
          {SECTIONS.map(([name, title]) => (
            <a href={linkTo(view, { range: state.range, from: state.from, to: state.to, source: state.source }, {}, `/${name}`)}>{title}</a>
          ))}
          {view.shared ? null : <a href={`${view.base}/heatmap`}>Heatmaps</a>}
        </nav>
      ) : null}
      <div class="panels">
        {PANELS.map((name) => {
          const src = linkTo(view, state, {}, `/panels/${name}`)
          return (
            <section class="card panel" aria-labelledby={`panel-${name}`} data-defer={src}>
              <h2 id={`panel-${name}`}>{PANEL_TITLES[name]}</h2>
              <p class="muted">
                <a href={src}>Show {PANEL_TITLES[name].toLowerCase()}</a>
              </p>
            </section>
          )
        })}
      </div>
      <SubmitOnChange />
      <script nonce={pageNonce()} dangerouslySetInnerHTML={{ __html: PAGE_SCRIPT }} />
    </Page>
  )
}

/**
 * What is pinned on the chart: the `markers` read (annotations, page and site changes, search-engine
 * updates) and the spikes read (daily, first-party data only). Read with the page's other reads: a
 * chart loaded again after the page to add the spikes read the series and the markers twice, one
 * statement after another on the embedded engine.
 */
async function chartMarkers(api: Api, state: State): Promise<Marker[]> {
  if (state.range === 'realtime') return []
  const window = { range: state.range, from: state.from, to: state.to }
  const standalone = !state.source || state.source === 'standalone'
  const [markers, found] = await Promise.all([
    api('GET', '/api/v1/markers', { params: window }),
    standalone ? api('GET', '/api/v1/spikes', { params: { ...window, interval: 'day', limit: '20' } }).catch(refused) : null,
  ])
  const pins: Marker[] = []
  const m = markers.markers
  for (const a of m.annotations) pins.push({ at: a.at, kind: 'annotation', label: a.title })
  for (const ch of [...m.pageChanges, ...m.siteChanges])
    pins.push({ at: ch.detectedAt, kind: ch.kind === 'site_change' ? 'site change' : 'page change', label: ch.path ?? ch.type })
  for (const u of m.algorithmUpdates) pins.push({ at: `${u.start}T00:00:00`, kind: 'search update', label: `${u.engine}: ${u.name}` })
  if (found && 'spikes' in found)
    for (const s of found.spikes) pins.push({ at: s.peak.start, kind: 'spike', label: `${s.visitors.toLocaleString('en')} visitors` })
  return pins
}

/**
 * The page's script: panels load after the page (each from its own URL, a section of HTML), and
 * the live figure refreshes every 15 seconds while the tab is visible.
 */
const PAGE_SCRIPT =
  "(function(){document.querySelectorAll('[data-defer]').forEach(function(s){fetch(s.dataset.defer).then(function(r){return r.ok?r.text():null}).then(function(h){if(h)s.outerHTML=h})});var el=document.getElementById('live');setInterval(function(){if(document.hidden)return;fetch(el.dataset.live).then(function(r){return r.ok?r.json():null}).then(function(d){if(d&&d.visitors!=null)el.textContent=d.visitors})},15000)})()"

/** One panel as a section of HTML: what the page loads into its place. */
export async function panelFragment(c: Context, services: Services, view: DashboardView, name: string) {
  if (!(PANELS as readonly string[]).includes(name)) throw new ApiError(404, `no panel ${name}`)
  const panel = name as PanelName
  const state = stateOf(c)
  const api = apiFor(c, services, view)
  const params = reportParamsOf(state)
  const title = PANEL_TITLES[panel]
  let body: unknown
  let tabs: unknown = null
  if (panel in TABBED) {
    const group = TABBED[panel as TabbedName]
    const tab: string = state[panel as TabbedName] ?? group.tabs[0][0]
    tabs = (
      <nav class="tabs" aria-label={`${title} views`}>
        {group.tabs.map(([value, label]) => (
          <a href={linkTo(view, state, { [panel]: value })} aria-current={value === tab ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
    )
    if (tab === 'map') {
      const [countries, places] = await Promise.all([
        api('GET', '/api/v1/breakdown', { params: { ...params, property: 'country', limit: '250' } }).catch(refused),
        api('GET', '/api/v1/geo', { params: { ...params, granularity: 'city', limit: '500' } }).catch(refused),
      ])
      body =
        'refused' in countries ? (
          <Refused message={countries.refused} />
        ) : (
          <>
            <LocationsMap places={'refused' in places || !places.available ? [] : places.places} />
            <Rows view={view} state={state} property="country" label="Country" rows={countries.results.slice(0, 10)} name={countryName} />
          </>
        )
    } else {
      const answer = await api('GET', '/api/v1/breakdown', { params: { ...params, property: tab, limit: '10' } }).catch(refused)
      const label = group.tabs.find(([v]) => v === tab)![1]
      body =
        'refused' in answer ? (
          <Refused message={answer.refused} />
        ) : (
          <Rows
            view={view}
            state={state}
            property={tab}
            label={label}
            rows={answer.results}
            name={tab === 'country' ? countryName : undefined}
          />
        )
    }
  } else if (panel === 'goals') {
    const answer = await api('GET', '/api/v1/goals', { params }).catch(refused)
    body =
      'refused' in answer ? (
        <Refused message={answer.refused} />
      ) : !answer.available ? (
        <Refused message="Goals are counted from the first-party events; this source has none." />
      ) : answer.goals.length ? (
        <table data-panel="goal" class="goals-table">
          <thead>
            <tr>
              <th scope="col">Goal</th>
              <th scope="col" class="num" title="Visitors who converted">
                Visitors
              </th>
              <th scope="col" class="num" title="Conversions">
                Total
              </th>
              <th scope="col" class="num">
                Rate
              </th>
            </tr>
          </thead>
          <tbody>
            {answer.goals.map(
              (g: {
                name: string
                visitors?: number
                conversions?: number
                conversionRate?: number
                revenue?: { amount: number; currency: string }
              }) => (
                <tr>
                  <td class="goal-name">
                    <a href={filterLink(view, state, 'goal', g.name)}>{g.name}</a>
                    {g.revenue ? (
                      <span class="muted small page-title">
                        {new Intl.NumberFormat('en', { style: 'currency', currency: g.revenue.currency }).format(g.revenue.amount)} revenue
                      </span>
                    ) : null}
                  </td>
                  <td class="num">{(g.visitors ?? 0).toLocaleString('en')}</td>
                  <td class="num">{(g.conversions ?? 0).toLocaleString('en')}</td>
                  <td class="num">{format(g.conversionRate ?? 0, 'share')}</td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      ) : (
        <p class="muted">No goals yet: define them with POST /api/v1/goals.</p>
      )
  } else if (panel === 'funnels') {
    const answer = await api('GET', '/api/v1/funnels', { params: { ...params, funnel_id: state.funnel } }).catch(refused)
    body =
      'refused' in answer ? (
        <Refused message={answer.refused} />
      ) : !answer.available ? (
        <Refused message="Funnels are counted from the first-party events; this source has none." />
      ) : answer.result ? (
        <>
          {answer.funnels.length > 1 ? (
            <nav class="tabs" aria-label="Funnels">
              {answer.funnels.map((f: { id: string; name: string }) => (
                <a href={linkTo(view, state, { funnel: f.id })} aria-current={f.id === answer.result?.funnelId ? 'page' : undefined}>
                  {f.name}
                </a>
              ))}
            </nav>
          ) : null}
          <table data-panel="funnel">
            <caption class="left">{answer.result.name}</caption>
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col" class="num">
                  Visitors
                </th>
                <th scope="col" class="num">
                  From first
                </th>
              </tr>
            </thead>
            <tbody>
              {answer.result.steps.map((s: { label: string | null; value: string; visitors: number; conversionFromFirst: number }) => (
                <tr style={`--share:${(s.conversionFromFirst * 100).toFixed(1)}%`}>
                  <td class="bar">{s.label ?? s.value}</td>
                  <td class="num">{s.visitors.toLocaleString('en')}</td>
                  <td class="num">{format(s.conversionFromFirst, 'share')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : (
        <p class="muted">No funnels yet: save one with POST /api/v1/funnels.</p>
      )
  } else {
    const answer = await api('GET', '/api/v1/properties', { params: { ...params, property: state.property, limit: '10' } }).catch(refused)
    body =
      'refused' in answer ? (
        <Refused message={answer.refused} />
      ) : !answer.available ? (
        <Refused message="Custom properties are recorded by the first-party collector; this source has none." />
      ) : answer.values ? (
        <>
          <p>
            <a href={linkTo(view, state, { property: undefined })}>All properties</a> · values of <strong>{answer.property}</strong>
          </p>
          <Rows
            view={view}
            state={state}
            property={`${PROPERTY_PREFIX}${answer.property}`}
            label="Value"
            rows={answer.values.map((v: { value: string; visitors: number }) => ({ value: v.value, visitors: v.visitors }))}
          />
        </>
      ) : answer.keys?.length ? (
        <table data-panel="properties">
          <thead>
            <tr>
              <th scope="col">Property</th>
              <th scope="col" class="num">
                Events
              </th>
              <th scope="col" class="num">
                Visitors
              </th>
            </tr>
          </thead>
          <tbody>
            {answer.keys.map((k: { key: string; events: number; visitors: number }) => (
              <tr>
                <td>
                  <a href={linkTo(view, state, { property: k.key })}>{k.key}</a>
                </td>
                <td class="num">{k.events.toLocaleString('en')}</td>
                <td class="num">{k.visitors.toLocaleString('en')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p class="muted">No custom properties in this range.</p>
      )
  }
  return (
    <section class="card panel" aria-labelledby={`panel-${panel}`} data-panel-name={panel}>
      <h2 id={`panel-${panel}`}>{title}</h2>
      {tabs}
      {body}
    </section>
  )
}

function Refused({ message }: { message: string }) {
  return <p class="muted">Not available for this view: {message}</p>
}

/** A breakdown as rows with bars; clicking a row filters the whole dashboard by it. */
function Rows({
  view,
  state,
  property,
  label,
  rows,
  name,
}: {
  view: DashboardView
  state: State
  property: string
  label: string
  rows: { value: string; visitors: number }[]
  /** A value as people read it (a country's name for its code). */
  name?: (value: string) => string
}) {
  if (!rows.length) return <p class="muted">Nothing in this range.</p>
  const max = Math.max(1, ...rows.map((r) => r.visitors))
  return (
    <table data-panel={property}>
      <thead>
        <tr>
          <th scope="col">{label}</th>
          <th scope="col" class="num">
            Visitors
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr style={`--share:${((r.visitors / max) * 100).toFixed(1)}%`}>
            <td class="bar">
              {/* a named value keeps its code beside the name */}
              <a href={filterLink(view, state, property, r.value)} data-value={name ? r.value : undefined}>
                {name ? name(r.value) : r.value || '(none)'}
              </a>
            </td>
            <td class="num">{r.visitors.toLocaleString('en')}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

export function format(value: number | null, kind: 'count' | 'share' | 'seconds' | 'ratio') {
  // a figure the source does not report (GA4's Realtime API has no sessions or engagement)
  if (value === null) return '–'
  if (kind === 'share') return `${Math.round(value * 100)}%`
  if (kind === 'seconds') {
    const s = Math.round(value)
    return s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`
  }
  if (kind === 'ratio') return value.toFixed(2)
  return value.toLocaleString('en')
}

/**
 * The window the totals' changes are against, in words: "yesterday up to 15:30", "1 Nov 2026 to
 * 7 Nov 2026", "9 Nov 2026 to 11 Nov 2026 up to 15:30" (this week so far).
 */
function comparedWindow(range: { from: string; to: string }, timezone: string, name: string | undefined) {
  const upTo = clock(range.to, timezone)
  if (name === 'today') return `yesterday up to ${upTo}`
  const first = day(range.from, timezone)
  const last = day(new Date(Date.parse(range.to) - 1).toISOString(), timezone)
  const days = first === last ? first : `${first} to ${last}`
  return upTo === '00:00' ? days : `${days} up to ${upTo}`
}

function Change({
  now,
  before,
  lowerIsBetter,
  kind,
}: {
  now: number | null
  before: number | null | undefined
  lowerIsBetter: boolean
  kind?: 'count' | 'share' | 'seconds' | 'ratio'
}) {
  // nothing to compare: no previous window, or a figure the source does not report
  if (before === undefined || before === null || now === null) return null
  // a rate changes by points: 40% to 45% is 5 points, not 12%
  if (kind === 'share') {
    const points = Math.round((now - before) * 100)
    const better = lowerIsBetter ? points < 0 : points > 0
    return (
      <span class={`change ${points === 0 ? '' : better ? 'up' : 'down'}`}>
        {points > 0 ? '↑' : points < 0 ? '↓' : ''} {Math.abs(points)} {Math.abs(points) === 1 ? 'point' : 'points'}
        <span class="sr-only"> against the previous period</span>
      </span>
    )
  }
  if (before === 0) return now === 0 ? <span class="change">no change</span> : <span class="change up">new</span>
  const change = (now - before) / before
  const better = lowerIsBetter ? change < 0 : change > 0
  return (
    <span class={`change ${change === 0 ? '' : better ? 'up' : 'down'}`}>
      {change > 0 ? '↑' : change < 0 ? '↓' : ''} {Math.abs(Math.round(change * 100))}%
      <span class="sr-only"> against the previous period</span>
    </span>
  )
}

/** The site a member last opened the dashboard of, in this browser: where the next sign-in lands. */
export const LAST_SITE_COOKIE = 'last_site'

/**
 * Where a sign-in lands: the dashboard last viewed in this browser while the member may still see
 * it; else the dashboard of the only site the member sees (in all their organizations), unless an
 * invitation waits for them on the list; else the list of organizations.
 */
export async function landingOf(services: Services, email: string, lastSite: string | undefined): Promise<string> {
  const last = lastSite ? await siteMembership(services, email, lastSite).catch(() => null) : null
  if (last?.site) return `/app/sites/${last.site.id}`
  const [sites, invitations] = await Promise.all([
    sitesOfMember(services.repositories, email),
    invitationsFor(services.repositories, email),
  ])
  if (invitations.length) return '/app'
  return sites.length === 1 ? `/app/sites/${sites[0].id}` : '/app'
}

/** The member's dashboard under /app/sites/{site}: the page, its panels and the live figure. */
export function dashboardRoutes(web: Hono<WebEnv>, services: Services) {
  const memberView = (c: Context<WebEnv>): DashboardView => {
    const { site, member } = memberOf(c)
    return { site, member, base: `/app/sites/${site.id}`, email: c.get('session')!.email, shared: false, sections: true }
  }
  web.get('/sites/:siteId/live', async (c) => {
    const view = memberView(c)
    return c.json({ visitors: await liveVisitors(apiFor(c, services, view)) })
  })
  web.get('/sites/:siteId/panels/:panel', async (c) => c.html(await panelFragment(c, services, memberView(c), c.req.param('panel'))))
  web.get('/sites/:siteId', async (c) => {
    const view = memberView(c)
    // the next sign-in lands here (app.tsx, landingOf)
    setCookie(c, LAST_SITE_COOKIE, view.site.id, {
      httpOnly: true,
      sameSite: 'Lax',
      secure: isHttps(c, services),
      path: '/app',
      maxAge: 365 * 86_400,
    })
    return c.html(await dashboardPage(c, services, view))
  })
  for (const name of SECTION_NAMES)
    web.get(`/sites/:siteId/${name}`, async (c) => c.html(await sectionPage(c, services, memberView(c), name)))
}
