/**
 * Reports against a small reference implementation: the raw fixture hits are grouped into
 * visitors (address, agent, site-local day) and visits (30-minute gaps) here, independently of
 * the ingestion code, and every expected number is computed from that grouping.
 */
export const NOW = new Date('2026-11-22T15:00:00Z')
export const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
]
const IPS: [string, string][] = [
  ['81.2.69.142', 'GB'],
  ['8.8.8.8', 'US'],
  ['46.114.0.1', 'DE'],
  ['1.1.1.1', 'AU'],
]
const REFERRERS: [string | null, string][] = [
  [null, 'Direct / None'],
  ['https://www.google.com/', 'Google'],
  ['https://news.ycombinator.com/', 'Hacker News'],
  ['https://chatgpt.com/', 'ChatGPT'],
]
const PATHS = ['/', '/pricing', '/blog/a', '/blog/b', '/docs']

export type RefEvent = {
  ts: number
  kind: 'pageview' | 'custom' | 'engagement'
  name: string
  path: string
  visitor: string
  visit: string
  plan?: string
  engagement?: { ms: number; scroll: number }
}
export type RefVisit = {
  id: string
  visitor: string
  start: number
  end: number
  pageviews: number
  custom: number
  source: string
  country: string
  device: string
  entry: string
  exit: string
}

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

export const localDate = (ts: number, tz: string) =>
  new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(ts))

/** A leave-time report's engaged time and scroll depth, varied by its time (without drawing on the random sequence). */
const engagementOf = (ts: number) => ({ ms: 5_000 + (ts % 115_000), scroll: Math.floor(ts / 1000) % 101 })

/** A hit of the fixture: its time, name (pageview, engagement or a custom event), path, address, agent and referrer. */
export type RawHit = { ts: number; name: string; path: string; ip: string; ua: string; referrer: string | null; plan?: string }

/** The seeded visits, and `extra` hits after them (addresses of IPS, referrers of REFERRERS). */
export function fixture(snippet: string, domain: string, tz: string, seed: number, extra: RawHit[] = []) {
  const random = prng(seed)
  const lines: string[] = []
  const raw: RawHit[] = []
  const start = Date.parse('2026-08-01T00:00:00Z')
  for (let v = 0; v < 140; v++) {
    const ip = IPS[Math.floor(random() * IPS.length)][0]
    const ua = UAS[Math.floor(random() * UAS.length)]
    const referrer = REFERRERS[Math.floor(random() * REFERRERS.length)][0]
    // cluster some visits near the end so short ranges have data, and near the DST change
    const spread = v % 3 === 0 ? Date.parse('2026-11-20T00:00:00Z') : v % 3 === 1 ? Date.parse('2026-10-30T00:00:00Z') : start
    let ts = spread + Math.floor(random() * Math.min(NOW.getTime() - spread - 3_600_000, 110 * 86_400_000))
    const pages = 1 + Math.floor(random() * 4)
    for (let p = 0; p < pages; p++) {
      const path = PATHS[Math.floor(random() * PATHS.length)]
      raw.push({ ts, name: 'pageview', path, ip, ua, referrer: p === 0 ? referrer : null })
      if (random() < 0.25)
        raw.push({ ts: ts + 30_000, name: 'Signup', path, ip, ua, referrer: null, plan: random() < 0.5 ? 'pro' : 'free' })
      if (random() < 0.5) raw.push({ ts: ts + 60_000, name: 'engagement', path, ip, ua, referrer: null })
      // mostly within a visit, sometimes past the 30-minute gap
      ts += random() < 0.8 ? 5 * 60_000 : 40 * 60_000
    }
  }
  raw.push(...extra)
  for (const h of raw) {
    const hit: Record<string, unknown> = {
      timestamp: new Date(h.ts).toISOString(),
      site: snippet,
      name: h.name,
      url: `https://${domain}${h.path}`,
      referrer: h.referrer,
      ip: h.ip,
      userAgent: h.ua,
    }
    if (h.name === 'engagement') hit.engagement = engagementOf(h.ts)
    if (h.plan) {
      hit.props = { plan: h.plan }
      if (h.plan === 'pro') hit.revenue = { amount: '10.50', currency: 'EUR' }
    }
    lines.push(JSON.stringify(hit))
  }
  // the reference grouping
  const byVisitor = new Map<string, typeof raw>()
  for (const h of raw) {
    const key = `${h.ip}|${h.ua}|${localDate(h.ts, tz)}`
    byVisitor.set(key, [...(byVisitor.get(key) ?? []), h])
  }
  const events: RefEvent[] = []
  const visits = new Map<string, RefVisit>()
  for (const [visitor, hits] of byVisitor) {
    hits.sort((a, b) => a.ts - b.ts)
    let visit: RefVisit | null = null
    for (const h of hits) {
      if (!visit || h.ts - visit.end > 30 * 60_000) {
        const country = IPS.find(([ip]) => ip === h.ip)![1]
        visit = {
          id: `${visitor}|${h.ts}`,
          visitor,
          start: h.ts,
          end: h.ts,
          pageviews: 0,
          custom: 0,
          source: REFERRERS.find(([r]) => r === h.referrer)![1],
          country,
          device: h.ua.includes('iPhone') ? 'Mobile' : 'Desktop',
          entry: '',
          exit: '',
        }
        visits.set(visit.id, visit)
      }
      visit.end = Math.max(visit.end, h.ts)
      const kind = h.name === 'pageview' ? 'pageview' : h.name === 'engagement' ? 'engagement' : 'custom'
      if (kind === 'pageview') {
        visit.pageviews++
        if (!visit.entry) visit.entry = h.path
        visit.exit = h.path
      }
      if (kind === 'custom') visit.custom++
      events.push({
        ts: h.ts,
        kind,
        name: h.name,
        path: h.path,
        visitor,
        visit: visit.id,
        plan: h.plan,
        ...(kind === 'engagement' ? { engagement: engagementOf(h.ts) } : {}),
      })
    }
  }
  return { lines, events, visits }
}

