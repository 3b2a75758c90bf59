import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey } from '../../lib/accounts/admin'
import type { DnsResolver } from '../../lib/ingest/bots'
import { importHits } from '../../lib/ingest/import'
import { aiRolledDaysSql } from '../../lib/reports/ai/rollup'
import { type SignatureRow, rolledDaysOf } from '../../lib/reports/query/plan'
import { resolveRange } from '../../lib/reports/query/range'
import { refreshRollups } from '../../lib/reports/rollup/refresh'
import { execute } from '../../lib/storage/clickhouse/execute'
import { newSite } from '../../lib/sites/sites'
import { type Harness, harness } from '../helpers'
import { NOW, UAS, localDate } from './report-reference'

/**
 * GET /api/v1/ai against a reference over the fixture: AI crawler hits sent to the collector
 * (some from addresses whose reverse DNS confirms the crawler, some only claiming its name),
 * other crawlers that must not count, and visits sent by assistants (by referrer and by
 * utm_source) beside visits from search and social that must not count. Each crawler's company
 * and purpose, and each visit's company, are written here by hand.
 */

const TZ = 'Europe/Berlin'
type Crawler = { ua: string; name: string; company: string | null; purpose?: 'training' | 'search' | 'user'; genuine?: string }
const CRAWLERS: Crawler[] = [
  {
    ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot',
    name: 'GPTBot',
    company: 'openai',
    purpose: 'training',
  },
  {
    ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.3; +https://openai.com/searchbot',
    name: 'OAI-SearchBot',
    company: 'openai',
    purpose: 'search',
  },
  {
    ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot',
    name: 'ChatGPT-User',
    company: 'openai',
    purpose: 'user',
  },
  {
    ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
    name: 'ClaudeBot',
    company: 'anthropic',
    purpose: 'training',
  },
  {
    ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)',
    name: 'PerplexityBot',
    company: 'perplexity',
    purpose: 'search',
  },
  {
    ua: 'meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)',
    name: 'Meta-ExternalAgent',
    company: 'meta',
    purpose: 'training',
    genuine: '203.0.113.10',
  },
  {
    ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36',
    name: 'Amazonbot',
    company: 'amazon',
    purpose: 'training',
    genuine: '203.0.113.20',
  },
  {
    ua: 'Mozilla/5.0 (compatible; FirecrawlAgent; +https://firecrawl.dev/)',
    name: 'FirecrawlAgent',
    company: 'other',
    purpose: 'training',
  },
  // not AI crawlers: never counted
  { ua: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', name: 'Googlebot', company: null },
  { ua: 'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)', name: 'AhrefsBot', company: null },
]
/** The genuine crawler addresses, one that only claims a name (no PTR of the vendor), one whose PTR is the vendor's but does not resolve back. */
const ADDRESSES = ['203.0.113.10', '203.0.113.20', '198.51.100.5', '198.51.100.6']
const PTR: Record<string, string[]> = {
  '203.0.113.10': ['crawl-1.facebook.com.'],
  '203.0.113.20': ['a1.crawl.amazonbot.amazon.'],
  '198.51.100.5': ['host.spoof.example.'],
  '198.51.100.6': ['fake.facebook.com.'],
}
const FORWARD: Record<string, string[]> = {
  'crawl-1.facebook.com': ['203.0.113.10'],
  'a1.crawl.amazonbot.amazon': ['203.0.113.20'],
  'fake.facebook.com': ['192.0.2.1'],
}
const dns: DnsResolver = {
  reverse: async (ip) => PTR[ip] ?? [],
  lookup: async (host) => FORWARD[host] ?? [],
}

type VisitSource = { referrer: string | null; query: string; company: string | null }
const SOURCES: VisitSource[] = [
  { referrer: 'https://chatgpt.com/', query: '', company: 'openai' },
  { referrer: 'https://www.perplexity.ai/search?q=x', query: '', company: 'perplexity' },
  { referrer: 'https://claude.ai/chat/1', query: '', company: 'anthropic' },
  { referrer: null, query: 'utm_source=chatgpt.com', company: 'openai' },
  { referrer: 'https://gemini.google.com/app', query: '', company: 'google' },
  { referrer: null, query: 'utm_source=copilot', company: 'microsoft' },
  { referrer: null, query: 'utm_source=mybot&utm_medium=llm', company: 'other' },
  { referrer: 'https://www.google.com/', query: '', company: null },
  { referrer: 'https://t.co/x', query: '', company: null },
  { referrer: null, query: '', company: null },
]
const PATHS = ['/', '/pricing', '/blog/a', '/blog/b', '/docs', '/crawled-only']
const VISITED_PATHS = ['/', '/pricing', '/blog/a', '/blog/b', '/docs', '/visited-only']

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

