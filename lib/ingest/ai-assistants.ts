/**
 * The AI companies this service knows (docs/ai-visibility.md): their assistants, by the referrer
 * hosts and `utm_source` values of the visits they send (the `AI assistants` channel), and their
 * crawlers, by the name lib/ingest/bots.ts gives them (`bot_name` of bot_events) and what each is
 * for. The one list to edit when an assistant or a crawler appears.
 *
 * - `referrerHosts`: a referrer on the host or any subdomain of it (www.perplexity.ai is
 *   perplexity.ai); also taken as a `utm_source` value.
 * - `utmSources`: further `utm_source` values, whole and case-insensitive.
 * - `name` of an assistant is the source the visit is stored under (the `source` dimension).
 * - crawler `purpose`: training (content for model training), search (an AI search index), user
 *   (a page fetched while answering one person's question).
 */

export type CrawlerPurpose = 'training' | 'search' | 'user'
export const CRAWLER_PURPOSES: readonly CrawlerPurpose[] = ['training', 'search', 'user']

export interface AiAssistant {
  name: string
  referrerHosts: string[]
  utmSources: string[]
}

export interface AiCrawler {
  /** The crawler's name as stored (bots.ts): GPTBot, ClaudeBot, ... */
  name: string
  purpose: CrawlerPurpose
}

export interface AiCompany {
  /** Stable identifier, the value of the `company` parameter. */
  id: string
  name: string
  assistants: AiAssistant[]
  crawlers: AiCrawler[]
}

