import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { ORIGIN, email, webHarness } from './web-harness'

const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

/** The visitors column of one dashboard panel, as [value, visitors] rows. */
function panelRows(html: string, property: string): [string, number][] {
  const section = new RegExp(`data-panel="${property}"[\\s\\S]*?</section>`).exec(html)?.[0] ?? ''
  return [...section.matchAll(/<td class="bar"><a [^>]*>([^<]*)<\/a><\/td><td class="num">([\d,]+)<\/td>/g)].map((m) => [
    m[1].replace(/&amp;/g, '&'),
    Number(m[2].replace(/,/g, '')),
  ])
}
const metric = (html: string, key: string) => {
  const match = new RegExp(`data-metric="${key}"><dt>[^<]*</dt><dd><span class="value">([^<]+)</span>`).exec(html)
  if (!match) throw new Error(`no ${key} on the page`)
  return match[1]
}

describe('the dashboard', () => {
  it('shows the numbers the API answers for the same key, range and filters', async () => {
    const t = await webHarness()
    const cookie = await t.signIn(email())
    const orgId = /([0-9a-f-]{36})$/.exec((await t.request('/app/orgs', { form: { name: 'Dash' }, cookie })).headers.get('location')!)![1]
    const domain = `dash-${crypto.randomUUID().slice(0, 6)}.example.com`
    const siteId = /sites\/([0-9a-f-]{36})/.exec(
      (await t.request(`/app/orgs/${orgId}/sites`, { form: { domain }, cookie })).headers.get('location')!,
    )![1]
    const settings = await (await t.request(`/app/sites/${siteId}/settings`, { cookie })).text()
    const snippetId = /data-site=(?:&quot;|")([a-z0-9]{10})/.exec(settings)![1]
    const keyHtml = await (await t.request(`/app/orgs/${orgId}/keys`, { form: { name: 'r', scope: 'read' }, cookie })).text()
    const key = /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(keyHtml)![1].trim()

    // visitors from six addresses: pages and referrers chosen so the expected counts are plain
    const app = createApp(t.services)
    const visits: [string, string, string][] = [
      ['203.0.113.1', '/', 'https://www.google.com/'],
      ['203.0.113.2', '/', 'https://www.google.com/'],
      ['203.0.113.3', '/pricing', 'https://www.google.com/'],
      ['203.0.113.4', '/pricing', 'https://news.ycombinator.com/'],
      ['203.0.113.5', '/blog', ''],
      ['203.0.113.6', '/', 'https://news.ycombinator.com/'],
    ]
    for (const [ip, path, referrer] of visits) {
      const hit = await app.request(`${ORIGIN}/api/event`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-forwarded-for': ip, 'user-agent': CHROME },
        body: JSON.stringify({ site: snippetId, name: 'pageview', url: `https://${domain}${path}`, referrer }),
      })
      expect(hit.status).toBe(202)
    }
    const api = async (path: string) => {
      const answer = await app.request(`${ORIGIN}${path}`, { headers: { authorization: `Bearer ${key}` } })
      expect(answer.status).toBe(200)
      return (await answer.json()) as any
    }

    const page = await t.request(`/app/sites/${siteId}?range=30d`, { cookie })
    expect(page.status).toBe(200)
    const html = await page.text()
    // by hand: six visitors, six pageviews; pages / 3, /pricing 2, /blog 1
    expect(metric(html, 'visitors')).toBe('6')
    expect(metric(html, 'pageviews')).toBe('6')
    expect(panelRows(html, 'path')).toEqual([
      ['/', 3],
      ['/pricing', 2],
      ['/blog', 1],
    ])
    // and the API says the same
    const stats = await api(`/api/v1/stats?site_id=${siteId}&range=30d`)
    expect(String(stats.totals.visitors)).toBe(metric(html, 'visitors'))
    const pages = await api(`/api/v1/breakdown?site_id=${siteId}&range=30d&property=path&limit=10`)
    expect(panelRows(html, 'path')).toEqual(pages.results.map((r: any) => [r.value, r.visitors]))
    const sources = await api(`/api/v1/breakdown?site_id=${siteId}&range=30d&property=source&limit=10`)
    expect(panelRows(html, 'source')).toEqual(sources.results.map((r: any) => [r.value, r.visitors]))
    expect(panelRows(html, 'source')[0]).toEqual(['Google', 3])

    // clicking a source row filters the whole page by it, and the filter shows as a removable chip
    const googleLink = /data-panel="source"[\s\S]*?<a href="([^"]+)">Google<\/a>/
      .exec(html)![1]
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
    const filtered = await (await t.request(googleLink, { cookie })).text()
    expect(filtered).toContain('Remove filter source is Google')
    const filters = new URL(googleLink, ORIGIN).searchParams.get('filters')!
    const filteredPages = await api(
      `/api/v1/breakdown?site_id=${siteId}&range=30d&property=path&limit=10&filters=${encodeURIComponent(filters)}`,
    )
    expect(panelRows(filtered, 'path')).toEqual(filteredPages.results.map((r: any) => [r.value, r.visitors]))
    expect(panelRows(filtered, 'path')).toEqual([
      ['/', 2],
      ['/pricing', 1],
    ])
    expect(metric(filtered, 'visitors')).toBe('3')

    // the live figure reads the realtime verb
    const live = (await (await t.request(`/app/sites/${siteId}/live`, { cookie })).json()) as { visitors: number }
    const realtime = await api(`/api/v1/realtime?site_id=${siteId}`)
    expect(live.visitors).toBe(realtime.now)
    expect(live.visitors).toBe(6)

    // a bad range is named; another person's dashboard is not found
    const bad = await t.request(`/app/sites/${siteId}?range=fortnight`, { cookie })
    expect(bad.status).toBe(400)
    expect(await bad.text()).toContain('range')
    const stranger = await t.signIn(email())
    expect((await t.request(`/app/sites/${siteId}`, { cookie: stranger })).status).toBe(404)
    expect((await t.request(`/app/sites/${siteId}/live`, { cookie: stranger })).status).toBe(404)
  })
})
