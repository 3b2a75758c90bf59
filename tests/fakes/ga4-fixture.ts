import type { FakeSession } from './google'

/**
 * Fixture GA4 traffic: sessions over a run of days with their events, drawn from a seeded
 * generator so every run of a test sees the same data. Users come back across sessions and days,
 * so a user counted once per group differs from sessions.
 */

function generator(seed: number) {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

const pick = <T>(random: () => number, list: readonly T[]) => list[Math.floor(random() * list.length)]

const SOURCES = [
  { source: '(direct)', manualSource: '(direct)', medium: '(none)', campaign: '(direct)', channel: 'Direct', referrer: '' },
  {
    source: 'google',
    manualSource: '(not set)',
    medium: 'organic',
    campaign: '(organic)',
    channel: 'Organic Search',
    referrer: 'https://www.google.com/',
  },
  {
    source: 'news.ycombinator.com',
    manualSource: '(not set)',
    medium: 'referral',
    campaign: '(referral)',
    channel: 'Referral',
    referrer: 'https://news.ycombinator.com/',
  },
  { source: 'newsletter', manualSource: 'newsletter', medium: 'email', campaign: 'autumn', channel: 'Email', referrer: '' },
] as const
const PLACES = [
  { countryId: 'DE', region: 'Berlin', city: 'Berlin' },
  { countryId: 'US', region: 'California', city: 'San Francisco' },
  { countryId: 'FR', region: '(not set)', city: '(not set)' },
] as const
const DEVICES = [
  { device: 'desktop', browser: 'Chrome', os: 'Windows' },
  { device: 'mobile', browser: 'Safari', os: 'iOS' },
  { device: 'tablet', browser: 'Chrome', os: 'Android' },
] as const
const PAGES = ['/', '/pricing', '/blog/launch', '/docs'] as const
const CUSTOM_EVENTS = ['signup', 'download_pdf'] as const

/** Sessions on each day from `from` for `days` days, `perDay` a day, among `users` users. */
export function ga4Sessions(options: {
  from: string
  days: number
  perDay: number
  users: number
  seed?: number
  idPrefix?: string
}): FakeSession[] {
  const random = generator(options.seed ?? 42)
  const sessions: FakeSession[] = []
  const start = Date.parse(`${options.from}T00:00:00Z`)
  for (let d = 0; d < options.days; d++) {
    const date = new Date(start + d * 86_400_000).toISOString().slice(0, 10)
    for (let i = 0; i < options.perDay; i++) {
      const source = pick(random, SOURCES)
      const place = pick(random, PLACES)
      const device = pick(random, DEVICES)
      const landingPage = pick(random, PAGES)
      const views = 1 + Math.floor(random() * 3)
      const events: FakeSession['events'] = [
        { name: 'session_start', host: 'example.com', path: landingPage, seconds: 0 },
        { name: 'first_visit', host: 'example.com', path: landingPage, seconds: 0 },
      ]
      for (let v = 0; v < views; v++) {
        const path = v === 0 ? landingPage : pick(random, PAGES)
        events.push({
          name: 'page_view',
          host: random() < 0.9 ? 'example.com' : 'www.example.com',
          path,
          seconds: Math.floor(random() * 40),
        })
      }
      if (random() < 0.3) events.push({ name: pick(random, CUSTOM_EVENTS), host: 'example.com', path: landingPage, seconds: 2 })
      sessions.push({
        id: `${options.idPrefix ?? 's'}-${date}-${i}`,
        user: `u${Math.floor(random() * options.users)}`,
        date,
        hour: Math.floor(random() * 24),
        ...source,
        adContent: source.channel === 'Email' ? 'header' : '(not set)',
        term: '(not set)',
        landingPage,
        ...place,
        ...device,
        engaged: views > 1 || random() < 0.4,
        events,
      })
    }
  }
  return sessions
}

/**
 * The reference: the rows of imported_aggregates a faithful import of these sessions holds, computed
 * from the sessions themselves in the table's own terms (values normalized as the reads expect),
 * each as a JSON array [dataset, date, hour, ...COLUMNS, visitors, visits, engaged_visits,
 * pageviews, engagement_seconds, events], sorted.
 */

const noValue = (v: string) => (v === '(not set)' || v === '(data not available)' ? '' : v)
const noSource = (v: string) => (['(direct)', '(none)', '(organic)', '(referral)'].includes(v) ? '' : noValue(v))
type Pair = { s: FakeSession; e: FakeSession['events'][number] }
type Key = (p: Pair) => Record<string, string | number>

const REFERENCE: Record<string, Key> = {
  visitors: () => ({}),
  visitors_hourly: ({ s }) => ({ hour: s.hour }),
  sources: ({ s }) => ({
    source_name: noSource(s.source),
    utm_source: noSource(s.manualSource),
    utm_medium: noSource(s.medium),
    utm_campaign: noSource(s.campaign),
    utm_content: noSource(s.adContent),
    utm_term: noSource(s.term),
    channel: s.channel,
    referrer: noValue(s.referrer),
  }),
  pages: ({ e }) => ({ hostname: e.host, path: e.path }),
  hostnames: ({ e }) => ({ hostname: e.host }),
  entry_pages: ({ s }) => ({ entry_page: s.landingPage }),
  locations: ({ s }) => ({ country: s.countryId, region: noValue(s.region), city: noValue(s.city) }),
  // stored under the collector's device names
  devices: ({ s }) => ({ device: ({ desktop: 'Desktop', mobile: 'Mobile', tablet: 'Tablet' } as Record<string, string>)[s.device] }),
  browsers: ({ s }) => ({ browser: s.browser }),
  systems: ({ s }) => ({ os: s.os }),
  events: ({ e }) => ({ event: e.name }),
}
export const COLUMNS = [
  'source_name',
  'referrer',
  'channel',
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_content',
  'utm_term',
  'hostname',
  'path',
  'entry_page',
  'country',
  'region',
  'city',
  'device',
  'browser',
  'os',
  'event',
]

export function expectedRows(sessions: FakeSession[]) {
  const rows: string[] = []
  for (const [dataset, key] of Object.entries(REFERENCE)) {
    const groups = new Map<string, Pair[]>()
    for (const s of sessions)
      for (const e of s.events) {
        const values = { hour: 0, ...key({ s, e }) }
        const id = JSON.stringify([s.date, values.hour, ...COLUMNS.map((c) => (values as Record<string, unknown>)[c] ?? '')])
        groups.set(id, [...(groups.get(id) ?? []), { s, e }])
      }
    for (const [id, pairs] of groups) {
      const [date, hour, ...dims] = JSON.parse(id)
      rows.push(
        JSON.stringify([
          dataset,
          date,
          hour,
          ...dims,
          new Set(pairs.map((p) => p.s.user)).size,
          new Set(pairs.map((p) => p.s.id)).size,
          new Set(pairs.filter((p) => p.s.engaged).map((p) => p.s.id)).size,
          pairs.filter((p) => p.e.name === 'page_view').length,
          pairs.reduce((sum, p) => sum + p.e.seconds, 0),
          pairs.length,
        ]),
      )
    }
  }
  return rows.sort()
}
