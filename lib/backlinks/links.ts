import { parseHTML } from 'linkedom'

/**
 * What a referring page says about the site: each link to it with its anchor text, its rel
 * (dofollow, nofollow, ugc, sponsored), whether it is an image link, and the page's title.
 * Pure functions: the crawler fetches, these read.
 */

export const LINK_TYPES = ['dofollow', 'nofollow', 'ugc', 'sponsored'] as const
export type LinkType = (typeof LINK_TYPES)[number]

export interface FoundLink {
  targetUrl: string
  anchor: string
  rel: LinkType
  image: boolean
}

/** Longest anchor and title kept. */
const TEXT_CHARS = 500
/** Most links to the site kept from one page. */
const MAX_LINKS = 100

const clean = (text: string | null | undefined) => (text ?? '').replace(/\s+/g, ' ').trim().slice(0, TEXT_CHARS)

/** A host as a referring domain: lower case, without a leading www. (the port kept when there is one). */
export const domainOf = (host: string) => host.toLowerCase().replace(/^www\./, '')

/** The referring domain of a URL, or null for one that is not http(s). */
export function urlDomain(url: string): string | null {
  try {
    const u = new URL(url)
    return u.protocol === 'http:' || u.protocol === 'https:' ? domainOf(u.host) : null
  } catch {
    return null
  }
}

/** The top-level domain of a referring domain (its last label); empty for an address. */
export function tldOf(domain: string): string {
  const host = domain.replace(/:\d+$/, '')
  if (/^[\d.]+$/.test(host) || host.startsWith('[')) return ''
  const dot = host.lastIndexOf('.')
  return dot < 0 ? '' : host.slice(dot + 1)
}

/** A URL without its fragment, as links are keyed; null when it is not an http(s) URL. */
export function linkUrl(href: string, base?: URL | string): string | null {
  try {
    const u = new URL(href, base)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null
    u.hash = ''
    return u.href
  } catch {
    return null
  }
}

/** A referrer trimmed to its origin (the browsers' default policy across sites) names no page. */
export function isOriginOnly(url: string): boolean {
  try {
    const u = new URL(url)
    return (u.pathname === '/' || u.pathname === '') && !u.search
  } catch {
    return false
  }
}

/** The link type a rel attribute (and the page's robots meta) gives: sponsored, then ugc, then nofollow. */
export function linkType(rel: string, robotsMeta = ''): LinkType {
  const words = new Set(rel.toLowerCase().split(/\s+/))
  if (words.has('sponsored')) return 'sponsored'
  if (words.has('ugc')) return 'ugc'
  if (words.has('nofollow') || /(^|[\s,])(nofollow|none)([\s,]|$)/.test(robotsMeta.toLowerCase())) return 'nofollow'
  return 'dofollow'
}

/** True when a URL is on the site: its host is the site's domain, with or without www. */
export const pointsTo = (url: string, siteDomain: string) => urlDomain(url) === domainOf(siteDomain)

/** The links to `siteDomain` on the page at `pageUrl`, and its title. */
export function linksOnPage(html: string, pageUrl: string, siteDomain: string): { title: string; links: FoundLink[] } {
  const { document } = parseHTML(html)
  const robotsMeta = document.querySelector('meta[name="robots" i]')?.getAttribute('content') ?? ''
  const links: FoundLink[] = []
  const seen = new Set<string>()
  for (const a of document.querySelectorAll('a[href]')) {
    if (links.length >= MAX_LINKS) break
    const target = linkUrl(a.getAttribute('href') ?? '', pageUrl)
    if (!target || !pointsTo(target, siteDomain) || seen.has(target)) continue
    seen.add(target)
    const img = a.querySelector('img')
    const text = clean(a.textContent)
    links.push({
      targetUrl: target,
      anchor: text || clean(img?.getAttribute('alt')),
      rel: linkType(a.getAttribute('rel') ?? '', robotsMeta),
      image: !!img,
    })
  }
  return { title: clean(document.querySelector('title')?.textContent), links }
}

/** The page links of a sitemap-listed or known page set that belong to one origin. */
export const sameOrigin = (url: string, origin: string) => {
  try {
    return new URL(url).origin === origin
  } catch {
    return false
  }
}
