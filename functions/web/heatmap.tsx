import type { Hono } from 'hono'
import { pageSnapshots, snapshotDetail } from '../../lib/crawl/changes'
import { VIEWPORT_CLASSES } from '../../lib/ingest/enrich'
import type { Services } from '../../lib/runtime/services'
import type { Site } from '../../lib/sites/sites'
import { type AnswerOf, apiFor } from './api'
import { day } from './format'
import { Page } from './layout'
import { memberOf } from './membership'
import { pageNonce } from './security'
import type { WebEnv } from './session'

const RANGES = [
  ['today', 'Today'],
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
  ['90d', 'Last 90 days'],
] as const

/** The page's own styles: the outline of the page with its text, the cells over it, the scroll marks. */
const STYLE = `
.heat-layout{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1.25rem;align-items:start}
.heat-layout>*{min-width:0}.heatmap-form{align-items:flex-end}.heatmap-form .field{margin:0}
.heat-page{position:relative;width:100%;margin:0 auto;border:2px solid #8c959f;border-radius:4px;background:#fff;overflow:hidden}
.heat-outline{position:absolute;inset:0;display:flex;flex-direction:column;gap:.4rem;padding:.5rem .6rem;overflow:hidden;color:#57606a}
.heat-outline>.bar:last-child{margin-top:auto}.heat-text{flex:1;min-height:0;display:flex;flex-direction:column;justify-content:space-between;gap:.4rem;overflow:hidden}.heat-text.short{justify-content:flex-start}
.heat-outline .bar{height:.55rem;border-radius:2px;background:#eaeef2;flex:none}
.heat-outline .heading{font-weight:600;font-size:.8rem;line-height:1.25;color:#1f2328;flex:none;overflow-wrap:anywhere}
.heat-outline p{flex:none;margin:0;font-size:.7rem;line-height:1.3;overflow:hidden;display:-webkit-box;-webkit-line-clamp:3;-webkit-box-orient:vertical;overflow-wrap:anywhere}
.heat-page svg{position:absolute;inset:0;width:100%;height:100%;display:block}
.heatmap .cell{fill:#d1242f}.heatmap .rage{fill:none;stroke:#1b1f24;stroke-width:2}
.heatmap .fold{stroke:#57606a;stroke-dasharray:4 4}
.heat-reach{position:absolute;right:.25rem;transform:translateY(-100%);font-size:.7rem;line-height:1.2;color:#1f2328;background:rgba(255,255,255,.85);padding:0 .2rem;border-radius:2px;white-space:nowrap}
.heatmap table code{overflow-wrap:anywhere}.heatmap-side td:first-child{overflow-wrap:anywhere}
[data-table=elements] td:first-child{overflow-wrap:anywhere;word-break:break-word}
.heat-source{font-size:.85rem;margin:.6rem 0 0}
@media (max-width:800px){.heat-layout{grid-template-columns:1fr}}
@media (max-width:520px){[data-table=elements] .wide{display:none}.heat-text:not(.short) p:nth-of-type(2n){display:none}}
`

/** Drawn width of the page outline, in SVG units; a cell is square. */
const DRAWN_WIDTH = 400
/** The tallest drawing shown, in CSS pixels: a long page is drawn narrower. */
const MAX_DRAWN_HEIGHT = 1400

type Heatmap = AnswerOf<'GET', '/api/v1/heatmap'>

/**
 * A page's click heatmap at /app/sites/{site}/heatmap?path=: the same verb, with the same
 * parameters, as GET /api/v1/heatmap, drawn over a plain outline of the page.
 */
