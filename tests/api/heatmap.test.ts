import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { client, getOk, testServices } from '../helpers'
import { NOW, UAS, localDate } from './report-reference'

/**
 * The heatmap read against a reference over the fixture hits: clicks with positions on two pages
 * from viewports of four widths, some without a position (as an older tracker sent them), dead and
 * rage clicks, and leave-time reports with their scroll depth. Every expected number is computed
 * here from the hits as written. Visitors are (address, agent, site-local day).
 */

const TZ = 'Europe/Berlin'
const IPS: [string, string][] = [
  ['81.2.69.142', 'GB'],
  ['8.8.8.8', 'US'],
  ['46.114.0.1', 'DE'],
  ['1.1.1.1', 'AU'],
]
const PATHS = ['/pricing', '/']
/** Viewport widths and the device class each belongs to (the screen classes' bounds: under 576 a phone, under 992 a tablet). */
const WIDTHS: [number, string][] = [
  [1440, 'desktop'],
  [1200, 'desktop'],
  [800, 'tablet'],
  [390, 'phone'],
]
const TARGETS = [
  { selector: '#buy', text: 'Buy now', tag: 'button' },
  { selector: 'span.price', text: '', tag: 'span' },
  { selector: 'img.hero', text: '', tag: 'img' },
  { selector: 'a.partner', text: 'Partner', tag: 'a', href: 'https://partner.test/deal' },
]

type Base = { ts: number; ip: number; ua: number; path: string; width: number; device: string }
type Click = Base & {
  target: (typeof TARGETS)[number]
  dead: boolean
  rage: boolean
  position?: { x: number; y: number; docWidth: number; docHeight: number }
}
type Report = Base & { scroll: number }

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

function heatmapFixture(snippet: string, domain: string) {
  const r = prng(17)
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]
  const start = Date.parse('2026-10-05T00:00:00Z')
  const base = (): Base => {
    const [width, device] = pick(WIDTHS)
    return {
      ts: start + Math.floor(r() * (NOW.getTime() - 3_600_000 - start)),
      ip: Math.floor(r() * IPS.length),
      ua: Math.floor(r() * UAS.length),
      path: pick(PATHS),
      width,
      device,
    }
  }
  // positions of four decimals, the edges among them
  const fraction = () => (r() < 0.05 ? pick([0, 1]) : Math.round(r() * 10_000) / 10_000)
  const clicks: Click[] = []
  const reports: Report[] = []
  const lines: string[] = []
  const line = (h: Base, name: string, extra: Record<string, unknown>) =>
    lines.push(
      JSON.stringify({
        timestamp: new Date(h.ts).toISOString(),
        site: snippet,
        name,
        url: `https://${domain}${h.path}`,
        ip: IPS[h.ip][0],
        userAgent: UAS[h.ua],
        screenWidth: h.width,
        ...extra,
      }),
    )
  for (let i = 0; i < 600; i++) {
    const h = base()
    const target = pick(TARGETS)
    const position = r() < 0.1 ? undefined : { x: fraction(), y: fraction(), docWidth: h.width, docHeight: pick([2400, 3000, 3100, 5200]) }
    const c: Click = { ...h, target, dead: !target.href && r() < 0.3, rage: r() < 0.06, position }
    clicks.push(c)
    line(h, 'click', {
      click: {
        selector: target.selector,
        text: target.text,
        tag: target.tag,
        ...(target.href ? { href: target.href } : {}),
        interactive: true,
        dead: c.dead,
        ...(c.rage ? { rage: true } : {}),
        ...position,
      },
    })
  }
  for (let i = 0; i < 300; i++) {
    const h = base()
    const scroll = r() < 0.1 ? pick([0, 100]) : Math.floor(r() * 101)
    reports.push({ ...h, scroll })
    line(h, 'engagement', { engagement: { ms: 4000, scroll } })
  }
  return { lines, clicks, reports }
}

const visitorOf = (h: Base) => `${h.ip}|${h.ua}|${localDate(h.ts, TZ)}`
const distinct = (values: string[]) => new Set(values).size
/** ClickHouse's quantileExact(0.5): the value at index floor(n / 2) of the sorted values. */
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

