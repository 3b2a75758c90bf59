import { describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { SECTION_NAMES } from '../../functions/web/sections'
import { ORIGIN, cookieOf, email, webHarness } from './web-harness'

const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'

/** The visitors column of one breakdown table (a panel's `data-panel` is its property), as [value, visitors] rows. */
function panelRows(html: string, property: string): [string, number][] {
  const table = new RegExp(`data-panel="${property}"[\\s\\S]*?</table>`).exec(html)?.[0] ?? ''
  return [...table.matchAll(/<td class="bar"><a [^>]*>([^<]*)<\/a><\/td><td class="num">([\d,]+)<\/td>/g)].map((m) => [
    m[1].replace(/&amp;/g, '&'),
    Number(m[2].replace(/,/g, '')),
  ])
}
const metric = (html: string, key: string) => {
  const match = new RegExp(`data-metric="${key}"><dt>[^<]*</dt><dd><span class="value">([^<]+)</span>`).exec(html)
  if (!match) throw new Error(`no ${key} on the page`)
  return match[1]
}
const unescapeHtml = (s: string) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"')
/** The URL the page loads a panel from. */
const panelSrc = (html: string, name: string) => unescapeHtml(new RegExp(`data-defer="([^"]*/panels/${name}\\?[^"]*)"`).exec(html)![1])

/** A site of a new organization with six visitors (pages and referrers chosen so the counts are plain), a read and a write key. */
async function siteWithVisitors() {
  const t = await webHarness()
  const cookie = await t.signIn(email())
  const orgId = /([0-9a-f-]{36})$/.exec((await t.request('/app/orgs', { form: { name: 'Dash' }, cookie })).headers.get('location')!)![1]
  const domain = `dash-${crypto.randomUUID().slice(0, 6)}.example.com`
  const siteId = /sites\/([0-9a-f-]{36})/.exec(
    (await t.request(`/app/orgs/${orgId}/sites`, { form: { domain }, cookie })).headers.get('location')!,
  )![1]
  const settings = await (await t.request(`/app/sites/${siteId}/settings`, { cookie })).text()
  const snippetId = /data-site=(?:&quot;|")([a-z0-9]{10})/.exec(settings)![1]
  const keyOf = async (scope: 'read' | 'write') => {
    const keyHtml = await (await t.request(`/app/orgs/${orgId}/keys`, { form: { name: scope, scope }, cookie })).text()
    return /<pre id="secret" class="code">([^<]+)<\/pre>/.exec(keyHtml)![1].trim()
  }
  const key = await keyOf('read')
  const writeKey = await keyOf('write')
  const app = createApp(t.services)
  // address, path, referrer, browser
  const visits: [string, string, string, string][] = [
    ['203.0.113.1', '/', 'https://www.google.com/', CHROME],
    ['203.0.113.2', '/', 'https://www.google.com/', FIREFOX],
    ['203.0.113.3', '/pricing', 'https://www.google.com/', CHROME],
    ['203.0.113.4', '/pricing', 'https://news.ycombinator.com/', CHROME],
    ['203.0.113.5', '/blog', '', FIREFOX],
    ['203.0.113.6', '/', 'https://news.ycombinator.com/', CHROME],
  ]
  for (const [ip, path, referrer, ua] of visits) {
    const hit = await app.request(`${ORIGIN}/api/event`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-forwarded-for': ip, 'user-agent': ua },
      body: JSON.stringify({ site: snippetId, name: 'pageview', url: `https://${domain}${path}`, referrer }),
    })
    expect(hit.status).toBe(202)
  }
  const api = async (path: string, init: { method?: string; body?: unknown; key?: string } = {}) => {
    const answer = await app.request(`${ORIGIN}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${init.key ?? key}`, 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    })
    return { status: answer.status, body: (await answer.json()) as any }
  }
  const ok = async (path: string) => {
    const answer = await api(path)
    expect(answer.status, path).toBe(200)
    return answer.body
  }
  return { t, cookie, orgId, siteId, domain, key, writeKey, api, ok }
}

