import type { Hono } from 'hono'
import { membershipIn } from '../../lib/accounts/members'
import { ApiError, describeZodError } from '../../lib/errors'
import { reportParams } from '../../lib/reports/query/parse'
import { breakdown, series, totals } from '../../lib/reports/query/reports'
import type { Services } from '../../lib/services'
import { Page } from './layout'
import type { WebEnv } from './session'

/** The ranges the picker offers (custom dates go through from and to in the URL). */
const PICKER = [
  ['today', 'Today'],
  ['yesterday', 'Yesterday'],
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
  ['90d', 'Last 90 days'],
  ['month', 'This month'],
  ['12mo', 'Last 12 months'],
  ['year', 'This year'],
  ['all', 'All time'],
] as const

const PANELS = [
  ['source', 'Sources'],
  ['path', 'Pages'],
  ['country', 'Countries'],
  ['browser', 'Browsers'],
  ['device', 'Devices'],
  ['entry_page', 'Entry pages'],
] as const

interface Filter {
  dimension: string
  operator: string
  value: string[]
}

/**
 * The dashboard of one site at /app/sites/{site}: the same verbs, with the same parameters, as
 * GET /api/v1/stats, /timeseries, /breakdown and /realtime, so its numbers are the API's. The
 * whole state (range, dates, filters) is in the URL.
 */
/**
 * A panel or comparison the read refuses for this site and view (a 400: a dimension the site's
 * source has no field for, a filter no dataset holds with it) is left out of the page; every other
 * failure is the page's failure, never an empty panel.
 */
function unanswerable(err: unknown): null {
  if (err instanceof ApiError && err.status === 400) return null
  throw err
}

