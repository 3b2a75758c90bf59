import { beforeAll, describe, expect, it } from 'vitest'
import { importHits } from '../../lib/ingest/import'
import { ROLLUP_RECENT_DAYS, refreshRollups } from '../../lib/reports/rollup/refresh'
import { checkedApp, client, orgWithSites, testServices } from '../helpers'

/**
 * Custom events sent as non-interactive (Plausible's `i: false` and `interactive: false`, and this
 * tracker's `interactive: false`) count as events everywhere but leave a bounce a bounce: a visit
 * bounces when it has at most one pageview and no interactive custom event. The same visits are
 * read on the day they happened (from events and the sessions rollup) and two days later, when the
 * day is finished and read from the daily rollup, on /api/v1 and on /api/v2/query alike.
 */

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0'
const DAY = '2026-11-20'
const START = new Date(`${DAY}T10:00:00Z`)

/**
 * The visits, each from an address of its own: its hits in order. A pageview's path; a custom
 * event's name, and how it was sent (Plausible's short or long field, or this tracker's hit).
 */
type Sent =
  | { page: string }
  | { event: string; as: 'plausible'; i?: boolean }
  | { event: string; as: 'plausible-long'; interactive: boolean }
  | { event: string; as: 'own'; interactive?: boolean }
const VISITS: { ip: string; hits: Sent[]; bounce: boolean }[] = [
  // plain bounces
  { ip: '198.51.100.1', hits: [{ page: '/' }], bounce: true },
  { ip: '198.51.100.2', hits: [{ page: '/' }], bounce: true },
  { ip: '198.51.100.3', hits: [{ page: '/' }], bounce: true },
  // one pageview and an interactive custom event: engaged
  { ip: '198.51.100.4', hits: [{ page: '/p' }, { event: 'Signup', as: 'plausible' }], bounce: false },
  // one pageview and a non-interactive custom event, however it was sent: still a bounce
  { ip: '198.51.100.5', hits: [{ page: '/p' }, { event: 'Scroll', as: 'plausible', i: false }], bounce: true },
  { ip: '198.51.100.6', hits: [{ page: '/p' }, { event: 'Scroll', as: 'plausible-long', interactive: false }], bounce: true },
  { ip: '198.51.100.7', hits: [{ page: '/p' }, { event: 'Video', as: 'own', interactive: false }], bounce: true },
  // a non-interactive and an interactive one (true said outright): engaged
  {
    ip: '198.51.100.8',
    hits: [{ page: '/p' }, { event: 'Scroll', as: 'plausible', i: false }, { event: 'Signup', as: 'own', interactive: true }],
    bounce: false,
  },
  // two pageviews: engaged, whatever its events
  { ip: '198.51.100.9', hits: [{ page: '/p' }, { event: 'Scroll', as: 'plausible', i: false }, { page: '/q' }], bounce: false },
]

// by hand from VISITS: 9 visits, 6 bounces (the three plain ones and the three with only a
// non-interactive event); 10 pageviews (one a visit, two in the last); 7 custom events
// (Signup 2, Scroll 4, Video 1). Per page, the visits that viewed it: / 3 (all bounces),
// /p 6 (3 bounces), /q 1 (none). The visits holding a Scroll event: 4, of which 2 bounced.
const TOTALS = { visitors: 9, visits: 9, pageviews: 10, bounceRate: 0.6667, events: 7 }
const PAGES = [
  { value: '/p', visits: 6, pageviews: 6, bounceRate: 0.5 },
  { value: '/', visits: 3, pageviews: 3, bounceRate: 1 },
  { value: '/q', visits: 1, pageviews: 1, bounceRate: 0 },
]
const EVENTS = { Scroll: 4, Signup: 2, Video: 1 }