export type Ref = ReturnType<typeof fixture>
export const round = (v: number, d: number) => Math.round(v * 10 ** d) / 10 ** d

/** The metric definitions of docs/api.md (Metrics), over the reference grouping. */
export function expectedTotals(ref: Ref, from: string, to: string, keep: (e: RefEvent, v: RefVisit) => boolean = () => true) {
  const lo = Date.parse(from)
  const hi = Date.parse(to)
  const selected = ref.events.filter((e) => e.ts >= lo && e.ts < hi && keep(e, ref.visits.get(e.visit)!))
  const visitIds = new Set(selected.map((e) => e.visit))
  const visits = [...visitIds].map((id) => ref.visits.get(id)!)
  const pageviews = selected.filter((e) => e.kind === 'pageview').length
  return {
    visitors: new Set(selected.map((e) => e.visitor)).size,
    visits: visitIds.size,
    pageviews,
    bounceRate: visits.length ? round(visits.filter((v) => v.pageviews <= 1 && v.custom === 0).length / visits.length, 4) : 0,
    avgDuration: visits.length ? Math.round(visits.reduce((s, v) => s + (v.end - v.start) / 1000, 0) / visits.length) : 0,
    viewsPerVisit: visitIds.size ? round(pageviews / visitIds.size, 2) : 0,
    events: selected.filter((e) => e.kind === 'custom').length,
  }
}

/** Breakdown rows over the reference: each value's totals, sorted by visitors then value. */
export function expectedBreakdown(
  ref: Ref,
  from: string,
  to: string,
  valueFor: (e: RefEvent, v: RefVisit) => string | undefined,
  engagement: boolean,
  keep: (e: RefEvent, v: RefVisit) => boolean = () => true,
) {
  const values = new Set(ref.events.map((e) => valueFor(e, ref.visits.get(e.visit)!)).filter((v): v is string => v !== undefined))
  return [...values]
    .map((value) => {
      const t = expectedTotals(ref, from, to, (e, v) => keep(e, v) && valueFor(e, v) === value)
      const row: Record<string, unknown> = { value, visitors: t.visitors, visits: t.visits, pageviews: t.pageviews, events: t.events }
      if (engagement) Object.assign(row, { bounceRate: t.bounceRate, avgDuration: t.avgDuration })
      return row
    })
    .filter((r) => (r.visitors as number) > 0)
    .sort((a, b) => (b.visitors as number) - (a.visitors as number) || String(a.value).localeCompare(String(b.value)))
}

/** The value each rolled breakdown a rollup test checks takes for an event of a visit, in the reference. */
export const ROLLED_BREAKDOWNS: [string, (e: RefEvent, v: RefVisit) => string][] = [
  ['path', (e) => e.path],
  ['entry_page', (e, v) => v.entry],
  ['exit_page', (e, v) => v.exit],
  ['source', (e, v) => v.source],
  ['country', (e, v) => v.country],
  ['device', (e, v) => v.device],
]