type BotHit = { ts: number; crawler: number; path: string; ip: string }
type Visit = { source: number; ip: string; views: { ts: number; path: string }[] }

/** Times between 06:00 and 18:00 UTC (07:00 to 19:00 in Berlin) of the last 35 days: no visit crosses a local midnight. */
function fixture(seed: number) {
  const r = prng(seed)
  const when = () => {
    const day = Math.floor(r() * 35)
    const base = Date.UTC(NOW.getUTCFullYear(), NOW.getUTCMonth(), NOW.getUTCDate() - day, 6)
    const ts = base + Math.floor(r() * 12 * 3_600_000)
    return ts < NOW.getTime() - 600_000 ? ts : NOW.getTime() - 600_000 - Math.floor(r() * 3_600_000)
  }
  const bots: BotHit[] = []
  for (let i = 0; i < 360; i++)
    bots.push({
      ts: when(),
      crawler: Math.floor(r() * CRAWLERS.length),
      path: PATHS[Math.floor(r() ** 1.4 * PATHS.length)],
      ip: ADDRESSES[Math.floor(r() * ADDRESSES.length)],
    })
  const visits: Visit[] = []
  for (let i = 0; i < 180; i++) {
    const start = when()
    const n = 1 + Math.floor(r() * 3)
    visits.push({
      source: Math.floor(r() * SOURCES.length),
      ip: `2001:db8::${(i + 1).toString(16)}`,
      views: Array.from({ length: n }, (_, k) => ({ ts: start + k * 40_000, path: VISITED_PATHS[Math.floor(r() * VISITED_PATHS.length)] })),
    })
  }
  return { bots, visits }
}

const verifiedHit = (h: BotHit) => CRAWLERS[h.crawler].genuine === h.ip
const ratio = (crawls: number, visits: number) => (visits > 0 ? Math.round((crawls / visits) * 100) / 100 : null)
type Range = { from: string; to: string }
const inRange = (ts: number, range: Range) => ts >= Date.parse(range.from) && ts < Date.parse(range.to)

