/**
 * Realistic demo traffic as raw hits: a daily and weekly rhythm, referrers, UTM campaigns and
 * countries, desktop and mobile, multi-page visits, custom events with a revenue goal, clicks,
 * errors and vitals. Deterministic for a seed.
 */
export interface DemoOptions {
  site: string
  domain: string
  days: number
  visitorsPerDay: number
  /** The last day generated ends at this instant. */
  end: Date
  seed?: number
  /** Plants what the "why" reads look for: a spike from one referrer three days before the end, and a page fading for weeks. */
  planted?: boolean
}

/** The planted spike: visitors in one UTC hour from one referrer. */
export const SPIKE_DAYS_AGO = 3
export const SPIKE_HOUR = 10
export const SPIKE_VISITORS = 120
export const SPIKE_REFERRER = 'https://news.ycombinator.com/item?id=4242'
/** The planted fading page: visitors a day at its peak, falling to none; its history starts this many days before the rest. */
export const FADING_PAGE = '/blog/privacy-first-analytics-2023'
const FADING_PEAK_PER_DAY = 16
const FADING_HISTORY_DAYS = 35
/** The good and poor limits of each vital (web.dev), as the tracker rates them. */
const VITAL_LIMITS = { LCP: [2500, 4000], INP: [200, 500], CLS: [0.1, 0.25], FCP: [1800, 3000], TTFB: [800, 1800] }

function prng(seed: number) {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return (s >>> 0) / 4294967296
  }
}

