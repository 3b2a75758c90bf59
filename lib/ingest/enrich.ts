import { parse as parseReferrer } from '@tryghost/referrer-parser'
import { cutText } from './well-formed'
import Bowser from 'bowser'
import { AI_CHANNEL, assistantOfReferrerHost, assistantOfUtmSource } from './ai-assistants'

/** User agent to browser, OS and device class (bowser). */
export function parseUserAgent(userAgent: string) {
  const parsed = Bowser.parse(userAgent)
  const type = parsed.platform.type
  return {
    browser: parsed.browser.name ?? '',
    browserVersion: (parsed.browser.version ?? '').split('.')[0],
    os: parsed.os.name ?? '',
    osVersion: parsed.os.versionName ?? parsed.os.version ?? '',
    device: type === 'mobile' ? 'Mobile' : type === 'tablet' ? 'Tablet' : type === 'tv' ? 'TV' : type === 'desktop' ? 'Desktop' : '',
  }
}

/** Screen width in CSS pixels to the classes reports group by. */
export function screenClass(width: number | null | undefined): string {
  if (!width) return ''
  if (width < 576) return 'Mobile'
  if (width < 992) return 'Tablet'
  if (width < 1440) return 'Laptop'
  return 'Desktop'
}

/** The heatmap's device classes, by the width of the viewport a hit was sent from. */
export const VIEWPORT_CLASSES = ['desktop', 'tablet', 'phone'] as const
export type ViewportClass = (typeof VIEWPORT_CLASSES)[number]
const VIEWPORT_OF_SCREEN: Record<string, ViewportClass> = { Mobile: 'phone', Tablet: 'tablet', Laptop: 'desktop', Desktop: 'desktop' }

/** A viewport width in CSS pixels to its device class, on the screen classes' bounds ('' when unknown). */
export function viewportClass(width: number | null | undefined): ViewportClass | '' {
  return VIEWPORT_OF_SCREEN[screenClass(width)] ?? ''
}

export interface ReferrerInfo {
  /** Full referrer URL, or '' for direct and internal traffic. */
  referrer: string
  /** Human name: Google, Twitter, ChatGPT (an assistant's name, ai-assistants.ts), or the referring domain. */
  source: string
  /** search, social, email, ai, or '' */
  medium: string
}

const hostOf = (url: string) => {
  try {
    return new URL(url).hostname.toLowerCase().replace(/^www\./, '')
  } catch {
    return ''
  }
}

/** Referrer URL to source and medium; a referrer from the site itself is no referrer. */
export function classifyReferrer(referrer: string | null | undefined, pageHost: string): ReferrerInfo {
  const host = referrer ? hostOf(referrer) : ''
  if (!host || host === pageHost.replace(/^www\./, '')) return { referrer: '', source: '', medium: '' }
  // referrer-parser knows AI assistants only as plain domains
  const assistant = assistantOfReferrerHost(host)
  if (assistant) return { referrer: referrer!, source: assistant.name, medium: 'ai' }
  const parsed = parseReferrer(referrer!)
  return { referrer: referrer!, source: parsed.referrerSource ?? host, medium: parsed.referrerMedium ?? '' }
}

export interface Utm {
  utm_source: string
  utm_medium: string
  utm_campaign: string
  utm_term: string
  utm_content: string
}

export function utmFrom(url: URL): Utm {
  const get = (name: string) => cutText(url.searchParams.get(name) ?? '', 500)
  return {
    utm_source: get('utm_source') || get('ref') || get('source'),
    utm_medium: get('utm_medium'),
    utm_campaign: get('utm_campaign'),
    utm_term: get('utm_term'),
    utm_content: get('utm_content'),
  }
}

const PAID_MEDIUM = /^(.*cp.*|ppc|retargeting|paid.*)$/

/**
 * A kind of source, by whole names and whole hostnames: a campaign's source (`utm_source`) or a
 * referrer's source name belongs to it when it is one of the names, or a hostname that is one of
 * the domains or a subdomain of one. A brand matches its name and its hostname under any country
 * domain (google, google.com, news.google.co.uk). Nothing matches inside a longer name:
 * chatgpt.com is not t.co, and boxing is not x.
 */
export interface SourceList {
  brands: string[]
  names?: string[]
  domains?: string[]
}

const hostPattern = (brands: string[], domains: string[]) =>
  new RegExp(`(^|\\.)(${[...brands.map((b) => `${escapeRegExp(b)}(\\.[a-z]{2,3}){1,2}`), ...domains.map(escapeRegExp)].join('|')})$`)
const escapeRegExp = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&')

function sourceMatcher(list: SourceList): (value: string) => boolean {
  const names = new Set([...list.brands, ...(list.names ?? [])])
  const hosts = hostPattern(list.brands, list.domains ?? [])
  return (value) => {
    const v = value
      .trim()
      .toLowerCase()
      .replace(/^www\./, '')
    return v !== '' && (names.has(v) || hosts.test(v))
  }
}

