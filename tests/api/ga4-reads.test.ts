import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../functions/app'
import { GA4_AUTOMATIC_EVENTS } from '../../lib/reports/query/ga4-datasets'
import { DIMENSIONS } from '../../lib/reports/dimensions'
import { createApiKey } from '../../lib/accounts/admin'
import { client, orgWithSites, testServices } from '../helpers'
import { type ImportedRow, type ImportUnit, importedRowsOf } from '../imported-rows'
import { mcpClient } from '../e2e/mcp-client'

/**
 * Reads with source=ga4 over imported aggregates. Fixture GA4 sessions are turned into the rows an
 * import stores by a small reference function (GA4's totalUsers: distinct users per group and
 * date); the expected answers are computed from the sessions themselves.
 */

const NOW = new Date('2026-11-22T15:00:00Z')
const TZ = 'Europe/Berlin'

interface Session {
  user: string
  date: string
  hour: number
  source: string
  manualSource: string
  medium: string
  campaign: string
  content: string
  term: string
  channel: string
  referrer: string
  host: string
  country: string
  region: string
  city: string
  device: string
  browser: string
  os: string
  engaged: boolean
  pages: { path: string; seconds: number }[]
  custom: string[]
  scrolls: number
}

// a small deterministic generator
function random(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const SOURCES = [
  {
    source: 'google',
    manualSource: '',
    medium: 'organic',
    campaign: '',
    content: '',
    term: '',
    channel: 'Organic Search',
    referrer: 'https://www.google.com/',
  },
  { source: '', manualSource: '', medium: '', campaign: '', content: '', term: '', channel: 'Direct', referrer: '' },
  {
    source: 'newsletter',
    manualSource: 'newsletter',
    medium: 'email',
    campaign: 'nov',
    content: 'top',
    term: 'shoes',
    channel: 'Email',
    referrer: '',
  },
  {
    source: 't.co',
    manualSource: '',
    medium: 'referral',
    campaign: '',
    content: '',
    term: '',
    channel: 'Organic Social',
    referrer: 'https://t.co/',
  },
]
const PLACES = [
  { country: 'DE', region: 'Berlin', city: 'Berlin' },
  { country: 'DE', region: 'Bavaria', city: 'Munich' },
  { country: 'FR', region: 'Île-de-France', city: 'Paris' },
  { country: 'US', region: 'California', city: 'San Francisco' },
]
const DEVICES = ['Desktop', 'Mobile', 'Tablet']
const BROWSERS = ['Chrome', 'Firefox', 'Safari']
const SYSTEMS = ['Windows', 'macOS', 'iOS', 'Android']
const HOSTS = ['ga4.test', 'blog.ga4.test']
const PATHS = ['/', '/pricing', '/blog/a', '/blog/b']
const DAYS = ['2026-11-14', '2026-11-15', '2026-11-16', '2026-11-17', '2026-11-18', '2026-11-19', '2026-11-20', '2026-11-21', '2026-11-22']

/**
 * Sessions of 10 users over 9 site-local days. A user's sessions of one day share their
 * session attributes (source, place, device, ...), as one visitor's day mostly does.
 */
function fixture(): Session[] {
  const r = random(27)
  const pick = <T>(list: readonly T[]) => list[Math.floor(r() * list.length)]
  const sessions: Session[] = []
  for (const date of DAYS) {
    for (let u = 1; u <= 10; u++) {
      if (r() < 0.35) continue
      const profile = {
        ...pick(SOURCES),
        ...pick(PLACES),
        host: pick(HOSTS),
        device: pick(DEVICES),
        browser: pick(BROWSERS),
        os: pick(SYSTEMS),
      }
      const count = 1 + Math.floor(r() * 2)
      for (let i = 0; i < count; i++) {
        const pages = Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({ path: pick(PATHS), seconds: Math.floor(r() * 90) }))
        const custom = [r() < 0.3 ? 'signup' : null, r() < 0.2 ? 'newsletter' : null, r() < 0.15 ? 'signup' : null].filter(
          (e) => e !== null,
        )
        sessions.push({
          user: `u${u}`,
          date,
          hour: Math.floor(r() * 24),
          ...profile,
          engaged: pages.length > 1 || r() < 0.3,
          pages,
          custom,
          scrolls: Math.floor(r() * 2),
        })
      }
    }
  }
  return sessions
}