describe('non-interactive custom events and the bounce rate', () => {
  let clock = START
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let app: ReturnType<typeof checkedApp>
  let key = ''
  let site = { id: '', domain: '', snippetId: '' }

  beforeAll(async () => {
    services = await testServices({ now: () => clock })
    call = client(services)
    app = checkedApp(services)
    const org = await orgWithSites(
      services,
      'Bounces',
      [{ domain: `bounce-${crypto.randomUUID().slice(0, 8)}.example.com`, timezone: 'UTC' }],
      START,
    )
    key = org.key
    site = org.sites[0]

    // a check of the fixture itself, independent of the service: the bounces the comment above counts
    const bounces = VISITS.filter((v) => {
      const pageviews = v.hits.filter((h) => 'page' in h).length
      const interactive = v.hits.filter(
        (h) => 'event' in h && !('i' in h && h.i === false) && !('interactive' in h && h.interactive === false),
      )
      return pageviews <= 1 && interactive.length === 0
    })
    expect(bounces).toEqual(VISITS.filter((v) => v.bounce))
    expect(bounces).toHaveLength(6)

    for (const [n, visit] of VISITS.entries()) {
      let page = ''
      for (const [m, hit] of visit.hits.entries()) {
        clock = new Date(START.getTime() + n * 60_000 + m * 5_000)
        if ('page' in hit) page = hit.page
        const url = `https://${site.domain}${page}`
        const body =
          'page' in hit
            ? { n: 'pageview', u: url, d: site.domain }
            : hit.as === 'plausible'
              ? { n: hit.event, u: url, d: site.domain, ...('i' in hit ? { i: hit.i } : {}) }
              : hit.as === 'plausible-long'
                ? { name: hit.event, url, domain: site.domain, interactive: hit.interactive }
                : { site: site.snippetId, name: hit.event, url, ...('interactive' in hit ? { interactive: hit.interactive } : {}) }
        const res = await app.request('http://api.test/api/event', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': FIREFOX, 'x-forwarded-for': visit.ip },
          body: JSON.stringify(body),
        })
        expect([res.status, res.headers.get('x-dropped')], JSON.stringify(body)).toEqual([202, null])
      }
    }
  })

  const get = async (path: string) => {
    const res = await call('GET', `${path}&site_id=${site.id}`, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json
  }
  const query = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/api/v2/query', { key, body: { site_id: site.domain, ...body } })
    expect(res.status, JSON.stringify(res.json)).toBe(200)
    return res.json.results as { metrics: number[]; dimensions: string[] }[]
  }

  /** Every read of the window, on v1 and v2: the numbers counted by hand above. */
  const expectCounted = async (range: string, dateRange: string) => {
    expect((await get(`/api/v1/stats?range=${range}`)).totals, range).toMatchObject(TOTALS)
    const pages = (await get(`/api/v1/breakdown?range=${range}&property=path`)).results
    expect(
      pages.map((r: Record<string, unknown>) => ({ value: r.value, visits: r.visits, pageviews: r.pageviews, bounceRate: r.bounceRate })),
      range,
    ).toEqual(PAGES)
    // the visit attribute's row holds every visit: the totals' bounce rate
    const browsers = (await get(`/api/v1/breakdown?range=${range}&property=browser`)).results
    expect(browsers.map((r: Record<string, unknown>) => [r.value, r.visits, r.bounceRate])).toEqual([['Firefox', 9, 0.6667]])
    // non-interactive events are events like any other
    const events = (await get(`/api/v1/breakdown?range=${range}&property=event`)).results
    expect(
      Object.fromEntries(
        events.filter((r: Record<string, unknown>) => r.value !== 'pageview').map((r: Record<string, unknown>) => [r.value, r.events]),
      ),
    ).toEqual(EVENTS)
    // the visits holding a Scroll event
    const scrolled = await get(
      `/api/v1/stats?range=${range}&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'event', operator: 'is', value: ['Scroll'] }]))}`,
    )
    expect(scrolled.totals, range).toMatchObject({ visits: 4, events: 4, bounceRate: 0.5 })

    // Plausible's Stats API: bounce_rate as a whole percentage, events the pageviews and custom events
    expect(await query({ metrics: ['visits', 'pageviews', 'events', 'bounce_rate'], date_range: dateRange })).toEqual([
      { metrics: [9, 10, 10 + 7, 67], dimensions: [] },
    ])
    expect(await query({ metrics: ['visits', 'bounce_rate'], date_range: dateRange, dimensions: ['event:page'] })).toEqual(
      PAGES.map((p) => ({ metrics: [p.visits, p.bounceRate * 100], dimensions: [p.value] })),
    )
    expect(
      await query({ metrics: ['visits', 'events', 'bounce_rate'], date_range: dateRange, filters: [['is', 'event:name', ['Scroll']]] }),
    ).toEqual([{ metrics: [4, 4, 50], dimensions: [] }])
  }

  /** Each page's rolled-up bounces, as `table` (a rollup) stores them: by hand, / 3, /p 3, /q none. */
  const rolledPageBounces = (table: 'day_rollups' | 'partial_rollups') =>
    services.clickhouse.query<{ value: string; bounces: string }>(
      `SELECT value, bounces FROM ${table} FINAL WHERE site_id = {s:UUID} AND property = 'path' ORDER BY value`,
      { s: site.id },
    )
  const PAGE_BOUNCES = [
    { value: '/', bounces: '3' },
    { value: '/p', bounces: '3' },
    { value: '/q', bounces: '0' },
  ]

  it('the day they were sent: from events and the sessions rollup, then with the partial rollup of the day', async () => {
    clock = new Date(`${DAY}T12:00:00Z`)
    await expectCounted('today', 'day')
    // every visit ended over half an hour ago: the rollup job rolls them up as today's earlier visits
    await refreshRollups(services.clickhouse, services.repositories, clock, ROLLUP_RECENT_DAYS)
    expect(await rolledPageBounces('partial_rollups')).toEqual(PAGE_BOUNCES)
    await expectCounted('today', 'day')
  })

  it('two days later: the finished day from the daily rollup', async () => {
    clock = new Date('2026-11-22T12:00:00Z')
    await refreshRollups(services.clickhouse, services.repositories, clock, ROLLUP_RECENT_DAYS)
    expect(await rolledPageBounces('day_rollups')).toEqual(PAGE_BOUNCES)
    await expectCounted('7d', '7d')
  })

  it('takes the flag from the raw-hit import too', async () => {
    const imported = await orgWithSites(services, 'Imported', [{ domain: 'import.bounces.test', timezone: 'UTC' }], START)
    const [other] = imported.sites
    const line = (ip: string, second: number, name: string, interactive?: boolean) =>
      JSON.stringify({
        timestamp: `2026-11-19T08:00:0${second}Z`,
        site: other.snippetId,
        name,
        url: `https://${other.domain}/`,
        ip,
        userAgent: FIREFOX,
        ...(interactive === undefined ? {} : { interactive }),
      })
    // by hand: two visits of one pageview; the first's only event is non-interactive (a bounce), the second's interactive
    const lines = [
      line('203.0.113.1', 0, 'pageview'),
      line('203.0.113.1', 1, 'Autoplay', false),
      line('203.0.113.2', 0, 'pageview'),
      line('203.0.113.2', 1, 'Play'),
    ]
    expect(await importHits(lines, services.ingestor)).toMatchObject({ imported: 4, rejected: 0 })
    const res = await call('GET', `/api/v1/stats?site_id=${other.id}&range=custom&from=2026-11-19&to=2026-11-19`, { key: imported.key })
    expect(res.json.totals).toMatchObject({ visits: 2, events: 2, bounceRate: 0.5 })
    expect(await importHits([line('203.0.113.3', 0, 'pageview', false)], services.ingestor)).toMatchObject({
      rejected: 1,
      errors: [{ line: 1, error: 'interactive: only on a custom event' }],
    })
  })

  it('stores the flag on custom events only, and refuses it where it means nothing', async () => {
    const stored = await services.clickhouse.query<{ name: string; n: string }>(
      "SELECT name, toString(countIf(non_interactive = 1)) AS n FROM events WHERE site_id = {s:UUID} AND kind = 'custom' GROUP BY name ORDER BY name",
      { s: site.id },
    )
    expect(stored).toEqual([
      { name: 'Scroll', n: '4' },
      { name: 'Signup', n: '0' },
      { name: 'Video', n: '1' },
    ])
    const send = (body: unknown) =>
      app.request('http://api.test/api/event', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': FIREFOX, 'x-forwarded-for': '198.51.100.99' },
        body: JSON.stringify(body),
      })
    const url = `https://${site.domain}/`
    for (const [body, error] of [
      [{ site: site.snippetId, name: 'pageview', url, interactive: false }, 'interactive: only on a custom event'],
      [{ site: site.snippetId, name: 'Scroll', url, interactive: 'no' }, 'interactive: expected true or false'],
      [{ n: 'Scroll', u: url, d: site.domain, i: 'no' }, 'i: expected true or false'],
      [{ n: 'Scroll', u: url, d: site.domain, i: false, interactive: false }, 'i and interactive: send one of them'],
    ] as const) {
      const res = await send(body)
      expect([res.status, await res.json()], JSON.stringify(body)).toEqual([400, { error }])
    }
  })
})