type Options = { company?: string; crawlers?: 'all' | 'verified' | 'claimed'; pathContains?: string }
/** The reference: crawls and visits the read must count, from the fixture alone. */
function expected(fx: ReturnType<typeof fixture>, range: Range, o: Options = {}) {
  const pathOk = (p: string) => !o.pathContains || p.toLowerCase().includes(o.pathContains.toLowerCase())
  const crawls = fx.bots.filter((h) => {
    const c = CRAWLERS[h.crawler]
    if (c.company === null || !inRange(h.ts, range) || !pathOk(h.path)) return false
    if (o.company && c.company !== o.company) return false
    if (o.crawlers === 'verified') return verifiedHit(h)
    if (o.crawlers === 'claimed') return !verifiedHit(h)
    return true
  })
  // a visit counts on its first pageview in the window (on a page the filter keeps)
  const visits = fx.visits
    .filter((v) => SOURCES[v.source].company !== null && (!o.company || SOURCES[v.source].company === o.company))
    .map((v) => ({ company: SOURCES[v.source].company as string, first: v.views.find((p) => inRange(p.ts, range) && pathOk(p.path)) }))
    .filter((v): v is { company: string; first: { ts: number; path: string } } => v.first !== undefined)
  const purposes = (hits: BotHit[]) => ({
    training: hits.filter((h) => CRAWLERS[h.crawler].purpose === 'training').length,
    search: hits.filter((h) => CRAWLERS[h.crawler].purpose === 'search').length,
    user: hits.filter((h) => CRAWLERS[h.crawler].purpose === 'user').length,
  })
  const companyIds = [...new Set([...crawls.map((h) => CRAWLERS[h.crawler].company as string), ...visits.map((v) => v.company)])]
  const companies = companyIds
    .map((id) => {
      const hits = crawls.filter((h) => CRAWLERS[h.crawler].company === id)
      const names = [...new Set(hits.map((h) => CRAWLERS[h.crawler].name))]
      const crawlers = names
        .map((name) => {
          const own = hits.filter((h) => CRAWLERS[h.crawler].name === name)
          const purpose = CRAWLERS.find((c) => c.name === name)?.purpose
          return { name, purpose, crawls: own.length, verifiedCrawls: own.filter(verifiedHit).length }
        })
        .sort((a, b) => b.crawls - a.crawls || (a.name < b.name ? -1 : 1))
      const n = visits.filter((v) => v.company === id).length
      return {
        id,
        crawls: hits.length,
        verifiedCrawls: hits.filter(verifiedHit).length,
        purposes: purposes(hits),
        crawlers,
        visits: n,
        ratio: ratio(hits.length, n),
      }
    })
    .sort((a, b) => b.crawls - a.crawls || b.visits - a.visits || (a.id < b.id ? -1 : 1))
  const paths = [...new Set([...crawls.map((h) => h.path), ...visits.map((v) => v.first.path)])]
  const pageRows = paths.map((path) => {
    const hits = crawls.filter((h) => h.path === path)
    const n = visits.filter((v) => v.first.path === path).length
    return {
      path,
      crawls: hits.length,
      verifiedCrawls: hits.filter(verifiedHit).length,
      purposes: purposes(hits),
      visits: n,
      ratio: ratio(hits.length, n),
    }
  })
  const byCrawls = (a: (typeof pageRows)[number], b: (typeof pageRows)[number]) =>
    b.crawls - a.crawls || b.visits - a.visits || (a.path < b.path ? -1 : 1)
  const byVisits = (a: (typeof pageRows)[number], b: (typeof pageRows)[number]) =>
    b.visits - a.visits || b.crawls - a.crawls || (a.path < b.path ? -1 : 1)
  const days = new Map<string, { crawls: number; verifiedCrawls: number; visits: number }>()
  const day = (ts: number) => {
    const key = localDate(ts, TZ)
    if (!days.has(key)) days.set(key, { crawls: 0, verifiedCrawls: 0, visits: 0 })
    return days.get(key)!
  }
  for (const h of crawls) {
    day(h.ts).crawls++
    if (verifiedHit(h)) day(h.ts).verifiedCrawls++
  }
  for (const v of visits) day(v.first.ts).visits++
  return {
    totals: {
      crawls: crawls.length,
      verifiedCrawls: crawls.filter(verifiedHit).length,
      purposes: purposes(crawls),
      visits: visits.length,
      ratio: ratio(crawls.length, visits.length),
    },
    companies,
    pages: pageRows.filter((p) => p.crawls > 0).sort(byCrawls),
    crawledNotVisited: pageRows.filter((p) => p.crawls > 0 && p.visits === 0).sort(byCrawls),
    mostVisited: pageRows.filter((p) => p.visits > 0).sort(byVisits),
    days,
  }
}