/** Every event name of a session, once per occurrence: GA4's automatic ones and the custom ones. */
const eventsOf = (s: Session) => ['session_start', ...s.pages.map(() => 'page_view'), ...Array(s.scrolls).fill('scroll'), ...s.custom]
const secondsOf = (s: Session) => s.pages.reduce((n, p) => n + p.seconds, 0)

/** The reference import: per dataset, one unit per session (or per page or event name of a session). */
function importedRows(siteId: string, sessions: Session[], version: number): ImportedRow[] {
  const whole = (s: Session, dims: Record<string, string>, hourly = false): ImportUnit => ({
    user: s.user,
    date: s.date,
    hour: hourly ? s.hour : undefined,
    engaged: s.engaged,
    dims,
    pageviews: s.pages.length,
    seconds: secondsOf(s),
    events: eventsOf(s).length,
  })
  return importedRowsOf(
    siteId,
    {
      visitors: sessions.map((s) => whole(s, {})),
      visitors_hourly: sessions.map((s) => whole(s, {}, true)),
      sources: sessions.map((s) =>
        whole(s, {
          source_name: s.source,
          utm_source: s.manualSource,
          utm_medium: s.medium,
          utm_campaign: s.campaign,
          utm_content: s.content,
          utm_term: s.term,
          channel: s.channel,
          referrer: s.referrer,
        }),
      ),
      hostnames: sessions.map((s) => whole(s, { hostname: s.host })),
      entry_pages: sessions.map((s) => whole(s, { entry_page: s.pages[0].path })),
      locations: sessions.map((s) => whole(s, { country: s.country, region: s.region, city: s.city })),
      devices: sessions.map((s) => whole(s, { device: s.device })),
      browsers: sessions.map((s) => whole(s, { browser: s.browser })),
      systems: sessions.map((s) => whole(s, { os: s.os })),
      pages: sessions.flatMap((s) =>
        [...new Set(s.pages.map((p) => p.path))].map((path) => {
          const views = s.pages.filter((p) => p.path === path)
          return {
            ...whole(s, { hostname: s.host, path }),
            pageviews: views.length,
            seconds: views.reduce((n, p) => n + p.seconds, 0),
            events: views.length,
          }
        }),
      ),
      events: sessions.flatMap((s) =>
        [...new Set(eventsOf(s))].map((event) => {
          const count = eventsOf(s).filter((e) => e === event).length
          return { ...whole(s, { event }), pageviews: event === 'page_view' ? count : 0, seconds: 0, events: count }
        }),
      ),
    },
    version,
  )
}

// --- expectations, from the sessions directly

const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits
const isAutomatic = (name: string) => (GA4_AUTOMATIC_EVENTS as readonly string[]).includes(name)
/** Distinct users of each day, summed over the days. */
const dailyUsers = (sessions: Session[]) =>
  [...new Set(sessions.map((s) => s.date))].reduce((n, d) => n + new Set(sessions.filter((s) => s.date === d).map((s) => s.user)).size, 0)

function expectedTotals(sessions: Session[], events: boolean) {
  const visits = sessions.length
  const pageviews = sessions.reduce((n, s) => n + s.pages.length, 0)
  const engaged = sessions.filter((s) => s.engaged).length
  return {
    visitors: dailyUsers(sessions),
    visits,
    pageviews,
    bounceRate: visits ? round((visits - engaged) / visits, 4) : 0,
    avgDuration: visits ? Math.round(sessions.reduce((n, s) => n + secondsOf(s), 0) / visits) : 0,
    viewsPerVisit: visits ? round(pageviews / visits, 2) : 0,
    events: events ? sessions.reduce((n, s) => n + s.custom.length, 0) : null,
  }
}

