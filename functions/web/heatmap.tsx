import type { Hono } from 'hono'
import { z } from 'zod'
import { membershipIn } from '../../lib/accounts/members'
import { ApiError, describeZodError } from '../../lib/core/errors'
import { VIEWPORT_CLASSES } from '../../lib/ingest/enrich'
import { heatmap } from '../../lib/reports/query/heatmap'
import { reportParams } from '../../lib/reports/query/parse'
import type { Services } from '../../lib/runtime/services'
import { Page } from './layout'
import { pageNonce } from './security'
import type { WebEnv } from './session'

const RANGES = [
  ['today', 'Today'],
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
  ['90d', 'Last 90 days'],
] as const

/** The page's own styles: the outline, the cells, the scroll marks. */
const STYLE = `
.heat-layout{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1.25rem;align-items:start}
.heatmap svg{display:block;width:100%;height:auto;margin:0 auto}.heat-layout>*{min-width:0}.heatmap-form{align-items:flex-end}.heatmap-form .field{margin:0}
.heatmap .outline{fill:#fff;stroke:#8c959f;stroke-width:2}
.heatmap .cell{fill:#d1242f}.heatmap table code{overflow-wrap:anywhere}.heatmap-side td:first-child{overflow-wrap:anywhere}.heatmap .rage{fill:none;stroke:#1b1f24;stroke-width:2}
.heatmap .fold{stroke:#57606a;stroke-dasharray:4 4}.heatmap .reach{font-size:11px;fill:#57606a}
@media (max-width:800px){.heat-layout{grid-template-columns:1fr}}
`

/** Drawn width of the page outline, in SVG units; a cell is square. */
const DRAWN_WIDTH = 400
/** The tallest drawing shown, in CSS pixels: a long page is drawn narrower. */
const MAX_DRAWN_HEIGHT = 1400

type Heatmap = Awaited<ReturnType<typeof heatmap>>

/**
 * A page's click heatmap at /app/sites/{site}/heatmap?path=: the same verb, with the same
 * parameters, as GET /api/v1/heatmap, drawn over a plain outline of the page.
 */