function expectedHeatmap(
  fx: ReturnType<typeof heatmapFixture>,
  range: { from: string; to: string },
  path: string,
  device: string,
  keep: (h: Base) => boolean = () => true,
) {
  const inWindow = (h: Base) => h.ts >= Date.parse(range.from) && h.ts < Date.parse(range.to)
  const placed = fx.clicks.filter((c) => c.position && inWindow(c) && c.path === path && c.device === device && keep(c))
  const documentWidth = placed.length ? median(placed.map((c) => c.position!.docWidth)) : 0
  const documentHeight = placed.length ? median(placed.map((c) => c.position!.docHeight)) : 0
  const rows = placed.length ? Math.min(400, Math.max(1, Math.round((20 * documentHeight) / documentWidth))) : 0
  // a position in ten-thousandths, its cell by integer division, the far edge in the last cell
  const cellOf = (fraction: number, cells: number) => Math.min(Math.floor((Math.round(fraction * 10_000) * cells) / 10_000), cells - 1)
  const cells = new Map<string, { row: number; col: number; clicks: number; deadClicks: number; rageClicks: number }>()
  for (const c of placed) {
    const row = cellOf(c.position!.y, rows)
    const col = cellOf(c.position!.x, 20)
    const cell = cells.get(`${row},${col}`) ?? { row, col, clicks: 0, deadClicks: 0, rageClicks: 0 }
    cell.clicks++
    cell.deadClicks += c.dead ? 1 : 0
    cell.rageClicks += c.rage ? 1 : 0
    cells.set(`${row},${col}`, cell)
  }
  const elements = TARGETS.map((t) => {
    const hits = placed.filter((c) => c.target === t)
    return {
      selector: t.selector,
      text: t.text,
      tag: t.tag,
      clicks: hits.length,
      share: Math.round((hits.length / placed.length) * 10_000) / 10_000,
      visitors: distinct(hits.map(visitorOf)),
      deadClicks: hits.filter((c) => c.dead).length,
      rageClicks: hits.filter((c) => c.rage).length,
    }
  })
    .filter((e) => e.clicks)
    .sort((a, b) => b.clicks - a.clicks || (a.selector < b.selector ? -1 : 1))
  const loads = fx.reports.filter((e) => inWindow(e) && e.path === path && e.device === device && keep(e))
  return {
    summary: {
      clicks: placed.length,
      visitors: distinct(placed.map(visitorOf)),
      deadClicks: placed.filter((c) => c.dead).length,
      rageClicks: placed.filter((c) => c.rage).length,
    },
    grid: {
      columns: 20,
      rows,
      documentWidth,
      documentHeight,
      cells: [...cells.values()].sort((a, b) => a.row - b.row || a.col - b.col),
    },
    elements,
    scroll: {
      pageLoads: loads.length,
      reach: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map((depth) => {
        const reached = loads.filter((e) => e.scroll >= depth).length
        return { depth, pageLoads: reached, share: loads.length ? Math.round((reached / loads.length) * 10_000) / 10_000 : 0 }
      }),
    },
  }
}