export const AI_COMPANIES: readonly AiCompany[] = [
  {
    id: 'openai',
    name: 'OpenAI',
    assistants: [{ name: 'ChatGPT', referrerHosts: ['chatgpt.com', 'chat.openai.com'], utmSources: ['chatgpt', 'openai'] }],
    crawlers: [
      { name: 'GPTBot', purpose: 'training' },
      { name: 'OAI-SearchBot', purpose: 'search' },
      { name: 'ChatGPT-User', purpose: 'user' },
    ],
  },
  {
    id: 'anthropic',
    name: 'Anthropic',
    assistants: [{ name: 'Claude', referrerHosts: ['claude.ai'], utmSources: ['claude', 'anthropic'] }],
    crawlers: [
      { name: 'ClaudeBot', purpose: 'training' },
      { name: 'Claude-SearchBot', purpose: 'search' },
      { name: 'Claude-User', purpose: 'user' },
    ],
  },
  {
    id: 'perplexity',
    name: 'Perplexity',
    assistants: [{ name: 'Perplexity', referrerHosts: ['perplexity.ai'], utmSources: ['perplexity'] }],
    crawlers: [
      { name: 'PerplexityBot', purpose: 'search' },
      { name: 'Perplexity-User', purpose: 'user' },
    ],
  },
  {
    id: 'google',
    name: 'Google',
    assistants: [
      { name: 'Gemini', referrerHosts: ['gemini.google.com', 'bard.google.com'], utmSources: ['gemini', 'bard'] },
      { name: 'NotebookLM', referrerHosts: ['notebooklm.google.com'], utmSources: ['notebooklm'] },
    ],
    crawlers: [
      { name: 'Google-Extended', purpose: 'training' },
      { name: 'Google AI fetcher', purpose: 'user' },
    ],
  },
  {
    id: 'microsoft',
    name: 'Microsoft',
    assistants: [
      { name: 'Microsoft Copilot', referrerHosts: ['copilot.microsoft.com', 'copilot.cloud.microsoft'], utmSources: ['copilot'] },
    ],
    crawlers: [],
  },
  {
    id: 'meta',
    name: 'Meta',
    assistants: [{ name: 'Meta AI', referrerHosts: ['meta.ai'], utmSources: ['meta ai', 'metaai'] }],
    crawlers: [
      { name: 'Meta-ExternalAgent', purpose: 'training' },
      { name: 'Meta-ExternalFetcher', purpose: 'user' },
    ],
  },
  {
    id: 'mistral',
    name: 'Mistral AI',
    assistants: [{ name: 'Mistral', referrerHosts: ['chat.mistral.ai'], utmSources: ['mistral', 'le chat'] }],
    crawlers: [{ name: 'MistralAI-User', purpose: 'user' }],
  },
  {
    id: 'deepseek',
    name: 'DeepSeek',
    assistants: [{ name: 'DeepSeek', referrerHosts: ['chat.deepseek.com'], utmSources: ['deepseek'] }],
    crawlers: [],
  },
  {
    id: 'xai',
    name: 'xAI',
    assistants: [{ name: 'Grok', referrerHosts: ['grok.com'], utmSources: ['grok'] }],
    crawlers: [],
  },
  {
    id: 'you',
    name: 'You.com',
    assistants: [{ name: 'You.com', referrerHosts: ['you.com'], utmSources: [] }],
    crawlers: [{ name: 'YouBot', purpose: 'search' }],
  },
  {
    id: 'duckduckgo',
    name: 'DuckDuckGo',
    assistants: [{ name: 'Duck.ai', referrerHosts: ['duck.ai'], utmSources: [] }],
    crawlers: [{ name: 'DuckAssistBot', purpose: 'search' }],
  },
  {
    id: 'phind',
    name: 'Phind',
    assistants: [{ name: 'Phind', referrerHosts: ['phind.com'], utmSources: ['phind'] }],
    crawlers: [],
  },
  {
    id: 'quora',
    name: 'Quora',
    assistants: [{ name: 'Poe', referrerHosts: ['poe.com'], utmSources: ['poe'] }],
    crawlers: [],
  },
  {
    id: 'bytedance',
    name: 'ByteDance',
    assistants: [{ name: 'Doubao', referrerHosts: ['doubao.com'], utmSources: ['doubao'] }],
    crawlers: [{ name: 'Bytespider', purpose: 'training' }],
  },
  { id: 'apple', name: 'Apple', assistants: [], crawlers: [{ name: 'Applebot-Extended', purpose: 'training' }] },
  { id: 'amazon', name: 'Amazon', assistants: [], crawlers: [{ name: 'Amazonbot', purpose: 'training' }] },
  { id: 'commoncrawl', name: 'Common Crawl', assistants: [], crawlers: [{ name: 'CCBot', purpose: 'training' }] },
  { id: 'cohere', name: 'Cohere', assistants: [], crawlers: [{ name: 'cohere-ai', purpose: 'training' }] },
  { id: 'diffbot', name: 'Diffbot', assistants: [], crawlers: [{ name: 'Diffbot', purpose: 'training' }] },
  { id: 'timpi', name: 'Timpi', assistants: [], crawlers: [{ name: 'Timpibot', purpose: 'training' }] },
  { id: 'webz', name: 'Webz.io', assistants: [], crawlers: [{ name: 'omgili', purpose: 'training' }] },
]

/** Visits and crawls of the AI kinds that no listed company claims. */
export const OTHER_COMPANY = { id: 'other', name: 'Other' } as const

/** The channel of visits an AI assistant sent. */
export const AI_CHANNEL = 'AI assistants'
/** Names the channel had before: filters written with them read the channel by its name now. */
export const FORMER_AI_CHANNEL_NAMES: readonly string[] = ['AI']

const normalised = (value: string) =>
  value
    .trim()
    .toLowerCase()
    .replace(/^www\./, '')

const onHost = (host: string, listed: string) => host === listed || host.endsWith(`.${listed}`)

/** The assistant whose referrer host this is (a listed host or a subdomain of one), if any. */
export function assistantOfReferrerHost(host: string): AiAssistant | undefined {
  const h = normalised(host)
  if (!h) return undefined
  for (const company of AI_COMPANIES) for (const a of company.assistants) if (a.referrerHosts.some((l) => onHost(h, l))) return a
  return undefined
}

/** The assistant a `utm_source` value names: one of its values, or one of its hosts or a subdomain of one. */
export function assistantOfUtmSource(utmSource: string): AiAssistant | undefined {
  const v = normalised(utmSource)
  if (!v) return undefined
  for (const company of AI_COMPANIES)
    for (const a of company.assistants) if (a.utmSources.includes(v) || a.referrerHosts.some((l) => onHost(v, l))) return a
  return undefined
}