export function dashboardRoutes(web: Hono<WebEnv>, services: Services) {
  const siteOf = async (email: string, siteId: string) => {
    const site = await services.sites.findFresh(siteId)
    if (!site) throw new ApiError(404, 'site not found')
    try {
      await membershipIn(services.repositories, site.orgId, email)
    } catch {
      throw new ApiError(404, 'site not found')
    }
    return site
  }

  /** Visitors of the last 5 minutes, unfiltered: GET /api/v1/realtime's `now`, read as GET /api/v1/stats?range=realtime reads it (one query). */
  const liveVisitors = async (site: Awaited<ReturnType<typeof siteOf>>) =>
    (await totals(services, site, { site_id: site.id, range: 'realtime', limit: 100 })).totals.visitors

  web.get('/sites/:siteId/live', async (c) => {
    const site = await siteOf(c.get('session')!.email, c.req.param('siteId'))
    return c.json({ visitors: await liveVisitors(site) })
  })

  web.get('/sites/:siteId', async (c) => {
    const email = c.get('session')!.email
    const site = await siteOf(email, c.req.param('siteId'))
    const query = c.req.query()
    const parsed = reportParams.safeParse({ ...query, site_id: site.id })
    if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'query', query))
    const params = parsed.data
    // the chart's series resolves the window first: the previous one is computed from it
    const chart = await series(services, site, params)
    const [current, previous, live, ...panels] = await Promise.all([
      totals(services, site, params),
      totals(services, site, { ...params, ...previousWindow(chart.range.from, chart.range.to) }).catch(unanswerable),
      liveVisitors(site),
      ...PANELS.map(([property]) => breakdown(services, site, { ...params, property, limit: 10 }).catch(unanswerable)),
    ])
    const filters: Filter[] = params.filters ? JSON.parse(params.filters) : []
    const urlWith = (change: { range?: string; filters?: Filter[] }) => {
      const next = new URLSearchParams()
      const range = change.range ?? params.range
      next.set('range', range)
      if (range === 'custom' && !change.range) {
        if (params.from) next.set('from', params.from)
        if (params.to) next.set('to', params.to)
      }
      const f = change.filters ?? filters
      if (f.length) next.set('filters', JSON.stringify(f))
      return `/app/sites/${site.id}?${next}`
    }
    const t = current.totals
    const p = previous?.totals
    const stats: [string, string, number, number | undefined, 'count' | 'share' | 'seconds' | 'ratio'][] = [
      ['visitors', 'Visitors', t.visitors, p?.visitors, 'count'],
      ['visits', 'Visits', t.visits, p?.visits, 'count'],
      ['pageviews', 'Pageviews', t.pageviews, p?.pageviews, 'count'],
      ['bounceRate', 'Bounce rate', t.bounceRate, p?.bounceRate, 'share'],
      ['avgDuration', 'Visit duration', t.avgDuration, p?.avgDuration, 'seconds'],
      ['viewsPerVisit', 'Views per visit', t.viewsPerVisit, p?.viewsPerVisit, 'ratio'],
    ]
    return c.html(
      <Page title={`${site.domain} dashboard`} email={email}>
        <div class="dash-head">
          <h1>{site.domain}</h1>
          <p class="live" role="status">
            <span class="dot" aria-hidden="true" />
            <span id="live" data-site={site.id}>
              {live}
            </span>{' '}
            {live === 1 ? 'visitor' : 'visitors'} now
          </p>
          <form method="get" action={`/app/sites/${site.id}`} class="row">
            <label for="range" class="sr-only">
              Range
            </label>
            <select id="range" name="range" onchange="this.form.submit()">
              {PICKER.map(([value, label]) => (
                <option value={value} selected={value === params.range}>
                  {label}
                </option>
              ))}
              {params.range === 'custom' ? (
                <option value="custom" selected>
                  {`${params.from} to ${params.to}`}
                </option>
              ) : null}
            </select>
            {filters.length ? <input type="hidden" name="filters" value={JSON.stringify(filters)} /> : null}
            <noscript>
              <button type="submit">Show</button>
            </noscript>
          </form>
          <a href={`/app/sites/${site.id}/settings`}>Settings</a>
        </div>
        {filters.length ? (
          <ul class="chips" aria-label="Filters">
            {filters.map((f, i) => (
              <li>
                <a
                  href={urlWith({ filters: filters.filter((_, j) => j !== i) })}
                  aria-label={`Remove filter ${f.dimension} ${f.operator} ${f.value.join(', ')}`}
                >
                  {f.dimension} {f.operator} {f.value.join(', ')} <span aria-hidden="true">×</span>
                </a>
              </li>
            ))}
          </ul>
        ) : null}
        <section class="card" aria-label="Totals">
          <dl class="facts stats">
            {stats.map(([key, label, value, before, kind]) => (
              <div data-metric={key}>
                <dt>{label}</dt>
                <dd>
                  <span class="value">{format(value, kind)}</span>
                  <Change now={value} before={before} lowerIsBetter={key === 'bounceRate'} />
                </dd>
              </div>
            ))}
          </dl>
          <Chart points={chart.series} />
        </section>
        <div class="panels">
          {PANELS.map(([property, title], i) => {
            const rows = panels[i]?.results ?? []
            const max = Math.max(1, ...rows.map((r) => r.visitors))
            return (
              <section class="card panel" aria-labelledby={`panel-${property}`} data-panel={property}>
                <h2 id={`panel-${property}`}>{title}</h2>
                {rows.length ? (
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">{title}</th>
                        <th scope="col" class="num">
                          Visitors
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {rows.map((r) => (
                        <tr style={`--share:${((r.visitors / max) * 100).toFixed(1)}%`}>
                          <td class="bar">
                            <a
                              href={urlWith({
                                filters: [
                                  ...filters.filter((f) => f.dimension !== property),
                                  { dimension: property, operator: 'is', value: [r.value] },
                                ],
                              })}
                            >
                              {r.value || '(none)'}
                            </a>
                          </td>
                          <td class="num">{r.visitors.toLocaleString('en')}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                ) : (
                  <p class="muted">Nothing in this range.</p>
                )}
              </section>
            )
          })}
        </div>
        <script
          dangerouslySetInnerHTML={{
            __html:
              "(function(){var el=document.getElementById('live');setInterval(function(){if(document.hidden)return;fetch('/app/sites/'+el.dataset.site+'/live').then(function(r){return r.ok?r.json():null}).then(function(d){if(d)el.textContent=d.visitors})},15000)})()",
          }}
        />
      </Page>,
    )
  })
}

/** The window of equal length just before `from`..`to` (site-local days), as custom dates. */
function previousWindow(from: string, to: string) {
  const day = 86_400_000
  const start = Date.parse(`${from.slice(0, 10)}T00:00:00Z`)
  const end = Date.parse(`${to.slice(0, 10)}T00:00:00Z`)
  const days = Math.max(1, Math.round((end - start) / day) + (to.slice(11, 19) === '00:00:00' ? 0 : 1))
  const date = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  return { range: 'custom' as const, from: date(start - days * day), to: date(start - day) }
}

function format(value: number, kind: 'count' | 'share' | 'seconds' | 'ratio') {
  if (kind === 'share') return `${Math.round(value * 100)}%`
  if (kind === 'seconds') {
    const s = Math.round(value)
    return s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`
  }
  if (kind === 'ratio') return value.toFixed(2)
  return value.toLocaleString('en')
}

function Change({ now, before, lowerIsBetter }: { now: number; before: number | undefined; lowerIsBetter: boolean }) {
  if (before === undefined) return null
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

/** Visitors per bucket as an SVG drawn on the server: no chart script to load. */
function Chart({ points }: { points: { timestamp: string; visitors: number; pageviews: number }[] }) {
  const width = 900
  const height = 220
  const pad = 28
  const max = Math.max(1, ...points.map((p) => p.pageviews))
  const x = (i: number) => pad + (points.length > 1 ? (i / (points.length - 1)) * (width - 2 * pad) : 0)
  const y = (v: number) => height - pad - (v / max) * (height - 2 * pad)
  const line = (key: 'visitors' | 'pageviews') => points.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(' ')
  const total = points.reduce((sum, p) => sum + p.visitors, 0)
  const label = (p: { timestamp: string }) => p.timestamp.slice(0, p.timestamp.includes('T00:00:00') ? 10 : 16).replace('T', ' ')
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`Visitors and pageviews per bucket: ${total.toLocaleString('en')} visitor-buckets in all, at most ${max.toLocaleString('en')} pageviews in one`}
      >
        <line x1={pad} y1={height - pad} x2={width - pad} y2={height - pad} stroke="#d0d7de" />
        <text x={pad} y={14} class="axis">
          {max.toLocaleString('en')}
        </text>
        <polyline points={line('pageviews')} fill="none" stroke="#9ec5fe" stroke-width="2" />
        <polyline points={line('visitors')} fill="none" stroke="#0b57d0" stroke-width="2.5" />
        {points.length ? (
          <>
            <text x={pad} y={height - 8} class="axis">
              {label(points[0])}
            </text>
            <text x={width - pad} y={height - 8} class="axis" text-anchor="end">
              {label(points[points.length - 1])}
            </text>
          </>
        ) : null}
      </svg>
      <figcaption class="legend">
        <span class="key visitors" /> Visitors <span class="key pageviews" /> Pageviews
      </figcaption>
    </figure>
  )
}