/** Breakdown rows of a session attribute: per value, the totals of its sessions (a user's day shares its attributes). */
function expectedSessionBreakdown(sessions: Session[], attributeOf: (s: Session) => string) {
  const values = [...new Set(sessions.map(attributeOf))]
  return sortRows(
    values.map((value) => {
      const { visitors, visits, pageviews, bounceRate, avgDuration } = expectedTotals(
        sessions.filter((s) => attributeOf(s) === value),
        false,
      )
      return { value, visitors, visits, pageviews, events: null, bounceRate, avgDuration }
    }),
  )
}

const sortRows = <T extends { value: string; visitors: number }>(rows: T[]) =>
  rows.sort((a, b) => b.visitors - a.visitors || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))

const inWindow = (sessions: Session[], from: string, to: string) => sessions.filter((s) => s.date >= from && s.date <= to)

const SESSION_DIMENSIONS: Record<string, (s: Session) => string> = {
  source: (s) => s.source || 'Direct / None',
  referrer: (s) => s.referrer || 'Direct / None',
  channel: (s) => s.channel,
  utm_source: (s) => s.manualSource,
  utm_medium: (s) => s.medium,
  utm_campaign: (s) => s.campaign,
  utm_content: (s) => s.content,
  utm_term: (s) => s.term,
  entry_page: (s) => s.pages[0].path,
  country: (s) => s.country,
  region: (s) => s.region,
  city: (s) => s.city,
  device: (s) => s.device,
  browser: (s) => s.browser,
  os: (s) => s.os,
}

/** Page rows: per (day, host, path) the distinct users, visits and views of that page, summed per value of `by`. */
function expectedPageBreakdown(sessions: Session[], by: 'path' | 'hostname') {
  const units = sessions.flatMap((s) =>
    [...new Set(s.pages.map((p) => p.path))].map((path) => {
      const views = s.pages.filter((p) => p.path === path)
      return { s, path, host: s.host, views: views.length, seconds: views.reduce((n, p) => n + p.seconds, 0) }
    }),
  )
  const values = [...new Set(units.map((u) => (by === 'path' ? u.path : u.host)))]
  return sortRows(
    values.map((value) => {
      const mine = units.filter((u) => (by === 'path' ? u.path : u.host) === value)
      const groups = new Set(mine.map((u) => `${u.s.date}|${u.host}|${u.path}`))
      const visitors = [...groups].reduce(
        (n, g) => n + new Set(mine.filter((u) => `${u.s.date}|${u.host}|${u.path}` === g).map((u) => u.s.user)).size,
        0,
      )
      const visits = mine.length
      const engaged = mine.filter((u) => u.s.engaged).length
      return {
        value,
        visitors,
        visits,
        pageviews: mine.reduce((n, u) => n + u.views, 0),
        events: null,
        bounceRate: round((visits - engaged) / visits, 4),
        avgDuration: Math.round(mine.reduce((n, u) => n + u.seconds, 0) / visits),
      }
    }),
  )
}

/** Event rows: per name, users summed per day, sessions holding it, its page views; events count custom ones only. */
function expectedEventBreakdown(sessions: Session[]) {
  const names = [...new Set(sessions.flatMap(eventsOf))]
  return sortRows(
    names.map((value) => {
      const holding = sessions.filter((s) => eventsOf(s).includes(value))
      const count = holding.reduce((n, s) => n + eventsOf(s).filter((e) => e === value).length, 0)
      return {
        value,
        visitors: dailyUsers(holding),
        visits: holding.length,
        pageviews: value === 'page_view' ? count : 0,
        events: isAutomatic(value) ? 0 : count,
      }
    }),
  )
}

