import { beforeAll, describe, expect, it } from 'vitest'
import { createApiKey, createOrg } from '../../lib/accounts/admin'
import { importHits } from '../../lib/ingest/import'
import { newSite } from '../../lib/sites/sites'
import { client, testServices } from '../helpers'
import { NOW, UAS, localDate } from './report-reference'

/**
 * Bot traffic read through the bot_kind dimension, against a reference over the fixture hits:
 * crawler hits of several kinds through the raw-hit import (the sites keep bots) and through
 * server-side collection, beside human pageviews that a bot read must never count. The kind of
 * each crawler is written here by hand; a crawler is told apart by its user agent.
 */

const CRAWLERS: { ua: string; kind: string }[] = [
  { ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)', kind: 'ai-training' },
  { ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)', kind: 'ai-training' },
  { ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot', kind: 'ai-assistant' },
  {
    ua: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)',
    kind: 'ai-search',
  },
  { ua: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', kind: 'search-engine' },
  { ua: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)', kind: 'search-engine' },
  { ua: 'Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)', kind: 'seo' },
  { ua: 'Mozilla/5.0 (compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)', kind: 'monitoring' },
]
const PATHS = ['/', '/pricing', '/blog/a', '/blog/b', '/docs']
/** Crawler addresses and their countries in DB-IP (read by hand); collected hits carry theirs but for the last address, which they leave out. */
const ADDRESSES: [string, string][] = [
  ['81.2.69.142', 'GB'],
  ['8.8.8.8', 'US'],
  ['46.114.0.1', 'DE'],
]

function prng(seed: number) {
  let s = seed
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

type BotHit = { ts: number; crawler: number; path: string; source: 'import' | 'server'; address: number }
type HumanHit = { ts: number; ip: string; ua: string; path: string }

function botFixture(snippet: string, domain: string, seed: number) {
  const r = prng(seed)
  const start = NOW.getTime() - 40 * 86_400_000
  const when = () => start + Math.floor(r() * (NOW.getTime() - start - 60_000))
  const bots: BotHit[] = []
  const humans: HumanHit[] = []
  for (let i = 0; i < 300; i++) {
    // AI training crawlers and search engines come most
    const crawler = Math.floor(r() ** 1.5 * CRAWLERS.length)
    bots.push({
      ts: when(),
      crawler,
      path: PATHS[Math.floor(r() * PATHS.length)],
      source: r() < 0.25 ? 'server' : 'import',
      address: Math.floor(r() * ADDRESSES.length),
    })
  }
  for (let i = 0; i < 120; i++)
    humans.push({
      ts: when(),
      ip: `81.2.69.${140 + Math.floor(r() * 5)}`,
      ua: UAS[Math.floor(r() * UAS.length)],
      path: PATHS[Math.floor(r() * PATHS.length)],
    })
  const line = (ts: number, path: string, ua: string, ip: string) =>
    JSON.stringify({
      timestamp: new Date(ts).toISOString(),
      site: snippet,
      name: 'pageview',
      url: `https://${domain}${path}`,
      ip,
      userAgent: ua,
    })
  const lines = [
    ...bots.filter((b) => b.source === 'import').map((b) => line(b.ts, b.path, CRAWLERS[b.crawler].ua, ADDRESSES[b.address][0])),
    ...humans.map((h) => line(h.ts, h.path, h.ua, h.ip)),
  ]
  const collected = bots
    .filter((b) => b.source === 'server')
    .map((b) => ({
      path: b.path,
      userAgent: CRAWLERS[b.crawler].ua,
      timestamp: new Date(b.ts).toISOString(),
      ...(b.address < ADDRESSES.length - 1 ? { ip: ADDRESSES[b.address][0] } : {}),
    }))
  return { bots, humans, lines, collected }
}

type Fixture = ReturnType<typeof botFixture>
const within = <T extends { ts: number }>(hits: T[], range: { from: string; to: string }) =>
  hits.filter((h) => h.ts >= Date.parse(range.from) && h.ts < Date.parse(range.to))
/** The measures of a bot read over some hits: distinct crawlers as visitors, hits as pageviews, no visits. */
const botMeasures = (hits: BotHit[]) => ({
  visitors: new Set(hits.map((h) => h.crawler)).size,
  visits: 0,
  pageviews: hits.length,
  events: 0,
})
function expectedBotRows(hits: BotHit[], valueFor: (h: BotHit) => string) {
  const by = new Map<string, BotHit[]>()
  for (const h of hits) by.set(valueFor(h), [...(by.get(valueFor(h)) ?? []), h])
  return [...by]
    .map(([value, hs]) => ({ value, ...botMeasures(hs) }))
    .sort((a, b) => b.visitors - a.visitors || b.pageviews - a.pageviews || (a.value < b.value ? -1 : 1))
}

describe('bot traffic through bot_kind', () => {
  let call: ReturnType<typeof client>
  let key = ''
  const ids = { berlin: '', la: '', empty: '', ga4: '' }
  const fx = {} as Record<'berlin' | 'la', Fixture>
  const tz = { berlin: 'Europe/Berlin', la: 'America/Los_Angeles' }

  beforeAll(async () => {
    const services = await testServices({ now: () => NOW })
    call = client(services)
    const org = await createOrg(services.repositories, 'Bots', NOW)
    key = (await createApiKey(services.repositories, { orgId: org.id, name: 'r', scope: 'read' }, NOW)).key
    const write = (await createApiKey(services.repositories, { orgId: org.id, name: 'w', scope: 'write' }, NOW)).key
    const keeping = (domain: string, timezone: string) => {
      const site = newSite({ domain, timezone }, org.id, NOW)
      return { ...site, tracking: { ...site.tracking, includeBots: true } }
    }
    const berlin = keeping('berlin.bots.test', tz.berlin)
    const la = keeping('la.bots.test', tz.la)
    const empty = keeping('empty.bots.test', 'UTC')
    const ga4 = {
      ...newSite({ domain: 'ga4.bots.test', timezone: 'UTC' }, org.id, NOW),
      sources: ['ga4' as const],
      primarySource: 'ga4' as const,
    }
    for (const site of [berlin, la, empty, ga4]) await services.repositories.sites.create(site)
    fx.berlin = botFixture(berlin.snippetId, berlin.domain, 5)
    fx.la = botFixture(la.snippetId, la.domain, 17)
    const result = await importHits([...fx.berlin.lines, ...fx.la.lines], services.ingestor)
    expect(result.rejected, JSON.stringify(result.errors)).toBe(0)
    for (const [site, f] of [
      [berlin, fx.berlin],
      [la, fx.la],
    ] as const) {
      const res = await call('POST', '/api/v1/collect', { key: write, body: { site_id: site.snippetId, events: f.collected } })
      expect(res.json).toEqual({ ingested: f.collected.length, dropped: 0 })
    }
    Object.assign(ids, { berlin: berlin.id, la: la.id, empty: empty.id, ga4: ga4.id })
  })

  const get = async (path: string, status = 200) => {
    const res = await call('GET', path, { key })
    expect(res.status, JSON.stringify(res.json)).toBe(status)
    return res.json
  }
  const filtersParam = (filters: unknown) => `&filters=${encodeURIComponent(JSON.stringify(filters))}`
  const kindIs = (...kinds: string[]) => ({ dimension: 'bot_kind', operator: 'is', value: kinds })

  it('reads without bot_kind count humans only', async () => {
    const json = await get(`/api/v1/stats?site_id=${ids.berlin}&range=30d`)
    const humans = within(fx.berlin.humans, json.range)
    expect(json.totals.pageviews).toBe(humans.length)
    expect(json.totals.visitors).toBe(new Set(humans.map((h) => `${h.ip}|${h.ua}|${localDate(h.ts, tz.berlin)}`)).size)
  })

  for (const site of ['berlin', 'la'] as const) {
    it(`${site}: stats with a bot_kind filter count that kind's hits and crawlers, and no visits`, async () => {
      const json = await get(`/api/v1/stats?site_id=${ids[site]}&range=30d${filtersParam([kindIs('ai-training', 'ai-assistant')])}`)
      const hits = within(fx[site].bots, json.range).filter((h) => ['ai-training', 'ai-assistant'].includes(CRAWLERS[h.crawler].kind))
      expect(hits.length).toBeGreaterThan(20)
      expect(json.totals).toEqual({ ...botMeasures(hits), bounceRate: 0, avgDuration: 0, viewsPerVisit: 0 })
    })

    it(`${site}: breakdown by bot_kind over all bot hits, sorted by crawlers then hits`, async () => {
      const json = await get(`/api/v1/breakdown?site_id=${ids[site]}&range=30d&property=bot_kind`)
      const expected = expectedBotRows(within(fx[site].bots, json.range), (h) => CRAWLERS[h.crawler].kind)
      expect(expected.length).toBe(6)
      expect(json.results).toEqual(expected)
    })

    it(`${site}: a timeseries of bot hits per site-local day`, async () => {
      const json = await get(
        `/api/v1/timeseries?site_id=${ids[site]}&range=7d${filtersParam([{ dimension: 'bot_kind', operator: 'is_not', value: ['monitoring'] }])}`,
      )
      const hits = within(fx[site].bots, json.range).filter((h) => CRAWLERS[h.crawler].kind !== 'monitoring')
      const byDay = new Map(expectedBotRows(hits, (h) => localDate(h.ts, tz[site])).map((r) => [r.value, r]))
      expect(json.series).toHaveLength(7)
      expect(json.series.map((b: { pageviews: number }) => b.pageviews).reduce((a: number, b: number) => a + b, 0)).toBe(hits.length)
      for (const b of json.series) {
        const want = byDay.get(b.timestamp.slice(0, 10))
        expect(b).toEqual({ timestamp: b.timestamp, visitors: want?.visitors ?? 0, visits: 0, pageviews: want?.pageviews ?? 0 })
      }
    })
  }

  it('filters bot hits by path, collection source and kind, and breaks them down by path', async () => {
    const filters = [
      { dimension: 'bot_kind', operator: 'is_not', value: ['search-engine'] },
      { dimension: 'path', operator: 'contains', value: ['BLOG'] },
    ]
    let json = await get(`/api/v1/breakdown?site_id=${ids.berlin}&range=30d&property=path${filtersParam(filters)}`)
    let hits = within(fx.berlin.bots, json.range).filter((h) => CRAWLERS[h.crawler].kind !== 'search-engine' && h.path.includes('blog'))
    expect(json.results).toEqual(expectedBotRows(hits, (h) => h.path))
    json = await get(
      `/api/v1/breakdown?site_id=${ids.la}&range=30d&property=bot_kind${filtersParam([{ dimension: 'collection_source', operator: 'is', value: ['server'] }])}`,
    )
    hits = within(fx.la.bots, json.range).filter((h) => h.source === 'server')
    expect(json.results).toEqual(expectedBotRows(hits, (h) => CRAWLERS[h.crawler].kind))
    json = await get(
      `/api/v1/breakdown?site_id=${ids.la}&range=30d&property=collection_source${filtersParam([{ dimension: 'bot_kind', operator: 'matches', value: ['^ai-'] }])}`,
    )
    hits = within(fx.la.bots, json.range).filter((h) => CRAWLERS[h.crawler].kind.startsWith('ai-'))
    expect(json.results).toEqual(expectedBotRows(hits, (h) => (h.source === 'server' ? 'server' : 'import')))
  })

  it('places imported and collected bot hits in the country of their address; a collected hit without one has no country', async () => {
    const json = await get(
      `/api/v1/breakdown?site_id=${ids.berlin}&range=30d&property=country${filtersParam([kindIs('search-engine', 'ai-training')])}`,
    )
    const hits = within(fx.berlin.bots, json.range).filter((h) => ['search-engine', 'ai-training'].includes(CRAWLERS[h.crawler].kind))
    expect(json.results).toEqual(
      expectedBotRows(hits, (h) => (h.source === 'server' && h.address === ADDRESSES.length - 1 ? '' : ADDRESSES[h.address][1])),
    )
  })

  it('an empty site has no bot hits', async () => {
    expect((await get(`/api/v1/breakdown?site_id=${ids.empty}&property=bot_kind`)).results).toEqual([])
    expect((await get(`/api/v1/stats?site_id=${ids.empty}${filtersParam([kindIs('seo')])}`)).totals).toEqual({
      visitors: 0,
      visits: 0,
      pageviews: 0,
      bounceRate: 0,
      avgDuration: 0,
      viewsPerVisit: 0,
      events: 0,
    })
  })

  it('refuses what bot hits do not record, unknown kinds, the ga4 source and reads that count humans only', async () => {
    const error = async (path: string) => (await get(path, 400)).error as string
    expect(
      await error(
        `/api/v1/stats?site_id=${ids.berlin}${filtersParam([kindIs('seo'), { dimension: 'browser', operator: 'is', value: ['Chrome'] }])}`,
      ),
    ).toMatch(/^filters: browser is not recorded for bot hits/)
    expect(await error(`/api/v1/breakdown?site_id=${ids.berlin}&property=browser${filtersParam([kindIs('seo')])}`)).toMatch(
      /^property: browser is not recorded for bot hits/,
    )
    expect(
      await error(
        `/api/v1/breakdown?site_id=${ids.berlin}&property=bot_kind${filtersParam([{ dimension: 'source', operator: 'is', value: ['Google'] }])}`,
      ),
    ).toMatch(/^filters: source is not recorded/)
    expect(await error(`/api/v1/stats?site_id=${ids.berlin}${filtersParam([kindIs('robots')])}`)).toMatch(
      /^filters: "robots" is not a bot kind/,
    )
    expect(await error(`/api/v1/stats?site_id=${ids.ga4}${filtersParam([kindIs('seo')])}`)).toMatch(
      /^filters: "bot_kind" is recorded only by the first-party collector/,
    )
    expect(await error(`/api/v1/realtime?site_id=${ids.berlin}${filtersParam([kindIs('seo')])}`)).toMatch(
      /^filters: bot_kind selects bot traffic/,
    )
    expect(await error(`/api/v1/export?site_id=${ids.berlin}${filtersParam([kindIs('seo')])}`)).toMatch(
      /^filters: bot_kind selects bot traffic/,
    )
    expect(
      await error(`/api/v1/stats?site_id=${ids.berlin}${filtersParam([{ dimension: 'bot_kind', operator: 'matches', value: ['('] }])}`),
    ).toMatch(/^filters: invalid regular expression/)
  })
})
