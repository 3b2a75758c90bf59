import crawlerList from 'crawler-user-agents'
import { cutText } from './well-formed'
import { isbot } from 'isbot'
import type { BotKind } from './bot-kinds'

/**
 * Our own table, checked first: it splits the AI crawlers that `crawler-user-agents` tags only
 * as "ai-crawler" into training crawlers, user-triggered fetchers and AI search indexers.
 */
const OWN_TABLE: [RegExp, string, BotKind][] = [
  [/ChatGPT-User/i, 'ChatGPT-User', 'ai-assistant'],
  [/Claude-User/i, 'Claude-User', 'ai-assistant'],
  [/Perplexity-User/i, 'Perplexity-User', 'ai-assistant'],
  [/MistralAI-User/i, 'MistralAI-User', 'ai-assistant'],
  [/Meta-ExternalFetcher/i, 'Meta-ExternalFetcher', 'ai-assistant'],
  [/Gemini-Deep-Research|Google-NotebookLM/i, 'Google AI fetcher', 'ai-assistant'],
  [/OAI-SearchBot/i, 'OAI-SearchBot', 'ai-search'],
  [/PerplexityBot/i, 'PerplexityBot', 'ai-search'],
  [/Claude-SearchBot/i, 'Claude-SearchBot', 'ai-search'],
  [/YouBot/i, 'YouBot', 'ai-search'],
  [/DuckAssistBot/i, 'DuckAssistBot', 'ai-search'],
  [/GPTBot/i, 'GPTBot', 'ai-training'],
  [/ClaudeBot|anthropic-ai|Claude-Web/i, 'ClaudeBot', 'ai-training'],
  [/CCBot/i, 'CCBot', 'ai-training'],
  [/Google-Extended/i, 'Google-Extended', 'ai-training'],
  [/Applebot-Extended/i, 'Applebot-Extended', 'ai-training'],
  [/Bytespider/i, 'Bytespider', 'ai-training'],
  [/Meta-ExternalAgent/i, 'Meta-ExternalAgent', 'ai-training'],
  [/cohere-ai|cohere-training/i, 'cohere-ai', 'ai-training'],
  [/Amazonbot/i, 'Amazonbot', 'ai-training'],
  [/Diffbot/i, 'Diffbot', 'ai-training'],
  [/Timpibot/i, 'Timpibot', 'ai-training'],
  [/omgili/i, 'omgili', 'ai-training'],
]

const TAG_KIND: Record<string, BotKind> = {
  'search-engine': 'search-engine',
  seo: 'seo',
  monitoring: 'monitoring',
  'social-preview': 'social-preview',
  'feed-reader': 'feed-reader',
  'ai-crawler': 'ai-training',
}

const crawlers = crawlerList as { pattern: string; tags?: string[] }[]
const catalogue = crawlers.map((c) => {
  const kind = (c.tags ?? []).map((t) => TAG_KIND[t]).find(Boolean) ?? 'other'
  return { regex: new RegExp(c.pattern), kind }
})

export interface BotInfo {
  name: string
  kind: BotKind
}