describe('the dashboard', () => {
  it('shows the numbers the API answers for the same range and filters: totals, top pages, a filtered view', async () => {
    const { t, cookie, siteId, ok } = await siteWithVisitors()
    const page = await t.request(`/app/sites/${siteId}?range=30d`, { cookie })
    expect(page.status).toBe(200)
    const html = await page.text()
    // by hand: six visitors, six pageviews
    expect(metric(html, 'visitors')).toBe('6')
    expect(metric(html, 'pageviews')).toBe('6')
    const stats = await ok(`/api/v1/stats?site_id=${siteId}&range=30d`)
    expect(metric(html, 'visitors')).toBe(String(stats.totals.visitors))
    expect(metric(html, 'visits')).toBe(String(stats.totals.visits))

    // the panels come from their own URLs, loaded after the page
    const pagesPanel = await (await t.request(panelSrc(html, 'pages'), { cookie })).text()
    // by hand: / 3, /pricing 2, /blog 1
    expect(panelRows(pagesPanel, 'path')).toEqual([
      ['/', 3],
      ['/pricing', 2],
      ['/blog', 1],
    ])
    const pages = await ok(`/api/v1/breakdown?site_id=${siteId}&range=30d&property=path&limit=10`)
    expect(panelRows(pagesPanel, 'path')).toEqual(pages.results.map((r: any) => [r.value, r.visitors]))
    // a tab of a panel is in the URL: the entry pages
    const entryLink = unescapeHtml(/<a href="([^"]+)"[^>]*>Entry pages<\/a>/.exec(pagesPanel)![1])
    expect(new URL(entryLink, ORIGIN).searchParams.get('pages')).toBe('entry_page')
    const entryPage = await (await t.request(entryLink, { cookie })).text()
    const entryPanel = await (await t.request(panelSrc(entryPage, 'pages'), { cookie })).text()
    const entries = await ok(`/api/v1/breakdown?site_id=${siteId}&range=30d&property=entry_page&limit=10`)
    expect(panelRows(entryPanel, 'entry_page')).toEqual(entries.results.map((r: any) => [r.value, r.visitors]))

    const sourcesLink = unescapeHtml(
      /<a href="([^"]+)"[^>]*>Sources<\/a>/.exec(await (await t.request(panelSrc(html, 'sources'), { cookie })).text())![1],
    )
    const sourcesPage = await (await t.request(sourcesLink, { cookie })).text()
    const sourcesPanel = await (await t.request(panelSrc(sourcesPage, 'sources'), { cookie })).text()
    const sources = await ok(`/api/v1/breakdown?site_id=${siteId}&range=30d&property=source&limit=10`)
    expect(panelRows(sourcesPanel, 'source')).toEqual(sources.results.map((r: any) => [r.value, r.visitors]))
    expect(panelRows(sourcesPanel, 'source')[0]).toEqual(['Google', 3])

    // devices: by hand, Chrome 4 and Firefox 2
    const devices = await (await t.request(panelSrc(html, 'devices'), { cookie })).text()
    expect(panelRows(devices, 'browser')).toEqual([
      ['Chrome', 4],
      ['Firefox', 2],
    ])

    // clicking a source row filters the whole page by it, and the filter shows as a removable chip
    const googleLink = unescapeHtml(/data-panel="source"[\s\S]*?<a href="([^"]+)">Google<\/a>/.exec(sourcesPanel)![1])
    const filtered = await (await t.request(googleLink, { cookie })).text()
    expect(filtered).toContain('Remove filter source is Google')
    const filters = new URL(googleLink, ORIGIN).searchParams.get('filters')!
    const filteredPagesPanel = await (await t.request(panelSrc(filtered, 'pages'), { cookie })).text()
    const filteredPages = await ok(
      `/api/v1/breakdown?site_id=${siteId}&range=30d&property=path&limit=10&filters=${encodeURIComponent(filters)}`,
    )
    expect(panelRows(filteredPagesPanel, 'path')).toEqual(filteredPages.results.map((r: any) => [r.value, r.visitors]))
    expect(panelRows(filteredPagesPanel, 'path')).toEqual([
      ['/', 2],
      ['/pricing', 1],
    ])
    expect(metric(filtered, 'visitors')).toBe('3')
    const filteredStats = await ok(`/api/v1/stats?site_id=${siteId}&range=30d&filters=${encodeURIComponent(filters)}`)
    expect(metric(filtered, 'visitors')).toBe(String(filteredStats.totals.visitors))
    // by hand: of Google's three, two on Chrome and one on Firefox
    const filteredDevices = await (await t.request(panelSrc(filtered, 'devices'), { cookie })).text()
    expect(panelRows(filteredDevices, 'browser')).toEqual([
      ['Chrome', 2],
      ['Firefox', 1],
    ])

    // the live figure reads the realtime verb
    const live = (await (await t.request(`/app/sites/${siteId}/live`, { cookie })).json()) as { visitors: number }
    const realtime = await ok(`/api/v1/realtime?site_id=${siteId}`)
    expect(live.visitors).toBe(realtime.now)
    expect(live.visitors).toBe(6)

    // custom dates: today alone holds all six
    const today = new Date().toISOString().slice(0, 10)
    const custom = await (await t.request(`/app/sites/${siteId}?range=custom&from=${today}&to=${today}`, { cookie })).text()
    const customStats = await ok(`/api/v1/stats?site_id=${siteId}&range=custom&from=${today}&to=${today}`)
    expect(metric(custom, 'visitors')).toBe(String(customStats.totals.visitors))

    // bad input is named; another person's dashboard is not found
    const bad = await t.request(`/app/sites/${siteId}?range=fortnight`, { cookie })
    expect(bad.status).toBe(400)
    expect(await bad.text()).toContain('range')
    const badTab = await t.request(`/app/sites/${siteId}/panels/devices?devices=shoes`, { cookie })
    expect(badTab.status).toBe(400)
    expect(await badTab.text()).toContain('devices: must be one of')
    expect((await t.request(`/app/sites/${siteId}/panels/nothing`, { cookie })).status).toBe(404)
    const stranger = await t.signIn(email())
    expect((await t.request(`/app/sites/${siteId}`, { cookie: stranger })).status).toBe(404)
    expect((await t.request(`/app/sites/${siteId}/live`, { cookie: stranger })).status).toBe(404)
    expect((await t.request(`/app/sites/${siteId}/panels/pages`, { cookie: stranger })).status).toBe(404)
    expect((await t.request(`/app/sites/${siteId}/errors`, { cookie: stranger })).status).toBe(404)
  })

  it('applies a saved segment, pins annotations on the chart, and shows goals', async () => {
    const { t, cookie, siteId, api, writeKey, ok } = await siteWithVisitors()
    const segment = await api('/api/v1/segments', {
      method: 'POST',
      key: writeKey,
      body: { site_id: siteId, name: 'Hacker News', filters: [{ dimension: 'source', operator: 'is', value: ['Hacker News'] }] },
    })
    expect(segment.status).toBe(201)
    const annotation = await api('/api/v1/annotations', { method: 'POST', key: writeKey, body: { siteId, title: 'Launch day' } })
    expect(annotation.status).toBe(201)
    const goal = await api('/api/v1/goals', {
      method: 'POST',
      key: writeKey,
      body: { site_id: siteId, name: 'Pricing', type: 'page', matchValue: '/pricing' },
    })
    expect(goal.status).toBe(201)

    const html = await (await t.request(`/app/sites/${siteId}?range=7d`, { cookie })).text()
    expect(html).toContain('annotation: Launch day')
    const segmentLink = unescapeHtml(/<nav aria-label="Segments"[\s\S]*?<a href="([^"]+)"[^>]*>Hacker News<\/a>/.exec(html)![1])
    const segmented = await (await t.request(segmentLink, { cookie })).text()
    // by hand: two visitors came from Hacker News
    expect(metric(segmented, 'visitors')).toBe('2')
    expect(segmented).toContain('Remove filter segment is Hacker News')
    // goals: by hand, two converters on /pricing of six visitors
    const goals = await (await t.request(panelSrc(html, 'goals'), { cookie })).text()
    const apiGoals = await ok(`/api/v1/goals?site_id=${siteId}&range=7d`)
    expect(apiGoals.goals[0].visitors).toBe(2)
    expect(goals).toMatch(/>Pricing<\/a><\/td><td class="num">2<\/td><td class="num">2<\/td><td class="num">33%<\/td>/)

    // a funnel: by hand, 3 visitors on /, 2 on /pricing, none went from one to the other in one visit
    const funnel = await api('/api/v1/funnels', {
      method: 'POST',
      key: writeKey,
      body: {
        site_id: siteId,
        name: 'Home to pricing',
        steps: [
          { type: 'page', value: '/' },
          { type: 'page', value: '/pricing' },
        ],
      },
    })
    expect(funnel.status).toBe(201)
    const funnels = await (await t.request(panelSrc(html, 'funnels'), { cookie })).text()
    const apiFunnel = await ok(`/api/v1/funnels?site_id=${siteId}&range=7d`)
    const steps = [...funnels.matchAll(/<td class="bar">([^<]+)<\/td><td class="num">([\d,]+)<\/td>/g)].map((m) => [m[1], Number(m[2])])
    expect(steps).toEqual(apiFunnel.result.steps.map((s: any) => [s.label ?? s.value, s.visitors]))
    expect(steps).toEqual([
      ['/', 3],
      ['/pricing', 0],
    ])
  })

  it('opens every section with the API read it shows; a bad parameter is named', async () => {
    const { t, cookie, siteId, ok } = await siteWithVisitors()
    for (const name of SECTION_NAMES) {
      if (name === 'diff') continue
      const answer = await t.request(`/app/sites/${siteId}/${name}${name === 'page' ? '?path=/pricing' : ''}`, { cookie })
      expect(answer.status, name).toBe(200)
    }
    // a page's detail is the read of GET /api/v1/pages/detail for that path
    const detail = await (await t.request(`/app/sites/${siteId}/page?path=%2Fpricing&range=30d`, { cookie })).text()
    const apiDetail = await ok(`/api/v1/pages/detail?site_id=${siteId}&path=%2Fpricing&range=30d`)
    expect(detail).toContain('data-read="/api/v1/pages/detail"')
    expect(apiDetail.available).toBe(true)
    const bad = await t.request(`/app/sites/${siteId}/vitals?percentile=12`, { cookie })
    expect(bad.status).toBe(400)
    expect(await bad.text()).toContain('percentile')
    expect((await t.request(`/app/sites/${siteId}/diff?change_id=nope`, { cookie })).status).toBe(400)
  })
})