describe('reads with source=ga4', () => {
  let services: Awaited<ReturnType<typeof testServices>>
  let call: ReturnType<typeof client>
  let key: string
  let orgId: string
  const orgWrite = () => createApiKey(services.repositories, { orgId, name: 'write', scope: 'write' }, NOW)
  let ga4Site: { id: string; snippetId: string }
  let bothSite: { id: string }
  let plainSite: { id: string }
  const sessions = fixture()
  const WEEK = 'range=custom&from=2026-11-15&to=2026-11-21'
  const week = inWindow(sessions, '2026-11-15', '2026-11-21')

  beforeAll(async () => {
    services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await orgWithSites(
      services,
      'GA4 reads',
      [
        { domain: 'ga4.test', timezone: TZ, sources: ['ga4'], primarySource: 'ga4' },
        { domain: 'both.ga4.test', timezone: TZ, sources: ['standalone', 'ga4'], primarySource: 'standalone' },
        { domain: 'plain.ga4.test', timezone: TZ },
      ],
      NOW,
    )
    key = org.key
    orgId = org.org.id
    ;[ga4Site, bothSite, plainSite] = org.sites
    await services.clickhouse.insert('imported_aggregates', importedRows(ga4Site.id, sessions, 1))
    // the other site's import holds the same sessions minus the newsletter's: each read takes its own site's rows
    await services.clickhouse.insert(
      'imported_aggregates',
      importedRows(
        bothSite.id,
        sessions.filter((s) => s.source !== 'newsletter'),
        1,
      ),
    )
  })

  const get = async (path: string, status = 200) => {
    const res = await call('GET', path, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(status)
    return res.json
  }

  it('answers stats from the imported days, echoing the source', async () => {
    const json = await get(`/api/v1/stats?site_id=${ga4Site.id}&${WEEK}`)
    expect(json.source).toBe('ga4')
    expect(json.totals).toEqual(expectedTotals(week, true))
    // the fixture is not trivial: users come back on several days and some hold two sessions a day
    expect(json.totals.visitors).toBeGreaterThan(new Set(week.map((s) => s.user)).size)
    expect(json.totals.visits).toBeGreaterThan(json.totals.visitors)
    expect(json.totals.events).toBeGreaterThan(0)
    expect(json.range).toMatchObject({ from: '2026-11-15T00:00:00+01:00', to: '2026-11-22T00:00:00+01:00', interval: 'day' })
    // the primary source by default; the other site's ga4 is asked for by name and holds its own rows
    const other = await get(`/api/v1/stats?site_id=${bothSite.id}&${WEEK}&source=ga4`)
    expect(other.totals).toEqual(
      expectedTotals(
        week.filter((s) => s.source !== 'newsletter'),
        true,
      ),
    )
  })

  it('takes range=all from the first imported day', async () => {
    const json = await get(`/api/v1/stats?site_id=${ga4Site.id}&range=all`)
    expect(json.range).toMatchObject({ from: '2026-11-14T00:00:00+01:00', interval: 'day' })
    expect(json.totals).toEqual(expectedTotals(sessions, true))
  })

  it('answers a day series from dates and an hour series from date and hour', async () => {
    const days = await get(`/api/v1/timeseries?site_id=${ga4Site.id}&${WEEK}`)
    expect(days.series).toEqual(
      DAYS.slice(1, 8).map((d) => {
        const on = sessions.filter((s) => s.date === d)
        return {
          timestamp: `${d}T00:00:00+01:00`,
          visitors: new Set(on.map((s) => s.user)).size,
          visits: on.length,
          pageviews: on.reduce((n, s) => n + s.pages.length, 0),
        }
      }),
    )
    const hours = await get(`/api/v1/timeseries?site_id=${ga4Site.id}&range=custom&from=2026-11-20&to=2026-11-20`)
    expect(hours.range.interval).toBe('hour')
    expect(hours.series).toHaveLength(24)
    expect(hours.series).toEqual(
      Array.from({ length: 24 }, (_, h) => {
        const on = sessions.filter((s) => s.date === '2026-11-20' && s.hour === h)
        return {
          timestamp: `2026-11-20T${String(h).padStart(2, '0')}:00:00+01:00`,
          visitors: new Set(on.map((s) => s.user)).size,
          visits: on.length,
          pageviews: on.reduce((n, s) => n + s.pages.length, 0),
        }
      }),
    )
    // a month bucket sums its days
    const months = await get(`/api/v1/timeseries?site_id=${ga4Site.id}&range=custom&from=2026-09-01&to=2026-11-30`)
    expect(months.range.interval).toBe('month')
    expect(months.series.at(-1)).toEqual({
      timestamp: '2026-11-01T00:00:00+01:00',
      visitors: dailyUsers(sessions),
      visits: sessions.length,
      pageviews: sessions.reduce((n, s) => n + s.pages.length, 0),
    })
  })

  it('breaks down by every dimension with a GA4 field', async () => {
    const mapped = DIMENSIONS.filter((d) => d.ga4).map((d) => d.name)
    expect(mapped.sort()).toEqual([...Object.keys(SESSION_DIMENSIONS), 'path', 'hostname', 'event'].sort())
    for (const [property, attributeOf] of Object.entries(SESSION_DIMENSIONS)) {
      const json = await get(`/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}&property=${property}`)
      expect(json.results, property).toEqual(expectedSessionBreakdown(week, attributeOf))
    }
    const paths = await get(`/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}&property=path`)
    expect(paths.results).toEqual(expectedPageBreakdown(week, 'path'))
    // hostnames come with their own users (a session's pages here share its host), not summed over pages
    const hosts = await get(`/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}&property=hostname`)
    expect(hosts.results).toEqual(expectedSessionBreakdown(week, (s) => s.host))
    const events = await get(`/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}&property=event`)
    expect(events.results).toEqual(expectedEventBreakdown(week))
    const limited = await get(`/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}&property=city&limit=2`)
    expect(limited.results).toEqual(expectedSessionBreakdown(week, SESSION_DIMENSIONS.city).slice(0, 2))
  })

  it('filters within one dataset with every operator', async () => {
    const filters = (list: unknown) => encodeURIComponent(JSON.stringify(list))
    const de = filters([{ dimension: 'country', operator: 'is', value: ['DE'] }])
    const stats = await get(`/api/v1/stats?site_id=${ga4Site.id}&${WEEK}&filters=${de}`)
    // events: the locations dataset cannot tell GA4's automatic events apart
    expect(stats.totals).toEqual(
      expectedTotals(
        week.filter((s) => s.country === 'DE'),
        false,
      ),
    )
    const cities = await get(`/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}&property=city&filters=${de}`)
    expect(cities.results).toEqual(
      expectedSessionBreakdown(
        week.filter((s) => s.country === 'DE'),
        (s) => s.city,
      ),
    )
    const cases: [unknown, (s: Session) => boolean][] = [
      [{ dimension: 'source', operator: 'is_not', value: ['Direct / None'] }, (s) => s.source !== ''],
      [{ dimension: 'source', operator: 'contains', value: ['GOO', 'news'] }, (s) => ['google', 'newsletter'].includes(s.source)],
      [{ dimension: 'referrer', operator: 'matches', value: ['^https://t\\.'] }, (s) => s.referrer === 'https://t.co/'],
    ]
    for (const [filter, keep] of cases) {
      const json = await get(`/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}&property=channel&filters=${filters([filter])}`)
      expect(json.results, JSON.stringify(filter)).toEqual(expectedSessionBreakdown(week.filter(keep), SESSION_DIMENSIONS.channel))
    }
    // an event filter reads the events dataset: users and sessions holding the event, its count as events
    const signup = await get(
      `/api/v1/stats?site_id=${ga4Site.id}&${WEEK}&filters=${filters([{ dimension: 'event', operator: 'is', value: ['signup'] }])}`,
    )
    const holding = week.filter((s) => s.custom.includes('signup'))
    const engaged = holding.filter((s) => s.engaged).length
    expect(signup.totals).toEqual({
      visitors: dailyUsers(holding),
      visits: holding.length,
      pageviews: 0,
      bounceRate: round((holding.length - engaged) / holding.length, 4),
      avgDuration: 0,
      viewsPerVisit: 0,
      events: holding.reduce((n, s) => n + s.custom.filter((e) => e === 'signup').length, 0),
    })
    // a segment's filters are checked against the ga4 read as if written out
    const day = await get(`/api/v1/timeseries?site_id=${ga4Site.id}&${WEEK}&filters=${de}`)
    expect(day.series[0].visits).toBe(week.filter((s) => s.date === '2026-11-15' && s.country === 'DE').length)
  })

  it('refuses what the imported data cannot answer, naming it', async () => {
    const filters = (list: unknown) => encodeURIComponent(JSON.stringify(list))
    const refused = async (path: string, ...names: RegExp[]) => {
      const json = await get(path, 400)
      for (const name of names) expect(json.error).toMatch(name)
    }
    const base = `/api/v1/breakdown?site_id=${ga4Site.id}&${WEEK}`
    await refused(`${base}&property=exit_page`, /exit_page/)
    await refused(`${base}&property=screen_class`, /screen_class/)
    await refused(`${base}&property=prop:plan`, /prop:plan/)
    await refused(`${base}&property=goal`, /goal/)
    await refused(`${base}&property=path&filters=${filters([{ dimension: 'screen_class', operator: 'is', value: ['x'] }])}`, /screen_class/)
    // a filter and a breakdown, two filters, a filter and hour buckets: no single dataset holds both
    await refused(`${base}&property=path&filters=${filters([{ dimension: 'country', operator: 'is', value: ['DE'] }])}`, /country/, /path/)
    await refused(
      `/api/v1/stats?site_id=${ga4Site.id}&${WEEK}&filters=${filters([
        { dimension: 'device', operator: 'is', value: ['mobile'] },
        { dimension: 'source', operator: 'is', value: ['google'] },
      ])}`,
      /device/,
      /source/,
    )
    await refused(
      `/api/v1/timeseries?site_id=${ga4Site.id}&range=today&filters=${filters([{ dimension: 'country', operator: 'is', value: ['DE'] }])}`,
      /country/,
      /hour buckets/,
    )
    // range=realtime reads GA4's Realtime API (tests/api/ga4-connect.test.ts): without a Google client it says what to configure
    expect((await get(`/api/v1/stats?site_id=${ga4Site.id}&range=realtime`, 409)).error).toMatch(/GOOGLE_CLIENT_ID/)
    // a property the Realtime API does not report is named before Google is asked
    await refused(`/api/v1/breakdown?site_id=${ga4Site.id}&range=realtime&property=path`, /path/)
    // a source the site does not have
    await refused(`/api/v1/stats?site_id=${plainSite.id}&source=ga4`, /source/, /ga4/)
    await refused(`/api/v1/stats?site_id=${ga4Site.id}&source=standalone`, /source/, /standalone/)
  })

  it('exports totals, series and a breakdown per mapped dimension', async () => {
    const json = await get(`/api/v1/export?site_id=${ga4Site.id}&${WEEK}`)
    expect(json.source).toBe('ga4')
    expect(json.totals).toEqual(expectedTotals(week, true))
    expect(json.series).toHaveLength(7)
    expect(Object.keys(json.breakdowns).sort()).toEqual(
      DIMENSIONS.filter((d) => d.ga4)
        .map((d) => d.name)
        .sort(),
    )
    expect(json.breakdowns.device).toEqual(expectedSessionBreakdown(week, SESSION_DIMENSIONS.device))
    expect(json.breakdowns.path).toEqual(expectedPageBreakdown(week, 'path'))
  })

  it('lists GA4 events, automatic ones only with builtin=1', async () => {
    const expected = (builtin: boolean) => {
      const names = [...new Set(week.flatMap(eventsOf))].filter((n) => builtin || !isAutomatic(n))
      return names
        .map((name) => {
          const holding = week.filter((s) => eventsOf(s).includes(name))
          return { name, count: holding.reduce((n, s) => n + eventsOf(s).filter((e) => e === name).length, 0), users: dailyUsers(holding) }
        })
        .sort((a, b) => b.count - a.count || (a.name < b.name ? -1 : 1))
    }
    const custom = await get(`/api/v1/ga4-events?site_id=${ga4Site.id}&${WEEK}`)
    expect(custom).toMatchObject({ available: true, source: 'ga4', builtin: false })
    expect(custom.events).toEqual(expected(false))
    expect(custom.events.map((e: { name: string }) => e.name).sort()).toEqual(['newsletter', 'signup'])
    const all = await get(`/api/v1/ga4-events?site_id=${ga4Site.id}&${WEEK}&builtin=1&source=ga4`)
    expect(all.events).toEqual(expected(true))
    expect(all.events[0].name).toBe('page_view')
    expect(await get(`/api/v1/ga4-events?site_id=${plainSite.id}`)).toEqual({ available: false, source: 'ga4', builtin: false, events: [] })
    expect((await get(`/api/v1/ga4-events?site_id=${ga4Site.id}&source=standalone`, 400)).error).toMatch(/^source/)
    const country = encodeURIComponent(JSON.stringify([{ dimension: 'country', operator: 'is', value: ['DE'] }]))
    expect((await get(`/api/v1/ga4-events?site_id=${ga4Site.id}&filters=${country}`, 400)).error).toMatch(/country.*event/)
  })

  it('lists a ga4-primary site with its imported numbers', async () => {
    const json = await get('/api/v1/sites?range=7d')
    const listed = json.sites.find((s: { id: string }) => s.id === ga4Site.id)
    const { events: _, ...current } = expectedTotals(inWindow(sessions, '2026-11-16', '2026-11-22'), true)
    const { events: __, ...previous } = expectedTotals(inWindow(sessions, '2026-11-09', '2026-11-15'), true)
    expect(listed.stats).toMatchObject({ source: 'ga4', ...current, previous })
    expect(listed.stats.sparkline).toEqual(DAYS.slice(2).map((d) => new Set(sessions.filter((s) => s.date === d).map((s) => s.user)).size))
  })

  it('a re-imported day replaces the older import of that day instead of adding to it', async () => {
    const day = '2026-11-18'
    const site = await orgWithSites(services, 'Reimport', [{ domain: 'again.ga4.test', timezone: TZ, sources: ['ga4'] }], NOW)
    const id = site.sites[0].id
    await services.clickhouse.insert('imported_aggregates', importedRows(id, sessions, 1))
    // GA4 settled the day: every session of it has one more view of its landing page
    const settled = sessions.map((s) =>
      s.date === day ? { ...s, pages: [...s.pages, { path: s.pages[0].path, seconds: 5 }], engaged: true } : s,
    )
    await services.clickhouse.insert(
      'imported_aggregates',
      importedRows(
        id,
        settled.filter((s) => s.date === day),
        2,
      ),
    )
    const res = await call('GET', `/api/v1/stats?site_id=${id}&${WEEK}`, { key: site.key })
    expect(res.json.totals.pageviews).toBeGreaterThan(expectedTotals(week, true).pageviews)
    expect(res.json.totals).toEqual(expectedTotals(inWindow(settled, '2026-11-15', '2026-11-21'), true))
    const pages = await call('GET', `/api/v1/breakdown?site_id=${id}&${WEEK}&property=path`, { key: site.key })
    expect(pages.json.results).toEqual(expectedPageBreakdown(inWindow(settled, '2026-11-15', '2026-11-21'), 'path'))
  })

  it('collector-only reads: available false for the ga4 source, a 400 for a source the site does not have, the source echoed', async () => {
    const goal = await call('POST', '/api/v1/goals', {
      key: (await orgWrite()).key,
      body: { site_id: ga4Site.id, name: 'Signup', type: 'event', matchValue: 'signup' },
    })
    expect(goal.status).toBe(201)
    const goals = await get(`/api/v1/goals?site_id=${ga4Site.id}&${WEEK}`)
    expect(goals).toMatchObject({ source: 'ga4', available: false, goals: [{ name: 'Signup', type: 'event', matchValue: 'signup' }] })
    expect(goals.goals[0].conversions).toBeUndefined()
    const reads = ['errors', 'clicks', 'properties', 'flow', 'journeys', 'activity', 'vitals', 'funnels', 'goals']
    // geo and anomalies read GA4's imported days (tests/api/ga4-why-reads.test.ts); the source is the primary one unless named
    for (const read of ['geo', 'anomalies']) {
      const path = `/api/v1/${read}?${read === 'geo' ? 'granularity=city&' : ''}site_id=`
      expect(await get(`${path}${ga4Site.id}`), read).toMatchObject({ source: 'ga4', available: true })
      expect(await get(`${path}${bothSite.id}&source=ga4`), read).toMatchObject({ source: 'ga4', available: true })
      expect(await get(`${path}${bothSite.id}`), read).toMatchObject({ source: 'standalone', available: true })
      expect((await get(`${path}${ga4Site.id}&source=standalone`, 400)).error, read).toMatch(/^source: .*standalone/)
      expect((await get(`${path}${plainSite.id}&source=ga4`, 400)).error, read).toMatch(/^source: .*ga4/)
    }
    for (const read of reads) {
      const path = `/api/v1/${read}?${read === 'geo' ? 'granularity=city&' : ''}site_id=`
      expect(await get(`${path}${ga4Site.id}`), read).toMatchObject({ source: 'ga4', available: false })
      expect(await get(`${path}${bothSite.id}&source=ga4`), read).toMatchObject({ source: 'ga4', available: false })
      expect(await get(`${path}${bothSite.id}`), read).toMatchObject({ source: 'standalone', available: true })
      expect((await get(`${path}${ga4Site.id}&source=standalone`, 400)).error, read).toMatch(/^source: .*standalone/)
      expect((await get(`${path}${plainSite.id}&source=ga4`, 400)).error, read).toMatch(/^source: .*ga4/)
    }
    // the listing: a source one listed site lacks is a 400 naming it; each row echoes its source
    expect((await get('/api/v1/sites?source=ga4', 400)).error).toMatch(/^source: .*ga4.*plain\.ga4\.test/)
    const listed = await get('/api/v1/sites')
    expect(listed.sites.map((s: { stats: { source: string } }) => s.stats.source).sort()).toEqual(['ga4', 'standalone', 'standalone'])
  })

  it('the pages read of a ga4-only site takes the traffic of each page from the imported pages', async () => {
    await services.clickhouse.insert(
      'crawl_snapshots',
      PATHS.map((path) => ({
        site_id: ga4Site.id,
        path,
        fetched_at: '2026-11-10 00:00:00.000',
        id: crypto.randomUUID(),
        status: 200,
        title: path,
        launched_at: '2026-10-01 00:00:00.000',
      })),
    )
    const json = await get(`/api/v1/pages?site_id=${ga4Site.id}&${WEEK}&sort=path`)
    const expected = expectedPageBreakdown(week, 'path')
    expect(
      json.pages.map((p: { path: string; visitors: number; pageviews: number; scrollDepth: null }) => [
        p.path,
        p.visitors,
        p.pageviews,
        p.scrollDepth,
      ]),
    ).toEqual(
      [...PATHS].sort().map((path) => {
        const row = expected.find((r) => r.value === path)
        return [path, row?.visitors ?? 0, row?.pageviews ?? 0, null]
      }),
    )
  })

  it('answers a ga4 read through MCP', async () => {
    const app = createApp(services)
    const mcp = await mcpClient('http://api.test', key, '/api/mcp', async (url, init) => app.request(String(url), init))
    const result = await mcp.callTool({
      name: 'get_breakdown',
      arguments: { site_id: ga4Site.id, range: 'custom', from: '2026-11-15', to: '2026-11-21', property: 'country' },
    })
    expect(result.isError).toBeFalsy()
    expect((result.structuredContent as { source: string; results: unknown }).results).toEqual(
      expectedSessionBreakdown(week, SESSION_DIMENSIONS.country),
    )
    await mcp.close()
  })
})
