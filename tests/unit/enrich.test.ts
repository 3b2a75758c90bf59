import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { classifyBot, verifyBot } from '../../lib/ingest/bots'
import { dohResolver, reverseName } from '../../lib/ingest/dns'
import { channelFor, classifyReferrer, linkKind, parseUserAgent, pathMatches, screenClass, utmFrom } from '../../lib/ingest/enrich'
import { hash64, hash64Many, localDay } from '../../lib/ingest/identity'
import { clickhouseTime } from '../../lib/storage/clickhouse/time'
import { guardedFetch } from '../../lib/network/guarded-fetch'

const utm = (query: string) => utmFrom(new URL(`https://site.test/?${query}`))
const channel = (referrer: string | null, query = '') => channelFor(classifyReferrer(referrer, 'site.test'), utm(query))

describe('enrichment', () => {
  it('parses user agents into browser, OS and device', () => {
    expect(
      parseUserAgent(
        'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
      ),
    ).toEqual({
      browser: 'Safari',
      browserVersion: '17',
      os: 'iOS',
      osVersion: '17.5',
      device: 'Tablet',
    })
    expect(
      parseUserAgent(
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0',
      ),
    ).toMatchObject({ browser: 'Microsoft Edge', os: 'Windows', osVersion: '10', device: 'Desktop' })
  })

  it('groups screen widths', () => {
    expect([undefined, 375, 800, 1280, 1920].map(screenClass)).toEqual(['', 'Mobile', 'Tablet', 'Laptop', 'Desktop'])
  })

  it('names referrers, with AI assistants and the site itself as no referrer', () => {
    expect(classifyReferrer('https://www.google.de/search?q=x', 'site.test')).toEqual({
      referrer: 'https://www.google.de/search?q=x',
      source: 'Google',
      medium: 'search',
    })
    expect(classifyReferrer('https://chatgpt.com/c/123', 'site.test')).toMatchObject({ source: 'ChatGPT', medium: 'ai' })
    expect(classifyReferrer('https://www.perplexity.ai/search', 'site.test')).toMatchObject({ source: 'Perplexity', medium: 'ai' })
    expect(classifyReferrer('https://gemini.google.com/app', 'site.test')).toMatchObject({ source: 'Gemini', medium: 'ai' })
    expect(classifyReferrer('https://www.site.test/other', 'site.test')).toEqual({ referrer: '', source: '', medium: '' })
    expect(classifyReferrer('https://blog.example.org/post', 'site.test')).toMatchObject({ source: 'blog.example.org', medium: '' })
  })

  it('groups channels in the manner of GA4', () => {
    expect(channel(null)).toBe('Direct')
    expect(channel('https://www.google.com/')).toBe('Organic Search')
    expect(channel('https://www.google.com/', 'utm_source=google&utm_medium=cpc')).toBe('Paid Search')
    expect(channel('https://t.co/x')).toBe('Organic Social')
    expect(channel(null, 'utm_source=facebook&utm_medium=paid_social')).toBe('Paid Social')
    expect(channel(null, 'utm_source=newsletter&utm_medium=email')).toBe('Email')
    expect(channel('https://mail.google.com/')).toBe('Email')
    expect(channel('https://chatgpt.com/')).toBe('AI assistants')
    expect(channel(null, 'utm_source=partner-site&utm_medium=affiliate')).toBe('Affiliates')
    expect(channel('https://blog.example.org/')).toBe('Referral')
    expect(channel(null, 'utm_source=flyer')).toBe('Unassigned')
    expect(channel('https://www.youtube.com/watch')).toBe('Organic Video')
    expect(channel(null, 'utm_source=ads&utm_medium=display')).toBe('Display')
  })

  it('reads UTM parameters, with ref as a source fallback', () => {
    expect(utm('utm_source=a&utm_medium=b&utm_campaign=c&utm_term=d&utm_content=e')).toEqual({
      utm_source: 'a',
      utm_medium: 'b',
      utm_campaign: 'c',
      utm_term: 'd',
      utm_content: 'e',
    })
    expect(utm('ref=producthunt').utm_source).toBe('producthunt')
  })

  it('classifies link targets and matches path patterns', () => {
    const page = new URL('https://www.site.test/blog')
    expect(linkKind('https://other.test/', page, [])).toBe('outbound')
    expect(linkKind('https://site.test/x', page, [])).toBe(null)
    expect(linkKind('/files/a.PDF', page, [])).toBe('download')
    expect(linkKind('/go/amazon', new URL('https://site.test/'), ['/go/*'])).toBe('affiliate')
    expect(linkKind('mailto:a@b.c', page, [])).toBe(null)
    expect(pathMatches('/blog/*', '/blog/a/b')).toBe(true)
    expect(pathMatches('/blog/*', '/blogs')).toBe(false)
    expect(pathMatches('/a.b', '/aXb')).toBe(false)
  })

  it('finds the site-local day across DST changes', () => {
    // New York leaves DST on 2026-11-01 at 06:00 UTC
    expect(localDay(new Date('2026-11-01T03:59:00Z'), 'America/New_York')).toBe('2026-10-31')
    expect(localDay(new Date('2026-11-01T04:00:00Z'), 'America/New_York')).toBe('2026-11-01')
    expect(localDay(new Date('2026-11-02T04:59:00Z'), 'America/New_York')).toBe('2026-11-01')
    expect(localDay(new Date('2026-11-02T05:00:00Z'), 'America/New_York')).toBe('2026-11-02')
    expect(localDay(new Date('2026-11-01T18:30:00Z'), 'Asia/Kolkata')).toBe('2026-11-02')
  })
})

