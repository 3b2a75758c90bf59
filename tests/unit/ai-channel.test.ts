import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { AI_COMPANIES } from '../../lib/ingest/ai-assistants'
import { classifyBot } from '../../lib/ingest/bots'
import { SEARCH_SOURCES, SOCIAL_SOURCES, channelFor, classifyReferrer, utmFrom } from '../../lib/ingest/enrich'
import { parseFilters } from '../../lib/reports/query/parse'

/**
 * The AI assistants channel over the whole list of lib/ingest/ai-assistants.ts: every referrer
 * host (and its www and other subdomains) and every utm_source value lands there, under the
 * assistant's name as source; search and social sources, and names that only contain an
 * assistant's, do not.
 */
const channel = (referrer: string | null, query = '') =>
  channelFor(classifyReferrer(referrer, 'site.test'), utmFrom(new URL(`https://site.test/landing?${query}`)))
const sourceOf = (referrer: string) => classifyReferrer(referrer, 'site.test').source

const assistants = AI_COMPANIES.flatMap((c) => c.assistants)

describe('the AI assistants channel', () => {
  it('takes a visit referred from every listed host and its subdomains, under the assistant’s name', () => {
    expect(assistants.length).toBeGreaterThan(10)
    for (const a of assistants)
      for (const host of a.referrerHosts)
        for (const referrer of [`https://${host}/`, `https://www.${host}/c/123`, `https://m.${host}/search?q=x`]) {
          expect(channel(referrer), referrer).toBe('AI assistants')
          expect(sourceOf(referrer), referrer).toBe(a.name)
        }
  })

  it('takes a campaign with every listed utm_source value and host, in any case', () => {
    for (const a of assistants)
      for (const value of [...a.utmSources, ...a.referrerHosts, ...a.referrerHosts.map((h) => `www.${h}`)])
        for (const spelled of [value, value.toUpperCase(), ` ${value} `]) {
          expect(channel(null, `utm_source=${encodeURIComponent(spelled)}`), spelled).toBe('AI assistants')
          // before any paid or email rule
          expect(channel(null, `utm_source=${encodeURIComponent(spelled)}&utm_medium=cpc`), spelled).toBe('AI assistants')
        }
    // ChatGPT marks the links it shows
    expect(channel(null, 'utm_source=chatgpt.com')).toBe('AI assistants')
    expect(channel(null, 'utm_source=newsletter&utm_medium=llm')).toBe('AI assistants')
  })

  it('leaves search and social sources, and names that only contain an assistant’s, where they were', () => {
    expect(channel('https://www.google.com/search?q=x')).toBe('Organic Search')
    expect(channel('https://duckduckgo.com/')).toBe('Organic Search')
    expect(channel('https://www.bing.com/search?q=x')).toBe('Organic Search')
    expect(channel('https://t.co/abc')).toBe('Organic Social')
    expect(channel('https://news.ycombinator.com/item?id=1')).toBe('Organic Social')
    for (const brand of SEARCH_SOURCES.brands) expect(channel(null, `utm_source=${brand}`), brand).toBe('Organic Search')
    for (const brand of SOCIAL_SOURCES.brands) expect(channel(null, `utm_source=${brand}`), brand).not.toBe('AI assistants')
    for (const name of SOCIAL_SOURCES.names ?? [])
      expect(channel(null, `utm_source=${encodeURIComponent(name)}`), name).not.toBe('AI assistants')
    for (const referrer of [
      'https://notchatgpt.com/',
      'https://chatgpt.com.example.org/',
      'https://gemini.com/',
      'https://mail.google.com/',
      'https://claude.ai.evil.test/',
      'https://perplexity.example/',
    ])
      expect(channel(referrer), referrer).toBe(referrer === 'https://mail.google.com/' ? 'Email' : 'Referral')
    for (const value of ['chatgpt-fan', 'claudeandco', 'poetry', 'grokking', 'geminis', 'you', 'copilots'])
      expect(channel(null, `utm_source=${value}`), value).toBe('Unassigned')
  })

  it('names each listed crawler as the bot classifier stores it, with the purpose its kind says', () => {
    const purposeOfKind: Record<string, string> = { 'ai-training': 'training', 'ai-search': 'search', 'ai-assistant': 'user' }
    // a user agent for each listed crawler, as its vendor documents it (or the token it is known by)
    const agents: Record<string, string> = {
      GPTBot: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot',
      'OAI-SearchBot':
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36; compatible; OAI-SearchBot/1.3; +https://openai.com/searchbot',
      'ChatGPT-User': 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot',
      ClaudeBot: 'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
      'Claude-SearchBot': 'Mozilla/5.0 (compatible; Claude-SearchBot/1.0; +https://www.anthropic.com)',
      'Claude-User': 'Mozilla/5.0 (compatible; Claude-User/1.0; +Claude-User@anthropic.com)',
      PerplexityBot:
        'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)',
      'Perplexity-User':
        'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; +https://perplexity.ai/perplexity-user)',
      'Google-Extended': 'Google-Extended',
      'Google AI fetcher': 'Mozilla/5.0 (compatible; Google-NotebookLM)',
      'Meta-ExternalAgent': 'meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)',
      'Meta-ExternalFetcher': 'meta-externalfetcher/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)',
      'MistralAI-User':
        'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-User/1.0; +https://docs.mistral.ai/robots)',
      YouBot: 'Mozilla/5.0 (compatible; YouBot/1.0; +https://about.you.com/youbot/)',
      DuckAssistBot: 'DuckAssistBot/1.2; (+http://duckduckgo.com/duckassistbot.html)',
      Bytespider:
        'Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)',
      'Applebot-Extended': 'Applebot-Extended',
      Amazonbot:
        'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36',
      CCBot: 'CCBot/2.0 (https://commoncrawl.org/faq/)',
      'cohere-ai': 'cohere-ai',
      Diffbot: 'Mozilla/5.0 (compatible; Diffbot/3.0; +http://www.diffbot.com)',
      Timpibot: 'Timpibot/0.8 (+http://www.timpi.io)',
      omgili: 'omgili/0.5 +http://omgili.com',
    }
    const crawlers = AI_COMPANIES.flatMap((c) => c.crawlers)
    expect(Object.keys(agents).sort()).toEqual(crawlers.map((c) => c.name).sort())
    for (const c of crawlers) {
      const bot = classifyBot(agents[c.name])
      expect(bot?.name, c.name).toBe(c.name)
      expect(purposeOfKind[bot?.kind ?? ''], c.name).toBe(c.purpose)
    }
  })

  it('reads a channel filter naming the former AI channel as the AI assistants channel', () => {
    const filters = (value: string[], operator = 'is') => JSON.stringify([{ dimension: 'channel', operator, value }])
    expect(parseFilters(filters(['AI', 'Direct']), 'standalone')[0].value).toEqual(['AI assistants', 'Direct'])
    expect(parseFilters(filters(['AI'], 'is_not'), 'standalone')[0].value).toEqual(['AI assistants'])
    expect(parseFilters(filters(['AI assistants']), 'standalone')[0].value).toEqual(['AI assistants'])
  })

  it('is documented whole: every company id, assistant, host, utm_source value and crawler of the list is in docs/ai-visibility.md', () => {
    const doc = readFileSync(new URL('../../docs/ai-visibility.md', import.meta.url), 'utf8')
    for (const c of AI_COMPANIES) {
      expect(doc, c.id).toContain(`(\`${c.id}\`)`)
      for (const a of c.assistants)
        for (const word of [a.name, ...a.referrerHosts.map((h) => `\`${h}\``), ...a.utmSources.map((u) => `\`${u}\``)])
          expect(doc, word).toContain(word)
      for (const k of c.crawlers) expect(doc, k.name).toContain(k.name)
    }
  })
})