export function heatmapRoutes(web: Hono<WebEnv>, services: Services) {
  web.get('/sites/:siteId/heatmap', async (c) => {
    const email = c.get('session')!.email
    const caller = memberOf(c)
    const { site } = caller
    const query = c.req.query()
    const form = { path: query.path ?? '/', device: query.device ?? 'desktop', range: query.range ?? '30d' }
    const params = { from: query.from, to: query.to, filters: query.filters, source: query.source, limit: query.limit ?? '20', ...form }
    const [map, outline] = await Promise.all([
      apiFor(c, services, caller)('GET', '/api/v1/heatmap', { params }),
      pageOutline(services, site, form.path),
    ])
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
                {map.summary.deadClicks.toLocaleString('en')} dead, {map.summary.rageClicks.toLocaleString('en')} rage
                {map.grid.rows
                  ? `; on a page of ${map.grid.documentWidth.toLocaleString('en')} × ${map.grid.documentHeight.toLocaleString('en')} px (the median of the clicks).`
                  : '.'}
              </p>
              {map.grid.rows ? (
                <Drawing map={map} outline={outline} />
              ) : (
                <div class="empty">
                  <p>
                    No click with a position on {form.path} from a {form.device} in this range.
                  </p>
                  <p class="muted">
                    The tracking script records where each click lands on the pages it runs on. Try a longer range, another device, or the
                    path as the pages list writes it.
                  </p>
                </div>
              )}
              {map.grid.rows ? <OutlineSource outline={outline} site={site} path={form.path} crawler={!!services.crawler} /> : null}
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
                        <th scope="col" class="num wide">
                          Dead
                        </th>
                        <th scope="col" class="num wide">
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
                          <td class="num wide">{e.deadClicks.toLocaleString('en')}</td>
                          <td class="num wide">{e.rageClicks.toLocaleString('en')}</td>
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

/** What the crawler last read of the page: its heading and text, and when; null when it has no answered copy. */
type Outline = Awaited<ReturnType<typeof pageOutline>>

/** The newest answered snapshot of the page (lib/crawl): the outline is drawn from its heading and main text. */
async function pageOutline(services: Services, site: Site, path: string) {
  const answered = (await pageSnapshots(services.clickhouse, site.id, path, 10)).find((s) => s.status > 0 && s.status < 400)
  if (!answered) return null
  const detail = await snapshotDetail(services.clickhouse, site.id, answered.id)
  if (!detail) return null
  return { heading: detail.h1 || detail.title, text: detail.mainText, fetchedAt: detail.fetchedAt }
}

/** Words of the page's text spread over the drawing: one block for every few rows of cells, each a few lines. */
const WORDS_PER_BLOCK = 24
const ROWS_PER_BLOCK = 4

/**
 * The main text cut into blocks of words, as many as the drawing has room for, from the start of
 * the page, spread down it; a text too short to fill the page stays at its top, as a short page's does.
 */
function TextBlocks({ text, rows }: { text: string; rows: number }) {
  const words = text.split(/\s+/).filter(Boolean)
  const blocks: string[] = []
  const room = Math.max(1, Math.floor(rows / ROWS_PER_BLOCK))
  for (let i = 0; i < words.length && blocks.length < room; i += WORDS_PER_BLOCK) blocks.push(words.slice(i, i + WORDS_PER_BLOCK).join(' '))
  return (
    <div class={blocks.length < room ? 'heat-text short' : 'heat-text'}>
      {blocks.map((block) => (
        <p>{block}</p>
      ))}
    </div>
  )
}

/**
 * The page drawn as its outline (the crawler's heading and text, spread down the page, or a blank
 * page without a crawl), the grid of clicks over it (each cell shaded by its clicks, rage cells
 * outlined) and a dashed line at each tenth with the share of page loads that reached it. The
 * drawing keeps the page's proportions and never gets wider than its card: a long page is drawn narrower.
 */
function Drawing({ map, outline }: { map: Heatmap; outline: Outline }) {
  const { columns, rows, cells } = map.grid
  const cell = DRAWN_WIDTH / columns
  const height = rows * cell
  const most = Math.max(1, ...cells.map((c) => c.clicks))
  const shown = Math.min(DRAWN_WIDTH * 1.5, (MAX_DRAWN_HEIGHT * columns) / rows)
  return (
    <div class="heat-page" style={`aspect-ratio:${columns}/${rows};max-width:${Math.round(shown)}px`}>
      <div class="heat-outline" aria-hidden="true">
        <span class="bar" style="width:100%" />
        {outline ? (
          <>
            {outline.heading ? <span class="heading">{outline.heading}</span> : null}
            <TextBlocks text={outline.text} rows={rows} />
          </>
        ) : (
          <div class="heat-text">
            {Array.from({ length: Math.max(1, Math.floor(rows / ROWS_PER_BLOCK)) }, (_, i) => (
              <span class="bar" style={`width:${[92, 78, 85, 64][i % 4]}%`} />
            ))}
          </div>
        )}
        <span class="bar" style="width:100%" />
      </div>
      <svg
        viewBox={`0 0 ${DRAWN_WIDTH} ${height}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`Click density on a grid of ${columns} by ${rows} cells`}
      >
        {cells.map((c) => (
          <rect
            class="cell"
            x={c.col * cell}
            y={c.row * cell}
            width={cell}
            height={cell}
            fill-opacity={(0.15 + (0.7 * c.clicks) / most).toFixed(3)}
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
            <rect class="rage" x={c.col * cell} y={c.row * cell} width={cell} height={cell} vector-effect="non-scaling-stroke" />
          ))}
        {map.scroll.pageLoads
          ? map.scroll.reach.map((r) => (
              <line
                class="fold"
                x1="0"
                x2={DRAWN_WIDTH}
                y1={(height * r.depth) / 100}
                y2={(height * r.depth) / 100}
                vector-effect="non-scaling-stroke"
              />
            ))
          : null}
      </svg>
      {map.scroll.pageLoads
        ? map.scroll.reach
            .filter((r) => r.depth < 100)
            .map((r) => (
              <span class="heat-reach" style={`top:${r.depth}%`}>
                {`${percent(r.share)} reached ${r.depth}%`}
              </span>
            ))
        : null}
    </div>
  )
}

/** Where the outline comes from, or why there is none and what to do. */
function OutlineSource({ outline, site, path, crawler }: { outline: Outline; site: Site; path: string; crawler: boolean }) {
  if (outline)
    return (
      <p class="muted heat-source">
        The outline is the crawler’s copy of {path} from {day(outline.fetchedAt, site.timezone)}: its heading and its text from the top
        down. The clicks are exactly where they landed; the text shows what the page says, not its exact layout.
      </p>
    )
  const why = !crawler
    ? 'The crawler is turned off on this server (CRAWLER=0), so the clicks are drawn over a blank page.'
    : !site.changeDetection.changeDetectionEnabled
      ? 'Change detection is off for this site, so the crawler does not read its pages, and the clicks are drawn over a blank page.'
      : `The crawler has no copy of ${path} yet, so the clicks are drawn over a blank page.`
  const todo = !crawler
    ? 'Start the server without CRAWLER=0 to have the site’s pages read.'
    : !site.changeDetection.changeDetectionEnabled
      ? 'Turn it on under Change detection in the settings.'
      : 'It reads the homepage, the pages the sitemap lists and the pages visitors view once a day; to have this page read at the next run, ping it (POST /api/v1/ping with its URL).'
  return (
    <div class="empty heat-source" data-outline="none">
      <p>{why}</p>
      <p class="muted">
        {todo} <a href={`/app/sites/${site.id}/settings`}>Settings</a>
      </p>
    </div>
  )
}
