import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { harness, type Harness } from '../helpers'

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
// the agents of Playwright's and Puppeteer's headless Chromium, and of Lighthouse (PageSpeed Insights)
const HEADLESS = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.6778.33 Safari/537.36'
const LIGHTHOUSE =
  'Mozilla/5.0 (Linux; Android 11; moto g power (2022)) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 Chrome-Lighthouse'

describe('every dropped hit says why', () => {
  let t: Harness
  const lines: Record<string, unknown>[] = []
  let app: ReturnType<typeof createApp>

  beforeAll(async () => {
    t = await harness()
    app = createApp(t.services, { level: 'debug', write: (line) => lines.push(JSON.parse(line)) })
  })

  const send = async (url: string, { ua = CHROME, ip = '8.8.8.8', name = 'pageview', extra = {} as Record<string, unknown> } = {}) => {
    const res = await app.request('http://api.test/api/event', {
      method: 'POST',
      headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': ua, 'x-forwarded-for': ip },
      body: JSON.stringify({ site: t.a.site.snippetId, name, url, ...extra }),
    })
    expect(res.status).toBe(202)
    return { dropped: res.headers.get('x-dropped'), requestId: res.headers.get('x-request-id') }
  }
  const stored = async (pathname: string) =>
    (
      await t.clickhouse.query<{ n: string }>('SELECT count() AS n FROM events WHERE site_id = {s:UUID} AND pathname = {p:String}', {
        s: t.a.site.id,
        p: pathname,
      })
    )[0].n
  const patch = (body: Record<string, unknown>) => t.call('PATCH', `/api/v1/sites/${t.a.site.id}`, { key: t.a.write.key, body })
  const page = (path: string) => `https://${t.a.site.domain}${path}`

  it('a stored hit has no X-Dropped', async () => {
    expect((await send(page('/kept'))).dropped).toBeNull()
    expect(await stored('/kept')).toBe('1')
  })

  it('headless and automated browsers are bots: X-Dropped: bot, and a debug line with the reason', async () => {
    for (const ua of [HEADLESS, LIGHTHOUSE]) {
      const { dropped, requestId } = await send(page('/headless'), { ua })
      expect(dropped).toBe('bot')
      expect(lines.find((l) => l.requestId === requestId && l.level === 'debug')).toMatchObject({
        message: 'hit dropped',
        dropped: 'bot',
        reason: expect.stringContaining('bot'),
      })
    }
    expect(await stored('/headless')).toBe('0')
  })

  it('names excluded paths, excluded addresses and switched-off kinds', async () => {
    await patch({ excludedPaths: ['/admin/*'], excludedIps: ['10.1.0.0/16'], trackErrors: false })
    expect((await send(page('/admin/users'))).dropped).toBe('excluded-path')
    expect((await send(page('/from-office'), { ip: '10.1.2.3' })).dropped).toBe('excluded-ip')
    const error = { error: { name: 'TypeError', message: 'x is undefined' } }
    expect((await send(page('/err'), { name: 'error', extra: error })).dropped).toBe('kind-off')
    await patch({ excludedPaths: [], excludedIps: [], trackErrors: true })
    expect((await send(page('/err'), { name: 'error', extra: error })).dropped).toBeNull()
  })

  it("drops pages on localhost and on hostnames that are not the site's, and counts the site's own", async () => {
    const domain = t.a.site.domain
    expect((await send('http://localhost:3000/dev')).dropped).toBe('localhost')
    expect((await send('http://127.0.0.1:8080/dev')).dropped).toBe('localhost')
    expect((await send('http://[::1]:8080/dev')).dropped).toBe('localhost')
    expect((await send('https://copycat.example.net/dev')).dropped).toBe('unknown-hostname')
    // a name that merely ends like the domain is not a subdomain
    expect((await send(`https://evil${domain}/dev`)).dropped).toBe('unknown-hostname')
    expect(await stored('/dev')).toBe('0')

    expect((await send(`https://blog.${domain}/sub`)).dropped).toBeNull()
    expect((await send(`https://${domain.toUpperCase()}/sub`)).dropped).toBeNull()
    expect(await stored('/sub')).toBe('2')

    // the custom domain and the allowed hostnames count too
    await t.services.sites.update(t.a.site.id, (s) => ({ ...s, tracking: { ...s.tracking, customDomain: 'stats.custom-domain.test' } }))
    expect((await send('https://stats.custom-domain.test/allowed')).dropped).toBeNull()
    const set = await patch({ allowedHostnames: ['localhost', 'Staging.Example.NET'] })
    expect(set.status).toBe(200)
    expect(set.json.tracking.allowedHostnames).toEqual(['localhost', 'staging.example.net'])
    expect((await t.call('GET', `/api/v1/sites/${t.a.site.id}`, { key: t.a.read.key })).json.tracking.allowedHostnames).toEqual([
      'localhost',
      'staging.example.net',
    ])
    expect((await send('http://localhost:3000/allowed')).dropped).toBeNull()
    expect((await send('https://staging.example.net/allowed')).dropped).toBeNull()
    expect((await send('http://127.0.0.1:3000/allowed')).dropped).toBe('localhost')
    expect(await stored('/allowed')).toBe('3')
  })

  it('allowedHostnames takes bare hostnames only', async () => {
    for (const bad of ['https://staging.example.net', 'staging.example.net:8080', 'example.net/path', '*.example.net', '']) {
      const res = await patch({ allowedHostnames: [bad] })
      expect(res.status).toBe(400)
      expect(res.json.error).toMatch(/allowedHostnames/)
    }
  })

  it('a site saved before the setting existed reads an empty list and counts its own domain', async () => {
    const { id } = t.b.site
    await t.services.sites.update(id, (s) => {
      const { allowedHostnames: _gone, ...tracking } = s.tracking
      return { ...s, tracking: tracking as typeof s.tracking }
    })
    expect((await t.call('GET', `/api/v1/sites/${id}`, { key: t.b.read.key })).json.tracking.allowedHostnames).toEqual([])
  })

  it('at info level a drop is not logged apart, and browsers can read X-Dropped', async () => {
    const quiet: string[] = []
    const res = await createApp(t.services, { level: 'info', write: (l) => quiet.push(l) }).request('http://api.test/api/event', {
      method: 'POST',
      headers: { 'user-agent': HEADLESS, origin: 'https://x.test' },
      body: JSON.stringify({ site: t.a.site.snippetId, name: 'pageview', url: page('/q') }),
    })
    expect(res.headers.get('x-dropped')).toBe('bot')
    expect(res.headers.get('access-control-expose-headers')).toContain('X-Dropped')
    expect(quiet.map((l) => JSON.parse(l).level)).toEqual(['info'])
  })
})