const PAGES = [
  '/',
  '/pricing',
  '/blog',
  '/blog/launch-week',
  '/blog/privacy-first-analytics',
  '/docs',
  '/docs/getting-started',
  '/docs/api',
  '/about',
  '/signup',
]
const SOURCES: [number, string | null, string | null][] = [
  [30, null, null],
  [25, 'https://www.google.com/', null],
  [6, 'https://www.bing.com/', null],
  [6, 'https://duckduckgo.com/', null],
  [6, 'https://news.ycombinator.com/', null],
  [5, 'https://t.co/x1', null],
  [4, 'https://www.reddit.com/r/webdev/', null],
  [4, 'https://chatgpt.com/', null],
  [3, 'https://www.perplexity.ai/', null],
  [4, null, 'utm_source=newsletter&utm_medium=email&utm_campaign=november'],
  [4, 'https://www.google.com/', 'utm_source=google&utm_medium=cpc&utm_campaign=brand&utm_term=analytics'],
  [3, 'https://github.com/', null],
]
const AGENTS: [number, string][] = [
  [40, 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'],
  [15, 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15'],
  [10, 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0'],
  [
    22,
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  ],
  [13, 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36'],
]
/** Public addresses in the countries the demo spreads over (resolved by the geo database). */
const ADDRESSES: [number, string][] = [
  [30, '8.8.8.'],
  [12, '81.2.69.'],
  [12, '46.114.0.'],
  [8, '1.1.1.'],
  [6, '2.16.160.'],
  [6, '5.62.60.'],
  [5, '31.13.64.'],
  [5, '101.0.0.'],
  [4, '103.1.8.'],
]

function weighted<T>(random: () => number, options: [number, T][]): T {
  const total = options.reduce((sum, [w]) => sum + w, 0)
  let r = random() * total
  for (const [w, value] of options) if ((r -= w) < 0) return value
  return options[options.length - 1][1]
}

export function* demoHits(options: DemoOptions): Generator<Record<string, unknown>> {
  const random = prng(options.seed ?? 42)
  const dayMs = 86_400_000
  const endDay = Math.floor(options.end.getTime() / dayMs) * dayMs
  // with planted changes the traffic begins earlier: the fading page needs its peak weeks, and the
  // spike a baseline of ordinary weeks (the same hour of earlier weeks)
  const first = options.days - 1 + (options.planted ? FADING_HISTORY_DAYS : 0)
  for (let d = first; d >= 0; d--) {
    const dayStart = endDay - d * dayMs
    const weekday = new Date(dayStart).getUTCDay()
    const weekly = weekday === 0 || weekday === 6 ? 0.6 : 1
    const visitors = Math.round(options.visitorsPerDay * weekly * (0.85 + random() * 0.3))
    const hits: Record<string, unknown>[] = []
    /** One visitor's visit from `start`, landing on `landing` from `source` unless drawn at random. */
    const visit = (start: number, landing?: string, source?: [string | null, string | null], maxPages = 5) => {
      let at = start
      if (at > options.end.getTime()) return
      const userAgent = weighted(random, AGENTS)
      const ip = `${weighted(random, ADDRESSES)}${1 + Math.floor(random() * 250)}`
      const [referrer, utm] =
        source ??
        weighted(
          random,
          SOURCES.map(([w, r, u]) => [w, [r, u]] as [number, [string | null, string | null]]),
        )
      const mobile = /Mobile/.test(userAgent)
      const screenWidth = mobile
        ? 390
        : weighted(random, [
            [3, 1440],
            [5, 1920],
            [2, 1280],
          ] as [number, number][])
      const base = { site: options.site, ip, userAgent, screenWidth }
      // where a click lands, for the heatmap: around a spot of the page, spread by the time of the
      // hit (not by the random sequence, which the rest of the demo's facts are drawn from)
      const clickedAt = (at: number, x: number, y: number, width: number, height: number) => ({
        x: Math.round((x + width * ((at % 997) / 997)) * 10_000) / 10_000,
        y: Math.round((y + height * ((at % 991) / 991)) * 10_000) / 10_000,
        docWidth: screenWidth,
        docHeight: mobile ? 4800 : 2600,
      })
      const pages = 1 + Math.floor(random() ** 2 * maxPages)
      let path =
        landing ??
        weighted(random, [
          [5, '/'],
          [2, '/blog/launch-week'],
          [2, '/blog/privacy-first-analytics'],
          [1, '/pricing'],
          [1, '/docs'],
        ] as [number, string][])
      for (let p = 0; p < pages; p++) {
        const url = `https://${options.domain}${path}${p === 0 && utm ? `?${utm}` : ''}`
        const hit = { ...base, url, referrer: p === 0 ? referrer : `https://${options.domain}/`, timestamp: new Date(at).toISOString() }
        hits.push({ ...hit, name: 'pageview' })
        // the five Core Web Vitals, each rated as the tracker rates it
        if (random() < 0.3)
          for (const [name, value] of [
            ['LCP', 800 + random() ** 2 * 4500],
            ['INP', 40 + random() ** 2 * 700],
            ['CLS', Math.round(random() * random() * 40) / 100],
            ['FCP', 400 + random() ** 2 * 3200],
            ['TTFB', 80 + random() ** 2 * 2200],
          ] as [keyof typeof VITAL_LIMITS, number][]) {
            const rounded = name === 'CLS' ? value : Math.round(value)
            const [good, poor] = VITAL_LIMITS[name]
            hits.push({
              ...hit,
              name: 'vital',
              timestamp: new Date(at + 2000).toISOString(),
              vital: { name, value: rounded, rating: rounded <= good ? 'good' : rounded <= poor ? 'needs-improvement' : 'poor' },
            })
          }
        if (random() < 0.25)
          hits.push({
            ...hit,
            name: 'click',
            timestamp: new Date(at + 5000).toISOString(),
            click: {
              selector: 'main>button.cta',
              text: 'Start free trial',
              tag: 'button',
              interactive: true,
              dead: random() < 0.2,
              ...clickedAt(at, 0.42, 0.18, 0.16, 0.03),
            },
          })
        if (random() < 0.04)
          hits.push({
            ...hit,
            name: 'error',
            timestamp: new Date(at + 3000).toISOString(),
            error: {
              name: 'TypeError',
              message: "Cannot read properties of undefined (reading 'price')",
              stack: `TypeError: Cannot read properties of undefined\n    at render (https://${options.domain}/assets/app.js:1:4031)`,
            },
          })
        if (path === '/pricing' && random() < 0.3) {
          hits.push({
            ...hit,
            name: 'Signup',
            timestamp: new Date(at + 20_000).toISOString(),
            props: { plan: random() < 0.3 ? 'business' : 'pro' },
          })
          if (random() < 0.5)
            hits.push({
              ...hit,
              name: 'Purchase',
              timestamp: new Date(at + 60_000).toISOString(),
              revenue: { amount: random() < 0.3 ? '49.00' : '19.00', currency: 'EUR' },
            })
        }
        const dwell = 10_000 + Math.floor(random() * 120_000)
        hits.push({
          ...hit,
          name: 'engagement',
          timestamp: new Date(at + dwell).toISOString(),
          engagement: { ms: dwell, scroll: Math.floor(random() * 101) },
        })
        if (random() < 0.15)
          hits.push({
            ...hit,
            name: 'click',
            timestamp: new Date(at + dwell - 500).toISOString(),
            click: {
              selector: 'a.external',
              text: 'GitHub',
              tag: 'a',
              href: 'https://github.com/example/project',
              interactive: true,
              ...clickedAt(at + dwell, 0.78, 0.955, 0.1, 0.03),
            },
          })
        at += dwell + 1000
        path = PAGES[Math.floor(random() * PAGES.length)]
      }
    }
    for (let v = 0; v < visitors; v++) {
      // busier in the (UTC) afternoon
      const hour = Math.min(23, Math.max(0, Math.round(14 + (random() + random() + random() - 1.5) * 8)))
      visit(dayStart + hour * 3_600_000 + Math.floor(random() * 3_600_000))
    }
    if (options.planted) {
      // the spike: a post on Hacker News sends a crowd in one hour, three days before the end
      if (d === SPIKE_DAYS_AGO)
        for (let v = 0; v < SPIKE_VISITORS; v++)
          visit(dayStart + SPIKE_HOUR * 3_600_000 + Math.floor(random() * 3_600_000), '/blog/launch-week', [SPIKE_REFERRER, null], 2)
      // the fading page: busy before the window, a trickle now
      const fading = Math.round(FADING_PEAK_PER_DAY * (d / (options.days + FADING_HISTORY_DAYS)) ** 2)
      for (let v = 0; v < fading; v++)
        visit(dayStart + (8 + Math.floor(random() * 12)) * 3_600_000, FADING_PAGE, ['https://www.google.com/', null], 1)
    }
    hits.sort((a, b) => String(a.timestamp).localeCompare(String(b.timestamp)))
    yield* hits
  }
}