export function heatmapRoutes(web: Hono<WebEnv>, services: Services) {
  web.get('/sites/:siteId/heatmap', async (c) => {
    const email = c.get('session')!.email
    const site = await services.sites.findFresh(c.req.param('siteId'))
    if (!site) throw new ApiError(404, 'site not found')
    await membershipIn(services.repositories, site.orgId, email).catch(() => {
      throw new ApiError(404, 'site not found')
    })
    const query = c.req.query()
    const form = { path: query.path ?? '/', device: query.device ?? 'desktop', range: query.range ?? '30d' }
    const schema = reportParams.extend({
      path: z.string().min(1, 'required').max(2000).startsWith('/', 'must start with /'),
      device: z.enum(VIEWPORT_CLASSES),
    })
    const parsed = schema.safeParse({ ...query, ...form, site_id: site.id, limit: query.limit ?? '20' })
    if (!parsed.success) throw new ApiError(400, describeZodError(parsed.error, 'query', query))
    const map = await heatmap(services, site, parsed.data)
    return c.html(
      <Page title={`Heatmap of ${form.path} on ${site.domain}`} email={email}>
        <style nonce={pageNonce()} dangerouslySetInnerHTML={{ __html: STYLE }} />
        <div class="dash-head">
          <h1>Heatmap</h1>
          <span class="links">
            <a href={`/app/sites/${site.id}/clicks?range=${form.range}`}>All clicks</a>
            <a href={`/app/sites/${site.id}`}>Dashboard</a>
          </span>
        </div>
        <form method="get" action={`/app/sites/${site.id}/heatmap`} class="card row heatmap-form">
          <div class="field">
            <label for="path">Page</label>
            <input id="path" name="path" value={form.path} required />
          </div>
          <div class="field">
            <label for="device">Device</label>
            <select id="device" name="device">
              {VIEWPORT_CLASSES.map((d) => (
                <option value={d} selected={d === form.device}>
                  {d[0].toUpperCase() + d.slice(1)}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="range">Range</label>
            <select id="range" name="range">
              {RANGES.map(([value, label]) => (
                <option value={value} selected={value === form.range}>
                  {label}
                </option>
              ))}
            </select>
          </div>
          {query.filters ? <input type="hidden" name="filters" value={query.filters} /> : null}
          <button type="submit">Show</button>
        </form>
        {!map.available ? (
          <p class="card muted">This site reads only Google Analytics: the tracking script alone records clicks.</p>
        ) : (
          <div class="heat-layout">
            <section class="card heatmap" aria-labelledby="grid-title">
              <h2 id="grid-title">
                {map.summary.clicks.toLocaleString('en')} {map.summary.clicks === 1 ? 'click' : 'clicks'} on {form.path}
              </h2>
              <p class="muted">
                {map.summary.deadClicks.toLocaleString('en')} dead, {map.summary.rageClicks.toLocaleString('en')} rage; drawn over an
                outline of the page ({map.grid.documentWidth} × {map.grid.documentHeight} px, the median of the clicks).
              </p>
              {map.grid.rows ? <Grid map={map} /> : <p class="muted">No click with a position in this range.</p>}
            </section>
            <div>
              <section class="card" aria-labelledby="elements-title">
                <h2 id="elements-title">Most clicked</h2>
                {map.elements.length ? (
                  <table data-table="elements">
                    <thead>
                      <tr>
                        <th scope="col">Element</th>
                        <th scope="col" class="num">
                          Clicks
                        </th>
                        <th scope="col" class="num">
                          Share
                        </th>
                        <th scope="col" class="num">
                          Dead
                        </th>
                        <th scope="col" class="num">
                          Rage
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {map.elements.map((e) => (
                        <tr>
                          <td>
                            <code>{e.selector || e.tag}</code> {e.text ? <span class="muted">{e.text}</span> : null}
                          </td>
                          <td class="num">{e.clicks.toLocaleString('en')}</td>
                          <td class="num">{percent(e.share)}</td>
                          <td class="num">{e.deadClicks.toLocaleString('en')}</td>
                          <td class="num">{e.rageClicks.toLocaleString('en')}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                ) : (
                  <p class="muted">Nothing in this range.</p>
                )}
              </section>
              <section class="card" aria-labelledby="scroll-title">
                <h2 id="scroll-title">Scroll reach</h2>
                <p class="muted">{map.scroll.pageLoads.toLocaleString('en')} page loads reported how far they scrolled.</p>
                <table data-table="scroll">
                  <thead>
                    <tr>
                      <th scope="col">Reached</th>
                      <th scope="col" class="num">
                        Page loads
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {map.scroll.reach.map((r) => (
                      <tr>
                        <td>{r.depth}% of the page</td>
                        <td class="num">{percent(r.share)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </section>
            </div>
          </div>
        )}
      </Page>,
    )
  })
}

const percent = (share: number) => `${Math.round(share * 100)}%`

/** The grid over the outline: each cell's shade by its clicks, rage cells outlined, a mark at each tenth with its scroll reach. */
function Grid({ map }: { map: Heatmap }) {
  const { columns, rows, cells } = map.grid
  const cell = DRAWN_WIDTH / columns
  const height = rows * cell
  const most = Math.max(1, ...cells.map((c) => c.clicks))
  const shown = Math.min(DRAWN_WIDTH, (MAX_DRAWN_HEIGHT * DRAWN_WIDTH) / height)
  return (
    <svg
      viewBox={`0 0 ${DRAWN_WIDTH} ${height}`}
      style={`max-width:${Math.round(shown)}px`}
      role="img"
      aria-label={`Click density on a grid of ${columns} by ${rows} cells`}
    >
      <rect class="outline" x="0" y="0" width={DRAWN_WIDTH} height={height} />
      {cells.map((c) => (
        <rect
          class="cell"
          x={c.col * cell}
          y={c.row * cell}
          width={cell}
          height={cell}
          fill-opacity={(0.15 + (0.85 * c.clicks) / most).toFixed(3)}
          data-row={c.row}
          data-col={c.col}
          data-clicks={c.clicks}
        >
          <title>{`${c.clicks} clicks (${c.deadClicks} dead, ${c.rageClicks} rage)`}</title>
        </rect>
      ))}
      {cells
        .filter((c) => c.rageClicks)
        .map((c) => (
          <rect class="rage" x={c.col * cell} y={c.row * cell} width={cell} height={cell} />
        ))}
      {map.scroll.pageLoads
        ? map.scroll.reach.map((r) => (
            <g>
              <line class="fold" x1="0" x2={DRAWN_WIDTH} y1={(height * r.depth) / 100} y2={(height * r.depth) / 100} />
              <text class="reach" x={DRAWN_WIDTH - 4} y={(height * r.depth) / 100 - 4} text-anchor="end">
                {`${percent(r.share)} reached ${r.depth}%`}
              </text>
            </g>
          ))
        : null}
    </svg>
  )
}