describe('bots', () => {
  it('classifies crawlers by kind', () => {
    const kind = (ua: string) => classifyBot(ua)?.kind ?? 'human'
    expect(kind('Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)')).toBe('search-engine')
    expect(kind('Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)')).toBe(
      'ai-training',
    )
    expect(kind('Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot')).toBe(
      'ai-search',
    )
    expect(kind('Mozilla/5.0 (compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)')).toBe('ai-assistant')
    expect(kind('facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)')).toBe('social-preview')
    expect(kind('Feedly/1.0 (+http://www.feedly.com/fetcher.html; like FeedFetcher-Google)')).toBe('feed-reader')
    expect(kind('Mozilla/5.0 (compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)')).toBe('monitoring')
    expect(kind('curl/8.5.0')).toBe('other')
    expect(kind('Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0')).toBe('human')
  })

  it('builds reverse DNS names', () => {
    expect(reverseName('66.249.66.1')).toBe('1.66.249.66.in-addr.arpa')
    expect(reverseName('2001:db8::1')).toBe('1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa')
  })

  it('verifies crawlers through a DNS-over-HTTPS client against a local fake resolver', async () => {
    const answers: Record<string, { type: number; data: string }[]> = {
      '1.66.249.66.in-addr.arpa/PTR': [{ type: 12, data: 'crawl-66-249-66-1.googlebot.com.' }],
      'crawl-66-249-66-1.googlebot.com/A': [{ type: 1, data: '66.249.66.1' }],
      '6.6.6.6.in-addr.arpa/PTR': [{ type: 12, data: 'googlebot.com.attacker.example.' }],
      'googlebot.com.attacker.example/A': [{ type: 1, data: '6.6.6.6' }],
      '7.7.7.7.in-addr.arpa/PTR': [{ type: 12, data: 'crawl-7-7-7-7.googlebot.com.' }],
      'crawl-7-7-7-7.googlebot.com/A': [{ type: 1, data: '66.249.66.9' }],
    }
    const asked: string[] = []
    const server = createServer((req, res) => {
      const url = new URL(req.url!, 'http://x')
      const key = `${url.searchParams.get('name')}/${url.searchParams.get('type')}`
      asked.push(key)
      if (req.headers.accept !== 'application/dns-json') return res.writeHead(415).end()
      res
        .writeHead(200, { 'content-type': 'application/dns-json' })
        .end(JSON.stringify({ Status: answers[key] ? 0 : 3, Answer: answers[key] }))
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const resolver = dohResolver(
      guardedFetch({ allowPrivate: true }),
      `http://127.0.0.1:${(server.address() as AddressInfo).port}/dns-query`,
    )
    const googlebot = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
    expect(await verifyBot(googlebot, '66.249.66.1', resolver)).toBe(true)
    // a PTR outside Google's domains, and a forward lookup that does not come back, are not verified
    expect(await verifyBot(googlebot, '6.6.6.6', resolver)).toBe(false)
    expect(await verifyBot(googlebot, '7.7.7.7', resolver)).toBe(false)
    // no address, or a crawler with no published domains: nothing to verify against
    expect(await verifyBot(googlebot, undefined, resolver)).toBe(false)
    expect(await verifyBot('curl/8', '66.249.66.1', resolver)).toBe(false)
    expect(asked).toContain('crawl-66-249-66-1.googlebot.com/A')
    server.close()
  })
})

describe('clickhouseTime', () => {
  it('writes DateTime64(3) text exactly as the ISO form, across minute boundaries and in any order', () => {
    const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '')
    const instants = [0, 999, 59_999, 60_000, 60_001, Date.UTC(2026, 10, 22, 23, 59, 59, 999), Date.UTC(2026, 10, 23), -1, -60_001]
    let seed = 7
    for (let i = 0; i < 2000; i++) instants.push((seed = (seed * 48271) % 2147483647) * 1000 + (i % 1000))
    for (const ms of instants) {
      expect(clickhouseTime(ms)).toBe(iso(ms))
      expect(clickhouseTime(new Date(ms))).toBe(iso(ms))
    }
  })
})

describe('hash64', () => {
  it('is the first 8 bytes of SHA-256 as an unsigned decimal, one at a time or many at once', async () => {
    const texts = ['', 'a', 's_salt|site|203.0.113.9|Mozilla/5.0 (X11; Linux x86_64)', 'ü€𝄞'.repeat(40)]
    // the reference: WebCrypto's digest, read as a big-endian unsigned 64-bit integer
    const expected = await Promise.all(
      texts.map(async (t) => {
        const bytes = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(t)))
        return bytes
          .slice(0, 8)
          .reduce((n, b) => n * 256n + BigInt(b), 0n)
          .toString()
      }),
    )
    expect(await Promise.all(texts.map(hash64))).toEqual(expected)
    expect(await hash64Many(texts)).toEqual(expected)
    // SHA-256('') begins e3b0c44298fc1c14
    expect(expected[0]).toBe(BigInt('0xe3b0c44298fc1c14').toString())
  })
})