describe('the source switch', () => {
  it('shows on a site with two sources, and the ga4 view is the API’s ga4 answer; what GA4 has no field for is said so', async () => {
    const { t, cookie, siteId, api, writeKey, ok } = await siteWithVisitors()
    expect(await (await t.request(`/app/sites/${siteId}`, { cookie })).text()).not.toContain('id="source"')
    const patched = await api(`/api/v1/sites/${siteId}`, { method: 'PATCH', key: writeKey, body: { sources: ['standalone', 'ga4'] } })
    expect(patched.status).toBe(200)
    const html = await (await t.request(`/app/sites/${siteId}?range=30d`, { cookie })).text()
    expect(html).toMatch(
      /<select id="source" name="source"[^>]*><option value="standalone" selected="">First-party<\/option><option value="ga4">Google Analytics 4<\/option>/,
    )
    expect(metric(html, 'visitors')).toBe('6')
    const ga4 = await (await t.request(`/app/sites/${siteId}?range=30d&source=ga4`, { cookie })).text()
    const ga4Stats = await ok(`/api/v1/stats?site_id=${siteId}&range=30d&source=ga4`)
    // nothing was imported: the ga4 view is empty, as the API says
    expect(ga4Stats.totals.visitors).toBe(0)
    expect(metric(ga4, 'visitors')).toBe('0')
    const screens = await (
      await t.request(panelSrc(ga4, 'devices').replace('source=ga4', 'source=ga4&devices=screen_class'), { cookie })
    ).text()
    const refused = await api(`/api/v1/breakdown?site_id=${siteId}&range=30d&source=ga4&property=screen_class`)
    expect(refused.status).toBe(400)
    expect(screens).toContain('Not available for this view')
    expect(screens).toContain(refused.body.error.replace(/"/g, '&quot;'))
  })
})

describe('shared dashboards', () => {
  it('a secret link opens the read-only dashboard signed out; a new link ends the old; isPublic opens it to anyone', async () => {
    const { t, cookie, orgId, siteId, api, writeKey, key, ok } = await siteWithVisitors()
    // nothing is shared yet
    expect((await t.request(`/share/${siteId}`)).status).toBe(404)
    const none = await api(`/api/v1/sites/${siteId}/share-link`, { method: 'POST', key: writeKey })
    expect(none.status).toBe(400)
    expect(none.body.error).toContain('shareLevel')
    // a read key makes no link
    expect((await api(`/api/v1/sites/${siteId}/share-link`, { method: 'POST', key })).status).toBe(403)

    expect((await api(`/api/v1/sites/${siteId}`, { method: 'PATCH', key: writeKey, body: { shareLevel: 'link' } })).status).toBe(200)
    expect((await t.request(`/share/${siteId}`)).status).toBe(404)
    const made = await api(`/api/v1/sites/${siteId}/share-link`, { method: 'POST', key: writeKey })
    expect(made.status).toBe(201)
    expect(made.body.rotated).toBe(false)
    const link = new URL(made.body.url)
    expect(link.pathname).toBe(`/share/${siteId}`)
    // the site read says when, never the secret
    const site = await ok(`/api/v1/sites/${siteId}`)
    expect(site.sharing.linkCreatedAt).toBe(made.body.createdAt)
    expect(JSON.stringify(site)).not.toContain(link.searchParams.get('auth'))

    // the link trades its secret for a cookie and leaves it out of the address
    const opened = await t.request(`${link.pathname}${link.search}`)
    expect(opened.status).toBe(303)
    expect(opened.headers.get('location')).toBe(`/share/${siteId}`)
    const shareCookie = cookieOf(opened)
    const shared = await t.request(`/share/${siteId}?range=30d`, { cookie: shareCookie })
    expect(shared.status).toBe(200)
    const html = await shared.text()
    expect(metric(html, 'visitors')).toBe('6')
    expect(html).toContain('Shared dashboard, read-only')
    expect(html).not.toContain('/settings')
    const panel = await (await t.request(panelSrc(html, 'pages'), { cookie: shareCookie })).text()
    expect(panelRows(panel, 'path')).toEqual([
      ['/', 3],
      ['/pricing', 2],
      ['/blog', 1],
    ])
    // shareLevel link shares the dashboard, not its sections
    expect((await t.request(`/share/${siteId}/errors`, { cookie: shareCookie })).status).toBe(404)
    // a wrong secret opens nothing
    expect((await t.request(`/share/${siteId}?auth=${'x'.repeat(32)}`)).status).toBe(404)

    // a new link, made in the web application by the owner, ends the old one and its cookie
    const rotated = await t.request(`/app/sites/${siteId}/share/link`, { form: {}, cookie })
    expect(rotated.status).toBe(201)
    const newUrl = new URL(unescapeHtml(/<pre id="share-link" class="code">([^<]+)<\/pre>/.exec(await rotated.text())![1].trim()))
    expect((await t.request(`/share/${siteId}`, { cookie: shareCookie })).status).toBe(404)
    expect((await t.request(`${link.pathname}${link.search}`)).status).toBe(404)
    expect((await t.request(`/share/${siteId}/panels/pages`, { cookie: shareCookie })).status).toBe(404)
    const newCookie = cookieOf(await t.request(`${newUrl.pathname}${newUrl.search}`))
    expect((await t.request(`/share/${siteId}`, { cookie: newCookie })).status).toBe(200)
    // full shares the sections too
    const full = await t.request(`/app/sites/${siteId}/share`, { form: { shareLevel: 'full' }, cookie })
    expect(full.status).toBe(303)
    expect((await t.request(`/share/${siteId}/errors`, { cookie: newCookie })).status).toBe(200)
    // sharing nothing ends the link
    await t.request(`/app/sites/${siteId}/share`, { form: { shareLevel: 'none' }, cookie })
    expect((await t.request(`/share/${siteId}`, { cookie: newCookie })).status).toBe(404)

    // public: anyone, no link needed
    await t.request(`/app/sites/${siteId}/share`, { form: { shareLevel: 'link', isPublic: 'on' }, cookie })
    const open = await t.request(`/share/${siteId}`)
    expect(open.status).toBe(200)
    expect(metric(await open.text(), 'visitors')).toBe('6')
    expect((await ok(`/api/v1/sites/${siteId}`)).sharing.isPublic).toBe(true)

    // a member who is not an owner or admin sees the sharing page but changes nothing
    const mate = email()
    expect((await t.request(`/app/orgs/${orgId}/team/invite`, { form: { email: mate, role: 'member' }, cookie })).status).toBe(303)
    const team = await (await t.request(`/app/orgs/${orgId}/team`, { cookie })).text()
    const invitationId = /team\/invitations\/([0-9a-f-]{36})\/cancel/.exec(team)![1]
    const mateCookie = await t.signIn(mate)
    expect((await t.request(`/app/invitations/${invitationId}/accept`, { form: {}, cookie: mateCookie })).status).toBe(303)
    const matePage = await t.request(`/app/sites/${siteId}/share`, { cookie: mateCookie })
    expect(matePage.status).toBe(200)
    expect(await matePage.text()).toContain('Owners and admins change how a site is shared')
    expect((await t.request(`/app/sites/${siteId}/share`, { form: { shareLevel: 'none' }, cookie: mateCookie })).status).toBe(403)
    expect((await t.request(`/app/sites/${siteId}/share/link`, { form: {}, cookie: mateCookie })).status).toBe(403)
    expect((await ok(`/api/v1/sites/${siteId}`)).sharing.shareLevel).toBe('link')
  })
})
