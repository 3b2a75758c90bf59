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