describe('GET /api/v1/heatmap', () => {
  let call: ReturnType<typeof client>
  let services: Awaited<ReturnType<typeof testServices>>
  let key = ''
  let fx: ReturnType<typeof heatmapFixture>
  const ids = { shop: '', ga4: '', snippet: '', domain: '' }

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Heatmaps', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const shop = newSite({ domain: 'shop.heatmap.test', timezone: TZ }, org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.heatmap.test', timezone: TZ }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [shop, ga4]) await services.repositories.sites.create(site)
    fx = heatmapFixture(shop.snippetId, shop.domain)
    const result = await importHits(fx.lines, services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
    Object.assign(ids, { shop: shop.id, ga4: ga4.id, snippet: shop.snippetId, domain: shop.domain })
  })

  const get = (path: string) => getOk(call, path, key)

  it('places each device class’s clicks on the page in the cells where they landed, with elements, dead and rage clicks and scroll reach', async () => {
    for (const [path, device] of [
      ['/pricing', 'desktop'],
      ['/pricing', 'phone'],
      ['/', 'tablet'],
    ]) {
      const json = await get(`/api/v1/heatmap?site_id=${ids.shop}&range=30d&path=${encodeURIComponent(path)}&device=${device}`)
      const expected = expectedHeatmap(fx, json.range, path, device)
      // the fixture gives every combination enough to check
      expect(expected.summary.clicks).toBeGreaterThan(20)
      expect(expected.summary.rageClicks + expected.summary.deadClicks).toBeGreaterThan(0)
      expect(json).toMatchObject({ source: 'standalone', available: true, device })
      expect(json.summary, `${path} ${device}`).toEqual(expected.summary)
      expect(json.grid, `${path} ${device}`).toEqual(expected.grid)
      expect(json.elements, `${path} ${device}`).toEqual(expected.elements)
      expect(json.scroll, `${path} ${device}`).toEqual(expected.scroll)
      expect(json.grid.cells.reduce((n: number, c: { clicks: number }) => n + c.clicks, 0)).toBe(json.summary.clicks)
    }
  })

  it('reads desktop by default, honours filters and limit, and answers an empty grid for a page without clicks', async () => {
    const plain = await get(`/api/v1/heatmap?site_id=${ids.shop}&range=30d&path=/pricing`)
    expect(plain.device).toBe('desktop')
    expect(plain.summary).toEqual(expectedHeatmap(fx, plain.range, '/pricing', 'desktop').summary)

    const filters = encodeURIComponent(JSON.stringify([{ dimension: 'country', operator: 'is', value: ['DE'] }]))
    const german = await get(`/api/v1/heatmap?site_id=${ids.shop}&range=30d&path=/pricing&filters=${filters}`)
    const expected = expectedHeatmap(fx, german.range, '/pricing', 'desktop', (h) => IPS[h.ip][1] === 'DE')
    expect(german.summary.clicks).toBeLessThan(plain.summary.clicks)
    expect(german.summary).toEqual(expected.summary)
    expect(german.grid).toEqual(expected.grid)
    expect(german.scroll).toEqual(expected.scroll)

    const two = await get(`/api/v1/heatmap?site_id=${ids.shop}&range=30d&path=/pricing&limit=2`)
    expect(two.elements).toEqual(plain.elements.slice(0, 2))

    const none = await get(`/api/v1/heatmap?site_id=${ids.shop}&range=30d&path=/nowhere`)
    expect(none.summary).toEqual({ clicks: 0, visitors: 0, deadClicks: 0, rageClicks: 0 })
    expect(none.grid).toEqual({ columns: 20, rows: 0, documentWidth: 0, documentHeight: 0, cells: [] })
    expect(none.scroll.pageLoads).toBe(0)
  })

  it('answers 400 for a bad path or device, 404 for a site out of reach, and available: false for a ga4-only site', async () => {
    for (const [query, pattern] of [
      ['', /path/],
      ['&path=pricing', /path: must start with \//],
      ['&path=/pricing&device=watch', /device/],
      ['&path=/pricing&range=forever', /range/],
    ] as const) {
      const res = await call('GET', `/api/v1/heatmap?site_id=${ids.shop}${query}`, { key })
      expect(res.status, query).toBe(400)
      expect(res.json.error).toMatch(pattern)
    }
    expect((await call('GET', `/api/v1/heatmap?site_id=${crypto.randomUUID()}&path=/`, { key })).status).toBe(404)
    const ga4 = await get(`/api/v1/heatmap?site_id=${ids.ga4}&path=/`)
    expect(ga4).toMatchObject({ source: 'ga4', available: false, elements: [] })
  })

  it('refuses a click whose position is out of range with a 400 naming the field, and stores nothing', async () => {
    const { createApp } = await import('../../functions/app')
    const app = createApp(services)
    const click = (position: Record<string, unknown>) => ({
      site: ids.snippet,
      name: 'click',
      url: `https://${ids.domain}/refused`,
      click: { selector: 'div', tag: 'div', ...position },
    })
    for (const [position, pattern] of [
      [{ x: 1.2, y: 0.5, docWidth: 1000, docHeight: 2000 }, /click\.x: must be a fraction from 0 to 1/],
      [{ x: 0.2, y: -0.1, docWidth: 1000, docHeight: 2000 }, /click\.y/],
      [{ x: 0.2, y: 0.5, docWidth: 0, docHeight: 2000 }, /click\.docWidth/],
      [{ x: 0.2, y: 0.5, docWidth: 1000, docHeight: 2000.5 }, /click\.docHeight/],
      [{ x: 0.2, y: 0.5 }, /click: x, y, docWidth and docHeight come together; docWidth, docHeight missing/],
      [{ rage: 'yes' }, /click\.rage/],
    ] as const) {
      const res = await app.request('http://api.test/api/event', {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'user-agent': UAS[0], 'x-forwarded-for': '8.8.8.8' },
        body: JSON.stringify(click(position)),
      })
      expect(res.status, JSON.stringify(position)).toBe(400)
      expect((await res.json()).error).toMatch(pattern)
    }
    const stored = await services.clickhouse.query<{ n: string }>(
      "SELECT count() AS n FROM events WHERE site_id = {site:UUID} AND pathname = '/refused'",
      { site: ids.shop },
    )
    expect(stored[0].n).toBe('0')
  })
})