describe('GET /api/v1/ai', () => {
  let t: Harness
  let key = ''
  const ids = { site: '', ga4: '' }
  const fx = fixture(23)

  let write = ''
  let site: ReturnType<typeof newSite>
  /** Sends the visits' pageviews through the import, and the crawler hits to the collector. */
  const send = async ({ visits, bots }: { visits: Visit[]; bots: BotHit[] }) => {
    const lines = visits.flatMap((v) =>
      v.views.map((p, k) =>
        JSON.stringify({
          timestamp: new Date(p.ts).toISOString(),
          site: site.snippetId,
          name: 'pageview',
          url: `https://${site.domain}${p.path}${k === 0 && SOURCES[v.source].query ? `?${SOURCES[v.source].query}` : ''}`,
          ...(k === 0 && SOURCES[v.source].referrer ? { referrer: SOURCES[v.source].referrer } : {}),
          ip: v.ip,
          userAgent: UAS[0],
        }),
      ),
    )
    const result = await importHits(lines, t.services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
    for (let i = 0; i < bots.length; i += 200) {
      const events = bots.slice(i, i + 200).map((h) => ({
        path: h.path,
        userAgent: CRAWLERS[h.crawler].ua,
        timestamp: new Date(h.ts).toISOString(),
        ip: h.ip,
      }))
      const res = await t.call('POST', '/api/v1/collect', { key: write, body: { site_id: site.snippetId, events } })
      expect(res.json).toEqual({ ingested: events.length, dropped: 0 })
    }
  }

  beforeAll(async () => {
    t = await harness({ now: () => NOW, with: { dns } })
    write = (await createApiKey(t.repositories, { orgId: t.a.org.id, name: 'w', scope: 'write' }, NOW)).key
    key = t.a.read.key
    site = newSite({ domain: 'ai.visibility.test', timezone: TZ }, t.a.org.id, NOW)
    const ga4 = {
      ...newSite({ domain: 'ga4.visibility.test', timezone: 'UTC' }, t.a.org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const s of [site, ga4]) await t.repositories.sites.create(s)
    Object.assign(ids, { site: site.id, ga4: ga4.id })
    await send(fx)
  })

  const get = async (query: string, status = 200) => {
    const res = await t.call('GET', `/api/v1/ai?${query}`, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(status)
    return res.json
  }
  const pathContains = (value: string) =>
    `&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'path', operator: 'contains', value: [value] }]))}`
  const stripNames = (companies: { name: string; assistants: string[] }[]) => companies.map(({ name, assistants, ...rest }) => rest)
  const queryOf = (o: Options, range = '30d') =>
    `site_id=${ids.site}&range=${range}${o.company ? `&company=${o.company}` : ''}${o.crawlers ? `&crawlers=${o.crawlers}` : ''}${o.pathContains ? pathContains(o.pathContains) : ''}`

  function check(json: Record<string, any>, want: ReturnType<typeof expected>, limit = 100) {
    expect(json.totals).toEqual(want.totals)
    expect(stripNames(json.companies)).toEqual(want.companies)
    expect(json.pages).toEqual({
      crawled: want.pages.slice(0, limit),
      crawledNotVisited: want.crawledNotVisited.slice(0, limit),
      mostVisited: want.mostVisited.slice(0, limit),
    })
    for (const b of json.series) {
      const d = want.days.get(b.timestamp.slice(0, 10)) ?? { crawls: 0, verifiedCrawls: 0, visits: 0 }
      expect(b, b.timestamp).toEqual({ timestamp: b.timestamp, ...d, ratio: ratio(d.crawls, d.visits) })
    }
    const total = (k: 'crawls' | 'visits') => json.series.reduce((n: number, b: Record<string, number>) => n + b[k], 0)
    expect(total('crawls')).toBe(want.totals.crawls)
    expect(total('visits')).toBe(want.totals.visits)
  }

  it('counts each company’s crawls by purpose, verified and claimed, its assistants’ visits and the ratio, per page and per day', async () => {
    const json = await get(`site_id=${ids.site}&range=30d`)
    expect(json).toMatchObject({ source: 'standalone', available: true })
    expect(json.series).toHaveLength(30)
    const want = expected(fx, json.range)
    // the fixture exercises what the read tells apart
    expect(want.totals.verifiedCrawls).toBeGreaterThan(5)
    expect(want.totals.crawls - want.totals.verifiedCrawls).toBeGreaterThan(100)
    expect(want.companies.map((c) => c.id).sort()).toEqual(
      ['amazon', 'anthropic', 'google', 'meta', 'microsoft', 'openai', 'other', 'perplexity'].sort(),
    )
    expect(want.crawledNotVisited.map((p) => p.path)).toContain('/crawled-only')
    expect(want.mostVisited.map((p) => p.path)).toContain('/visited-only')
    check(json, want)
    const openai = json.companies.find((c: { id: string }) => c.id === 'openai')
    expect(openai).toMatchObject({ name: 'OpenAI', assistants: ['ChatGPT'] })
    // the spoofed crawlers at 198.51.100.x stay unverified even where the PTR name is the vendor's
    const meta = json.companies.find((c: { id: string }) => c.id === 'meta')
    const metaHits = fx.bots.filter((h) => CRAWLERS[h.crawler].name === 'Meta-ExternalAgent' && inRange(h.ts, json.range))
    expect(meta.verifiedCrawls).toBe(metaHits.filter((h) => h.ip === '203.0.113.10').length)
    expect(meta.crawls - meta.verifiedCrawls).toBe(metaHits.filter((h) => h.ip !== '203.0.113.10').length)
  })

  it('narrows to one company, to verified or claimed crawls, to a path filter and a shorter window', async () => {
    for (const o of [
      { company: 'openai' },
      { company: 'meta', crawlers: 'verified' as const },
      { crawlers: 'claimed' as const },
      { crawlers: 'verified' as const },
      { company: 'other' },
      { pathContains: 'BLOG' },
    ]) {
      const query = queryOf(o)
      const json = await get(query)
      const want = expected(fx, json.range, o)
      expect(want.totals.crawls + want.totals.visits, query).toBeGreaterThan(0)
      check(json, want)
    }
    const week = await get(`site_id=${ids.site}&range=7d&limit=2`)
    const want = expected(fx, week.range)
    expect(week.series).toHaveLength(7)
    expect(week.totals).toEqual(want.totals)
    expect(week.pages.crawled).toEqual(want.pages.slice(0, 2))
    expect(week.pages.mostVisited).toEqual(want.mostVisited.slice(0, 2))
    // month buckets: the whole fixture in the last two of twelve
    const year = await get(`site_id=${ids.site}&range=12mo`)
    const all = expected(fx, year.range)
    expect(year.series).toHaveLength(12)
    expect(year.totals).toEqual(all.totals)
    const byMonth = new Map<string, { crawls: number; visits: number }>()
    for (const [d, v] of all.days) {
      const m = byMonth.get(d.slice(0, 7)) ?? { crawls: 0, visits: 0 }
      byMonth.set(d.slice(0, 7), { crawls: m.crawls + v.crawls, visits: m.visits + v.visits })
    }
    for (const b of year.series)
      expect({ crawls: b.crawls, visits: b.visits }, b.timestamp).toEqual(byMonth.get(b.timestamp.slice(0, 7)) ?? { crawls: 0, visits: 0 })
  })

  it('answers bad input with 400, a ga4-only site as unavailable, and another organization’s site as 404', async () => {
    const bad = async (query: string, message: RegExp) => expect((await get(query, 400)).error).toMatch(message)
    await bad(`site_id=${ids.site}&company=acme`, /company: "acme" is not a listed AI company/)
    await bad(`site_id=${ids.site}&crawlers=some`, /crawlers/)
    await bad(
      `site_id=${ids.site}&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'channel', operator: 'is', value: ['Direct'] }]))}`,
      /filters: channel is not recorded for both crawler hits and visits/,
    )
    await bad(`site_id=${ids.site}&range=custom&from=2026-13-01&to=2026-11-01`, /from/)
    await bad(`site_id=${ids.site}&filters=nope`, /filters: not valid JSON/)
    expect(await get(`site_id=${ids.ga4}`)).toEqual({
      source: 'ga4',
      available: false,
      companies: [],
      series: [],
      pages: { crawled: [], crawledNotVisited: [], mostVisited: [] },
    })
    const other = await t.call('GET', `/api/v1/ai?site_id=${t.b.site.id}`, { key })
    expect(other.status).toBe(404)
  })

  it('keeps the visits in the AI assistants channel of the channel breakdown, and a filter on the former name reads it', async () => {
    const json = await get(`site_id=${ids.site}&range=30d`)
    const breakdown = await t.call('GET', `/api/v1/breakdown?site_id=${ids.site}&range=30d&property=channel`, { key })
    const row = breakdown.json.results.find((r: { value: string }) => r.value === 'AI assistants')
    // every assistant visit had its first pageview in the window or not at all: the channel's visits are the read's
    const allIn = fx.visits.filter((v) => SOURCES[v.source].company !== null && v.views.some((p) => inRange(p.ts, json.range))).length
    expect(row.visits).toBe(allIn)
    expect(json.totals.visits).toBe(allIn)
    const former = await t.call(
      'GET',
      `/api/v1/stats?site_id=${ids.site}&range=30d&filters=${encodeURIComponent(JSON.stringify([{ dimension: 'channel', operator: 'is', value: ['AI'] }]))}`,
      { key },
    )
    expect(former.json.totals.visits).toBe(allIn)
  })
  it('reads the finished days from the AI rollup after the refresh, with the same answers; a late crawler hit or visit sends its day back to raw until the next refresh', async () => {
    const month = resolveRange({ range: '30d' }, TZ, NOW)
    const today = localDate(NOW.getTime(), TZ)
    const rolledDays = async () =>
      rolledDaysOf({ range: month }, await execute<SignatureRow>(t.clickhouse, aiRolledDaysSql(ids.site, month))).days
    // the company and crawler selections the rollup answers, a filter it leaves to raw reads, a limit, and week and month buckets
    const selections: Options[] = [
      {},
      { company: 'openai' },
      { company: 'meta', crawlers: 'verified' },
      { crawlers: 'verified' },
      { crawlers: 'claimed' },
      { company: 'other' },
      { company: 'microsoft' },
      { pathContains: 'BLOG' },
    ]
    /** Every read, each checked against the reference over these hits and visits. */
    const expectReference = async (hits: ReturnType<typeof fixture>) => {
      const jsons = []
      for (const o of selections) {
        const json = await get(queryOf(o))
        check(json, expected(hits, json.range, o))
        jsons.push(json)
      }
      const week = await get(`${queryOf({}, '7d')}&limit=2`)
      check(week, expected(hits, week.range), 2)
      // month buckets; hour buckets (read raw); and finished days alone (none left to raw reads once rolled up)
      const past = `custom&from=${localDate(NOW.getTime() - 10 * 86_400_000, TZ)}&to=${localDate(NOW.getTime() - 2 * 86_400_000, TZ)}`
      const more = await Promise.all(
        [
          queryOf({ company: 'anthropic' }, '12mo'),
          queryOf({}, 'yesterday'),
          queryOf({ crawlers: 'verified' }, past),
          queryOf({}, past),
        ].map((q) => get(q)),
      )
      const pastJson = more[more.length - 1]
      check(pastJson, expected(hits, pastJson.range))
      jsons.push(week, ...more)
      return jsons
    }

    const fromEvents = await expectReference(fx)
    expect(await rolledDays()).toEqual([])
    await refreshRollups(t.clickhouse, t.repositories, NOW, 40)
    // every finished day of the window with hits or visits is rolled up, today is not
    const rolled = await rolledDays()
    expect(rolled.length).toBeGreaterThan(20)
    expect(rolled).not.toContain(today)
    expect(await expectReference(fx)).toEqual(fromEvents)

    // a late crawler hit on a rolled day: the day goes back to raw reads, and the next refresh rolls it up again
    const lateAt = NOW.getTime() - 3 * 86_400_000
    const lateDay = localDate(lateAt, TZ)
    expect(rolled).toContain(lateDay)
    const lateHit: BotHit = { ts: lateAt, crawler: 0, path: '/late', ip: '198.51.100.5' }
    const withHit = { bots: [...fx.bots, lateHit], visits: fx.visits }
    await send({ bots: [lateHit], visits: [] })
    expect(await rolledDays()).toEqual(rolled.filter((d) => d !== lateDay))
    const rawAfterHit = await expectReference(withHit)
    await refreshRollups(t.clickhouse, t.repositories, NOW, 40)
    expect(await rolledDays()).toEqual(rolled)
    expect(await expectReference(withHit)).toEqual(rawAfterHit)

    // and a late visit an assistant sent to that day, landing on the same new page
    const lateVisit: Visit = {
      source: 0,
      ip: '2001:db8::ffff',
      views: [
        { ts: lateAt + 60_000, path: '/late' },
        { ts: lateAt + 100_000, path: '/' },
      ],
    }
    const withVisit = { bots: withHit.bots, visits: [...fx.visits, lateVisit] }
    await send({ bots: [], visits: [lateVisit] })
    expect(await rolledDays()).toEqual(rolled.filter((d) => d !== lateDay))
    const rawAfterVisit = await expectReference(withVisit)
    await refreshRollups(t.clickhouse, t.repositories, NOW, 40)
    expect(await rolledDays()).toEqual(rolled)
    expect(await expectReference(withVisit)).toEqual(rawAfterVisit)
  })
})