export const SOCIAL_SOURCES: SourceList = {
  brands: [
    'facebook',
    'instagram',
    'twitter',
    'linkedin',
    'reddit',
    'pinterest',
    'tiktok',
    'youtube',
    'mastodon',
    'bluesky',
    'snapchat',
    'quora',
    'weibo',
  ],
  names: ['fb', 'ig', 'x', 'threads', 'hacker news', 'hackernews', 'hn', 'vk'],
  domains: [
    'fb.com',
    'fb.me',
    'm.me',
    'x.com',
    't.co',
    'lnkd.in',
    'redd.it',
    'pin.it',
    'youtu.be',
    'threads.net',
    'mastodon.social',
    'bsky.app',
    'news.ycombinator.com',
    'vk.com',
    't.me',
  ],
}
export const SEARCH_SOURCES: SourceList = {
  brands: ['google', 'bing', 'duckduckgo', 'yahoo', 'yandex', 'baidu', 'ecosia', 'naver', 'startpage', 'qwant', 'seznam'],
  names: ['brave', 'brave search'],
  domains: ['search.brave.com'],
}
export const SHOPPING_SOURCES: SourceList = {
  brands: ['amazon', 'ebay', 'etsy', 'walmart', 'shopify'],
  names: ['shopping', 'google shopping'],
  domains: ['shopping.google.com'],
}
export const VIDEO_SOURCES: SourceList = {
  brands: ['youtube', 'vimeo', 'twitch', 'dailymotion', 'tiktok'],
  domains: ['youtu.be'],
}

const isSocial = sourceMatcher(SOCIAL_SOURCES)
const isSearch = sourceMatcher(SEARCH_SOURCES)
const isShopping = sourceMatcher(SHOPPING_SOURCES)
const isVideo = sourceMatcher(VIDEO_SOURCES)

/**
 * Default channel grouping in the manner of GA4: campaign parameters first, then the referrer's
 * medium, with the `AI assistants` channel first of all: a visit an assistant sent, by its referrer
 * or its `utm_source` (the list in ai-assistants.ts), or a campaign whose medium says AI.
 */
export function channelFor(ref: ReferrerInfo, utm: Utm): string {
  const source = (utm.utm_source || ref.source).toLowerCase()
  const medium = utm.utm_medium.toLowerCase()
  const campaign = utm.utm_campaign.toLowerCase()
  if (ref.medium === 'ai' || /^(ai|llm|chatgpt)$/.test(medium) || assistantOfUtmSource(utm.utm_source)) return AI_CHANNEL
  if (medium === 'affiliate' || medium === 'partner') return 'Affiliates'
  if (/^e[-_ ]?mail$|newsletter/.test(medium) || /newsletter|e[-_ ]?mail/.test(source) || ref.medium === 'email') return 'Email'
  if (medium === 'sms' || source === 'sms') return 'SMS'
  if (medium === 'display' || medium === 'banner' || medium === 'cpm' || medium === 'interstitial') return 'Display'
  if (PAID_MEDIUM.test(medium)) {
    if (isShopping(source) || /shop/.test(campaign)) return 'Paid Shopping'
    if (isSearch(source) || ref.medium === 'search') return 'Paid Search'
    if (isSocial(source) || ref.medium === 'social') return 'Paid Social'
    if (isVideo(source)) return 'Paid Video'
    return 'Paid Other'
  }
  if (medium === 'organic' || ref.medium === 'search' || isSearch(utm.utm_source)) return 'Organic Search'
  if (
    /^(social|social-network|social-media|sm|social network|social media)$/.test(medium) ||
    ref.medium === 'social' ||
    isSocial(utm.utm_source)
  ) {
    return isVideo(source) ? 'Organic Video' : 'Organic Social'
  }
  if (medium === 'video' || isVideo(source)) return 'Organic Video'
  if (isShopping(source)) return 'Organic Shopping'
  if (medium === 'referral' || ref.referrer) return 'Referral'
  if (utm.utm_source || medium || campaign) return 'Unassigned'
  return 'Direct'
}

const DOWNLOAD_EXTENSIONS =
  /\.(pdf|zip|gz|tgz|rar|7z|dmg|exe|msi|pkg|deb|rpm|apk|iso|csv|xlsx?|docx?|pptx?|odt|ods|mp3|mp4|mov|avi|wav|epub|txt|json|xml)$/i

/** Classifies a clicked link: outbound to another host, a file download, an affiliate path, or a plain click. */
export function linkKind(href: string | undefined, pageUrl: URL, affiliatePaths: string[]): 'outbound' | 'download' | 'affiliate' | null {
  if (!href) return null
  let target: URL
  try {
    target = new URL(href, pageUrl)
  } catch {
    return null
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return null
  if (affiliatePaths.some((pattern) => pathMatches(pattern, target.pathname)) && target.hostname === pageUrl.hostname) return 'affiliate'
  if (DOWNLOAD_EXTENSIONS.test(target.pathname)) return 'download'
  if (target.hostname.replace(/^www\./, '') !== pageUrl.hostname.replace(/^www\./, '')) return 'outbound'
  return null
}

/** `/blog/*` style patterns: `*` matches within a segment run, `**` anything. */
export function pathMatches(pattern: string, path: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  )
  return regex.test(path)
}