/** A bot's name and kind, or null for a human browser. */
export function classifyBot(userAgent: string): BotInfo | null {
  for (const [regex, name, kind] of OWN_TABLE) if (regex.test(userAgent)) return { name, kind }
  for (const c of catalogue) {
    // the name is what the pattern matched: "Googlebot/" gives Googlebot
    const match = c.regex.exec(userAgent)
    if (match) return { name: cutText(match[0].replace(/[\s/;:(),-]+$/, ''), 60) || 'unknown', kind: c.kind }
  }
  return isbot(userAgent) ? { name: cutText(userAgent.split(/[\s/;(]/)[0], 60) || 'unknown', kind: 'other' } : null
}

/** Crawlers that publish the reverse-DNS domains their addresses resolve to. */
const VERIFIABLE: [RegExp, string[]][] = [
  [
    /Googlebot|Google-|AdsBot-Google|Mediapartners-Google|APIs-Google|FeedFetcher-Google|GoogleOther/i,
    ['googlebot.com', 'google.com', 'googleusercontent.com'],
  ],
  [/bingbot|BingPreview|msnbot|adidxbot/i, ['search.msn.com']],
  [/Applebot/i, ['applebot.apple.com']],
  [/YandexBot|YandexImages|Yandex/i, ['yandex.ru', 'yandex.net', 'yandex.com']],
  [/Baiduspider/i, ['baidu.com', 'baidu.jp']],
  [/DuckDuckBot|DuckAssistBot/i, ['duckduckgo.com']],
  [/PetalBot/i, ['aspiegel.com', 'petalsearch.com']],
  [/facebookexternalhit|meta-externalagent|meta-externalfetcher/i, ['facebook.com', 'fbsv.net']],
  [/Amazonbot/i, ['crawl.amazonbot.amazon']],
  [/SeznamBot/i, ['seznam.cz']],
]

export interface DnsResolver {
  /** PTR names of an address. */
  reverse(ip: string): Promise<string[]>
  /** A and AAAA addresses of a name. */
  lookup(hostname: string): Promise<string[]>
  /** CNAME targets of a name, empty when it has none (custom tracking domains). */
  cname?(hostname: string): Promise<string[]>
}

/**
 * Reverse DNS plus a forward confirm: the address's PTR name must end in one of the crawler's
 * published domains, and that name must resolve back to the same address.
 */
export async function verifyBot(userAgent: string, ip: string | undefined, resolver: DnsResolver): Promise<boolean> {
  if (!ip) return false
  const domains = VERIFIABLE.find(([regex]) => regex.test(userAgent))?.[1]
  if (!domains) return false
  try {
    const names = await resolver.reverse(ip)
    for (const name of names) {
      const host = name.toLowerCase().replace(/\.$/, '')
      if (!domains.some((d) => host === d || host.endsWith(`.${d}`))) continue
      const addresses = await resolver.lookup(host)
      if (addresses.some((a) => a.toLowerCase() === ip.toLowerCase())) return true
    }
  } catch {
    return false
  }
  return false
}

/** How long a verification is remembered: a crawler's addresses change rarely, a failed check may be a passing DNS fault. */
const VERIFIED_TTL_MS = 24 * 3600_000
const UNVERIFIED_TTL_MS = 3600_000
/** DNS lookups in flight at once, per resolver. */
const MAX_CONCURRENT_VERIFICATIONS = 16

/**
 * Verifications by crawler and address, cached (positive and negative, with a TTL) and run at
 * most MAX_CONCURRENT_VERIFICATIONS at a time: a log batch of 500 hits from 500 addresses of one
 * crawler costs each address one check, once a day.
 */
class BotVerifier {
  private readonly cache = new Map<string, { verified: Promise<boolean>; until: number }>()
  private running = 0
  private readonly queue: (() => void)[] = []

  constructor(private readonly resolver: DnsResolver) {}

  verify(userAgent: string, ip: string | undefined): Promise<boolean> {
    const domains = ip ? VERIFIABLE.find(([regex]) => regex.test(userAgent))?.[1] : undefined
    if (!ip || !domains) return Promise.resolve(false)
    const key = `${domains[0]}|${ip.toLowerCase()}`
    const now = Date.now()
    const cached = this.cache.get(key)
    if (cached && cached.until > now) return cached.verified
    const verified = this.slot(() => verifyBot(userAgent, ip, this.resolver))
    if (this.cache.size > 100_000) this.cache.clear()
    this.cache.set(key, { verified, until: now + UNVERIFIED_TTL_MS })
    void verified.then((ok) => ok && this.cache.set(key, { verified, until: Date.now() + VERIFIED_TTL_MS }))
    return verified
  }

  private async slot<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= MAX_CONCURRENT_VERIFICATIONS) await new Promise<void>((resolve) => this.queue.push(resolve))
    this.running++
    try {
      return await work()
    } finally {
      this.running--
      this.queue.shift()?.()
    }
  }
}

const verifiers = new WeakMap<DnsResolver, BotVerifier>()

/** The process's verifier for a resolver: its cache is shared by every request. */
export function botVerifier(resolver: DnsResolver): BotVerifier {
  let verifier = verifiers.get(resolver)
  if (!verifier) verifiers.set(resolver, (verifier = new BotVerifier(resolver)))
  return verifier
}
